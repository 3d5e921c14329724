package io.radixkv.cli;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.kernels.select.Backends;
import io.radixkv.platform.LargePages;
import java.io.PrintWriter;
import java.nio.file.Path;
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
        return Main.EXIT_OK;
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
