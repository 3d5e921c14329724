package io.radixkv.cli;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.QuantRecipe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.stream.Stream;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * Engine options shared by {@code bench}, {@code generate} and {@code serve} (a picocli mixin): model, KV
 * dtype, page size, weights dtype, backend, weight packing.
 */
final class EngineOptions {
    /** The options of this mixin, named in errors the engine detects. */
    static final List<String> NAMES = List.of("--model", "--kv-dtype", "--page-size", "--weights-dtype", "--backend",
            "--pack-weights");

    @Option(names = "--model", paramLabel = "PRESET|DIR|FILE.gguf", defaultValue = "small",
            description = "Built-in model preset (${COMPLETION-CANDIDATES}; random weights), a model directory "
                    + "or a GGUF file (quantized tensors are dequantized at load) (default ${DEFAULT-VALUE}).",
            completionCandidates = Presets.class)
    String model;

    @Option(names = "--kv-dtype", paramLabel = "f32|bf16|f16|fp8", defaultValue = "bf16",
            description = "KV cache element type (default ${DEFAULT-VALUE}).")
    String kvDtype;

    @Option(names = "--page-size", paramLabel = "P", defaultValue = "16", description = "Tokens per KV page (default ${DEFAULT-VALUE}).")
    int pageSize;

    @Option(names = "--weights-dtype", paramLabel = "f32|bf16|f16|q8_0|q4_0|q4_k", defaultValue = "f32",
            description = "Element type the model weights are held in; bf16 runs prefill GEMMs as bf16 matmuls "
                    + "(AMX where present) with bf16-rounded activations; f16 widens the weights to f32 in "
                    + "registers; q8_0, q4_0 and q4_k quantize the f32/bf16/f16 matrices at load with llama.cpp's "
                    + "Q8_0, Q4_0 and Q4_K_M recipes (docs/quantization.md). A GGUF file's quantized tensors stay as "
                    + "stored whatever the value (default ${DEFAULT-VALUE}).")
    String weightsDtype;

    @Option(names = "--backend", paramLabel = "auto|cpu|cuda|java", defaultValue = "auto",
            description = "Kernel backend (default ${DEFAULT-VALUE}).")
    String backend;

    @Option(names = "--pack-weights", paramLabel = "on|off", defaultValue = "on",
            description = "Lay the linear weights out in the CPU kernels' packed layout where they have one (CPUs "
                    + "with AVX-512; bf16 weights also need AVX512-BF16), which decode streams faster (default ${DEFAULT-VALUE}).")
    String packWeights;

    /** The model package's preset names (for help completion and errors). */
    static final class Presets implements Iterable<String> {
        @Override
        public java.util.Iterator<String> iterator() {
            return ModelPresets.names().iterator();
        }
    }

    /** The options after validation. */
    record Validated(String model, DType kvDtype, int pageSize, String backend, DType weightsDtype,
                     boolean packWeights, QuantRecipe weightsQuant) {}

    /** A --weights-dtype value: the dtype of dense matrices and the quantization recipe. */
    record Weights(DType dtype, QuantRecipe recipe) {}

    /** Parses --weights-dtype (f32, bf16, f16, q8_0, q4_0, q4_k); a bad value is a usage error. */
    static Weights weights(CommandSpec spec, String value) {
        String w = CliSupport.requireOneOf(spec, "--weights-dtype", value, "f32", "bf16", "f16", "q8_0", "q4_0", "q4_k");
        QuantRecipe recipe = QuantRecipe.ofWeightsDtype(w);
        // with a recipe, f32: the matrices it leaves dense (rows of no whole block) stay exact
        return recipe != null ? new Weights(DType.F32, recipe) : new Weights(DType.parse(w), QuantRecipe.AS_STORED);
    }

    /** Validates the options; a bad value is a usage error (exit 2) naming the option. */
    Validated validate(CommandSpec spec) {
        DType kv;
        try {
            kv = DType.parse(kvDtype);
        } catch (IllegalArgumentException e) {
            throw CliSupport.invalid(spec, "--kv-dtype", "'" + kvDtype + "'", "expected f32, bf16, f16 or fp8");
        }
        CliSupport.requirePositive(spec, "--page-size", pageSize);
        Weights weights = weights(spec, weightsDtype);
        String be = CliSupport.requireOneOf(spec, "--backend", backend, "auto", "cpu", "cuda", "java");
        boolean pack = CliSupport.requireOneOf(spec, "--pack-weights", packWeights, "on", "off").equals("on");
        if (be.equals("cuda")) {
            String why = Backends.cudaUnavailableReason();
            if (!why.isEmpty()) {
                throw CliSupport.usage(spec, "--backend cuda: " + why);
            }
        }
        String m = model == null ? "" : model.trim();
        if (m.isEmpty()) {
            throw CliSupport.invalid(spec, "--model", "''", "empty");
        }
        List<String> presets = ModelPresets.names();
        if (!presets.contains(m.toLowerCase(Locale.ROOT)) && !Files.isDirectory(Path.of(m))
                && !ModelWeights.isGgufFile(Path.of(m))) {
            throw CliSupport.invalid(spec, "--model", "'" + m + "'", "neither a directory, a .gguf file nor a preset: "
                    + String.join(", ", presets));
        }
        return new Validated(m, kv, pageSize, be, weights.dtype(), pack, weights.recipe());
    }

    /**
     * Builds the configuration and starts the engine. A setting the engine refuses
     * (IllegalArgumentException, its documented answer to an invalid configuration) is a usage
     * error (exit 2) that names the engine options given, with their values.
     *
     * @param moreOptions the command's other options that reach the engine (e.g. --pages)
     */
    static Engine start(CommandSpec spec, Supplier<EngineConfig> config, String... moreOptions) {
        EngineConfig c = check(spec, config, moreOptions);
        try {
            return Engine.start(c);
        } catch (IllegalArgumentException e) {
            throw refused(spec, e, moreOptions);
        }
    }

    /** The configuration, or the usage error of {@link #start} when the engine refuses it. */
    static EngineConfig check(CommandSpec spec, Supplier<EngineConfig> config, String... moreOptions) {
        try {
            return config.get();
        } catch (IllegalArgumentException e) {
            throw refused(spec, e, moreOptions);
        }
    }

    private static RuntimeException refused(CommandSpec spec, IllegalArgumentException e, String... moreOptions) {
        List<String> names = Stream.concat(NAMES.stream(), Stream.of(moreOptions)).toList();
        return CliSupport.usage(spec, "the engine refuses these settings (" + CliSupport.given(spec, names) + "): "
                + Main.oneLine(e.getMessage()));
    }
}
