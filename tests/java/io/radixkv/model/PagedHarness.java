package io.radixkv.model;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * Test scaffolding standing in for the engine: sequences with pages drawn from a shuffled
 * pool (so page tables are not contiguous), and the construction of a {@link ForwardBatch}
 * for "append these tokens to these sequences".
 */
final class PagedHarness implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final PagedKvLayout layout;
    final List<KvCacheView> caches = new ArrayList<>();
    private final List<Integer> freePages = new ArrayList<>();

    static final class Seq {
        final List<Integer> tokens = new ArrayList<>();
        final List<Integer> pages = new ArrayList<>();

        int[] tokenArray() {
            return tokens.stream().mapToInt(Integer::intValue).toArray();
        }
    }

    /** A built step: the batch, its logits buffer, and for each logit row the (sequence, position) it predicts after. */
    record Step(ForwardBatch batch, MemorySegment logits, List<Seq> rowSeqs, int[] rowPositions) {}

    PagedHarness(ModelConfig c, DType cacheDtype, int numPages, int pageSize, long seed) {
        this(c, cacheDtype, numPages, pageSize, seed, null);
    }

    /** With the KV pools in {@code poolMemory} (a backend's, e.g. device memory; null: this harness's host arena). */
    PagedHarness(ModelConfig c, DType cacheDtype, int numPages, int pageSize, long seed, BackendMemory poolMemory) {
        layout = new PagedKvLayout(cacheDtype, numPages, pageSize, c.kvHeads(), c.headDim());
        for (int l = 0; l < c.layers(); l++) {
            MemorySegment k = poolMemory == null ? arena.allocate(layout.poolBytes(), 64)
                    : poolMemory.allocate(layout.poolBytes());
            MemorySegment v = poolMemory == null ? arena.allocate(layout.poolBytes(), 64)
                    : poolMemory.allocate(layout.poolBytes());
            caches.add(KvCacheView.of(k, v, layout));
        }
        for (int p = 0; p < numPages; p++) {
            freePages.add(p);
        }
        Collections.shuffle(freePages, new Random(seed));
    }

    /** Appends {@code newTokens[i]} to {@code seqs[i]} (pages grow as needed); logits for each sequence's last new token. */
    Step step(List<Seq> seqs, List<int[]> newTokens, int vocab) {
        int batch = seqs.size();
        int total = newTokens.stream().mapToInt(a -> a.length).sum();
        int ps = layout.pageSize();
        MemorySegment ids = arena.allocate(4L * total);
        MemorySegment pos = arena.allocate(4L * total);
        MemorySegment slots = arena.allocate(8L * total);
        MemorySegment qo = arena.allocate(4L * (batch + 1));
        MemorySegment indptr = arena.allocate(4L * (batch + 1));
        MemorySegment lastLen = arena.allocate(4L * batch);
        List<Integer> indices = new ArrayList<>();
        List<Seq> rowSeqs = new ArrayList<>();
        List<Integer> logitRows = new ArrayList<>();
        List<Integer> rowPos = new ArrayList<>();
        int row = 0;
        for (int s = 0; s < batch; s++) {
            Seq seq = seqs.get(s);
            qo.setAtIndex(ValueLayout.JAVA_INT, s, row);
            indptr.setAtIndex(ValueLayout.JAVA_INT, s, indices.size());
            for (int tok : newTokens.get(s)) {
                int p = seq.tokens.size();
                if (p / ps >= seq.pages.size()) {
                    seq.pages.add(freePages.removeFirst());
                }
                seq.tokens.add(tok);
                ids.setAtIndex(ValueLayout.JAVA_INT, row, tok);
                pos.setAtIndex(ValueLayout.JAVA_INT, row, p);
                slots.setAtIndex(ValueLayout.JAVA_LONG, row, (long) seq.pages.get(p / ps) * ps + p % ps);
                row++;
            }
            if (newTokens.get(s).length > 0) {
                logitRows.add(row - 1);
                rowSeqs.add(seq);
                rowPos.add(seq.tokens.size() - 1);
            }
            indices.addAll(seq.pages);
            int len = seq.tokens.size();
            lastLen.setAtIndex(ValueLayout.JAVA_INT, s, len == 0 ? 0 : (len - 1) % ps + 1);
        }
        qo.setAtIndex(ValueLayout.JAVA_INT, batch, row);
        indptr.setAtIndex(ValueLayout.JAVA_INT, batch, indices.size());
        MemorySegment kvIndices = arena.allocate(4L * Math.max(1, indices.size()));
        for (int i = 0; i < indices.size(); i++) {
            kvIndices.setAtIndex(ValueLayout.JAVA_INT, i, indices.get(i));
        }
        MemorySegment lr = arena.allocate(4L * Math.max(1, logitRows.size()));
        for (int i = 0; i < logitRows.size(); i++) {
            lr.setAtIndex(ValueLayout.JAVA_INT, i, logitRows.get(i));
        }
        PageTableCsr table = new PageTableCsr(indptr, kvIndices, lastLen, batch);
        ForwardBatch b = new ForwardBatch(ids, pos, total, slots, qo, table, lr, logitRows.size());
        MemorySegment logits = arena.allocate(4L * Math.max(1, logitRows.size()) * vocab, 64);
        return new Step(b, logits, rowSeqs, rowPos.stream().mapToInt(Integer::intValue).toArray());
    }

    /** A snapshot of every pool's bytes (to prove a rejected step changed nothing). */
    byte[] poolBytes() {
        var out = new java.io.ByteArrayOutputStream();
        for (KvCacheView c : caches) {
            out.writeBytes(c.kCache().toArray(ValueLayout.JAVA_BYTE));
            out.writeBytes(c.vCache().toArray(ValueLayout.JAVA_BYTE));
        }
        return out.toByteArray();
    }

    @Override
    public void close() {
        arena.close();
    }
}
