package io.radixkv.kvtier;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.LoraIdentity;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/**
 * The LoRA adapter behind a namespace, for the events ({@code lora_id}, {@code lora_name}) and the
 * tier's keys. A block hash names an adapter page's adapter only by name (as vLLM's does, so a
 * router computes it from the name); the tier keys an adapter page by its block hash and the
 * adapter's content hash, so weights reloaded under the same name never fetch the old weights'
 * pages, while replicas that load the same files share them. Thread-safe.
 */
final class AdapterKeys {
    private volatile Function<String, LoraIdentity> lookup = name -> null;

    /** The engine's adapter lookup ({@link io.radixkv.engine.KvExtension#adapters}). */
    void lookup(Function<String, LoraIdentity> l) {
        lookup = l;
    }

    /** The adapter of {@code ns}, or null for the base model or an adapter the engine does not know. */
    LoraIdentity of(Namespace ns) {
        return ns == null || ns.loraId() == null ? null : lookup.apply(ns.loraId());
    }

    /**
     * The hash a page of {@code ns} is stored under in the tier: the block hash for the base model,
     * {@code sha256(block hash || adapter sha256)} for an adapter's page, and null (not stored, not
     * fetched) for an adapter whose content is unknown.
     */
    byte[] tierHash(Namespace ns, byte[] blockHash) {
        if (ns == null || ns.loraId() == null) {
            return blockHash;
        }
        LoraIdentity a = lookup.apply(ns.loraId());
        if (a == null) {
            return null;
        }
        byte[] content = a.sha256().getBytes(StandardCharsets.US_ASCII);
        byte[] both = new byte[blockHash.length + content.length];
        System.arraycopy(blockHash, 0, both, 0, blockHash.length);
        System.arraycopy(content, 0, both, blockHash.length, content.length);
        return BlockHasher.sha256(both);
    }
}
