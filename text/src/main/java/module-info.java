/**
 * radixkv text: Hugging Face tokenizers (through DJL), incremental detokenization for
 * streaming, chat templates (through Jinjava) rendered as transformers renders them, and the
 * tool calls and reasoning in a chat model's output read as vLLM reads them.
 * Independent of the engine module {@code io.radixkv}.
 */
module io.radixkv.text {
    requires ai.djl.tokenizers;
    requires ai.djl.api;
    requires jinjava;
    requires com.fasterxml.jackson.databind;
    requires java.desktop; // java.beans.FeatureDescriptor in the EL resolver API
    // DJL and Jinjava are automatic modules, so nothing declares what they use: these named
    // modules would otherwise be resolved only under --add-modules ALL-MODULE-PATH.
    requires org.slf4j;
    requires org.apache.commons.lang3;

    exports io.radixkv.text;
    exports io.radixkv.text.output;
    // Jinjava calls the template functions (raise_exception, strftime_now) reflectively.
    opens io.radixkv.text to jinjava;
}
