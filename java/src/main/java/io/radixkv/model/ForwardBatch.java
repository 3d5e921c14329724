package io.radixkv.model;

import io.radixkv.kernels.Checks;
import io.radixkv.kernels.PageTableCsr;
import java.lang.foreign.MemorySegment;

/**
 * One model step over a mixed batch (prefill chunks and decode tokens), the engine's
 * contract with {@link LlamaModel#forward}. All segments are host memory.
 *
 * <p>Rows are grouped by sequence: sequence b owns token rows {@code qoIndptr[b] ..
 * qoIndptr[b+1])}, its new tokens, which are the last {@code q_len} tokens of the sequence
 * whose pages {@code kv} lists (the page table already includes the new tokens). A token's
 * position is its index in its sequence and its slot is where its K/V goes:
 * {@code page * pageSize + offset} of that position's page.
 *
 * @param tokenIds int32[numTokens]
 * @param positions int32[numTokens]
 * @param numTokens new tokens in this step (rows)
 * @param slotMapping int64[numTokens] cache slot of every new token
 * @param qoIndptr int32[batch + 1] row ranges per sequence
 * @param kv page table of the batch, including the new tokens
 * @param logitRows int32[numLogitRows] rows whose next-token logits are wanted (usually each
 *     sequence's last new token when it finishes its prompt or decodes)
 * @param numLogitRows rows of logits to produce
 */
public record ForwardBatch(MemorySegment tokenIds, MemorySegment positions, int numTokens, MemorySegment slotMapping,
                           MemorySegment qoIndptr, PageTableCsr kv, MemorySegment logitRows, int numLogitRows) {
    public ForwardBatch {
        Checks.requirePositive("numTokens", numTokens);
        Checks.requireNonNegative("numLogitRows", numLogitRows);
        if (kv == null) {
            throw new IllegalArgumentException("kv page table must not be null");
        }
        Checks.requireBytes("tokenIds", tokenIds, 4L * numTokens);
        Checks.requireBytes("positions", positions, 4L * numTokens);
        Checks.requireBytes("slotMapping", slotMapping, 8L * numTokens);
        Checks.requireBytes("qoIndptr", qoIndptr, 4L * (kv.batchSize() + 1));
        if (numLogitRows > 0) {
            Checks.requireBytes("logitRows", logitRows, 4L * numLogitRows);
        }
    }

    /** Number of sequences. */
    public int batchSize() {
        return kv.batchSize();
    }
}
