/**
 * radixkv: the KV-cache side of LLM serving. Native kernels (libradixkv, libradixkv_cuda)
 * behind {@link io.radixkv.kernels.KernelBackend}, paged KV memory, a radix-tree prefix
 * cache, a continuous-batching scheduler and engine, and the CLI.
 *
 * <p>Run with {@code --enable-native-access=io.radixkv}.
 */
module io.radixkv {
    requires org.apache.logging.log4j;
    requires com.fasterxml.jackson.databind;
    requires info.picocli;
    requires HdrHistogram;
    requires me.tongfei.progressbar;
    requires org.knowm.xchart;
    requires java.desktop;

    exports io.radixkv.kernels;

    exports io.radixkv.paging;

    exports io.radixkv.cache;

    exports io.radixkv.sched;

    exports io.radixkv.engine;

    exports io.radixkv.checkpoint;

    exports io.radixkv.model;
    opens io.radixkv.model to com.fasterxml.jackson.databind;

    exports io.radixkv.cli;
    opens io.radixkv.cli to info.picocli, com.fasterxml.jackson.databind;
}
