package io.radixkv.cache;

/**
 * Selects a separate radix tree: KV computed under one namespace is never matched from another.
 *
 * <ul>
 *   <li>{@code loraId}: the LoRA adapter that produced the KV ({@code null} = base model). Different
 *       adapters produce different KV for the same tokens.
 *   <li>{@code cacheSalt}: tenant isolation (vLLM's {@code cache_salt}); a shared cache otherwise
 *       leaks, through time-to-first-token, whether another tenant sent the same prefix.
 *   <li>{@code imageHash}: for models whose text KV depends on the image (the same tokens after a
 *       different image have different KV, even a BOS token),
 *       each image gets its own tree; {@code null} when not needed.
 * </ul>
 * Empty namespace trees are pruned by the cache, so high-cardinality namespaces cost nothing once
 * their pages are evicted.
 */
public record Namespace(String loraId, String cacheSalt, Hash128 imageHash) {

    /** Base model, no salt, no image: the tree most requests share. */
    public static final Namespace DEFAULT = new Namespace(null, null, null);

    public Namespace(String loraId, String cacheSalt) {
        this(loraId, cacheSalt, null);
    }

    public static Namespace ofLora(String loraId) {
        return new Namespace(loraId, null, null);
    }

    public static Namespace ofSalt(String cacheSalt) {
        return new Namespace(null, cacheSalt, null);
    }

    public Namespace withImage(Hash128 hash) {
        return new Namespace(loraId, cacheSalt, hash);
    }
}
