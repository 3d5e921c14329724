package io.radixkv.paging;

/**
 * The one state every physical KV page is in (the ownership model).
 *
 * <ul>
 *   <li>{@link #FREE}: in the allocator's free stack, owned by nobody.</li>
 *   <li>{@link #PRIVATE}: allocated to exactly one sequence; freed when that sequence is
 *       released unless the prefix cache took it over first.</li>
 *   <li>{@link #CACHED}: owned by the prefix cache; may be mapped by many sequences at once;
 *       only cache eviction returns it to {@link #FREE}.</li>
 * </ul>
 */
public enum PageState {
    FREE,
    PRIVATE,
    CACHED
}
