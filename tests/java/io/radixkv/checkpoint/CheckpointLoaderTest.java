package io.radixkv.checkpoint;

import static io.radixkv.checkpoint.SafetensorsBytes.bf16;
import static io.radixkv.checkpoint.SafetensorsBytes.f16;
import static io.radixkv.checkpoint.SafetensorsBytes.f32;
import static io.radixkv.checkpoint.SafetensorsBytes.ramp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointLoaderTest {
    @TempDir
    Path tmp;

    private static float f32At(MemorySegment s, long i) {
        return s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
    }

    private static short u16At(MemorySegment s, long i) {
        return s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
    }

    /** Two tensors fused into one block at their offsets, an optional one absent, a tied alias. */
    @Test
    void fusedOptionalAndTiedBlocks() throws IOException {
        float[] a = ramp(6, 0.25f);
        float[] b = ramp(4, 1.5f);
        Path dir = tmp.resolve("fused");
        new SafetensorsBytes().tensor("m.b", "F32", new long[] {2, 2}, f32(b)).tensor("m.a", "F32", new long[] {3, 2}, f32(a))
                .write(dir.resolve("model.safetensors"));
        ParamSpec ab = ParamSpec.of("ab", DType.F32, 5, 2);
        List<ParamSpec> params = List.of(ab, ParamSpec.of("bias", DType.F32, 5), ParamSpec.tied("ab_out", ab));
        List<TensorSpec> specs = List.of(TensorSpec.of("m.a", "ab", 0, 3, 2), TensorSpec.of("m.b", "ab", 6, 2, 2),
                TensorSpec.optional("m.bias", "bias", 0, 5));
        try (ParameterStore s = CheckpointLoader.load(dir, params, specs)) {
            for (int i = 0; i < 6; i++) {
                assertEquals(a[i], f32At(s.get("ab"), i));
            }
            for (int i = 0; i < 4; i++) {
                assertEquals(b[i], f32At(s.get("ab"), 6 + i));
            }
            for (int i = 0; i < 5; i++) {
                assertEquals(0f, f32At(s.get("bias"), i), "absent optional tensor leaves zeros");
            }
            assertSame(s.get("ab"), s.get("ab_out"));
            assertEquals(10 * 4 + 5 * 4, s.bytes(), "the alias is not counted");
        }
        // Into a store holding garbage: whatever no tensor covers is zeroed, the rest overwritten.
        LoadPlan plan = LoadPlan.of(Checkpoint.open(dir), params, specs);
        try (ParameterStore s = ParameterStore.allocateUninitialized(params)) {
            s.get("ab").fill((byte) 0x7F);
            s.get("bias").fill((byte) 0x7F);
            plan.copyInto(s);
            assertEquals(a[5], f32At(s.get("ab"), 5));
            assertEquals(b[3], f32At(s.get("ab"), 9));
            for (int i = 0; i < 5; i++) {
                assertEquals(0f, f32At(s.get("bias"), i), "uncovered block zeroed");
            }
        }
        // A spec pointing past its block is a model bug, not a checkpoint error.
        assertThrows(IllegalArgumentException.class, () -> CheckpointLoader.load(dir, params,
                List.of(TensorSpec.of("m.b", "ab", 7, 2, 2))));
        assertThrows(IllegalArgumentException.class, () -> CheckpointLoader.load(dir, params,
                List.of(TensorSpec.of("m.a", "ab", 0, 3, 2), TensorSpec.of("m.b", "ab", 5, 2, 2))), "overlapping specs");
    }

    /** bf16 into a bf16 block keeps the bits; f32 and f16 files convert with round-to-nearest-even. */
    @Test
    void dtypeConversions() throws IOException {
        float[] v = ramp(64, 0.0123f);
        v[1] = 1.00390625f; // exactly halfway between two bf16 values: rounds to even
        v[2] = 1.01171875f; // halfway, rounds up to even
        v[3] = 70000f; // beyond f16 but fine in f32/bf16
        Path dir = tmp.resolve("dtypes");
        new SafetensorsBytes().tensor("x.f32", "F32", new long[] {64}, f32(v)).tensor("x.bf16", "BF16", new long[] {64}, bf16(v))
                .tensor("x.f16", "F16", new long[] {64}, f16(v)).write(dir.resolve("model.safetensors"));
        List<ParamSpec> params = List.of(ParamSpec.of("f32_to_bf16", DType.BF16, 64),
                ParamSpec.of("bf16_to_bf16", DType.BF16, 64), ParamSpec.of("bf16_to_f32", DType.F32, 64),
                ParamSpec.of("f16_to_f32", DType.F32, 64), ParamSpec.of("f16_to_bf16", DType.BF16, 64));
        List<TensorSpec> specs = List.of(TensorSpec.of("x.f32", "f32_to_bf16", 0, 64),
                TensorSpec.of("x.bf16", "bf16_to_bf16", 0, 64), TensorSpec.of("x.bf16", "bf16_to_f32", 0, 64),
                TensorSpec.of("x.f16", "f16_to_f32", 0, 64), TensorSpec.of("x.f16", "f16_to_bf16", 0, 64));
        try (ParameterStore s = CheckpointLoader.load(dir, params, specs)) {
            for (int i = 0; i < 64; i++) {
                short ref = Bf16.fromFloat(v[i]);
                float half = Float.float16ToFloat(Float.floatToFloat16(v[i]));
                assertEquals(ref, u16At(s.get("f32_to_bf16"), i), "f32->bf16 " + i);
                assertEquals(ref, u16At(s.get("bf16_to_bf16"), i), "bf16 bits " + i);
                assertEquals(Bf16.toFloat(ref), f32At(s.get("bf16_to_f32"), i), "bf16->f32 " + i);
                assertEquals(half, f32At(s.get("f16_to_f32"), i), "f16->f32 " + i);
                assertEquals(Bf16.fromFloat(half), u16At(s.get("f16_to_bf16"), i), "f16->bf16 " + i);
            }
            assertEquals(Float.POSITIVE_INFINITY, f32At(s.get("f16_to_f32"), 3), "70000 overflows f16");
        }
    }

    /** A tensor larger than one copy chunk is copied whole, across chunk boundaries. */
    @Test
    void largeTensorCrossesCopyChunks() throws IOException {
        int n = (4 << 20) * 2 + 3;
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (i % 1009) * 0.5f - (i / 1009);
        }
        Path dir = tmp.resolve("large");
        new SafetensorsBytes().tensor("big", "BF16", new long[] {n}, bf16(v)).write(dir.resolve("model.safetensors"));
        try (ParameterStore s = CheckpointLoader.load(dir, List.of(ParamSpec.of("big", DType.F32, n)),
                List.of(TensorSpec.of("big", "big", 0, n)))) {
            for (int i = 0; i < n; i++) {
                float want = Bf16.round((v[i]));
                if (want != f32At(s.get("big"), i)) {
                    throw new AssertionError("element " + i + ": " + f32At(s.get("big"), i) + " != " + want);
                }
            }
        }
    }

    /** With an index, only the listed shards are read; other safetensors files in the directory are ignored. */
    @Test
    void shardedWithIndex() throws IOException {
        Path dir = tmp.resolve("sharded");
        new SafetensorsBytes().tensor("a", "F32", new long[] {2}, f32(1, 2)).write(dir.resolve("model-00001-of-00002.safetensors"));
        new SafetensorsBytes().tensor("b", "BF16", new long[] {2}, bf16(3, 4)).write(dir.resolve("model-00002-of-00002.safetensors"));
        new SafetensorsBytes().tensor("a", "F32", new long[] {2}, f32(9, 9)).write(dir.resolve("consolidated.safetensors"));
        Files.writeString(dir.resolve(Checkpoint.INDEX), """
                {"metadata": {"total_size": 12}, "weight_map": {
                  "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}""");
        Checkpoint c = Checkpoint.open(dir);
        assertEquals(2, c.files().size());
        try (ParameterStore s = CheckpointLoader.load(dir, List.of(ParamSpec.of("ab", DType.F32, 4)),
                List.of(TensorSpec.of("a", "ab", 0, 2), TensorSpec.of("b", "ab", 2, 2)))) {
            for (int i = 0; i < 4; i++) {
                assertEquals(i + 1f, f32At(s.get("ab"), i));
            }
        }
    }
}
