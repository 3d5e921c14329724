package io.radixkv.kvtier;

import java.io.IOException;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * vLLM's KV cache events ({@code vllm/distributed/kv_events.py}), encoded as msgspec encodes its
 * array-like structs: the tag (the class name) first, then the fields in declaration order, fields
 * with defaults left out, e.g.
 * {@code ["BlockStored", [hashes], parent, [token ids], block_size, lora_id, medium, lora_name]}.
 * Block hashes are vLLM's int form (unsigned 64-bit, see {@link BlockHasher#external}).
 */
sealed interface KvEvent {

    void pack(MessageBufferPacker p) throws IOException;

    /**
     * @param loraId   the adapter's number ({@link io.radixkv.engine.LoraIdentity#id}), null for the base model
     * @param loraName the adapter's name (the block hash's first extra key), null for the base model
     */
    record BlockStored(long[] blockHashes, Long parentBlockHash, int[] tokenIds, int blockSize, Long loraId,
                       String medium, String loraName) implements KvEvent {
        @Override
        public void pack(MessageBufferPacker p) throws IOException {
            p.packArrayHeader(8);
            p.packString("BlockStored");
            packHashes(p, blockHashes);
            if (parentBlockHash == null) {
                p.packNil();
            } else {
                packHash(p, parentBlockHash);
            }
            p.packArrayHeader(tokenIds.length);
            for (int t : tokenIds) {
                p.packInt(t);
            }
            p.packInt(blockSize);
            if (loraId == null) {
                p.packNil();
            } else {
                p.packLong(loraId);
            }
            packNullable(p, medium);
            packNullable(p, loraName);
        }
    }

    record BlockRemoved(long[] blockHashes, String medium) implements KvEvent {
        @Override
        public void pack(MessageBufferPacker p) throws IOException {
            p.packArrayHeader(3);
            p.packString("BlockRemoved");
            packHashes(p, blockHashes);
            packNullable(p, medium);
        }
    }

    record AllBlocksCleared() implements KvEvent {
        @Override
        public void pack(MessageBufferPacker p) throws IOException {
            p.packArrayHeader(1);
            p.packString("AllBlocksCleared");
        }
    }

    /** A {@code KVEventBatch}: {@code [ts (float seconds), [events], data_parallel_rank]}. */
    static byte[] encodeBatch(double ts, List<KvEvent> events, int dataParallelRank) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(ts);
            p.packArrayHeader(events.size());
            for (KvEvent e : events) {
                e.pack(p);
            }
            p.packInt(dataParallelRank);
            return p.toByteArray();
        }
    }

    private static void packHashes(MessageBufferPacker p, long[] hashes) throws IOException {
        p.packArrayHeader(hashes.length);
        for (long h : hashes) {
            packHash(p, h);
        }
    }

    /** An unsigned 64-bit hash: msgpack uint64 (a positive int for any decoder). */
    private static void packHash(MessageBufferPacker p, long h) throws IOException {
        if (h >= 0) {
            p.packLong(h);
        } else {
            p.packBigInteger(new java.math.BigInteger(Long.toUnsignedString(h)));
        }
    }

    private static void packNullable(MessageBufferPacker p, String s) throws IOException {
        if (s == null) {
            p.packNil();
        } else {
            p.packString(s);
        }
    }
}
