package io.radixkv.example;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.SamplingParams;
import java.util.Arrays;

/** radixkv as a library: one engine, the same prompt twice; the second run reuses the cached prefix. */
public final class GenerateExample {
    public static void main(String[] args) {
        // "tiny" is a preset with random weights: the tokens are meaningless, the mechanics are real.
        EngineConfig config = EngineConfig.builder()
                .model("tiny").kvDtype("bf16").pageSize(16).prefixCache(true).build();
        int[] promptIds = new int[64];
        Arrays.setAll(promptIds, i -> 1 + i);
        try (Engine engine = Engine.start(config)) {
            for (String id : new String[] {"first", "second"}) {
                GenerateRequest request = new GenerateRequest(id, promptIds, SamplingParams.greedy(8));
                RequestResult r = engine.submit(request, token -> { }).result().join();
                System.out.println(id + ": tokens " + Arrays.toString(r.outputTokens())
                        + ", finish " + r.reason()
                        + ", cached prompt tokens " + r.stats().cachedPromptTokens()
                        + " of " + r.stats().promptTokens());
            }
        }
    }
}
