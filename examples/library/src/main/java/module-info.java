module io.radixkv.example {
    requires io.radixkv;
}
