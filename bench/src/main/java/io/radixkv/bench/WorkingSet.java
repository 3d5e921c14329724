package io.radixkv.bench;

import io.radixkv.platform.LastLevelCache;

/**
 * Working-set sizes of the streaming benchmarks: a parameter of "auto" takes the benchmark's
 * default count of units (tokens, pages, elements, MiB), raised where needed so that the bytes
 * it touches per call are at least twice this machine's last-level cache (a fixed 512 MiB is
 * partly cached on a 300 MiB LLC); a number is taken as given.
 */
final class WorkingSet {
    private WorkingSet() {}

    /**
     * Units for {@code param}: "auto" gives {@code defaultUnits}, or more, rounded up to a multiple
     * of {@code multiple}, so that units x {@code bytesPerUnit} >= twice the LLC.
     */
    static long units(String name, String param, long defaultUnits, long bytesPerUnit, long multiple) {
        if (param.equals("auto")) {
            long units = Math.max(defaultUnits, Math.ceilDiv(LastLevelCache.streamingBytes(0), bytesPerUnit));
            return Math.ceilDiv(units, multiple) * multiple;
        }
        long units;
        try {
            units = Long.parseLong(param);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be \"auto\" or a positive number, got \"" + param + "\"");
        }
        if (units <= 0 || units % multiple != 0) {
            throw new IllegalArgumentException(name + " must be a positive multiple of " + multiple + ", got " + units);
        }
        return units;
    }

    /** Prints "# bench: what, N MiB touched per call (regime, last-level cache M MiB)" at setup. */
    static void print(String bench, String what, long bytesTouched) {
        System.out.printf("%n# %s: %s, %d MiB touched per call (%s, %s)%n", bench, what, bytesTouched >> 20,
                LastLevelCache.regime(bytesTouched), LastLevelCache.describe());
    }
}
