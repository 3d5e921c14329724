package io.radixkv.kvtier;

import com.fasterxml.jackson.dataformat.cbor.CBORFactory;
import com.fasterxml.jackson.dataformat.cbor.CBORGenerator;
import io.radixkv.cache.Namespace;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Chained per-page block hashes, computed exactly as vLLM's {@code hash_block_tokens} with its
 * {@code sha256_cbor} hash function, so a router that knows the seed computes the same hashes from a
 * prompt:
 *
 * <pre>
 *   NONE_HASH   = sha256(cbor(seed))                      (seed: vLLM's PYTHONHASHSEED, a string)
 *   hash(page)  = sha256(cbor([parent_hash or NONE_HASH, [token ids of the page], extra_keys]))
 *   extra_keys  = null, or [lora name?, image hash hex?, cache salt (first page only)?]
 *   external id = low 64 bits of the hash, big-endian (vLLM's VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES)
 * </pre>
 *
 * cbor is canonical CBOR (definite lengths, shortest integers), as Python's
 * {@code cbor2.dumps(obj, canonical=True)} writes it. vLLM puts the LoRA name first and the cache salt
 * in the first block only; radixkv's namespace image hash (a per-tree key vLLM has no counterpart for)
 * sits between them as a hex string. Algorithms: {@code sha256_cbor} (vLLM's default for prefix
 * caching) only; other names are refused (xxhash needs a native library; pickle-based sha256
 * cannot be reproduced outside Python).
 */
public final class BlockHasher {
    private static final CBORFactory CBOR = new CBORFactory();

    private final String algorithm;
    private final String seed;
    private final byte[] noneHash;

    /**
     * @param algorithm only {@code sha256_cbor} (vLLM's {@code --prefix-caching-hash-algo})
     * @param seed      vLLM's {@code PYTHONHASHSEED} value (every replica and the router must agree)
     */
    public BlockHasher(String algorithm, String seed) {
        Objects.requireNonNull(algorithm, "algorithm");
        this.algorithm = algorithm.toLowerCase(Locale.ROOT);
        if (!this.algorithm.equals("sha256_cbor")) {
            throw new IllegalArgumentException("hash algorithm must be sha256_cbor, got " + algorithm);
        }
        this.seed = Objects.requireNonNull(seed, "seed");
        this.noneHash = sha256(cbor(g -> g.writeString(seed)));
    }

    public String algorithm() {
        return algorithm;
    }

    public String seed() {
        return seed;
    }

    /** The parent hash of every sequence's first page. */
    public byte[] noneHash() {
        return noneHash.clone();
    }

    /**
     * The hash of a page holding {@code tokens[from, from + count)}.
     *
     * @param parent    the previous page's hash, or null for the first page
     * @param firstPage whether this is the sequence's first page (the cache salt is keyed there only)
     */
    public byte[] hash(byte[] parent, int[] tokens, int from, int count, Namespace ns, boolean firstPage) {
        List<String> extra = extraKeys(ns, firstPage);
        byte[] p = parent == null ? noneHash : parent;
        return sha256(cbor(g -> {
            g.writeStartArray(null, 3);
            g.writeBinary(p);
            g.writeStartArray(null, count);
            for (int i = from; i < from + count; i++) {
                g.writeNumber(tokens[i]);
            }
            g.writeEndArray();
            if (extra.isEmpty()) {
                g.writeNull();
            } else {
                g.writeStartArray(null, extra.size());
                for (String s : extra) {
                    g.writeString(s);
                }
                g.writeEndArray();
            }
            g.writeEndArray();
        }));
    }

    /** The chained hashes of the first {@code pages} full pages of {@code tokens}. */
    public byte[][] chain(Namespace ns, int[] tokens, int pageSize, int pages) {
        if (pages < 0 || (long) pages * pageSize > tokens.length) {
            throw new IllegalArgumentException(pages + " pages of " + pageSize + " need more than " + tokens.length
                    + " tokens");
        }
        byte[][] out = new byte[pages][];
        byte[] parent = null;
        for (int i = 0; i < pages; i++) {
            parent = out[i] = hash(parent, tokens, i * pageSize, pageSize, ns, i == 0);
        }
        return out;
    }

    /** vLLM's int form of a block hash: the hash's low 64 bits, big-endian, as an unsigned long. */
    public static long external(byte[] hash) {
        long v = 0;
        for (int i = hash.length - 8; i < hash.length; i++) {
            v = (v << 8) | (hash[i] & 0xFF);
        }
        return v;
    }

    private static List<String> extraKeys(Namespace ns, boolean firstPage) {
        List<String> extra = new ArrayList<>(3);
        if (ns != null) {
            if (ns.loraId() != null) {
                extra.add(ns.loraId());
            }
            if (ns.imageHash() != null) {
                extra.add(ns.imageHash().toString());
            }
            if (firstPage && ns.cacheSalt() != null && !ns.cacheSalt().isEmpty()) {
                extra.add(ns.cacheSalt());
            }
        }
        return extra;
    }

    @FunctionalInterface
    private interface Writer {
        void write(CBORGenerator g) throws IOException;
    }

    private static byte[] cbor(Writer w) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try (CBORGenerator g = CBOR.createGenerator(out)) {
            w.write(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
    }
}
