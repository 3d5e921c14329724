package io.radixkv.paging;

/**
 * The one state every physical KV page is in (the ownership model).
 *
 * <ul>
 *   <li>{@link #FREE}: in the allocator's free stack, owned by nobody.</li>
 *   <li>{@link #PRIVATE}: allocated to one sequence (or shared by reference among the
 *       samples forked from one prompt, which have one owner); freed when the last sequence
 *       holding it is released unless the prefix cache took it over first.</li>
 *   <li>{@link #CACHED}: owned by the prefix cache; may be mapped by many sequences at once;
 *       only cache eviction returns it to {@link #FREE}.</li>
 * </ul>
 */
public enum PageState {
    FREE,
    PRIVATE,
    CACHED
}
