/**
 * Paged KV memory: which page belongs to whom, where every token's K/V lives, and the
 * tables the kernels read.
 *
 * <ul>
 *   <li>{@link io.radixkv.paging.BlockAllocator}: page ids {@code [0, numPages)}, O(1)
 *       all-or-nothing allocation, three states ({@link io.radixkv.paging.PageState}: FREE,
 *       PRIVATE to one sequence, CACHED = owned by the prefix cache), owner tracking, leak
 *       audit and forced reclaim, a reclaimer hook through which allocation asks the radix
 *       cache to evict.</li>
 *   <li>{@link io.radixkv.paging.KvPool}: per-layer K/V pools
 *       {@code [numPages, pageSize, numKvHeads, headDim]} from a backend's memory.</li>
 *   <li>{@link io.radixkv.paging.PageTable}: {@code [maxSeqs, maxPagesPerSeq]} int32 page
 *       lists in a MemorySegment, with page counts and lengths.</li>
 *   <li>{@link io.radixkv.paging.KvSequences}: sequence lifecycle (open, map the cache's
 *       shared prefix pages, eager reserve, lazy decode growth, hand pages to the cache,
 *       replace a duplicate with the cache's page, release frees exactly the PRIVATE pages)
 *       and the cross-structure invariant check.</li>
 *   <li>{@link io.radixkv.paging.BatchTables}: per-step FlashInfer CSR, qo_indptr, slot
 *       mapping and positions in reusable segments (mirrored to the device on CUDA).</li>
 * </ul>
 *
 * <p>Typical step (engine thread): for a new request {@code open}, {@code mapShared} the
 * cache hit, {@code reserve} the prompt; for a running one {@code growForDecode}; then
 * {@code BatchTables.begin/add/finish} with each sequence's new token range, run the
 * kernels, {@code setLength}; after prefill the cache takes pages with {@code markCached}
 * (or {@code replaceWithCached} when it already had them); at the end {@code release}.
 * None of these classes is thread-safe: the engine's scheduling thread owns them.
 */
package io.radixkv.paging;
