package io.radixkv.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;

/**
 * One sequence's distinct tokens of prompt and output, each with its count in the output: what
 * the repetition, presence and frequency penalties read; and the output in order, whose end the
 * bad words are matched against. The entries are {@code (token,
 * output_count)} int32 pairs in native memory, radixkv.h's {@code rkv_token_count}, which the
 * sampler reads in place.
 *
 * <p>Why kept per sequence: a step then updates one entry per sampled token and hands the
 * sampler a pointer, so nothing proportional to the prompt is copied or counted per step
 * (passing prompt + output ids per row would copy and count every token of every row each
 * step). The native sampler still visits each distinct token once per step, which it must to
 * apply the penalties.
 *
 * <p>Engine thread only. The memory is freed by the GC with the object.
 */
public final class TokenCounts {
    private static final long ENTRY = 8;

    private final Map<Integer, Integer> index = new HashMap<>();
    private MemorySegment entries;
    private int size;
    private int[] output = new int[16]; // the output in order (bad words match its end)
    private int outputLength;

    /** The prompt's distinct tokens, each with output count 0. */
    public TokenCounts(int[] prompt) {
        entries = Arena.ofAuto().allocate(ENTRY * Math.max(16, Integer.highestOneBit(prompt.length) * 2L), 4);
        for (int t : prompt) {
            entry(t);
        }
    }

    /** Counts one generated token. */
    public void add(int token) {
        if (outputLength == output.length) {
            output = java.util.Arrays.copyOf(output, 2 * outputLength);
        }
        output[outputLength++] = token;
        int i = entry(token);
        long at = i * ENTRY + 4;
        entries.set(ValueLayout.JAVA_INT, at, entries.get(ValueLayout.JAVA_INT, at) + 1);
    }

    private int entry(int token) {
        Integer i = index.get(token);
        if (i != null) {
            return i;
        }
        if ((size + 1) * ENTRY > entries.byteSize()) {
            MemorySegment bigger = Arena.ofAuto().allocate(entries.byteSize() * 2, 4);
            bigger.copyFrom(entries);
            entries = bigger;
        }
        entries.set(ValueLayout.JAVA_INT, size * ENTRY, token);
        entries.set(ValueLayout.JAVA_INT, size * ENTRY + 4, 0);
        index.put(token, size);
        return size++;
    }

    /** Distinct tokens. */
    public int size() {
        return size;
    }

    public int token(int i) {
        return entries.get(ValueLayout.JAVA_INT, i * ENTRY);
    }

    public int outputCount(int i) {
        return entries.get(ValueLayout.JAVA_INT, i * ENTRY + 4);
    }

    /** Tokens generated so far. */
    public int outputLength() {
        return outputLength;
    }

    /** The {@code i}-th generated token. */
    public int outputToken(int i) {
        return output[java.util.Objects.checkIndex(i, outputLength)];
    }

    /** The {@link #size()} entries as {@code rkv_token_count}s; valid until the next {@link #add}. */
    public MemorySegment entries() {
        return entries;
    }
}
