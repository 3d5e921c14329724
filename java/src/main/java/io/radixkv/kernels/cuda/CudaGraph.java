package io.radixkv.kernels.cuda;

import io.radixkv.bindings.cuda.cudart_h;
import io.radixkv.kernels.StepGraph;
import java.lang.foreign.MemorySegment;

/** An instantiated CUDA graph ({@code cudaGraphExec_t}) launched on the stream it was captured on. */
final class CudaGraph implements StepGraph {
    private final MemorySegment stream;
    private MemorySegment exec;

    CudaGraph(MemorySegment exec, MemorySegment stream) {
        this.exec = exec;
        this.stream = stream;
    }

    @Override
    public synchronized void launch() {
        if (exec == null) {
            throw new IllegalStateException("CUDA graph already closed");
        }
        CudaMemory.check("cudaGraphLaunch", cudart_h.cudaGraphLaunch(exec, stream));
    }

    @Override
    public synchronized void close() {
        if (exec != null) {
            cudart_h.cudaGraphExecDestroy(exec); // errors at teardown are not actionable
            exec = null;
        }
    }
}
