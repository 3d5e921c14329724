package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A request longer than the sequence limit is rejected at submit, naming both lengths. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EngineSequenceLimitTest {
    private static RequestResult get(RequestHandle h) throws Exception {
        return h.result().get(60, TimeUnit.SECONDS);
    }

    /**
     * The sequence limit is exact, not rounded up to whole pages: tiny allows 8192 positions;
     * at 1000 tokens a page the page table holds 9000.
     */
    @Test
    void sequenceLimitIsExactWithLargePages() throws Exception {
        SplittableRandom rnd = new SplittableRandom(16);
        EngineConfig cfg = EngineTestSupport.tiny(1000, DType.F32, true, 12).maxBatchTokens(1024).build();
        try (Engine e = EngineTestSupport.start(cfg)) {
            int[] prompt = randomTokens(rnd, 8192);
            RequestHandle h = e.submit(new GenerateRequest("long", prompt, SamplingParams.greedy(4)));
            assertTrue(h.isDone(), "rejected at submit, not in the forward pass");
            RequestResult r = get(h);
            assertEquals(FinishReason.REJECTED, r.reason(), r.toString());
            assertTrue(r.error().contains("8195") && r.error().contains("8192"), r.error());

            int[] over = randomTokens(rnd, 8500);
            RequestResult r2 = get(e.submit(new GenerateRequest("over", over, SamplingParams.greedy(1))));
            assertEquals(FinishReason.REJECTED, r2.reason(), r2.toString());
            assertTrue(r2.error().contains("8500") && r2.error().contains("8192"), r2.error());
            e.checkInvariants(true);
        }
        // a limit below the model's: exactly maxSeqLen KV positions fit (1498 + 3 - 1 = 1500), one more does not
        EngineConfig exact = EngineTestSupport.tiny(1000, DType.F32, true, 12).maxBatchTokens(1024).maxSeqLen(1500)
                .build();
        try (Engine e = EngineTestSupport.start(exact)) {
            RequestResult ok = get(e.submit(new GenerateRequest("fits", randomTokens(rnd, 1498),
                    SamplingParams.greedy(3))));
            assertTrue(ok.ok(), ok.toString());
            RequestResult no = get(e.submit(new GenerateRequest("no", randomTokens(rnd, 1499),
                    SamplingParams.greedy(3))));
            assertEquals(FinishReason.REJECTED, no.reason(), no.toString());
            assertTrue(no.error().contains("1501") && no.error().contains("1500"), no.error());
            e.checkInvariants(true);
        }
    }
}
