package io.radixkv.cache;

import java.util.Arrays;

/**
 * An immutable sequence of typed cache tokens, stored in primitive arrays (no object per token).
 *
 * <p>Each token has a discrete cache key and a KV length:
 * <table>
 *   <caption>token types</caption>
 *   <tr><th>type</th><th>key</th><th>KV length</th></tr>
 *   <tr><td>text</td><td>token id (&ge; 0)</td><td>1</td></tr>
 *   <tr><td>coordinate</td><td>bin (0 .. 2^29-1)</td><td>1</td></tr>
 *   <tr><td>size</td><td>(width bin, height bin), each 0 .. 16383</td><td>1</td></tr>
 *   <tr><td>image</td><td>128-bit content hash and KV length</td><td>its KV length (e.g. 729)</td></tr>
 * </table>
 *
 * <p>Encoding: one {@code int} key per token. Text ids are the non-negative ints; the other types
 * live in the negative range with a 2-bit tag, so types never collide. An image key holds a 29-bit
 * fingerprint of (hash, KV length); its exact identity sits in small side arrays (one entry per
 * image) and is compared whenever fingerprints agree, so matching stays exact.
 */
public final class TokenSequence {

    static final int TAG_MASK = 0xE000_0000;
    static final int TAG_COORD = 0x8000_0000;
    static final int TAG_SIZE = 0xA000_0000;
    static final int TAG_IMAGE = 0xC000_0000;
    static final int PAYLOAD_MASK = 0x1FFF_FFFF;
    static final int MAX_SIZE_BIN = (1 << 14) - 1;

    private static final int[] NO_INTS = new int[0];
    private static final long[] NO_LONGS = new long[0];

    /** The type of a cache token. */
    public enum TokenType { TEXT, COORD, SIZE, IMAGE }

    final int[] keys;
    /** Token indices of images, ascending. */
    final int[] imgTok;
    /** (hi, lo) hash per image. */
    final long[] imgHash;
    /** KV length per image. */
    final int[] imgKv;
    /** imgExtra[i] = sum over images 0..i of (kvLen - 1): extra KV positions images add. */
    final int[] imgExtra;
    private final int kvLength;

    TokenSequence(int[] keys, int[] imgTok, long[] imgHash, int[] imgKv) {
        this.keys = keys;
        this.imgTok = imgTok;
        this.imgHash = imgHash;
        this.imgKv = imgKv;
        this.imgExtra = imgKv.length == 0 ? NO_INTS : new int[imgKv.length];
        long extra = 0;
        for (int i = 0; i < imgKv.length; i++) {
            extra += imgKv[i] - 1;
            if (keys.length + extra > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("sequence KV length exceeds 2^31-1");
            }
            imgExtra[i] = (int) extra;
        }
        this.kvLength = keys.length + (int) extra;
    }

    /** A text-only sequence; every id must be &ge; 0. */
    public static TokenSequence ofText(int[] ids) {
        return ofText(ids, 0, ids.length);
    }

