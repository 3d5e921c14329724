package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The prefix tree at block size 16: page-aligned matching and insertion, and the image page-boundary rule. */
class PagedPrefixTreeTest {

    static final int P = 16;
    static final Namespace NS = Namespace.DEFAULT;

    final List<Integer> freed = new ArrayList<>();
    final AtomicLong clock = new AtomicLong();
    final RadixCache cache = new RadixCache(P, EvictionPolicy.LRU, (p, off, len) -> {
        for (int i = off; i < off + len; i++) {
            freed.add(p[i]);
        }
    }, clock::incrementAndGet);

    /** Tokens for blocks: block b holds ids b*1000 .. b*1000+15. */
    static int[] blocks(int... bs) {
        int[] ids = new int[bs.length * P];
        for (int i = 0; i < bs.length; i++) {
            for (int j = 0; j < P; j++) {
                ids[i * P + j] = bs[i] * 1000 + j;
            }
        }
        return ids;
    }

    static int[] range(int from, int to) {
        return IntStream.range(from, to).toArray();
    }

    @Test
    void emptyTreeMatchesNothing() {
        MatchResult m = cache.match(NS, TokenSequence.ofText(blocks(1, 2)));
        assertEquals(0, m.matchedKvLen());
        assertEquals(0, m.pages().length);
        assertEquals(0, m.matchedTokens());
    }

    @Test
    void insertAndMatchFourBlocks() {
        TokenSequence s = TokenSequence.ofText(blocks(1, 2, 3, 4));
        InsertResult r = cache.insert(NS, s, s.size(), new int[] {40, 41, 42, 43});
        assertEquals(4, r.insertedPages());
        MatchResult m = cache.match(NS, s);
        assertArrayEquals(new int[] {40, 41, 42, 43}, m.pages());
        assertEquals(64, m.matchedKvLen());
        assertEquals(64, m.matchedTokens());
        assertSame(r.node(), m.node());
    }

    @Test
    void partialMatchDivergingAtABlock() {
        cache.insert(NS, TokenSequence.ofText(blocks(1, 2, 3, 4)), 64, new int[] {40, 41, 42, 43});
        MatchResult m = cache.match(NS, TokenSequence.ofText(blocks(1, 2, 8, 9)));
        assertArrayEquals(new int[] {40, 41}, m.pages());
        assertEquals(32, m.matchedTokens());
    }

    @Test
    void divergenceInsideAPageMatchesOnlyWholePages() {
        cache.insert(NS, TokenSequence.ofText(blocks(1, 2, 3, 4)), 64, new int[] {40, 41, 42, 43});
        int[] q = blocks(1, 2, 3, 4);
        q[40] = 7; // inside page 2
        assertEquals(32, cache.peekMatchLength(NS, TokenSequence.ofText(q)));
        MatchResult m = cache.match(NS, TokenSequence.ofText(q));
        assertEquals(32, m.matchedKvLen());
        // inserting the diverging sequence branches at page 2; same first token, different page
        InsertResult r = cache.insert(NS, TokenSequence.ofText(q), 64, new int[] {40, 41, 50, 51});
        assertEquals(2, r.firstNewPageIdx());
        assertEquals(2, r.insertedPages());
        assertEquals(2, ((Node) m.node()).kidCount);
        assertArrayEquals(new int[] {40, 41, 42, 43}, cache.match(NS, TokenSequence.ofText(blocks(1, 2, 3, 4))).pages());
        assertArrayEquals(new int[] {40, 41, 50, 51}, cache.match(NS, TokenSequence.ofText(q)).pages());
    }

    @Test
    void fullBlockAlignedMatch() {
        TokenSequence s = TokenSequence.ofText(blocks(5, 6, 7, 8));
        cache.insert(NS, s, s.size(), range(0, 4));
        MatchResult m = cache.match(NS, s);
        assertEquals(4, m.pages().length);
        assertEquals(64, m.matchedTokens());
        assertEquals(48, RadixCache.reusableKvLength(m.matchedKvLen(), 64, P));
    }

