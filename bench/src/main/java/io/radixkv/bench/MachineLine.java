package io.radixkv.bench;

import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.platform.LargePages;

/** The machine line every kernel benchmark prints beside its figures. */
final class MachineLine {
    private MachineLine() {}

    /**
     * Prints "# cpu: MODEL; native: BUILD; memory: THP" (CPU model, its ISA, the library's, and
     * whether large blocks get huge pages) once per trial.
     */
    static void print() {
        System.out.printf("# cpu: %s; native: %s; memory: %s%n", NativeLibrary.cpuModel(),
                NativeLibrary.buildInfo().replace('\n', ' '), LargePages.describe());
    }

    /** The 1-, 5- and 15-minute load averages ({@code /proc/loadavg}), "load ?" where unreadable. */
    static String load() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split("\\s+");
            return "load " + f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException | RuntimeException e) {
            return "load ?";
        }
    }
}
