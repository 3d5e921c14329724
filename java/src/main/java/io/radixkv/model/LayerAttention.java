package io.radixkv.model;

/**
 * The attention kind of one decoder layer: global (every earlier key) or a sliding window,
 * and the RoPE table the layer uses.
 *
 * @param slidingWindow 0 for global attention; W &gt; 0: a query at position q sees the keys
 *     {@code q - W < k <= q} (W keys counting itself), as transformers' sliding masks do
 * @param rope the layer's rotary embedding
 */
public record LayerAttention(int slidingWindow, RopeSpec rope) {
    public LayerAttention {
        if (slidingWindow < 0) {
            throw new IllegalArgumentException("slidingWindow must be >= 0 (0 = global), got " + slidingWindow);
        }
        if (rope == null) {
            throw new IllegalArgumentException("rope must not be null");
        }
    }

    public static LayerAttention global(RopeSpec rope) {
        return new LayerAttention(0, rope);
    }

    public boolean sliding() {
        return slidingWindow > 0;
    }

    /** FlashInfer's {@code window_left} for this layer: W - 1, or -1 for global attention. */
    public int windowLeft() {
        return slidingWindow > 0 ? slidingWindow - 1 : -1;
    }
}
