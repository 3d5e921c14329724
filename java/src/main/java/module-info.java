/**
 * radixkv core: native kernels (libradixkv, libradixkv_cuda) behind
 * {@link io.radixkv.kernels.KernelBackend} (chosen by {@link io.radixkv.kernels.select.Backends};
 * the implementations in {@code io.radixkv.kernels.cpu}, {@code .cuda} and {@code .reference}
 * are internal), paged KV memory, a radix-tree prefix cache, the
 * model runner, a continuous-batching scheduler and the engine. It logs through the log4j2
 * API only (the application chooses the back-end) and reads {@code config.json} and
 * safetensors headers with Jackson. The generated FFM bindings ({@code io.radixkv.bindings})
 * are internal.
 *
 * <p>Run with {@code --enable-native-access=io.radixkv}.
 */
@SuppressWarnings("module") // the qualified exports name io.radixkv.cli and .server, built after this module
module io.radixkv {
    requires org.apache.logging.log4j;
    requires com.fasterxml.jackson.databind;

    exports io.radixkv.kernels;
    exports io.radixkv.kernels.select;
    exports io.radixkv.platform;
    // the cli reports libradixkv's build, threads and bandwidth baselines
    exports io.radixkv.kernels.cpu to io.radixkv.cli;
    exports io.radixkv.paging;
    exports io.radixkv.cache;
    exports io.radixkv.sched;
    exports io.radixkv.engine;
    exports io.radixkv.checkpoint;
    // the server rebuilds a GGUF file's tokenizer from its metadata
    exports io.radixkv.checkpoint.gguf to io.radixkv.server;
    exports io.radixkv.model;
    exports io.radixkv.structured;
}
