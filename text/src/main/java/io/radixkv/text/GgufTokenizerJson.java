package io.radixkv.text;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Rebuilds a Hugging Face {@code tokenizer.json} (and what radixkv reads from
 * {@code tokenizer_config.json} and {@code generation_config.json}) from a GGUF vocabulary, as
 * transformers' GGUF loading does ({@code integrations/ggml.py}), with the pre-tokenizers of the
 * models' own tokenizer.json files:
 *
 * <ul>
 *   <li>{@code gpt2} + {@code llama-bpe} (Llama 3): Llama 3's split regex (digits in runs of up
 *       to three), byte-level BPE with the file's merges, {@code ignore_merges} as llama.cpp sets
 *       it for this pre-tokenizer;
 *   <li>{@code gpt2} + {@code qwen2} (Qwen2, 2.5, 3): NFC, Qwen's split regex (single digits),
 *       byte-level BPE;
 *   <li>{@code llama} (SentencePiece, e.g. Gemma 3): spaces become U+2581 (after a prefixed one
 *       when {@code add_space_prefix}), BPE with byte fallback whose merges are generated from
 *       the scores as transformers generates them from a {@code tokenizer.model}: every split of
 *       a token into two tokens, ranked by the token's score.
 * </ul>
 *
 * Control and unknown tokens become special added tokens, user-defined ones non-special added
 * tokens (matched in the text before the model runs, as in both libraries); unused ones are left
 * out. Stop ids are llama.cpp's end-of-generation set: eos, eot and eom plus the tokens whose
 * text llama.cpp recognizes as an end of turn.
 */
final class GgufTokenizerJson {
    /** Llama 3's pre-tokenizer split, from its tokenizer.json. */
    static final String LLAMA3_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Qwen2's pre-tokenizer split, from its tokenizer.json: as Llama 3's but one digit at a time. */
    static final String QWEN2_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Token texts llama.cpp's vocabulary loader treats as an end of generation. */
    static final Set<String> END_OF_GENERATION = Set.of("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
            "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>");
    private static final String SPIECE = "\u2581";
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** The rebuilt tokenizer.json and the files record radixkv reads beside it. */
    record Built(byte[] tokenizerJson, TokenizerFiles files) {}

    private GgufTokenizerJson() {}

    /**
     * Where each token goes: its tokenizer.json text ({@code keys}), whether it is in the model's
     * vocabulary, an added token, and a special one.
     */
    private record Placement(String[] keys, BitSet inVocab, BitSet added, BitSet special) {}

    static Built build(GgufVocab v, String source) throws UnsupportedTokenizerException {
        boolean spm = v.model().equals("llama");
        if (!spm && !v.pre().equals("llama-bpe") && !v.pre().equals("qwen2")) {
            throw new UnsupportedTokenizerException(source + ": tokenizer.ggml.pre is '" + v.pre()
                    + "': only the 'llama-bpe' (Llama 3) and 'qwen2' (Qwen2, Qwen3) pre-tokenizers are rebuilt");
        }
        Placement p = place(v, spm);
        ObjectNode generation = F.objectNode();
        ArrayNode stop = generation.putArray("eos_token_id");
        stopIds(v).forEach(stop::add);
        Map<String, Integer> addedIds = new HashMap<>();
        for (int i = p.added().nextSetBit(0); i >= 0; i = p.added().nextSetBit(i + 1)) {
            addedIds.put(p.keys()[i], i);
        }
        BitSet ids = (BitSet) p.inVocab().clone();
        ids.or(p.added());
        TokenizerFiles files = new TokenizerFiles(ids.cardinality(), ids.length() - 1, Map.copyOf(addedIds),
                config(v, p.keys()), Optional.of(generation), Optional.empty());
        return new Built(write(v, spm, p), files);
    }

