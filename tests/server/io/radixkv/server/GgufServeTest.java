package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.checkpoint.gguf.GgufTestWriter;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.ChatMessage;
import io.radixkv.text.HfTokenizer;
import io.radixkv.text.UnsupportedTokenizerException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A GGUF file alone serves text: a random-weight Llama whose file also holds the real Llama 3.1
 * tokenizer and chat template (as llama.cpp's converter writes them) answers
 * /v1/chat/completions with the tokenizer {@link ModelTokenizer} rebuilt from the metadata, and
 * the prompt it counts is the Hugging Face tokenizer's rendering of the same conversation.
 */
class GgufServeTest {
    private static final int HIDDEN = TinyLlamaCheckpoint.HIDDEN;
    private static final int INTER = TinyLlamaCheckpoint.INTER;
    private static final int LAYERS = TinyLlamaCheckpoint.LAYERS;
    private static final int HEADS = TinyLlamaCheckpoint.HEADS;
    private static final int KV_HEADS = TinyLlamaCheckpoint.KV_HEADS;
    private static final int HEAD_DIM = TinyLlamaCheckpoint.HEAD_DIM;

    @TempDir
    Path tmp;

    /**
     * {@link TinyLlamaCheckpoint}'s shape as a llama GGUF (F16 matrices, F32 norms) with the fetched
     * tokenizer {@code name}'s metadata.
     */
    static Path tinyLlama(Path file, String name, String pre) throws IOException {
        Path dir = TinyLlamaCheckpoint.tokenizerDir(name);
        int vocab;
        try (HfTokenizer probe = HfTokenizer.load(dir)) {
            vocab = probe.vocabSize();
        }
        GgufTestWriter w = new GgufTestWriter().str("general.architecture", "llama")
                .u32("llama.context_length", 2048).u32("llama.embedding_length", HIDDEN).u32("llama.block_count", LAYERS)
                .u32("llama.feed_forward_length", INTER).u32("llama.attention.head_count", HEADS)
                .u32("llama.attention.head_count_kv", KV_HEADS).u32("llama.attention.key_length", HEAD_DIM)
                .u32("llama.attention.value_length", HEAD_DIM).u32("llama.rope.dimension_count", HEAD_DIM)
                .f32("llama.attention.layer_norm_rms_epsilon", 1e-5f).f32("llama.rope.freq_base", 500000f);
        GgufTokenizerWriter.write(w, dir, pre);
        SplittableRandom rnd = new SplittableRandom(7);
        matrix(w, "token_embd.weight", vocab, HIDDEN, rnd);
        for (int l = 0; l < LAYERS; l++) {
            String p = "blk." + l + ".";
            norm(w, p + "attn_norm.weight");
            matrix(w, p + "attn_q.weight", HEADS * HEAD_DIM, HIDDEN, rnd);
            matrix(w, p + "attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN, rnd);
            matrix(w, p + "attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN, rnd);
            matrix(w, p + "attn_output.weight", HIDDEN, HEADS * HEAD_DIM, rnd);
            norm(w, p + "ffn_norm.weight");
            matrix(w, p + "ffn_gate.weight", INTER, HIDDEN, rnd);
            matrix(w, p + "ffn_up.weight", INTER, HIDDEN, rnd);
            matrix(w, p + "ffn_down.weight", HIDDEN, INTER, rnd);
        }
        norm(w, "output_norm.weight");
        return w.write(file);
    }

    private static void matrix(GgufTestWriter w, String name, int rows, int cols, SplittableRandom rnd) {
        float[] v = new float[rows * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) ((rnd.nextDouble() - 0.5) * 0.35);
        }
        w.tensor(name, GgufTestWriter.F16, GgufTestWriter.f16(v), cols, rows);
    }

    private static void norm(GgufTestWriter w, String name) {
        float[] ones = new float[HIDDEN];
        java.util.Arrays.fill(ones, 1f);
        w.tensor(name, GgufTestWriter.F32, GgufTestWriter.f32(ones), HIDDEN);
    }

    @Test
    void aGgufFileServesChatWithItsOwnTokenizer() throws Exception {
        Path file = tinyLlama(tmp.resolve("tiny.gguf"), "llama3_1", "llama-bpe");
        HfTokenizer tokenizer = ModelTokenizer.load(file.toString(), null).orElseThrow();
        EngineConfig ec = EngineConfig.builder().model(file.toString()).backend("cpu").numPages(128)
                .maxRunning(4).maxBatchTokens(256).maxSeqLen(1024).build();
        ServerTestSupport t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny"));
        try (HfTokenizer hf = HfTokenizer.load(TinyLlamaCheckpoint.tokenizerDir("llama3_1"))) {
            ObjectNode b = ServerTestSupport.JSON.createObjectNode();
            b.put("model", "tiny").put("max_tokens", 8).put("temperature", 0).put("ignore_eos", true);
            b.putArray("messages").addObject().put("role", "user").put("content", "Name a prime number.");
            JsonNode j = t.postOk("/v1/chat/completions", b);
            String text = j.get("choices").get(0).get("message").get("content").asText();
            assertFalse(text.isEmpty(), "random weights still produce text");
            String prompt = hf.chatTemplate().orElseThrow()
                    .render(List.of(new ChatMessage("user", "Name a prime number.")), true);
            assertTrue(prompt.startsWith("<|begin_of_text|><|start_header_id|>"), prompt);
            assertEquals(hf.encode(prompt, false).length, j.get("usage").get("prompt_tokens").asInt(),
                    "the GGUF's chat template and tokenizer count the Hugging Face prompt's tokens");
            assertEquals(8, j.get("usage").get("completion_tokens").asInt());
            // structured outputs read the vocabulary from the rebuilt tokenizer.json (there is no file)
            ObjectNode c = ServerTestSupport.JSON.createObjectNode();
            c.put("model", "tiny").put("max_tokens", 40).put("temperature", 1.0).put("seed", 3);
            c.putArray("messages").addObject().put("role", "user").put("content", "Pick one.");
            c.putObject("structured_outputs").putArray("choice").add("red").add("green").add("blue");
            JsonNode k = t.postOk("/v1/chat/completions", c);
            String pick = k.get("choices").get(0).get("message").get("content").asText();
            assertTrue(pick.equals("red") || pick.equals("green") || pick.equals("blue"), k.toString());
        } finally {
            ServerTestSupport.close(t, tokenizer);
        }
    }

    @Test
    void aGgufWithoutTokenizerMetadataHasNoTokenizer() throws Exception {
        Path file = new GgufTestWriter().str("general.architecture", "llama").write(tmp.resolve("bare.gguf"));
        assertTrue(ModelTokenizer.load(file.toString(), null).isEmpty());
        assertTrue(ModelTokenizer.load("tiny", null).isEmpty(), "a preset has no tokenizer");
    }

    @Test
    void aTokenizerDirectoryOverridesTheGguf() throws Exception {
        Path file = new GgufTestWriter().str("general.architecture", "llama").str("tokenizer.ggml.model", "bert")
                .write(tmp.resolve("bert.gguf"));
        UnsupportedTokenizerException e = assertThrows(UnsupportedTokenizerException.class,
                () -> ModelTokenizer.load(file.toString(), null));
        assertTrue(e.getMessage().contains("tokenizer.ggml.model is 'bert'"), e.getMessage());
        try (HfTokenizer tok = ModelTokenizer.load(file.toString(), TinyLlamaCheckpoint.tokenizerDir("qwen3")).orElseThrow()) {
            assertEquals(TinyLlamaCheckpoint.tokenizerDir("qwen3"), tok.directory());
        }
    }
}