    @Test
    void nonAlignedPromptMatchesWholePagesOnly() {
        int[] ids = range(0, 1060);
        TokenSequence s = TokenSequence.ofText(ids);
        InsertResult r = cache.insert(NS, s, s.size(), range(100, 167));
        assertEquals(66, r.insertedPages()); // the 4-token tail stays private
        MatchResult m = cache.match(NS, s);
        assertEquals(1056, m.matchedKvLen());
        assertEquals(66, m.pages().length);
        assertArrayEquals(range(100, 166), m.pages());
        assertFalse(cache.containsPage(166));
    }

    @Test
    void refcountLifecycle() {
        TokenSequence s = TokenSequence.ofText(blocks(1, 2));
        cache.insert(NS, s, 32, new int[] {1, 2});
        assertEquals(2, cache.evictablePages());
        MatchResult a = cache.matchAndLock(NS, s);
        MatchResult b = cache.matchAndLock(NS, s);
        assertEquals(2, a.node().lockRef());
        assertEquals(0, cache.evictablePages());
        assertEquals(2, cache.protectedPages());
        cache.unlock(a.node());
        assertEquals(1, b.node().lockRef());
        assertEquals(0, cache.evict(10)); // still locked
        cache.unlock(b.node());
        assertEquals(2, cache.evictablePages());
        assertEquals(2, cache.evict(10));
    }

    @Test
    void lruEvictsTheOlderPrefix() {
        TokenSequence s1 = TokenSequence.ofText(blocks(1));
        TokenSequence s2 = TokenSequence.ofText(blocks(2));
        cache.insert(NS, s1, 16, new int[] {1});
        cache.insert(NS, s2, 16, new int[] {2});
        cache.match(NS, s1); // s1 now more recent
        assertEquals(1, cache.evict(1));
        assertEquals(List.of(2), freed);
        assertEquals(16, cache.peekMatchLength(NS, s1));
        assertEquals(0, cache.peekMatchLength(NS, s2));
    }

    @Test
    void cascadingEvictionInOneCall() {
        TokenSequence ab = TokenSequence.ofText(blocks(1, 2));
        cache.insert(NS, ab, 16, new int[] {1}); // [A]
        cache.insert(NS, ab, 32, new int[] {1, 2}); // [A] -> [B]
        assertEquals(2, cache.nodeCount());
        assertEquals(2, cache.evict(2)); // B, then A became a leaf
        assertEquals(List.of(2, 1), freed);
        assertEquals(0, cache.nodeCount());
        assertEquals(0, cache.namespaceCount());
    }

