/** Paged KV memory: block allocator, KV pools, page tables, sequence lifecycle. */
package io.radixkv.paging;
