package io.radixkv.kernels;

/**
 * Shape of one layer's K (or V) pool: {@code [numPages, pageSize, numKvHeads, headDim]}
 * elements of {@code cacheDtype} (FlashInfer NHD). A token's slot is
 * {@code page * pageSize + offset}.
 */
public record PagedKvLayout(DType cacheDtype, long numPages, int pageSize, int numKvHeads, int headDim) {
    public PagedKvLayout {
        Checks.requireDtype("cacheDtype", cacheDtype);
        Checks.requireNonNegative("numPages", numPages);
        Checks.requirePositive("pageSize", pageSize);
        Checks.requirePositive("numKvHeads", numKvHeads);
        Checks.requirePositive("headDim", headDim);
    }

    /** Elements of one token's K (or V) row over all KV heads. */
    public long tokenElements() {
        return (long) numKvHeads * headDim;
    }

    public long tokenBytes() {
        return tokenElements() * cacheDtype.bytes();
    }

    public long pageElements() {
        return pageSize * tokenElements();
    }

    /** Bytes of one page in one pool (K or V). */
    public long pageBytes() {
        return pageElements() * cacheDtype.bytes();
    }

    /** Bytes of one pool (K or V). */
    public long poolBytes() {
        return Math.multiplyExact(numPages, pageBytes());
    }

    /** Number of token slots (numPages * pageSize). */
    public long slots() {
        return numPages * pageSize;
    }
}