    /**
     * Control and unknown tokens (and the special ids) are special added tokens, user-defined ones
     * non-special added tokens, unused ones nowhere; a SentencePiece vocabulary keeps every other
     * token in the model too, as its tokenizer.json does.
     */
    private static Placement place(GgufVocab v, boolean spm) {
        int n = v.size();
        Set<Integer> forcedSpecial = new LinkedHashSet<>();
        for (OptionalInt id : List.of(v.bos(), v.eos(), v.unk(), v.pad(), v.eot(), v.eom())) {
            id.ifPresent(forcedSpecial::add);
        }
        Placement p = new Placement(new String[n], new BitSet(n), new BitSet(n), new BitSet(n));
        for (int i = 0; i < n; i++) {
            int type = v.types()[i];
            String text = v.tokens().get(i);
            // GGUF converters store a SentencePiece user-defined token with its U+2581 as spaces.
            p.keys()[i] = spm && type == GgufVocab.USER_DEFINED ? text.replace(" ", SPIECE) : text;
            if (type == GgufVocab.UNUSED && !forcedSpecial.contains(i)) {
                continue;
            }
            boolean isAdded = type == GgufVocab.CONTROL || type == GgufVocab.USER_DEFINED || type == GgufVocab.UNKNOWN
                    || forcedSpecial.contains(i);
            if (isAdded) {
                p.added().set(i);
                p.special().set(i, type != GgufVocab.USER_DEFINED);
            }
            if (spm || !isAdded) {
                p.inVocab().set(i);
            }
        }
        return p;
    }

    /** The tokenizer.json bytes, streamed: the vocabularies and merges run to tens of MB. */
    private static byte[] write(GgufVocab v, boolean spm, Placement p) {
        String[] keys = p.keys();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(1 << 20);
        try (JsonGenerator g = TokenizerFiles.JSON.createGenerator(bytes)) {
            g.writeStartObject();
            g.writeStringField("version", "1.0");
            g.writeNullField("truncation");
            g.writeNullField("padding");
            g.writeArrayFieldStart("added_tokens");
            for (int i = p.added().nextSetBit(0); i >= 0; i = p.added().nextSetBit(i + 1)) {
                g.writeStartObject();
                g.writeNumberField("id", i);
                g.writeStringField("content", keys[i]);
                g.writeBooleanField("single_word", false);
                g.writeBooleanField("lstrip", false);
                g.writeBooleanField("rstrip", false);
                g.writeBooleanField("normalized", false);
                g.writeBooleanField("special", p.special().get(i));
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeFieldName("normalizer");
            g.writeTree(spm ? spmNormalizer(v.addSpacePrefix()) : v.pre().equals("qwen2") ? type("NFC") : null);
            g.writeFieldName("pre_tokenizer");
            g.writeTree(spm ? null : byteLevelPreTokenizer(v.pre()));
            g.writeFieldName("post_processor");
            g.writeTree(template(v, keys));
            g.writeFieldName("decoder");
            g.writeTree(spm ? spmDecoder(v.addSpacePrefix()) : byteLevel(v.pre().equals("llama-bpe")));
            g.writeObjectFieldStart("model");
            g.writeStringField("type", "BPE");
            g.writeNullField("dropout");
            if (spm && v.unk().isPresent()) {
                g.writeStringField("unk_token", keys[v.unk().getAsInt()]);
            } else {
                g.writeNullField("unk_token");
            }
            g.writeNullField("continuing_subword_prefix");
            g.writeNullField("end_of_word_suffix");
            g.writeBooleanField("fuse_unk", spm);
            g.writeBooleanField("byte_fallback", spm);
            g.writeBooleanField("ignore_merges", v.pre().equals("llama-bpe"));
            g.writeObjectFieldStart("vocab");
            for (int i = p.inVocab().nextSetBit(0); i >= 0; i = p.inVocab().nextSetBit(i + 1)) {
                g.writeNumberField(keys[i], i);
            }
            g.writeEndObject();
            g.writeArrayFieldStart("merges");
            for (String[] m : spm ? SpmMerges.generate(v, keys, p.inVocab()) : v.merges()) {
                g.writeStartArray();
                g.writeString(m[0]);
                g.writeString(m[1]);
                g.writeEndArray();
            }
            g.writeEndArray();
            g.writeEndObject();
            g.writeEndObject();
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e);
        }
        return bytes.toByteArray();
    }

    /** The eos, eot and eom ids and the tokens llama.cpp takes for an end of generation, in id order. */
    static Set<Integer> stopIds(GgufVocab v) {
        Set<Integer> out = new LinkedHashSet<>();
        v.eos().ifPresent(out::add);
        v.eot().ifPresent(out::add);
        v.eom().ifPresent(out::add);
        for (int i = 0; i < v.size(); i++) {
            if (END_OF_GENERATION.contains(v.tokens().get(i))) {
                out.add(i);
            }
        }
        return out;
    }

