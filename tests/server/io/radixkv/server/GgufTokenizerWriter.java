package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.checkpoint.gguf.GgufTestWriter;
import io.radixkv.checkpoint.gguf.GgufTestWriter.Arr;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the tokenizer of a Hugging Face directory into GGUF metadata as llama.cpp's
 * convert_hf_to_gguf.py does, from the converter's rules rather than from radixkv's reader:
 *
 * <ul>
 *   <li>byte-level BPE ({@code _set_vocab_gpt2}): {@code tokenizer.ggml.model} gpt2, the given
 *       pre-tokenizer name, one token per id (the vocabulary's byte-level strings, added tokens
 *       as their text, {@code [PADi]} UNUSED for ids in neither), types NORMAL, CONTROL for added
 *       tokens that are special or look special ({@code <|...|>}, {@code <unused...>}, ...) and
 *       USER_DEFINED for the other added tokens, and the merges as "left right";
 *   <li>SentencePiece ({@code _set_vocab_sentencepiece}): {@code llama}, pre "default", the
 *       pieces with their scores, UNKNOWN / CONTROL / BYTE types, added tokens as CONTROL or
 *       USER_DEFINED (U+2581 written as a space) with score -1000, {@code add_space_prefix}
 *       false (Gemma 3);
 *   <li>SpecialVocab: bos/eos/unk/pad ids from tokenizer_config.json's tokens looked up among
 *       the added tokens, {@code add_bos_token} / {@code add_eos_token} from the
 *       post-processor's TemplateProcessing and then tokenizer_config.json, the chat template.
 * </ul>
 *
 * The fetched Gemma 3 files have no tokenizer.model, so its piece scores are reconstructed from
 * tokenizer.json's merges, which transformers generated from those scores: a piece first made
 * by merge r gets score -(r + 1) / 1024, the order being what the scores carry; the scale keeps
 * every learned piece above the -1000 the converter writes for added tokens, so ranking those by
 * their GGUF score rather than SentencePiece's 0 changes the ids.
 */
final class GgufTokenizerWriter {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GgufTokenizerWriter() {}

