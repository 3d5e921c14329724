package io.radixkv.paging;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The KV storage of every layer: one K and one V pool per layer, each
 * {@code [numPages, pageSize, numKvHeads, headDim]} of the cache dtype (FlashInfer NHD),
 * allocated once at start-up from a {@link BackendMemory} (host memory for the CPU
 * backends, on transparent huge pages: {@link io.radixkv.platform.LargePages}; device memory for
 * CUDA). A page id indexes the same page in every layer's K
 * and V pool, so one id from the {@link BlockAllocator} stands for
 * {@link #bytesPerPage()} bytes.
 *
 * <p>Lifetime: the pools live as long as the memory they came from. A pool built on a
 * backend's memory ({@link #KvPool(BackendMemory, int, PagedKvLayout, float, float)}) is
 * freed when that backend closes; {@link #close()} only invalidates this object. A pool made
 * by {@link #host} owns its memory and frees it on {@link #close()}.
 */
public final class KvPool implements AutoCloseable {
    private final BackendMemory memory;
    private final boolean ownsMemory;
    private final int numLayers;
    private final PagedKvLayout layout;
    private final List<KvCacheView> layers;
    private boolean closed;

    /**
     * Allocates {@code numLayers} K and V pools of {@code layout} from {@code memory}.
     *
     * @param kScale FP8 scale of the K pools (stored = real / scale); must be 1 for non-FP8
     * @param vScale same for V
     */
    public KvPool(BackendMemory memory, int numLayers, PagedKvLayout layout, float kScale, float vScale) {
        this(memory, false, numLayers, layout, kScale, vScale);
    }

    private KvPool(BackendMemory memory, boolean ownsMemory, int numLayers, PagedKvLayout layout,
                   float kScale, float vScale) {
        Objects.requireNonNull(memory, "memory");
        Objects.requireNonNull(layout, "layout");
        if (numLayers <= 0) {
            throw new IllegalArgumentException("numLayers must be positive, got " + numLayers);
        }
        if (layout.numPages() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("numPages " + layout.numPages() + " exceeds the int32 page id range");
        }
        this.memory = memory;
        this.ownsMemory = ownsMemory;
        this.numLayers = numLayers;
        this.layout = layout;
        long poolBytes = layout.poolBytes();
        // Validate the scales before allocating anything (KvCacheView checks them again).
        Checks.requireScale("kScale", kScale);
        Checks.requireScale("vScale", vScale);
        if (!layout.cacheDtype().isFp8() && (kScale != 1f || vScale != 1f)) {
            throw new IllegalArgumentException("kScale/vScale must be 1 for a " + layout.cacheDtype() + " cache, got "
                    + kScale + "/" + vScale);
        }
        List<KvCacheView> views = new ArrayList<>(numLayers);
        for (int l = 0; l < numLayers; l++) {
            MemorySegment k = memory.allocate(poolBytes);
            MemorySegment v = memory.allocate(poolBytes);
            views.add(new KvCacheView(k, v, layout, kScale, vScale));
        }
        this.layers = List.copyOf(views);
    }

    /** A host-memory pool that owns its memory (freed by {@link #close()}). */
    public static KvPool host(int numLayers, PagedKvLayout layout, float kScale, float vScale) {
        HostMemory memory = new HostMemory();
        try {
            return new KvPool(memory, true, numLayers, layout, kScale, vScale);
        } catch (RuntimeException e) {
            memory.close();
            throw e;
        }
    }

    /** Bytes one page id occupies over all layers, K and V together. */
    public static long bytesPerPage(int numLayers, DType dtype, int pageSize, int numKvHeads, int headDim) {
        if (numLayers <= 0) {
            throw new IllegalArgumentException("numLayers must be positive, got " + numLayers);
        }
        PagedKvLayout one = new PagedKvLayout(dtype, 1, pageSize, numKvHeads, headDim);
        return Math.multiplyExact(2L * numLayers, one.pageBytes());
    }

    /**
     * The number of pages a byte budget holds: {@code floor(bytes / bytesPerPage)}, capped at
     * the int32 page id range.
     */
    public static int pagesForBudget(long bytes, int numLayers, DType dtype, int pageSize, int numKvHeads,
                                     int headDim) {
        if (bytes < 0) {
            throw new IllegalArgumentException("byte budget must not be negative, got " + bytes);
        }
        long per = bytesPerPage(numLayers, dtype, pageSize, numKvHeads, headDim);
        return (int) Math.min(bytes / per, Integer.MAX_VALUE);
    }

    /** A {@link PageCopier} over these pools that runs {@code kernels}' page copy. */
    public PageCopier copier(KvCacheKernels kernels) {
        Objects.requireNonNull(kernels, "kernels");
        return (from, to) -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment mapping = arena.allocate(ValueLayout.JAVA_LONG, 2);
                mapping.setAtIndex(ValueLayout.JAVA_LONG, 0, from);
                mapping.setAtIndex(ValueLayout.JAVA_LONG, 1, to);
                kernels.copyBlocks(layers(), mapping, 1);
            }
        };
    }

    /** Bytes one page id occupies over all layers, K and V together. */
    public long bytesPerPage() {
        return 2L * numLayers * layout.pageBytes();
    }

    /** Bytes of all pools. */
    public long totalBytes() {
        return bytesPerPage() * layout.numPages();
    }

    public int numPages() {
        return (int) layout.numPages();
    }

    public int pageSize() {
        return layout.pageSize();
    }

    public int numLayers() {
        return numLayers;
    }

    public PagedKvLayout layout() {
        return layout;
    }

    public boolean isDevice() {
        return memory.isDevice();
    }

    /** Layer {@code l}'s K and V pools. */
    public KvCacheView layer(int l) {
        checkOpen();
        Objects.checkIndex(l, numLayers);
        return layers.get(l);
    }

    /** All layers' views, layer order (immutable). */
    public List<KvCacheView> layers() {
        checkOpen();
        return layers;
    }

    /**
     * Bytes of one page's image as {@link #readPage} writes it: for each layer in order, the page's
     * K bytes then its V bytes ({@code 2 * numLayers * layout().pageBytes()}).
     */
    public long pageImageBytes() {
        return 2L * numLayers * layout.pageBytes();
    }

    /**
     * Copies page {@code page} of every layer's K and V pool into host segment {@code dst}
     * ({@link #pageImageBytes()} bytes, layout as documented there), e.g. to keep an evicted page
     * outside the pool. Works for host and device pools.
     */
    public void readPage(int page, MemorySegment dst) {
        checkPageIo(page, dst);
        long pb = layout.pageBytes();
        long off = 0;
        for (KvCacheView v : layers) {
            memory.copyToHost(v.kCache().asSlice(page * pb, pb), dst.asSlice(off, pb), pb);
            memory.copyToHost(v.vCache().asSlice(page * pb, pb), dst.asSlice(off + pb, pb), pb);
            off += 2 * pb;
        }
    }

    /** The inverse of {@link #readPage}: overwrites page {@code page} of every layer from {@code src}. */
    public void writePage(int page, MemorySegment src) {
        checkPageIo(page, src);
        long pb = layout.pageBytes();
        long off = 0;
        for (KvCacheView v : layers) {
            memory.copyFromHost(src.asSlice(off, pb), v.kCache().asSlice(page * pb, pb), pb);
            memory.copyFromHost(src.asSlice(off + pb, pb), v.vCache().asSlice(page * pb, pb), pb);
            off += 2 * pb;
        }
    }

    private void checkPageIo(int page, MemorySegment host) {
        checkOpen();
        Objects.checkIndex(page, numPages());
        Objects.requireNonNull(host, "host segment");
        if (host.byteSize() < pageImageBytes()) {
            throw new IllegalArgumentException("page image needs " + pageImageBytes() + " bytes, segment has "
                    + host.byteSize());
        }
    }

    /** Invalidates this pool; frees the memory only if this pool owns it (see class doc). */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (ownsMemory) {
                memory.close();
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("KvPool is closed");
        }
    }
}
