module io.radixkv.text {
    requires ai.djl.tokenizers;
    requires ai.djl.api;
    requires jinjava;
    requires com.fasterxml.jackson.databind;
    requires java.desktop; // java.beans.FeatureDescriptor in the EL resolver API
    exports io.radixkv.text;
}