    /** What tokenizer_config.json would say: the special token texts, BOS/EOS flags, chat templates. */
    private static ObjectNode config(GgufVocab v, String[] keys) {
        ObjectNode c = F.objectNode();
        putToken(c, "bos_token", v.bos(), keys);
        putToken(c, "eos_token", v.eos(), keys);
        putToken(c, "unk_token", v.unk(), keys);
        putToken(c, "pad_token", v.pad(), keys);
        c.put("add_bos_token", v.addBos() && v.bos().isPresent());
        c.put("add_eos_token", v.addEos() && v.eos().isPresent());
        Map<String, String> t = v.chatTemplates();
        if (t.size() == 1 && t.containsKey("default")) {
            c.put("chat_template", t.get("default"));
        } else if (!t.isEmpty()) {
            ArrayNode list = c.putArray("chat_template");
            t.forEach((name, source) -> list.addObject().put("name", name).put("template", source));
        }
        return c;
    }

    private static void putToken(ObjectNode c, String key, OptionalInt id, String[] keys) {
        id.ifPresent(i -> c.put(key, keys[i]));
    }

    private static ObjectNode type(String type) {
        return F.objectNode().put("type", type);
    }

    private static ObjectNode byteLevel(boolean addPrefixSpace) {
        return type("ByteLevel").put("add_prefix_space", addPrefixSpace).put("trim_offsets", addPrefixSpace)
                .put("use_regex", addPrefixSpace);
    }

    private static JsonNode byteLevelPreTokenizer(String pre) {
        ObjectNode split = type("Split");
        split.putObject("pattern").put("Regex", pre.equals("llama-bpe") ? LLAMA3_SPLIT : QWEN2_SPLIT);
        split.put("behavior", "Isolated").put("invert", false);
        ObjectNode seq = type("Sequence");
        seq.putArray("pretokenizers").add(split).add(type("ByteLevel").put("add_prefix_space", false)
                .put("trim_offsets", pre.equals("llama-bpe")).put("use_regex", false));
        return seq;
    }

    private static JsonNode spmNormalizer(boolean addSpacePrefix) {
        ObjectNode replace = type("Replace");
        replace.putObject("pattern").put("String", " ");
        replace.put("content", SPIECE);
        if (!addSpacePrefix) {
            return replace;
        }
        ObjectNode seq = type("Sequence");
        seq.putArray("normalizers").add(type("Prepend").put("prepend", SPIECE)).add(replace);
        return seq;
    }

    private static JsonNode spmDecoder(boolean addSpacePrefix) {
        ObjectNode replace = type("Replace");
        replace.putObject("pattern").put("String", SPIECE);
        replace.put("content", " ");
        ObjectNode seq = type("Sequence");
        ArrayNode list = seq.putArray("decoders").add(replace).add(type("ByteFallback")).add(type("Fuse"));
        if (addSpacePrefix) {
            list.add(type("Strip").put("content", " ").put("start", 1).put("stop", 0));
        }
        return seq;
    }

    /** A TemplateProcessing that adds BOS and/or EOS as the flags say, or null when neither is added. */
    private static JsonNode template(GgufVocab v, String[] keys) {
        boolean bos = v.addBos() && v.bos().isPresent();
        boolean eos = v.addEos() && v.eos().isPresent();
        if (!bos && !eos) {
            return null;
        }
        ObjectNode t = type("TemplateProcessing");
        String bosText = bos ? keys[v.bos().getAsInt()] : null;
        String eosText = eos ? keys[v.eos().getAsInt()] : null;
        sequence(t.putArray("single"), "A", 0, bosText, eosText);
        ArrayNode pair = t.putArray("pair");
        sequence(pair, "A", 0, bosText, eosText);
        sequence(pair, "B", 1, bosText, eosText);
        ObjectNode specials = t.putObject("special_tokens");
        for (OptionalInt id : bos && eos ? List.of(v.bos(), v.eos()) : List.of(bos ? v.bos() : v.eos())) {
            String text = keys[id.getAsInt()];
            ObjectNode e = specials.putObject(text).put("id", text);
            e.putArray("ids").add(id.getAsInt());
            e.putArray("tokens").add(text);
        }
        return t;
    }

    private static void sequence(ArrayNode out, String id, int typeId, String bos, String eos) {
        if (bos != null) {
            out.addObject().putObject("SpecialToken").put("id", bos).put("type_id", typeId);
        }
        out.addObject().putObject("Sequence").put("id", id).put("type_id", typeId);
        if (eos != null) {
            out.addObject().putObject("SpecialToken").put("id", eos).put("type_id", typeId);
        }
    }
}
