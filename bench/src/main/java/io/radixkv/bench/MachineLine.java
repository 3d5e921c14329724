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
}
