/**
 * radixkv core: native kernels (libradixkv, libradixkv_cuda) behind
 * {@link io.radixkv.kernels.KernelBackend}, paged KV memory, a radix-tree prefix cache, the
 * model runner, a continuous-batching scheduler and the engine. It logs through the log4j2
 * API only (the application chooses the back-end) and reads {@code config.json} and
 * safetensors headers with Jackson. The generated FFM bindings ({@code io.radixkv.bindings})
 * are internal.
 *
 * <p>Run with {@code --enable-native-access=io.radixkv}.
 */
module io.radixkv {
    requires org.apache.logging.log4j;
    requires com.fasterxml.jackson.databind;

    exports io.radixkv.kernels;
    exports io.radixkv.paging;
    exports io.radixkv.cache;
    exports io.radixkv.sched;
    exports io.radixkv.engine;
    exports io.radixkv.checkpoint;
    exports io.radixkv.model;
}
