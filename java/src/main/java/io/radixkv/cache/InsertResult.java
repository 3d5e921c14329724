package io.radixkv.cache;

/**
 * Result of {@link RadixCache#insert}.
 *
 * @param node            the terminal node: it ends exactly at the last inserted page
 * @param firstNewPageIdx index in the caller's {@code pages} of the first page the cache took
 *                        ownership of (equals the inserted page count when nothing was new)
 * @param insertedPages   pages the cache newly took ownership of: exactly {@code pages[firstNewPageIdx,
 *                        firstNewPageIdx + insertedPages)}; 0 when the sequence already existed
 * @param cachedPages     the tree's page id for every page index {@code [0, firstNewPageIdx +
 *                        insertedPages)}. Where {@code cachedPages[i] != pages[i]} (only possible for
 *                        {@code i < firstNewPageIdx}) someone else inserted that prefix first: the
 *                        caller's page is a private duplicate that the caller must free (and map the
 *                        tree's page instead). The cache never frees pages it does not own.
 */
public record InsertResult(NodeRef node, int firstNewPageIdx, int insertedPages, int[] cachedPages) {

    /** Number of page indices covered by the insert (whole pages of the inserted tokens). */
    public int pageCount() {
        return firstNewPageIdx + insertedPages;
    }

    /**
     * Number of caller pages below {@code firstNewPageIdx} that differ from the tree's: duplicates
     * the caller must free.
     */
    public int duplicateCount(int[] callerPages) {
        int d = 0;
        for (int i = 0; i < firstNewPageIdx; i++) {
            if (callerPages[i] != cachedPages[i]) {
                d++;
            }
        }
        return d;
    }
}
