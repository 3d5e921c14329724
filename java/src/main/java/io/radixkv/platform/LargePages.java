package io.radixkv.platform;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Large host blocks (weights, KV pools) on transparent huge pages: on Linux, a block of at
 * least {@link #HUGE_PAGE} bytes is an anonymous mapping aligned to 2 MiB and advised with
 * {@code madvise(MADV_HUGEPAGE)}, unmapped when its arena closes; smaller blocks, other systems
 * and {@code -Dradixkv.hugepages=false} get {@code Arena.allocate} memory, and so does every block
 * where the base page is not 4 KiB.
 *
 * <p>Why: decode streams every weight and KV byte at the memory limit, and on 4 KiB pages each
 * 4 KiB read costs a TLB miss and stops the hardware prefetchers at the page's end. Where the
 * kernel's THP mode is {@code madvise} (a common default) nothing else gives large pages. On a
 * 2-core Zen 5, one thread: f32 decode attention from memory 0.59 to 0.68 of the read
 * bandwidth, f32 GEMV at m = 8 0.75 to 0.90 (the read baseline on the same memory).
 *
 * <p>Either way the block reads as zero; a mapping is faulted in by its first writer (no
 * single-threaded zero-fill before a parallel load overwrites it).
 */
public final class LargePages {
    /** The huge page size this class aligns to (x86-64 and aarch64 with 4 KiB base pages). */
    public static final long HUGE_PAGE = 2L << 20;

    private static final Logger LOG = LogManager.getLogger(LargePages.class);
    private static final long BASE_PAGE = 4096;
    private static final int PROT_READ_WRITE = 0x1 | 0x2;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20; // Linux values
    private static final int MADV_HUGEPAGE = 14;
    private static final int SC_PAGESIZE = 30; // Linux, glibc and musl
    private static final Path THP_MODE = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");

    private static final Native NATIVE = Native.load();

    private LargePages() {}

    /** Whether blocks of at least {@link #HUGE_PAGE} bytes are mapped for huge pages here. */
    public static boolean enabled() {
        return NATIVE != null && !"false".equalsIgnoreCase(System.getProperty("radixkv.hugepages", "true"));
    }

    /**
     * Whether {@link #allocate} maps a block of {@code bytes} for huge pages (then it reads as
     * zero and is faulted in by its first writer) rather than taking it from the arena.
     */
    public static boolean maps(long bytes) {
        return bytes >= HUGE_PAGE && enabled();
    }

    /**
     * The kernel's transparent huge page mode ({@code always}, {@code madvise} or {@code never};
     * {@code unknown} where it cannot be read), for benchmark reports.
     */
    public static String systemMode() {
        try {
            String s = Files.readString(THP_MODE);
            int a = s.indexOf('['), b = s.indexOf(']');
            return a >= 0 && b > a ? s.substring(a + 1, b) : "unknown";
        } catch (Exception e) {
            return "unknown";
        }
    }

    /** One line for benchmark and CLI reports: the THP mode and whether radixkv advises it. */
    public static String describe() {
        return "THP " + systemMode() + (enabled() ? ", large blocks advised (MADV_HUGEPAGE)" : ", not advised");
    }

    /**
     * {@code bytes} (>= 0) of zeroed host memory aligned to at least {@code alignment} (a power of
     * two, at most {@link #HUGE_PAGE}), freed when {@code arena} closes.
     *
     * @throws OutOfMemoryError if the memory cannot be mapped or allocated
     */
    public static MemorySegment allocate(Arena arena, long bytes, long alignment) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes must not be negative, got " + bytes);
        }
        if (alignment <= 0 || Long.bitCount(alignment) != 1 || alignment > HUGE_PAGE) {
            throw new IllegalArgumentException("alignment must be a power of two up to " + HUGE_PAGE + ", got "
                    + alignment);
        }
        return maps(bytes) ? NATIVE.map(arena, bytes) : arena.allocate(bytes, alignment);
    }

    /**
     * Whether the mapping arithmetic applies: 4 KiB base pages, under which a huge page is 2 MiB
     * (arm64 kernels with 64 KiB pages have 512 MiB huge pages, and trimming a mapping at 4 KiB
     * boundaries there fails).
     */
    static boolean usableBasePage(long pageSize) {
        return pageSize == BASE_PAGE;
    }

    /** The libc calls, or null where they or the Linux constants do not apply. */
    private record Native(MethodHandle mmap, MethodHandle munmap, MethodHandle madvise) {
        static Native load() {
            String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
            if (!os.contains("linux")) {
                return null;
            }
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            Optional<MemorySegment> mmap = libc.find("mmap"), munmap = libc.find("munmap"),
                    madvise = libc.find("madvise"), sysconf = libc.find("sysconf");
            if (mmap.isEmpty() || munmap.isEmpty() || madvise.isEmpty() || sysconf.isEmpty()) {
                return null;
            }
            long pageSize;
            try {
                pageSize = (long) linker.downcallHandle(sysconf.get(),
                        FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)).invokeExact(SC_PAGESIZE);
            } catch (Throwable t) {
                return null;
            }
            if (!usableBasePage(pageSize)) {
                LOG.debug("base pages of {} bytes: large blocks use the arena", pageSize);
                return null;
            }
            return new Native(
                    linker.downcallHandle(mmap.get(), FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                            ValueLayout.JAVA_LONG)),
                    linker.downcallHandle(munmap.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG)),
                    linker.downcallHandle(madvise.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)));
        }

        /**
         * Maps bytes rounded up to base pages at a 2 MiB boundary (over-maps by 2 MiB, then unmaps
         * the unaligned head and the spare tail) and advises huge pages; the last partial 2 MiB
         * stays on base pages rather than rounding the block up to a whole huge page.
         */
        MemorySegment map(Arena arena, long bytes) {
            long len = Math.ceilDiv(bytes, BASE_PAGE) * BASE_PAGE;
            long span = len + HUGE_PAGE;
            long raw;
            try {
                raw = ((MemorySegment) mmap.invokeExact(MemorySegment.NULL, span, PROT_READ_WRITE,
                        MAP_PRIVATE_ANONYMOUS, -1, 0L)).address();
            } catch (Throwable t) {
                throw new IllegalStateException("mmap failed", t);
            }
            if (raw == -1L || raw == 0L) {
                throw new OutOfMemoryError("cannot map " + bytes + " bytes");
            }
            long start = (raw + HUGE_PAGE - 1) & -HUGE_PAGE;
            unmap(raw, start - raw);
            unmap(start + len, raw + span - (start + len));
            int rc;
            try {
                rc = (int) madvise.invokeExact(MemorySegment.ofAddress(start), len, MADV_HUGEPAGE);
            } catch (Throwable t) {
                unmap(start, len);
                throw new IllegalStateException("madvise failed", t);
            }
            if (rc != 0) {
                LOG.debug("madvise(MADV_HUGEPAGE) refused for {} bytes: base pages", len);
            }
            return MemorySegment.ofAddress(start).reinterpret(bytes, arena, s -> unmap(s.address(), len));
        }

        void unmap(long address, long length) {
            if (length == 0) {
                return;
            }
            int rc;
            try {
                rc = (int) munmap.invokeExact(MemorySegment.ofAddress(address), length);
            } catch (Throwable t) {
                throw new IllegalStateException("munmap failed", t);
            }
            if (rc != 0) {
                throw new IllegalStateException("munmap(" + Long.toHexString(address) + ", " + length + ") failed");
            }
        }
    }
}
