package io.radixkv.cli;

import io.radixkv.engine.Engine;
import io.radixkv.kernels.DType;
import io.radixkv.model.QuantRecipe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code radixkv generate}: greedy generation for token-id prompts through one engine. */
@Command(name = "generate", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Runs token-id prompts in order through one engine (later prompts hit the prefix cache of earlier "
                    + "ones) and prints 'prompt <i>: <generated ids>' for each, then per-request stats "
                    + "(cached vs computed prompt tokens, TTFT).",
            "--logits FILE.npy writes the logits of each prompt's last position (the first token is chosen from "
                    + "them) as float32, shape [vocab] for one prompt or [prompts, vocab], to compare with other "
                    + "engines."})
final class GenerateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prompt-tokens", required = true, paramLabel = "1,2,3",
            description = "Comma-separated prompt token ids; repeat for several prompts.")
    List<String> promptTokens;

    @Option(names = "--max-tokens", paramLabel = "N", defaultValue = "16",
            description = "Tokens to generate per prompt (default ${DEFAULT-VALUE}).")
    int maxTokens;

    @Option(names = "--prefix-cache", paramLabel = "on|off", defaultValue = "on",
            description = "Prefix cache (default ${DEFAULT-VALUE}).")
    String prefixCache;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0",
            description = "Seed for model weights of built-in models and sampling (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--logits", paramLabel = "FILE.npy",
            description = "Write the last prompt position's logits (float32, [vocab] or [prompts, vocab]) as NumPy .npy.")
    Path logits;

    /** Validated settings; {@code logits} is null without --logits. */
    record Settings(List<int[]> prompts, int maxTokens, boolean prefixCache, String model, DType kvDtype,
                    int pageSize, String backend, long seed, DType weightsDtype, boolean packWeights, QuantRecipe weightsQuant,
                    Path logits) {}

    @Override
    public Integer call() {
        Settings s = settings();
        try (Engine engine = EngineOptions.start(spec, () -> GenerateRunner.engineConfig(s))) {
            GenerateRunner.run(engine, s, spec.commandLine().getOut());
        } catch (GenerateRunner.BadTokenException e) {
            throw CliSupport.usage(spec, "invalid value for --prompt-tokens: " + e.getMessage());
        }
        return Main.EXIT_OK;
    }

    Settings settings() {
        List<int[]> prompts = new ArrayList<>();
        for (String p : promptTokens) {
            prompts.add(CliSupport.parseInts(spec, "--prompt-tokens", p, 0));
        }
        CliSupport.requirePositive(spec, "--max-tokens", maxTokens);
        String pc = CliSupport.requireOneOf(spec, "--prefix-cache", prefixCache, "on", "off");
        EngineOptions.Validated eo = engineOptions.validate(spec);
        CliSupport.requireWritableTarget(spec, "--logits", logits);
        return new Settings(prompts, maxTokens, pc.equals("on"), eo.model(), eo.kvDtype(), eo.pageSize(), eo.backend(), seed,
                eo.weightsDtype(), eo.packWeights(), eo.weightsQuant(), logits);
    }
}