    /** A text-only sequence of {@code ids[from, to)}; every id must be &ge; 0. */
    public static TokenSequence ofText(int[] ids, int from, int to) {
        if (ids == null) {
            throw new IllegalArgumentException("ids is null");
        }
        if (from < 0 || to < from || to > ids.length) {
            throw new IllegalArgumentException("bad range [" + from + ", " + to + ") of " + ids.length + " ids");
        }
        for (int i = from; i < to; i++) {
            if (ids[i] < 0) {
                throw new IllegalArgumentException("text token id must be >= 0, got " + ids[i] + " at index " + i);
            }
        }
        return new TokenSequence(Arrays.copyOfRange(ids, from, to), NO_INTS, NO_LONGS, NO_INTS);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Number of tokens. */
    public int size() {
        return keys.length;
    }

    /** Total KV positions of the sequence. */
    public int kvLength() {
        return kvLength;
    }

    /** KV positions of the first {@code tokens} tokens. */
    public int kvLength(int tokens) {
        if (tokens < 0 || tokens > keys.length) {
            throw new IllegalArgumentException("tokens must be in [0, " + keys.length + "], got " + tokens);
        }
        return kvStart(tokens);
    }

    /** KV start of token {@code t} (t may equal size()); unchecked. */
    int kvStart(int t) {
        if (imgTok.length == 0) {
            return t;
        }
        int n = imagesBefore(t);
        return n == 0 ? t : t + imgExtra[n - 1];
    }

    /** Number of images with token index &lt; t. */
    int imagesBefore(int t) {
        int[] a = imgTok;
        if (a.length == 0 || a[0] >= t) {
            return 0;
        }
        int i = Arrays.binarySearch(a, t);
        return i >= 0 ? i : -i - 1;
    }

    /** KV length of token t; unchecked. */
    int tokenKv(int t) {
        if (keys[t] >= 0 || (keys[t] & TAG_MASK) != TAG_IMAGE) {
            return 1;
        }
        return imgKv[Arrays.binarySearch(imgTok, t)];
    }

    /**
     * Index of the token containing KV position {@code kv}, or size() when kv == kvLength();
     * unchecked. The offset inside that token is {@code kv - kvStart(result)}.
     */
    int tokenAtKv(int kv) {
        if (imgTok.length == 0 || kv >= kvLength) {
            return kv >= kvLength ? keys.length : kv;
        }
        // last image starting at or before kv
        int lo = 0, hi = imgTok.length - 1, best = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int start = imgTok[mid] + (mid == 0 ? 0 : imgExtra[mid - 1]);
            if (start <= kv) {
                best = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (best < 0) {
            return kv;
        }
        int start = imgTok[best] + (best == 0 ? 0 : imgExtra[best - 1]);
        int end = start + imgKv[best];
        return kv < end ? imgTok[best] : imgTok[best] + 1 + (kv - end);
    }

    /**
     * The cache key of every KV position in {@code [fromKv, toKv)}: a text token's id, another
     * token's typed key (repeated over every position of an image).
     */
    public int[] kvKeys(int fromKv, int toKv) {
        if (fromKv < 0 || toKv < fromKv || toKv > kvLength) {
            throw new IllegalArgumentException("bad KV range [" + fromKv + ", " + toKv + ") of " + kvLength);
        }
        if (imgTok.length == 0) {
            return Arrays.copyOfRange(keys, fromKv, toKv);
        }
        int[] out = new int[toKv - fromKv];
        for (int kv = fromKv; kv < toKv; kv++) {
            out[kv - fromKv] = keys[tokenAtKv(kv)];
        }
        return out;
    }

    /** Type of token {@code i}. */
    public TokenType type(int i) {
        checkIndex(i);
        int k = keys[i];
        if (k >= 0) {
            return TokenType.TEXT;
        }
        return switch (k & TAG_MASK) {
            case TAG_COORD -> TokenType.COORD;
            case TAG_SIZE -> TokenType.SIZE;
            default -> TokenType.IMAGE;
        };
    }

    /** Text id of token {@code i} (must be a text token). */
    public int textId(int i) {
        checkIndex(i);
        if (keys[i] < 0) {
            throw new IllegalArgumentException("token " + i + " is " + type(i) + ", not TEXT");
        }
        return keys[i];
    }

    /** Image hash of token {@code i} (must be an image token). */
    public Hash128 imageHash(int i) {
        int j = imageIndex(i);
        return new Hash128(imgHash[2 * j], imgHash[2 * j + 1]);
    }

    /** KV length of token {@code i}. */
    public int tokenKvLength(int i) {
        checkIndex(i);
        return tokenKv(i);
    }

    private int imageIndex(int i) {
        checkIndex(i);
        int j = Arrays.binarySearch(imgTok, i);
        if (j < 0) {
            throw new IllegalArgumentException("token " + i + " is " + type(i) + ", not IMAGE");
        }
        return j;
    }

    private void checkIndex(int i) {
        if (i < 0 || i >= keys.length) {
            throw new IllegalArgumentException("token index must be in [0, " + keys.length + "), got " + i);
        }
    }

    /** Tokens {@code [from, to)} as a new sequence. */
    public TokenSequence subSequence(int from, int to) {
        if (from < 0 || to < from || to > keys.length) {
            throw new IllegalArgumentException("bad range [" + from + ", " + to + ") of " + keys.length + " tokens");
        }
        return slice(from, to);
    }

    /** Unchecked copy of tokens [from, to). */
    TokenSequence slice(int from, int to) {
        int[] k = Arrays.copyOfRange(keys, from, to);
        if (imgTok.length == 0) {
            return new TokenSequence(k, NO_INTS, NO_LONGS, NO_INTS);
        }
        int a = imagesBefore(from), b = imagesBefore(to);
        if (a == b) {
            return new TokenSequence(k, NO_INTS, NO_LONGS, NO_INTS);
        }
        int[] it = new int[b - a];
        for (int i = 0; i < it.length; i++) {
            it[i] = imgTok[a + i] - from;
        }
        return new TokenSequence(k, it, Arrays.copyOfRange(imgHash, 2 * a, 2 * b),
                Arrays.copyOfRange(imgKv, a, b));
    }

    /**
     * Number of leading equal tokens of {@code a[aFrom, aFrom+len)} and {@code b[bFrom, bFrom+len)}
     * (keys, and exact image identity where keys are images).
     */
    static int commonPrefix(TokenSequence a, int aFrom, TokenSequence b, int bFrom, int len) {
        int m = Arrays.mismatch(a.keys, aFrom, aFrom + len, b.keys, bFrom, bFrom + len);
        int eq = m < 0 ? len : m;
        if (a.imgTok.length == 0 || eq == 0) {
            return eq;
        }
        // verify exact identity of images inside the equal range
        int i = a.imagesBefore(aFrom);
        int end = a.imagesBefore(aFrom + eq);
        for (; i < end; i++) {
            int ta = a.imgTok[i];
            int tb = ta - aFrom + bFrom;
            int j = Arrays.binarySearch(b.imgTok, tb);
            if (j < 0 || a.imgHash[2 * i] != b.imgHash[2 * j] || a.imgHash[2 * i + 1] != b.imgHash[2 * j + 1]
                    || a.imgKv[i] != b.imgKv[j]) {
                return ta - aFrom;
            }
        }
        return eq;
    }

    /**
     * Number of tokens from token {@code t} (whose first {@code off} KV positions are already
     * consumed) needed to cover {@code kv} more KV positions; unchecked, assumes they exist.
     */
    int tokensCovering(int t, int off, int kv) {
        if (imgTok.length == 0) {
            return kv;
        }
        int end = kvStart(t) + off + kv; // exclusive KV end
        int last = tokenAtKv(end - 1);
        return last - t + 1;
    }

    /** Hash of {@code count} keys from token t (child index of a page's first tokens). */
    int hashKeys(int t, int count) {
        int h = 0x9E3779B9;
        int[] k = keys;
        for (int i = t, e = t + count; i < e; i++) {
            h = (h ^ k[i]) * 0x01000193;
            h ^= h >>> 15;
        }
        return h;
    }

    /** Builds mixed sequences: text, coordinate bins, size bins and images. */
    public static final class Builder {
        private int[] keys = new int[16];
        private int n;
        private int[] imgTok = NO_INTS;
        private long[] imgHash = NO_LONGS;
        private int[] imgKv = NO_INTS;
        private int nImg;

        private Builder() {
        }

        private void add(int key) {
            if (n == keys.length) {
                keys = Arrays.copyOf(keys, Math.max(16, n * 2));
            }
            keys[n++] = key;
        }

        public Builder text(int id) {
            if (id < 0) {
                throw new IllegalArgumentException("text token id must be >= 0, got " + id);
            }
            add(id);
            return this;
        }

        public Builder text(int... ids) {
            for (int id : ids) {
                text(id);
            }
            return this;
        }

        public Builder coord(int bin) {
            if (bin < 0 || bin > PAYLOAD_MASK) {
                throw new IllegalArgumentException("coord bin must be in [0, " + PAYLOAD_MASK + "], got " + bin);
            }
            add(TAG_COORD | bin);
            return this;
        }

        public Builder size(int widthBin, int heightBin) {
            if (widthBin < 0 || widthBin > MAX_SIZE_BIN || heightBin < 0 || heightBin > MAX_SIZE_BIN) {
                throw new IllegalArgumentException("size bins must be in [0, " + MAX_SIZE_BIN + "], got ("
                        + widthBin + ", " + heightBin + ")");
            }
            add(TAG_SIZE | (widthBin << 14) | heightBin);
            return this;
        }

        public Builder image(Hash128 hash, int kvLength) {
            if (hash == null) {
                throw new IllegalArgumentException("image hash is null");
            }
            return image(hash.hi(), hash.lo(), kvLength);
        }

        public Builder image(long hashHi, long hashLo, int kvLength) {
            if (kvLength < 1) {
                throw new IllegalArgumentException("image KV length must be >= 1, got " + kvLength);
            }
            if (nImg == imgKv.length) {
                int cap = Math.max(4, nImg * 2);
                imgTok = Arrays.copyOf(imgTok, cap);
                imgKv = Arrays.copyOf(imgKv, cap);
                imgHash = Arrays.copyOf(imgHash, 2 * cap);
            }
            imgTok[nImg] = n;
            imgKv[nImg] = kvLength;
            imgHash[2 * nImg] = hashHi;
            imgHash[2 * nImg + 1] = hashLo;
            nImg++;
            long f = hashHi * 0x9E3779B97F4A7C15L ^ Long.rotateLeft(hashLo * 0xC2B2AE3D27D4EB4FL, 31)
                    ^ kvLength * 0x165667B19E3779F9L;
            f ^= f >>> 29;
            add(TAG_IMAGE | ((int) f & PAYLOAD_MASK));
            return this;
        }

        /** Appends all tokens of {@code seq} (e.g. a previous turn). */
        public Builder append(TokenSequence seq) {
            int imgI = 0;
            for (int t = 0; t < seq.keys.length; t++) {
                if (imgI < seq.imgTok.length && seq.imgTok[imgI] == t) {
                    image(seq.imgHash[2 * imgI], seq.imgHash[2 * imgI + 1], seq.imgKv[imgI]);
                    imgI++;
                } else {
                    add(seq.keys[t]);
                }
            }
            return this;
        }

        public TokenSequence build() {
            return new TokenSequence(Arrays.copyOf(keys, n), Arrays.copyOf(imgTok, nImg),
                    Arrays.copyOf(imgHash, 2 * nImg), Arrays.copyOf(imgKv, nImg));
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenSequence s && s.keys.length == keys.length
                && commonPrefix(this, 0, s, 0, keys.length) == keys.length;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(keys);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("TokenSequence[").append(keys.length).append(" tokens, ")
                .append(kvLength).append(" KV:");
        for (int i = 0; i < Math.min(keys.length, 16); i++) {
            sb.append(' ');
            switch (type(i)) {
                case TEXT -> sb.append(keys[i]);
                case COORD -> sb.append("c").append(keys[i] & PAYLOAD_MASK);
                case SIZE -> sb.append("s").append((keys[i] >>> 14) & MAX_SIZE_BIN).append('x').append(keys[i] & MAX_SIZE_BIN);
                case IMAGE -> sb.append("img(").append(tokenKv(i)).append(')');
            }
        }
        return sb.append(keys.length > 16 ? " ...]" : "]").toString();
    }
}
