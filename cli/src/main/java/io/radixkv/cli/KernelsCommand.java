package io.radixkv.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.kernels.select.Backends;
import io.radixkv.platform.LargePages;
import io.radixkv.platform.LastLevelCache;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code radixkv kernels}: scatter, fp8 and decode attention GB/s against read and copy bandwidth. */
@Command(name = "kernels", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Short bandwidth check: memory read and copy bandwidth (native baselines, same threads as the kernels), "
                    + "then KV scatter (reshape_and_cache), fp8 quantize and decode attention in GB/s with their ratio "
                    + "(attention against read bandwidth, the others against copy bandwidth).",
            "Bytes counted are bytes read + written; buffers are sized to twice the last-level cache. "
                    + "The JMH benchmarks in bench/ are the reference numbers."})
final class KernelsCommand implements Callable<Integer> {
    /** The least default working set; more where twice the last-level cache is more. */
    static final int MIN_DEFAULT_MIB = 512;

    /** The default working set here: twice the last-level cache, at least {@value #MIN_DEFAULT_MIB} MiB. */
    static long defaultBytes() {
        return LastLevelCache.streamingBytes((long) MIN_DEFAULT_MIB << 20);
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the results as JSON.")
    Path json;

    @Option(names = "--size-mib", paramLabel = "MIB",
            description = "Working set of each measurement in MiB (default: twice the last-level cache, at least "
                    + MIN_DEFAULT_MIB + "; capped at a quarter of available memory). Smaller sizes measure the "
                    + "caches too.")
    Integer sizeMib;

    @Option(names = "--backend", defaultValue = "cpu", paramLabel = "cpu|java",
            description = "Host kernel backend to measure (default ${DEFAULT-VALUE}).")
    String backend;

    @Override
    public Integer call() {
        if (sizeMib != null) {
            CliSupport.requirePositive(spec, "--size-mib", sizeMib);
        }
        String choice = CliSupport.requireOneOf(spec, "--backend", backend, "cpu", "java");
        CliSupport.requireWritableTarget(spec, "--json", json);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();

        long requested = sizeMib != null ? (long) sizeMib << 20 : defaultBytes();
        long bytes = capToAvailable(requested);
        if (bytes != requested) {
            err.printf("kernels: %d MiB capped to %d MiB by available memory (%d MiB)%n",
                    requested >> 20, bytes >> 20, availableMemoryBytes() >> 20);
        }
        String regime = LastLevelCache.regime(bytes);
        if (!regime.equals("memory")) {
            err.printf("kernels: %d MiB is under twice the %s: the figures include cache (%s)%n",
                    bytes >> 20, LastLevelCache.describe(), regime);
        }
        err.flush();

        BandwidthCheck.Result r;
        try (KernelBackend b = Backends.create(choice)) {
            r = new BandwidthCheck(b, bytes, line -> {
                err.println("  " + line);
                err.flush();
            }).run();
        }

        out.printf("working set %d MiB per measurement (%s; %s), %d native threads; "
                + "GB/s = (bytes read + written) / s%n", r.bufferBytes() >> 20, LastLevelCache.regime(r.bufferBytes()),
                LastLevelCache.describe(), r.threads());
        out.printf("host memory: %s%n", LargePages.describe());
        out.printf("cpu: %s; native: %s%n", NativeLibrary.cpuModel(), Main.oneLine(NativeLibrary.buildInfo()));
        out.printf("%-30s %9s %8s%n", "baseline", "GB/s", "");
        out.printf("%-30s %9.1f%n", "read", r.readGbps());
        out.printf("%-30s %9.1f%n", "copy", r.memcpyGbps());
        out.printf("decode linears: bf16 weights %d x %d, %s (as the engine lays them out)%n", r.linearRows(),
                BandwidthCheck.LINEAR_COLS, r.linearLayout());
        out.printf("%-30s %9s %8s%n", "kernel (" + choice + ")", "GB/s", "ratio");
        for (BandwidthCheck.KernelResult k : r.kernels()) {
            out.printf("%-30s %9.1f %8.2f  (vs %s)%n", k.name(), k.gbps(), k.ratio(), k.against());
        }
        for (String s : r.skipped()) {
            out.println("skipped: " + s);
        }
        if (json != null) {
            CliSupport.writeJson(json, toJson(r));
            out.println("wrote " + json);
        }
        out.flush();
        return Main.EXIT_OK;
    }

    static ObjectNode toJson(BandwidthCheck.Result r) {
        ObjectNode root = CliSupport.JSON.createObjectNode();
        root.put("read_gbps", r.readGbps());
        root.put("memcpy_gbps", r.memcpyGbps());
        ArrayNode ks = root.putArray("kernels");
        for (BandwidthCheck.KernelResult k : r.kernels()) {
            ks.addObject().put("name", k.name()).put("gbps", k.gbps()).put("ratio", k.ratio())
                    .put("against", k.against());
        }
        root.put("buffer_bytes", r.bufferBytes());
        root.put("last_level_cache_bytes", LastLevelCache.bytes());
        root.put("regime", LastLevelCache.regime(r.bufferBytes()));
        root.put("threads", r.threads());
        root.put("linear_layout", r.linearLayout());
        root.put("linear_rows", r.linearRows());
        root.put("linear_cols", BandwidthCheck.LINEAR_COLS);
        root.put("cpu_model", NativeLibrary.cpuModel());
        root.put("native_build", NativeLibrary.buildInfo());
        ArrayNode sk = root.putArray("skipped");
        r.skipped().forEach(sk::add);
        return root;
    }

    /**
     * {@code bytes}, or a quarter of the available memory in whole MiB (at least 1 MiB) where that
     * is less; {@code bytes} where /proc/meminfo cannot be read.
     */
    static long capToAvailable(long bytes) {
        long available = availableMemoryBytes();
        return available > 0 && bytes > available / 4 ? Math.max(1L << 20, (available / 4) & ~((1L << 20) - 1)) : bytes;
    }

    /** MemAvailable from /proc/meminfo, or -1 where it cannot be read. */
    static long availableMemoryBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    String[] parts = line.trim().split("\\s+");
                    return Long.parseLong(parts[1]) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux or unreadable: no cap
        }
        return -1;
    }
}
