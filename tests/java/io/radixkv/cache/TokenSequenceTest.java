package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class TokenSequenceTest {

    @Test
    void textSequenceLengths() {
        TokenSequence s = TokenSequence.ofText(new int[] {5, 6, 7, 8}, 1, 3);
        assertEquals(2, s.size());
        assertEquals(2, s.kvLength());
        assertEquals(6, s.textId(0));
        assertEquals(TokenSequence.TokenType.TEXT, s.type(1));
    }

    @Test
    void mixedSequenceKvAccounting() {
        Hash128 h = new Hash128(1, 2);
        TokenSequence s = TokenSequence.builder().text(1).image(h, 729).text(2, 3).coord(17).size(3, 4).build();
        assertEquals(6, s.size());
        assertEquals(1 + 729 + 4, s.kvLength());
        assertEquals(0, s.kvLength(0));
        assertEquals(1, s.kvLength(1));
        assertEquals(730, s.kvLength(2));
        assertEquals(731, s.kvLength(3));
        assertEquals(734, s.kvLength(6));
        assertEquals(h, s.imageHash(1));
        assertEquals(729, s.tokenKvLength(1));
        assertEquals(TokenSequence.TokenType.IMAGE, s.type(1));
        assertEquals(TokenSequence.TokenType.COORD, s.type(4));
        assertEquals(TokenSequence.TokenType.SIZE, s.type(5));
        // KV position -> token
        assertEquals(0, s.tokenAtKv(0));
        assertEquals(1, s.tokenAtKv(1));
        assertEquals(1, s.tokenAtKv(729));
        assertEquals(2, s.tokenAtKv(730));
        assertEquals(5, s.tokenAtKv(733));
        assertEquals(6, s.tokenAtKv(734));
    }

    @Test
    void typesNeverCollide() {
        // same small number as text id, coord bin, and size bins
        TokenSequence text = TokenSequence.builder().text(3).build();
        TokenSequence coord = TokenSequence.builder().coord(3).build();
        TokenSequence size = TokenSequence.builder().size(0, 3).build();
        TokenSequence img = TokenSequence.builder().image(0, 3, 1).build();
        TokenSequence[] all = {text, coord, size, img};
        for (int i = 0; i < all.length; i++) {
            for (int j = 0; j < all.length; j++) {
                if (i != j) {
                    assertNotEquals(all[i], all[j], i + " vs " + j);
                }
            }
        }
        // images differing only in KV length or in one hash half are different tokens
        assertNotEquals(TokenSequence.builder().image(1, 2, 729).build(), TokenSequence.builder().image(1, 2, 730).build());
        assertNotEquals(TokenSequence.builder().image(1, 2, 729).build(), TokenSequence.builder().image(1, 3, 729).build());
        assertNotEquals(TokenSequence.builder().image(1, 2, 729).build(), TokenSequence.builder().image(0, 2, 729).build());
        assertEquals(TokenSequence.builder().image(1, 2, 729).build(), TokenSequence.builder().image(1, 2, 729).build());
    }

    @Test
    void imagesWithEqualFingerprintStillCompareExactly() {
        // find two different images with the same 29-bit fingerprint: then only the side data differs
        java.util.HashMap<Integer, Long> seen = new java.util.HashMap<>();
        long a = -1, b = -1;
        for (long lo = 0; lo < 2_000_000 && a < 0; lo++) {
            int key = TokenSequence.builder().image(7, lo, 5).build().keys[0];
            Long prev = seen.putIfAbsent(key, lo);
            if (prev != null) {
                a = prev;
                b = lo;
            }
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(a >= 0, "no fingerprint collision found");
        TokenSequence x = TokenSequence.builder().text(1).image(7, a, 5).text(2).build();
        TokenSequence y = TokenSequence.builder().text(1).image(7, b, 5).text(2).build();
        assertEquals(x.keys[1], y.keys[1]);
        assertEquals(1, TokenSequence.commonPrefix(x, 0, y, 0, 3));
        assertNotEquals(x, y);
    }

    @Test
    void subSequenceKeepsImages() {
        TokenSequence s = TokenSequence.builder().text(1).image(9, 9, 10).text(2).image(8, 8, 4).text(3).build();
        TokenSequence sub = s.subSequence(1, 4);
        assertEquals(3, sub.size());
        assertEquals(10 + 1 + 4, sub.kvLength());
        assertEquals(new Hash128(8, 8), sub.imageHash(2));
        assertEquals(s.subSequence(1, 4), TokenSequence.builder().image(9, 9, 10).text(2).image(8, 8, 4).build());
        TokenSequence appended = TokenSequence.builder().append(s).text(4).build();
        assertEquals(s, appended.subSequence(0, s.size()));
    }

    @Test
    void badInputIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> TokenSequence.ofText(new int[] {1, -2}));
        assertThrows(IllegalArgumentException.class, () -> TokenSequence.ofText(new int[] {1}, 0, 2));
        assertThrows(IllegalArgumentException.class, () -> TokenSequence.builder().coord(-1));
        assertThrows(IllegalArgumentException.class, () -> TokenSequence.builder().size(1 << 14, 0));
        assertThrows(IllegalArgumentException.class, () -> TokenSequence.builder().image(1, 1, 0));
        TokenSequence s = TokenSequence.ofText(new int[] {1, 2});
        assertThrows(IllegalArgumentException.class, () -> s.kvLength(3));
        assertThrows(IllegalArgumentException.class, () -> s.subSequence(1, 0));
        assertThrows(IllegalArgumentException.class, () -> s.imageHash(0));
        assertThrows(IllegalArgumentException.class, () -> s.type(2));
    }
}
