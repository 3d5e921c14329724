package io.radixkv.lora;

import io.radixkv.model.ModelConfig;
import io.radixkv.model.WeightLayout;

/**
 * The projections an adapter may target, by their PEFT module names, and where each one's output
 * lies in the model's fused blocks: q, k, v are column slices of the {@code q|k|v} row, gate and
 * up of the {@code gate|up} row.
 */
public enum LoraModule {
    Q("self_attn.q_proj", WeightLayout.QKV),
    K("self_attn.k_proj", WeightLayout.QKV),
    V("self_attn.v_proj", WeightLayout.QKV),
    O("self_attn.o_proj", WeightLayout.O),
    GATE("mlp.gate_proj", WeightLayout.GATE_UP),
    UP("mlp.up_proj", WeightLayout.GATE_UP),
    DOWN("mlp.down_proj", WeightLayout.DOWN);

    private final String path;
    private final String block;

    LoraModule(String path, String block) {
        this.path = path;
        this.block = block;
    }

    /** The module's path inside a decoder layer, e.g. {@code self_attn.q_proj}. */
    public String path() {
        return path;
    }

    /** The short name PEFT configs list, e.g. {@code q_proj}. */
    public String shortName() {
        return path.substring(path.indexOf('.') + 1);
    }

    /** The fused weight block this projection's output lies in ({@link WeightLayout#QKV}, ...). */
    public String block() {
        return block;
    }

    /** The module's full name in the base model, as PEFT matches it: {@code model.layers.3.self_attn.q_proj}. */
    public String key(int layer) {
        return "model.layers." + layer + "." + path;
    }

    public int inFeatures(ModelConfig c) {
        return switch (this) {
            case O -> c.qDim();
            case DOWN -> c.intermediate();
            default -> c.hidden();
        };
    }

    public int outFeatures(ModelConfig c) {
        return switch (this) {
            case Q -> c.qDim();
            case K, V -> c.kvDim();
            case O, DOWN -> c.hidden();
            case GATE, UP -> c.intermediate();
        };
    }

    /** First column of this projection in a row of its fused block. */
    public long columnOffset(ModelConfig c) {
        return switch (this) {
            case K -> c.qDim();
            case V -> (long) c.qDim() + c.kvDim();
            case UP -> c.intermediate();
            default -> 0;
        };
    }

    /** Floats per row of this projection's fused block. */
    public long blockWidth(ModelConfig c) {
        return switch (this) {
            case Q, K, V -> c.qkvDim();
            case GATE, UP -> 2L * c.intermediate();
            case O, DOWN -> c.hidden();
        };
    }
}
