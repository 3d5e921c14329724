package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_bench_h;
import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.NativeException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Loads radixkv's native libraries. The directory comes from the system property
 * {@code radixkv.native.dir}; without it the libraries are extracted from the jar
 * (resources {@code radixkv-native/linux-x86_64/}) into a temporary directory.
 *
 * <p>Libraries are loaded with {@link System#load}, so jextract's generated bindings find
 * their symbols through {@code SymbolLookup.loaderLookup()}. Load failures name the path
 * tried and the dynamic loader's reason (which {@code SymbolLookup} would hide).
 */
public final class NativeLibrary {
    private static final Logger LOG = LogManager.getLogger(NativeLibrary.class);
    public static final String DIR_PROPERTY = "radixkv.native.dir";
    private static final String RESOURCE_DIR = "/radixkv-native/linux-x86_64/";

    private static Path cpuLibraryPath;
    private static Path benchLibraryPath;
    private static Path extractedDir;
    private static boolean cudaAttempted;
    private static Optional<Path> cudaLibraryPath = Optional.empty();
    private static String cudaUnavailableReason = "not attempted";

    private NativeLibrary() {}

    /** Loads libradixkv (once) and returns its path. Throws {@link UnsatisfiedLinkError} with the reason. */
    public static synchronized Path loadCpu() {
        if (cpuLibraryPath == null) {
            Path p = locate("libradixkv.so");
            load(p);
            requireAbi("libradixkv", p, radixkv_h.rkv_abi_version());
            cpuLibraryPath = p;
            LOG.debug("loaded {}", p);
        }
        return cpuLibraryPath;
    }

    /**
     * Loads libradixkv_bench (once, with libradixkv) and returns its path: the benchmarks'
     * yardsticks (radixkv_bench.h), which only benchmarks and the CLI's bandwidth check need.
     * Throws {@link UnsatisfiedLinkError} with the reason.
     */
    public static synchronized Path loadBench() {
        if (benchLibraryPath == null) {
            loadCpu();
            Path p = locate("libradixkv_bench.so");
            load(p);
            requireAbi("libradixkv_bench", p, radixkv_bench_h.rkv_bench_abi_version());
            benchLibraryPath = p;
            LOG.debug("loaded {}", p);
        }
        return benchLibraryPath;
    }

    /**
     * Loads libradixkv_cuda if it was built and can be loaded; on failure returns empty and
     * records the reason ({@link #cudaUnavailableReason()}).
     */
    public static synchronized Optional<Path> loadCuda() {
        if (!cudaAttempted) {
            cudaAttempted = true;
            loadCpu();
            try {
                Path p = locate("libradixkv_cuda.so");
                load(p);
                requireAbi("libradixkv_cuda", p, radixkv_h.rkv_cuda_abi_version());
                cudaLibraryPath = Optional.of(p);
                cudaUnavailableReason = "";
            } catch (UnsatisfiedLinkError e) {
                cudaUnavailableReason = e.getMessage();
            }
        }
        return cudaLibraryPath;
    }

    public static synchronized String cudaUnavailableReason() {
        return cudaUnavailableReason;
    }

    /**
     * Loads the CUDA runtime shared library (for Java-owned device memory through the
     * cudart bindings). Tries {@code radixkv.cudart.path}, CUDA_HOME and the usual toolkit paths.
     */
    public static synchronized Path loadCudart() {
        List<Path> candidates = new ArrayList<>();
        String prop = System.getProperty("radixkv.cudart.path");
        if (prop != null) {
            candidates.add(Path.of(prop));
        }
        String home = System.getenv("CUDA_HOME");
        if (home != null) {
            candidates.add(Path.of(home, "lib64", "libcudart.so"));
            candidates.add(Path.of(home, "lib", "libcudart.so"));
        }
        candidates.add(Path.of("/usr/local/cuda/lib64/libcudart.so"));
        candidates.add(Path.of("/usr/local/cuda/lib/libcudart.so"));
        candidates.add(Path.of("/usr/lib/x86_64-linux-gnu/libcudart.so"));
        StringBuilder why = new StringBuilder();
        for (Path c : candidates) {
            if (!Files.exists(c)) {
                why.append("\n  ").append(c).append(": no such file");
                continue;
            }
            try {
                load(c);
                return c;
            } catch (UnsatisfiedLinkError e) {
                why.append("\n  ").append(e.getMessage());
            }
        }
        throw new UnsatisfiedLinkError("libcudart.so could not be loaded; tried:" + why);
    }

    /** A library built against another radixkv.h than the bindings' fails to load, naming both versions. */
    static void requireAbi(String library, Path p, int abi) {
        if (abi != radixkv_h.RKV_ABI_VERSION()) {
            throw new UnsatisfiedLinkError(library + " at " + p + " has ABI version " + abi
                    + " but the Java bindings expect " + radixkv_h.RKV_ABI_VERSION() + "; rebuild");
        }
    }

    private static void load(Path p) {
        if (!Files.isRegularFile(p)) {
            throw new UnsatisfiedLinkError("cannot load " + p + ": no such file");
        }
        try {
            System.load(p.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError e) {
            // System.load's message carries dlerror(): keep it, add the path.
            throw new UnsatisfiedLinkError("cannot load " + p + ": " + e.getMessage());
        }
    }

    private static Path locate(String fileName) {
        String dir = System.getProperty(DIR_PROPERTY);
        if (dir != null && !dir.isBlank()) {
            Path p = Path.of(dir).resolve(fileName);
            if (!Files.isRegularFile(p)) {
                throw new UnsatisfiedLinkError("cannot load " + fileName + ": " + p
                        + " does not exist (from -D" + DIR_PROPERTY + "=" + dir + ")");
            }
            return p;
        }
        String resource = RESOURCE_DIR + fileName;
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("cannot load " + fileName + ": not found as jar resource "
                        + resource + " and -D" + DIR_PROPERTY + " is not set");
            }
            if (extractedDir == null) {
                extractedDir = Files.createTempDirectory("radixkv-native");
                extractedDir.toFile().deleteOnExit();
            }
            Path out = extractedDir.resolve(fileName);
            Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
            out.toFile().deleteOnExit();
            return out;
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot extract " + resource + ": " + e);
        }
    }

    /** rkv_last_error() of libradixkv as a Java string. */
    public static String lastError() {
        MemorySegment s = radixkv_h.rkv_last_error();
        return s.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /** Build and CPU description from libradixkv. */
    public static String buildInfo() {
        loadCpu();
        return radixkv_h.rkv_build_info().reinterpret(Long.MAX_VALUE).getString(0);
    }

    /** The "model name" of /proc/cpuinfo, or "unknown" where there is none (benchmarks print it beside {@link #buildInfo}). */
    public static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: no model name
        }
        return "unknown";
    }

    /**
     * A downcall through a method handle of {@link #critical}: {@code invokeExact} needs the exact
     * signature at the call site, so the caller writes it as a lambda and {@link #call} does the rest.
     */
    @FunctionalInterface
    interface Downcall {
        int invoke() throws Throwable;
    }

    /**
     * Downcall handle that skips the thread-state transition ({@code Linker.Option.critical(true)},
     * heap segments accepted): for kernels that run for at most milliseconds and never block.
     */
    static MethodHandle critical(MemorySegment address, FunctionDescriptor descriptor) {
        return Linker.nativeLinker().downcallHandle(address, descriptor, Linker.Option.critical(true));
    }

    /**
     * Runs a libradixkv downcall and checks its status: a negative status becomes a
     * {@link NativeException} naming {@code function}; an Error or RuntimeException from the
     * handle propagates as is, any other Throwable (none is declared by the handles) is wrapped.
     */
    static int call(String function, Downcall downcall) {
        int status;
        try {
            status = downcall.invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(function + ": downcall failed", t);
        }
        return check(function, status);
    }

    /** Throws {@link NativeException} when a libradixkv call returned a negative status. */
    public static int check(String function, int status) {
        if (status < 0) {
            throw new NativeException(function, status, lastError());
        }
        return status;
    }

    /** Throws {@link NativeException} when a libradixkv_bench call returned a negative status. */
    static int checkBench(String function, int status) {
        if (status < 0) {
            throw new NativeException(function, status,
                    radixkv_bench_h.rkv_bench_last_error().reinterpret(Long.MAX_VALUE).getString(0));
        }
        return status;
    }

    /** The C ABI version libradixkv reports ({@code rkv_abi_version}). */
    public static int abiVersion() {
        loadCpu();
        return radixkv_h.rkv_abi_version();
    }

    /** Threads the native kernels run on for the calling thread ({@code rkv_get_num_threads}). */
    public static int numThreads() {
        loadCpu();
        return radixkv_h.rkv_get_num_threads();
    }

    /** CUDA devices visible to libradixkv_cuda; throws {@link NativeException} with the reason when none can be counted. */
    public static int cudaDeviceCount() {
        if (loadCuda().isEmpty()) {
            throw new IllegalStateException("libradixkv_cuda not loaded: " + cudaUnavailableReason());
        }
        int n = radixkv_h.rkv_cuda_device_count();
        if (n < 0) {
            throw new NativeException("rkv_cuda_device_count", n,
                    radixkv_h.rkv_cuda_last_error().reinterpret(Long.MAX_VALUE).getString(0));
        }
        return n;
    }
}
