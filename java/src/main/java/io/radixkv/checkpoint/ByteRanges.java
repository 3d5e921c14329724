package io.radixkv.checkpoint;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToLongFunction;

/** Checks that the byte ranges of a file's tensors do not overlap (empty ranges are ignored). */
public final class ByteRanges {
    private ByteRanges() {}

    /** What to say about two overlapping entries. */
    @FunctionalInterface
    public interface Overlap<T> {
        /** The error for {@code later} (the higher offset) overlapping {@code earlier}. */
        CheckpointException error(T later, T earlier);
    }

    /** Throws {@code overlap}'s error for the first pair of entries, by offset, whose ranges overlap. */
    public static <T> void checkDisjoint(Collection<T> entries, ToLongFunction<T> offset, ToLongFunction<T> bytes,
                                         Overlap<T> overlap) throws CheckpointException {
        List<T> byOffset = new ArrayList<>(entries);
        byOffset.removeIf(t -> bytes.applyAsLong(t) == 0);
        byOffset.sort(Comparator.comparingLong(offset));
        for (int i = 1; i < byOffset.size(); i++) {
            T a = byOffset.get(i - 1);
            T b = byOffset.get(i);
            if (offset.applyAsLong(b) < offset.applyAsLong(a) + bytes.applyAsLong(a)) {
                throw overlap.error(b, a);
            }
        }
    }
}
