package io.radixkv.checkpoint;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Off-heap blocks that are not zero-filled, from the C library's {@code aligned_alloc} and
 * freed by {@code free} when the owning {@link Arena} closes. {@link Arena#allocate} zero-fills
 * on one thread, which costs as much as the load itself for blocks that are then overwritten
 * entirely; here the first touch happens in the (parallel) writes that fill the block.
 */
final class UninitializedMemory {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle ALIGNED_ALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().find("aligned_alloc").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    private static final MethodHandle FREE = LINKER.downcallHandle(LINKER.defaultLookup().find("free").orElseThrow(),
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private UninitializedMemory() {}

    /** {@code bytes} (> 0) of uninitialised memory aligned to {@code alignment}, freed when {@code arena} closes. */
    static MemorySegment allocate(Arena arena, long bytes, long alignment) {
        long rounded = Math.ceilDiv(bytes, alignment) * alignment; // aligned_alloc wants a multiple of the alignment
        MemorySegment p;
        try {
            p = (MemorySegment) ALIGNED_ALLOC.invokeExact(alignment, rounded);
        } catch (Throwable t) {
            throw new IllegalStateException("aligned_alloc failed", t);
        }
        if (p.equals(MemorySegment.NULL)) {
            throw new OutOfMemoryError("cannot allocate " + bytes + " bytes");
        }
        return p.reinterpret(bytes, arena, UninitializedMemory::free);
    }

    private static void free(MemorySegment p) {
        try {
            FREE.invokeExact(p);
        } catch (Throwable t) {
            throw new IllegalStateException("free failed", t);
        }
    }
}
