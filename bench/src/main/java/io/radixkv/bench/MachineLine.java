package io.radixkv.bench;

import io.radixkv.kernels.NativeLibrary;

/** The machine line every kernel benchmark prints beside its figures. */
final class MachineLine {
    private MachineLine() {}

    /** Prints "# cpu: MODEL; native: BUILD" (CPU model, its ISA and the library's) once per trial. */
    static void print() {
        System.out.printf("# cpu: %s; native: %s%n", NativeLibrary.cpuModel(),
                NativeLibrary.buildInfo().replace('\n', ' '));
    }
}
