package io.radixkv.cache;

import java.util.HexFormat;

/**
 * A 128-bit content hash (e.g. the first 16 bytes of an image's SHA-256). Used as the identity
 * of an image cache token and as the optional image component of a {@link Namespace}. 128 bits
 * keep accidental collisions negligible (~1e-20 at a million entries).
 */
public record Hash128(long hi, long lo) {

    /** The first 16 bytes of {@code digest} (big-endian), e.g. of a SHA-256 digest. */
    public static Hash128 ofBytes(byte[] digest) {
        if (digest == null || digest.length < 16) {
            throw new IllegalArgumentException("digest must have at least 16 bytes, got "
                    + (digest == null ? "null" : digest.length));
        }
        long hi = 0, lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = (hi << 8) | (digest[i] & 0xFF);
            lo = (lo << 8) | (digest[i + 8] & 0xFF);
        }
        return new Hash128(hi, lo);
    }

    @Override
    public String toString() {
        return HexFormat.of().toHexDigits(hi) + HexFormat.of().toHexDigits(lo);
    }
}
