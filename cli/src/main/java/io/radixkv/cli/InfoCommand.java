package io.radixkv.cli;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.WeightsSummary;
import io.radixkv.platform.LargePages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code radixkv info}: version, backend choice and why, CPU features, CUDA, native library path. */
@Command(name = "info", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Show the version, the kernel backend chosen and why (CPU features, CUDA devices), "
                + "and the native library path.")
final class InfoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--backend", defaultValue = "auto", paramLabel = "auto|cpu|cuda|java",
            description = "Backend to resolve (default: ${DEFAULT-VALUE}).")
    String backend;

    @Option(names = "--model", paramLabel = "PRESET|DIR|FILE.gguf",
            description = "Also load this model and show its weights' formats and bytes per weight.")
    String model;

    @Option(names = "--weights-dtype", paramLabel = "f32|bf16|f16|q8_0|q4_0|q4_k", defaultValue = "f32",
            description = "How --model's weights are held, as for bench and serve (default ${DEFAULT-VALUE}).")
    String weightsDtype;

    @Override
    public Integer call() {
        String choice = CliSupport.requireOneOf(spec, "--backend", backend, "auto", "cpu", "cuda", "java");
        PrintWriter out = spec.commandLine().getOut();
        out.println("radixkv " + Main.version());
        Runtime rt = Runtime.getRuntime();
        out.printf("java: %s (%s), %d CPUs available, max heap %d MiB%n",
                System.getProperty("java.runtime.version"), System.getProperty("java.vm.vendor"),
                rt.availableProcessors(), rt.maxMemory() >> 20);

        Path lib = NativeLibrary.loadCpu(); // throws UnsatisfiedLinkError with the reason
        out.println("native library: " + lib.toAbsolutePath() + " (ABI " + NativeLibrary.abiVersion() + ")");
        out.println("native build: " + Main.oneLine(NativeLibrary.buildInfo()));
        out.println("native threads: " + NativeLibrary.numThreads());
        out.println("host memory: " + LargePages.describe());

        String cudaWhyNot = Backends.cudaUnavailableReason();
        if (cudaWhyNot.isEmpty()) {
            out.println("CUDA: " + cudaDevices());
        } else {
            out.println("CUDA: none (" + Main.oneLine(cudaWhyNot) + ")");
        }
        Optional<Path> cudaLib = NativeLibrary.loadCuda();
        out.println("CUDA library: " + cudaLib.map(p -> p.toAbsolutePath().toString())
                .orElse("not loaded (" + Main.oneLine(NativeLibrary.cudaUnavailableReason()) + ")"));

        try (KernelBackend b = Backends.create(choice)) {
            out.println("backend: " + b.name() + " (requested " + choice + "; " + why(choice, b.name(), cudaWhyNot) + ")");
        }
        if (model != null) {
            printWeights(out, EngineOptions.weights(spec, weightsDtype));
        }
        return Main.EXIT_OK;
    }

    /** Loads --model as the engine would and prints what its weights are held as. */
    private void printWeights(PrintWriter out, EngineOptions.Weights w) {
        String m = model.trim();
        try (ModelWeights weights = ModelPresets.names().contains(m.toLowerCase(Locale.ROOT))
                ? ModelWeights.random(ModelPresets.byName(m), w.dtype(), 0, w.recipe())
                : ModelWeights.load(Path.of(m), w.dtype(), w.recipe())) {
            WeightsSummary s = weights.summary();
            out.printf(Locale.ROOT, "weights: %s, %.4f bytes per weight, %.1f MB streamed per decoded token%n",
                    s.format(), s.bytesPerWeight(), s.decodeBytes() / 1e6);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot load " + m + ": " + e.getMessage(), e);
        }
    }

    private static String why(String choice, String chosen, String cudaWhyNot) {
        if (!choice.equals("auto")) {
            return "chosen explicitly";
        }
        return chosen.equals("cuda") ? "a CUDA device is available"
                : "CUDA unavailable: " + Main.oneLine(cudaWhyNot);
    }

    private static String cudaDevices() {
        try {
            return NativeLibrary.cudaDeviceCount() + " device(s)";
        } catch (RuntimeException e) {
            return "device count failed (" + Main.oneLine(e.getMessage()) + ")";
        } catch (LinkageError e) {
            return "device count unavailable (" + Main.describe(e) + ")";
        }
    }
}