    @Test
    void containsPageAndCachedCount() {
        TokenSequence s = TokenSequence.ofText(blocks(1, 2, 3));
        cache.insert(NS, s, 48, new int[] {7, 8, 9});
        assertTrue(cache.containsPage(8));
        assertFalse(cache.containsPage(10));
        assertEquals(3, cache.cachedPages());
        cache.insert(NS, TokenSequence.ofText(blocks(1, 5)), 32, new int[] {7, 11});
        assertEquals(4, cache.cachedPages());
        cache.evict(100);
        assertFalse(cache.containsPage(8));
        assertEquals(0, cache.cachedPages());
        // a page the cache owns cannot be inserted again (would be a double owner)
        cache.insert(NS, s, 48, new int[] {7, 8, 9});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> cache.insert(NS, TokenSequence.ofText(blocks(4)), 16, new int[] {8}));
        assertTrue(e.getMessage().contains("already owned"), e.getMessage());
        assertEquals(3, cache.cachedPages());
        assertThrows(IllegalArgumentException.class,
                () -> cache.insert(NS, TokenSequence.ofText(blocks(4, 5)), 32, new int[] {20, 20}));
        assertFalse(cache.containsPage(20)); // all-or-nothing
    }

    @Test
    void shortPromptMatchesAndInsertsNothing() {
        TokenSequence s = TokenSequence.ofText(range(0, 15));
        InsertResult r = cache.insert(NS, s, s.size(), new int[] {3});
        assertEquals(0, r.insertedPages());
        assertTrue(r.node().isRoot());
        assertEquals(0, cache.namespaceCount());
        assertEquals(0, cache.match(NS, s).matchedKvLen());
        assertFalse(cache.containsPage(3));
    }

    @Test
    void insertValidatesArguments() {
        TokenSequence s = TokenSequence.ofText(blocks(1, 2));
        assertThrows(IllegalArgumentException.class, () -> cache.insert(NS, s, 32, new int[] {1}));
        assertThrows(IllegalArgumentException.class, () -> cache.insert(NS, s, 33, new int[] {1, 2}));
        assertThrows(IllegalArgumentException.class, () -> cache.insert(NS, s, 32, new int[] {1, -2}));
        assertThrows(IllegalArgumentException.class, () -> cache.insert(null, s, 32, new int[] {1, 2}));
        assertThrows(IllegalArgumentException.class, () -> cache.insert(NS, null, 0, new int[0]));
        assertThrows(IllegalArgumentException.class, () -> cache.evict(-1));
        assertThrows(IllegalArgumentException.class, () -> new RadixCache(0, (p, o, l) -> { }));
        assertEquals(0, cache.namespaceCount());
    }

    @Test
    void chunkedPrefillInsertsIncrementally() {
        int[] ids = range(0, 100);
        TokenSequence s = TokenSequence.ofText(ids);
        int[] pages = range(200, 206);
        InsertResult c1 = cache.insertAndLock(NS, s, 40, pages); // chunk 1: 40 tokens -> 2 pages
        assertEquals(0, c1.firstNewPageIdx());
        assertEquals(2, c1.insertedPages());
        // another request sees the unfinished prefix
        assertEquals(32, cache.peekMatchLength(NS, s));
        InsertResult c2 = cache.insertAndLock(NS, s, 80, pages); // chunk 2: 80 tokens -> 5 pages
        cache.unlock(c1.node());
        assertEquals(2, c2.firstNewPageIdx());
        assertEquals(3, c2.insertedPages());
        InsertResult c3 = cache.insertAndLock(NS, s, 100, pages);
        cache.unlock(c2.node());
        assertEquals(1, c3.insertedPages());
        assertEquals(6, cache.cachedPages());
        assertEquals(1, c3.node().lockRef());
        assertEquals(6, cache.protectedPages());
        assertArrayEquals(pages, cache.match(NS, s).pages());
        cache.unlock(c3.node());
    }

    // ---- images across page boundaries --------------------------------------------------------

    static TokenSequence bosImageText(long hash, int imgKv, int... text) {
        return TokenSequence.builder().text(1).image(0, hash, imgKv).text(text).build();
    }

    @Test
    void imageCutByPageBoundaryMatchesOnlyWithSameImageAndPrefix() {
        // BOS + 40-KV image + 30 text = 71 KV -> 4 pages; page 2 = [32,48) holds image tail + text
        TokenSequence s = bosImageText(5, 40, range(0, 30));
        cache.insert(NS, s, s.size(), new int[] {10, 11, 12, 13});
        // same image, text diverging at KV 45 -> pages 0,1 match (both are entirely BOS + image)
        int[] t2 = range(0, 30);
        t2[4] = 999; // KV 1 + 40 + 4 = 45
        MatchResult m = cache.match(NS, bosImageText(5, 40, t2));
        assertEquals(32, m.matchedKvLen());
        assertEquals(1, m.matchedTokens()); // BOS whole; the image is partially matched
        assertEquals(31, m.partialTokenKv(bosImageText(5, 40, t2)));
        assertEquals(0, RadixCache.tokenAlignedKvLength(bosImageText(5, 40, t2), 32, P));
        // different image: nothing (page 0 holds BOS + first image part)
        assertEquals(0, cache.match(NS, bosImageText(6, 40, range(0, 30))).matchedKvLen());
        // same hash, different KV length: a different token, nothing
        assertEquals(0, cache.match(NS, bosImageText(5, 41, range(0, 29))).matchedKvLen());
        // different prefix before the same image at the same position: nothing
        TokenSequence otherBos = TokenSequence.builder().text(2).image(0, 5, 40).text(range(0, 30)).build();
        assertEquals(0, cache.match(NS, otherBos).matchedKvLen());
        // the same image one position later (different cut) does not match either
        TokenSequence shifted = TokenSequence.builder().text(1, 1).image(0, 5, 40).text(range(0, 29)).build();
        assertEquals(0, cache.match(NS, shifted).matchedKvLen());
        // a prompt that ends inside the image's last page keeps only whole pages
        TokenSequence onlyImage = TokenSequence.builder().text(1).image(0, 5, 40).build(); // 41 KV
        MatchResult mi = cache.match(NS, onlyImage);
        assertEquals(32, mi.matchedKvLen());
        assertArrayEquals(new int[] {10, 11}, mi.pages());
        // full sequence still matches all 4 pages through the split at the image cut
        assertArrayEquals(new int[] {10, 11, 12, 13}, cache.match(NS, s).pages());
    }

    @Test
    void insertingACutImageThenExtendingIt() {
        TokenSequence s = bosImageText(9, 40, range(0, 30)); // 71 KV
        int[] pages = {20, 21, 22, 23};
        // chunk ends inside the image: tokens [BOS, image] = 41 KV -> 2 pages, cut at KV 32
        InsertResult c1 = cache.insert(NS, s, 2, pages);
        assertEquals(2, c1.insertedPages());
        Node n1 = (Node) c1.node();
        assertEquals(2, n1.label.size()); // BOS + partial image
        InsertResult c2 = cache.insert(NS, s, s.size(), pages);
        assertEquals(2, c2.firstNewPageIdx());
        assertEquals(2, c2.insertedPages());
        Node n2 = (Node) c2.node();
        assertEquals(31, n2.head); // the parent already covers 31 of the image's 40 positions (KV 1..31)
        assertEquals(TokenSequence.TokenType.IMAGE, n2.label.type(0));
        assertArrayEquals(pages, cache.match(NS, s).pages());
        // a different continuation after the same image branches under the cut node
        int[] t2 = range(0, 30);
        t2[0] = 777; // KV 41: inside page 2
        TokenSequence s2 = bosImageText(9, 40, t2);
        InsertResult c3 = cache.insert(NS, s2, s2.size(), new int[] {20, 21, 30, 31});
        assertEquals(2, c3.firstNewPageIdx());
        assertEquals(2, n1.kidCount);
        assertArrayEquals(new int[] {20, 21, 30, 31}, cache.match(NS, s2).pages());
        assertArrayEquals(pages, cache.match(NS, s).pages());
    }

    @Test
    void splitInsideAnImageKeepsBothHalvesMatchable() {
        // page size 16, image spans pages 0..3; split the node at page 1 (inside the image)
        TokenSequence s = bosImageText(3, 60, range(0, 19)); // 80 KV, 5 pages
        cache.insert(NS, s, s.size(), new int[] {0, 1, 2, 3, 4});
        TokenSequence shortQ = TokenSequence.builder().text(1).image(0, 3, 60).build(); // 61 KV -> 3 pages
        MatchResult m = cache.match(NS, shortQ);
        assertEquals(48, m.matchedKvLen());
        Node pre = (Node) m.node();
        assertEquals(3, pre.pages.length);
        assertEquals(2, pre.label.size());
        Node[] kid = new Node[1];
        pre.forEachChild(c -> kid[0] = c);
        assertEquals(47, kid[0].head); // KV 48 is image position 47
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, cache.match(NS, s).pages());
        assertEquals(80, cache.peekMatchLength(NS, s));
        assertEquals(Arrays.toString(new int[] {0, 1, 2, 3, 4}), Arrays.toString(cache.match(NS, s).pages()));
    }

    @Test
    void pageSizeOneImagePrefixInsertedUpToTheImageEnd() {
        List<Integer> f = new ArrayList<>();
        RadixCache c1 = new RadixCache(1, (p, off, len) -> { });
        TokenSequence s = bosImageText(4, 10, 5, 6);
        c1.insert(NS, s, s.size(), range(0, 13));
        // chunk that ended inside the image (SGLang inserts unfinished chunks by position)
        RadixCache c2 = new RadixCache(1, (p, off, len) -> f.add(len));
        c2.insert(NS, s, 2, range(0, 11));
        assertEquals(11, c2.peekMatchLength(NS, s));
        assertEquals(13, c1.peekMatchLength(NS, s));
        assertEquals(11, c1.peekMatchLength(NS, TokenSequence.builder().text(1).image(0, 4, 10).text(9).build()));
    }
}
