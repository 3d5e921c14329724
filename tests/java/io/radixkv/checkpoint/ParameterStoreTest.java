package io.radixkv.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.platform.LargePages;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ParameterStoreTest {
    /** A small model's blocks: matrices under 2 MiB, norms, a large one and an alias. */
    private static List<ParamSpec> blocks() {
        List<ParamSpec> p = new ArrayList<>();
        ParamSpec embed = ParamSpec.of("embed", DType.BF16, 1000, 768);
        p.add(embed);
        for (int l = 0; l < 3; l++) {
            p.add(ParamSpec.of(l + ".qkv", DType.BF16, 1280, 768));
            p.add(ParamSpec.of(l + ".o", DType.BF16, 768, 768));
            p.add(ParamSpec.of(l + ".norm", DType.F32, 7)); // 28 bytes: the next block is padded to 64
        }
        p.add(ParamSpec.tied("lm_head", embed));
        return p;
    }

    /**
     * Every block is a 64-byte aligned slice of one slab, in declaration order with no more than
     * the alignment between them: blocks under 2 MiB then share the slab's huge pages (as separate
     * allocations they sat on 4 KiB pages, and decode streamed them 1.2x slower).
     */
    @Test
    void blocksAreAlignedSlicesOfOneSlab() {
        for (boolean zeroed : new boolean[] {true, false}) {
            List<ParamSpec> params = blocks();
            try (ParameterStore s = zeroed ? ParameterStore.allocate(params) : ParameterStore.allocateUninitialized(params)) {
                long end = -1;
                long total = 0;
                for (ParamSpec p : params) {
                    MemorySegment seg = s.get(p.name());
                    if (p.tiedTo() != null) {
                        assertSame(s.get(p.tiedTo()), seg, p.name());
                        continue;
                    }
                    assertEquals(p.bytes(), seg.byteSize(), p.name());
                    assertEquals(0, seg.address() % 64, p.name() + " is not 64-byte aligned");
                    if (end >= 0) {
                        assertEquals((end + 63) & -64L, seg.address(), p.name() + " does not follow the previous block");
                    }
                    end = seg.address() + seg.byteSize();
                    total += p.bytes();
                }
                assertEquals(total, s.bytes());
                if (zeroed) {
                    for (ParamSpec p : params) {
                        MemorySegment seg = s.get(p.name());
                        for (long i = 0; i < seg.byteSize(); i += 4093) {
                            assertEquals(0, seg.get(ValueLayout.JAVA_BYTE, i), p.name() + " is not zeroed at " + i);
                        }
                    }
                }
            }
        }
    }

    /** A slab of at least 2 MiB starts on a huge page boundary where large pages are mapped. */
    @Test
    void slabStartsOnAHugePage() {
        List<ParamSpec> params = blocks();
        try (ParameterStore s = ParameterStore.allocateUninitialized(params)) {
            assertTrue(s.bytes() >= LargePages.HUGE_PAGE);
            if (LargePages.enabled()) {
                assertEquals(0, s.get("embed").address() % LargePages.HUGE_PAGE);
            }
        }
    }
}
