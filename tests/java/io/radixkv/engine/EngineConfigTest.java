package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Configuration validation: every bad setting is refused with a message naming it. */
@Timeout(value = 180, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineConfigTest {
    private static void refused(UnaryOperator<EngineConfig.Builder> change, String... words) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> change.apply(EngineConfig.builder()).build());
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), "message '" + e.getMessage() + "' should mention " + w);
        }
    }

    @Test
    void rangesAreChecked() {
        refused(b -> b.pageSize(0), "pageSize", "0");
        refused(b -> b.pageSize(4096), "pageSize", "4096");
        refused(b -> b.numPages(-1), "numPages");
        refused(b -> b.numPages(0).kvCacheBytes(0), "kvCacheBytes");
        refused(b -> b.maxRunning(0), "maxRunning");
        refused(b -> b.maxRunning(64).maxBatchTokens(32), "maxBatchTokens", "32", "64");
        refused(b -> b.maxBatchTokens(1 << 20), "maxBatchTokens", "65536");
        refused(b -> b.backend("tpu"), "backend", "tpu");
        refused(b -> b.model(" "), "model");
        refused(b -> b.kvDtype(DType.F32).kvScale(2f), "kvScale");
        refused(b -> b.decodeReserveFraction(1.5), "decodeReserveFraction");
        refused(b -> b.maxSeqLen(-3), "maxSeqLen");
        refused(b -> b.weightsDtype(DType.FP8_E4M3), "weightsDtype", "fp8_e4m3");
        EngineConfig ok = EngineConfig.builder().kvDtype("fp8_e4m3").kvScale(0.5f).build();
        assertEquals(ok, ok.toBuilder().build());
    }

    @Test
    void poolAndModelAreCheckedTogether() {
        // tiny: 2 layers x 2 KV heads x 16 dims; a 16-token bf16 page takes 2*2*16*2*16*2 = 4096 bytes
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EngineTestSupport.start(
                EngineTestSupport.tiny(16, DType.BF16, true, 0).kvCacheBytes(4000).build()));
        assertTrue(e.getMessage().contains("kvCacheBytes 4000") && e.getMessage().contains("4096 bytes"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> EngineTestSupport.start(
                EngineTestSupport.tiny(16, DType.F32, true, 64).maxSeqLen(100_000).build()));
        assertTrue(e.getMessage().contains("maxSeqLen 100000"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Engine.start(
                EngineTestSupport.tiny(16, DType.F32, true, 64).model("no/such/dir").build()));
        assertTrue(e.getMessage().contains("no/such/dir"), e.getMessage());
        try (Engine en = EngineTestSupport.start(EngineTestSupport.tiny(16, DType.BF16, true, 0)
                .kvCacheBytes(10 * 4096 + 100).build())) {
            assertEquals(10, en.numPages(), "pages derived from the byte budget");
        }
    }
}
