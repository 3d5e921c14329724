module io.radixkv.text {
    requires ai.djl.tokenizers;
    requires ai.djl.api;
    requires jinjava;
    requires com.fasterxml.jackson.databind;
    exports io.radixkv.text;
}
