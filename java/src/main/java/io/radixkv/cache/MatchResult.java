package io.radixkv.cache;

/**
 * Result of {@link RadixCache#match}.
 *
 * @param pages         cache-owned page ids covering KV positions {@code [0, matchedKvLen)}, one per
 *                      page (with page size 1, one per KV position). The caller maps them, never
 *                      writes into them, and must hold a lock (see {@link RadixCache}) while using them.
 * @param matchedKvLen  matched KV positions; a multiple of the page size
 * @param matchedTokens number of whole tokens inside {@code [0, matchedKvLen)}. When the match ends
 *                      inside an image, that image (token {@code matchedTokens}) is partially
 *                      matched: {@link #partialTokenKv()} of its KV positions are cached.
 * @param node          the last matched node (the namespace root when nothing matched)
 */
public record MatchResult(int[] pages, int matchedKvLen, int matchedTokens, NodeRef node) {

    /** KV positions of a partially matched image at the end of the match (0 when token-aligned). */
    public int partialTokenKv(TokenSequence seq) {
        return matchedKvLen - seq.kvLength(matchedTokens);
    }

    public boolean isHit() {
        return matchedKvLen > 0;
    }
}
