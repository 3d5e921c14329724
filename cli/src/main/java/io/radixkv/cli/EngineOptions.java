package io.radixkv.cli;

import io.radixkv.kernels.Backends;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** Engine options shared by {@code bench} and {@code generate} (a picocli mixin): model, KV dtype, page size, weights dtype, backend. */
final class EngineOptions {
    @Option(names = "--model", paramLabel = "PRESET|DIR", defaultValue = "small",
            description = "Built-in model (tiny, small, llama-3.2-3b, qwen3-4b, gemma-3-1b) or a Hugging Face model directory (default ${DEFAULT-VALUE}).")
    String model;

    @Option(names = "--kv-dtype", paramLabel = "f32|bf16|f16|fp8", defaultValue = "bf16",
            description = "KV cache element type (default ${DEFAULT-VALUE}).")
    String kvDtype;

    @Option(names = "--page-size", paramLabel = "P", defaultValue = "16", description = "Tokens per KV page (default ${DEFAULT-VALUE}).")
    int pageSize;

    @Option(names = "--weights-dtype", paramLabel = "f32|bf16", defaultValue = "f32",
            description = "Element type the model weights are held in; bf16 runs prefill GEMMs as bf16 matmuls "
                    + "(AMX where present) with bf16-rounded activations (default ${DEFAULT-VALUE}).")
    String weightsDtype;

    @Option(names = "--backend", paramLabel = "auto|cpu|cuda|java", defaultValue = "auto",
            description = "Kernel backend (default ${DEFAULT-VALUE}).")
    String backend;

    /** The options after validation. */
    record Validated(String model, DType kvDtype, int pageSize, String backend, DType weightsDtype) {}

    /** Validates the options; a bad value is a usage error (exit 2) naming the option. */
    Validated validate(CommandSpec spec) {
        DType kv;
        try {
            kv = DType.parse(kvDtype);
        } catch (IllegalArgumentException e) {
            throw CliSupport.usage(spec, "invalid value for --kv-dtype: '" + kvDtype + "' (expected f32, bf16, f16 or fp8)");
        }
        CliSupport.requirePositive(spec, "--page-size", pageSize);
        DType wd = DType.parse(CliSupport.requireOneOf(spec, "--weights-dtype", weightsDtype, "f32", "bf16"));
        String be = CliSupport.requireOneOf(spec, "--backend", backend, "auto", "cpu", "cuda", "java");
        if (be.equals("cuda")) {
            String why = Backends.cudaUnavailableReason();
            if (!why.isEmpty()) {
                throw CliSupport.usage(spec, "--backend cuda: " + why);
            }
        }
        String m = model == null ? "" : model.trim();
        if (m.isEmpty()) {
            throw CliSupport.usage(spec, "invalid value for --model: empty");
        }
        if (!ModelPresets.names().contains(m.toLowerCase(Locale.ROOT)) && !Files.isDirectory(Path.of(m))) {
            throw CliSupport.usage(spec, "invalid value for --model: '" + m + "' is neither a preset "
                    + ModelPresets.names() + " nor a directory");
        }
        return new Validated(m, kv, pageSize, be, wd);
    }
}