    /** Adds the tokenizer of {@code dir} to {@code w}; {@code pre} is the gpt2 pre-tokenizer name, or null for SentencePiece. */
    static GgufTestWriter write(GgufTestWriter w, Path dir, String pre) throws IOException {
        JsonNode tj = JSON.readTree(dir.resolve("tokenizer.json").toFile());
        JsonNode cfg = JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
        boolean spm = pre == null;
        Map<Integer, String> byId = new HashMap<>();
        tj.get("model").get("vocab").properties().forEach(e -> byId.put(e.getValue().asInt(), e.getKey()));
        Map<Integer, JsonNode> added = new HashMap<>();
        Map<String, Integer> addedIds = new HashMap<>();
        for (JsonNode a : tj.get("added_tokens")) {
            added.put(a.get("id").asInt(), a);
            addedIds.put(a.get("content").asText(), a.get("id").asInt());
        }
        int n = 1 + Math.max(byId.keySet().stream().mapToInt(i -> i).max().orElse(-1),
                added.keySet().stream().mapToInt(i -> i).max().orElse(-1));
        Map<String, Integer> firstMerge = spm ? firstMerges(tj.get("model").get("merges")) : Map.of();
        List<String> tokens = new ArrayList<>(n);
        List<Long> types = new ArrayList<>(n);
        List<Float> scores = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            JsonNode a = added.get(i);
            String text = a != null ? a.get("content").asText() : byId.get(i);
            long type;
            float score = 0f;
            if (text == null) {
                text = "[PAD" + i + "]";
                type = 5;
            } else if (a != null) {
                type = a.get("special").asBoolean() || looksSpecial(text) ? 3 : 4;
                if (type == 4 && spm) {
                    text = text.replace("\u2581", " ");
                }
                score = -1000f;
            } else if (spm && text.matches("<0x[0-9A-F]{2}>")) {
                type = 6;
            } else {
                type = 1;
                Integer r = firstMerge.get(text);
                score = r == null ? 0f : -(r + 1f) / 1024f;
            }
            tokens.add(text);
            types.add(type);
            scores.add(score);
        }
        w.str("tokenizer.ggml.model", spm ? "llama" : "gpt2");
        w.str("tokenizer.ggml.pre", spm ? "default" : pre);
        w.kv("tokenizer.ggml.tokens", GgufTestWriter.ARRAY, new Arr(GgufTestWriter.STRING, tokens));
        if (spm) {
            w.kv("tokenizer.ggml.scores", GgufTestWriter.ARRAY, new Arr(GgufTestWriter.FLOAT32, scores));
        }
        w.kv("tokenizer.ggml.token_type", GgufTestWriter.ARRAY, new Arr(GgufTestWriter.INT32, types));
        if (spm) {
            w.kv("tokenizer.ggml.add_space_prefix", GgufTestWriter.BOOL, false);
        } else {
            List<String> merges = new ArrayList<>();
            for (JsonNode m : tj.get("model").get("merges")) {
                merges.add(m.isTextual() ? m.asText() : m.get(0).asText() + " " + m.get(1).asText());
            }
            w.kv("tokenizer.ggml.merges", GgufTestWriter.ARRAY, new Arr(GgufTestWriter.STRING, merges));
        }
        Map<String, String> keys = Map.of("bos", "bos_token_id", "eos", "eos_token_id", "unk", "unknown_token_id",
                "pad", "padding_token_id");
        for (String typ : List.of("bos", "eos", "unk", "pad")) {
            JsonNode t = cfg.get(typ + "_token");
            String content = t == null || t.isNull() ? null : t.isTextual() ? t.asText() : t.path("content").asText(null);
            Integer id = content == null ? null : addedIds.get(content);
            if (id != null) {
                w.u32("tokenizer.ggml." + keys.get(typ), id);
            }
        }
        Map<String, Boolean> add = new HashMap<>();
        JsonNode post = tj.get("post_processor");
        if (post != null && !post.isNull()) {
            for (JsonNode p : post.has("processors") ? post.get("processors") : JSON.createArrayNode().add(post)) {
                JsonNode single = p.get("single");
                if ("TemplateProcessing".equals(p.path("type").asText()) && single != null && single.size() > 1) {
                    String first = single.get(0).path("SpecialToken").path("id").asText(null);
                    if (first != null) {
                        add.put("bos", first.equals(cfg.path("bos_token").asText(null)));
                    }
                    String last = single.get(single.size() - 1).path("SpecialToken").path("id").asText(null);
                    if (last != null) {
                        add.put("eos", last.equals(cfg.path("eos_token").asText(null)));
                    }
                }
            }
        }
        for (String typ : List.of("bos", "eos")) {
            JsonNode flag = cfg.get("add_" + typ + "_token");
            if (flag != null && flag.isBoolean()) {
                add.put(typ, flag.asBoolean());
            }
        }
        add.forEach((typ, v) -> w.kv("tokenizer.ggml.add_" + typ + "_token", GgufTestWriter.BOOL, v));
        if (cfg.path("chat_template").isTextual()) {
            w.str("tokenizer.chat_template", cfg.get("chat_template").asText());
        }
        return w;
    }

    /** convert_hf_to_gguf.py's does_token_look_special. */
    static boolean looksSpecial(String t) {
        return t.equals("<pad>") || t.equals("<mask>") || t.equals("<2mass>") || t.equals("[@BOS@]")
                || t.startsWith("<|") && t.endsWith("|>") || t.startsWith("<｜") && t.endsWith("｜>")
                || t.startsWith("<unused") && t.endsWith(">");
    }

    /** The rank of the first merge that makes each token. */
    private static Map<String, Integer> firstMerges(JsonNode merges) {
        Map<String, Integer> out = new HashMap<>();
        int r = 0;
        for (JsonNode m : merges) {
            String made = m.isTextual() ? m.asText().replaceFirst(" ", "") : m.get(0).asText() + m.get(1).asText();
            out.putIfAbsent(made, r++);
        }
        return out;
    }
}
