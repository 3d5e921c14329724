package io.radixkv.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A Hugging Face tokenizer loaded from a model directory: {@code tokenizer.json} runs in the
 * Rust {@code tokenizers} library (through DJL, which bundles it for linux-x86_64), and
 * {@code tokenizer_config.json}, {@code generation_config.json} and {@code config.json} supply
 * what transformers adds on top: BOS/EOS handling, stop ids and the chat template.
 *
 * <p>Decoding is the Rust library's {@code decode}, as vLLM streams it: transformers'
 * {@code clean_up_tokenization_spaces} (which would turn {@code "a ."} into {@code "a."}) is
 * not applied.
 *
 * <p>Thread-safe for encode and decode; {@link #close()} must not race with them.
 */
public final class HfTokenizer implements AutoCloseable {

    static {
        // DJL never downloads what it needs for a local tokenizer.json (the native library is in
        // its jar), but its factory methods "call home" on EC2 unless told it is offline.
        if (System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        if (System.getProperty("OPT_OUT_TRACKING") == null) {
            System.setProperty("OPT_OUT_TRACKING", "true");
        }
    }

    private final HuggingFaceTokenizer native_;
    private final Path dir;
    private final TokenizerFiles files;
    private final String bosToken;
    private final String eosToken;
    private final OptionalInt bosId;
    private final OptionalInt eosId;
    /** Non-null when tokenizer_config.json sets add_bos_token / add_eos_token (see encode). */
    private final Boolean addBos;
    private final Boolean addEos;
    private final Set<Integer> stopIds;
    private final Optional<ChatTemplate> chatTemplate;
    /** The tokenizer.json this tokenizer was built from when it has no file (a GGUF's, rebuilt); else null. */
    private byte[] builtJson;

    private HfTokenizer(HuggingFaceTokenizer nativeTokenizer, Path dir, TokenizerFiles files,
            Optional<ChatTemplate> chatTemplate) {
        this.native_ = nativeTokenizer;
        this.dir = dir;
        this.files = files;
        this.bosToken = files.specialToken("bos_token").orElse(null);
        this.eosToken = files.specialToken("eos_token").orElse(null);
        this.bosId = tokenId(bosToken);
        this.eosId = tokenId(eosToken);
        this.addBos = files.flag("add_bos_token").orElse(null);
        this.addEos = files.flag("add_eos_token").orElse(null);
        this.stopIds = Set.copyOf(combineStopIds());
        this.chatTemplate = chatTemplate;
    }

    /**
     * Loads {@code tokenizer.json} and {@code tokenizer_config.json} (and, when present,
     * {@code generation_config.json}, {@code config.json} and {@code chat_template.jinja}) from
     * {@code modelDir}. Nothing is downloaded.
     */
    public static HfTokenizer load(Path modelDir) throws IOException {
        Objects.requireNonNull(modelDir, "modelDir");
        if (!Files.isDirectory(modelDir)) {
            throw new IOException("not a model directory: " + modelDir);
        }
        TokenizerFiles files = TokenizerFiles.read(modelDir);
        Optional<ChatTemplate> template = ChatTemplates.load(modelDir, files.config(), ChatTemplates.specialTokens(files));
        try (InputStream in = Files.newInputStream(modelDir.resolve("tokenizer.json"))) {
            return create(in, modelDir.resolve("tokenizer.json").toString(), modelDir, files, template);
        }
    }

    /**
     * Rebuilds the tokenizer and chat template of a GGUF file from its {@code tokenizer.*}
     * metadata (values as the GGUF reader gives them: integers as Long, float32 as Float, arrays
     * as List), as llama.cpp and transformers read them: a byte-level BPE ({@code gpt2} with the
     * {@code llama-bpe} or {@code qwen2} pre-tokenizer) or SentencePiece ({@code llama}) vocabulary
     * becomes the Hugging Face tokenizer.json those models ship, and {@code tokenizer.chat_template}
     * the chat template. {@link #directory()} is then {@code file}.
     *
     * @throws UnsupportedTokenizerException when the vocabulary is of a kind radixkv does not
     *     rebuild, or a key is missing or malformed; the message names the file and the reason
     */
    public static HfTokenizer fromGguf(Map<String, ?> metadata, Path file) throws IOException {
        Objects.requireNonNull(metadata, "metadata");
        Objects.requireNonNull(file, "file");
        GgufTokenizerJson.Built built = GgufTokenizerJson.build(GgufVocab.read(metadata, file.toString()), file.toString());
        TokenizerFiles files = built.files();
        Optional<ChatTemplate> template = ChatTemplates.named(files.config().get("chat_template"), "default",
                ChatTemplates.specialTokens(files));
        HfTokenizer t = create(new java.io.ByteArrayInputStream(built.tokenizerJson()), "the tokenizer rebuilt from "
                + file, file, files, template);
        t.builtJson = built.tokenizerJson();
        return t;
    }

    /** True when {@code metadata} describes a tokenizer ({@code tokenizer.ggml.model} is set and not "none"). */
    public static boolean ggufHasTokenizer(Map<String, ?> metadata) {
        Object model = metadata.get("tokenizer.ggml.model");
        return model != null && !"none".equals(model) && !"no_vocab".equals(model);
    }

    private static HfTokenizer create(InputStream tokenizerJson, String what, Path source, TokenizerFiles files,
            Optional<ChatTemplate> template) throws IOException {
        HuggingFaceTokenizer tok;
        try {
            // No truncation or padding: DJL's defaults (512 tokens) are for encoders, not LLM prompts.
            tok = HuggingFaceTokenizer.newInstance(tokenizerJson,
                    Map.of("truncation", "false", "padding", "false", "addSpecialTokens", "true"));
        } catch (RuntimeException e) {
            throw new IOException("cannot load " + what + ": " + e.getMessage(), e);
        }
        try {
            return new HfTokenizer(tok, source, files, template);
        } catch (RuntimeException e) {
            tok.close();
            throw e;
        }
    }

    /**
     * Token ids of {@code text}. Special tokens written in the text ({@code <|im_start|>})
     * become their ids. With {@code addSpecialTokens} the result is what transformers'
     * {@code tokenizer(text)} returns: when tokenizer_config.json sets {@code add_bos_token} or
     * {@code add_eos_token} those decide (as the Llama and Gemma tokenizers rebuild their
     * post-processor from them), otherwise tokenizer.json's post-processor adds its tokens
     * (Llama 3: {@code <|begin_of_text|>}; Qwen: none).
     *
     * <p>A rendered chat template already contains the BOS text: encode it with
     * {@code addSpecialTokens=false}, as transformers' {@code apply_chat_template(tokenize=True)} does.
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        Objects.requireNonNull(text, "text");
        boolean explicit = addBos != null || addEos != null;
        long[] ids = native_.encode(text, addSpecialTokens && !explicit, false).getIds();
        int[] body = toInts(ids);
        if (!addSpecialTokens || !explicit) {
            return body;
        }
        boolean bos = Boolean.TRUE.equals(addBos) && bosId.isPresent();
        boolean eos = Boolean.TRUE.equals(addEos) && eosId.isPresent();
        int[] out = new int[body.length + (bos ? 1 : 0) + (eos ? 1 : 0)];
        System.arraycopy(body, 0, out, bos ? 1 : 0, body.length);
        if (bos) {
            out[0] = bosId.getAsInt();
        }
        if (eos) {
            out[out.length - 1] = eosId.getAsInt();
        }
        return out;
    }

    /** Text of {@code ids}; with {@code skipSpecialTokens} the special added tokens are left out. */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        Objects.requireNonNull(ids, "ids");
        return native_.decode(checkedIds(ids, 0, ids.length), skipSpecialTokens);
    }

    /** decode of {@code ids[from, to)} without copying into an int[] first. */
    String decode(int[] ids, int from, int to, boolean skipSpecialTokens) {
        return native_.decode(checkedIds(ids, from, to), skipSpecialTokens);
    }

    /**
     * A streaming decoder for the tokens generated after {@code promptIds} (the prompt is
     * context only: its text is never emitted).
     */
    public IncrementalDetokenizer detokenizer(int[] promptIds, boolean skipSpecialTokens) {
        Objects.requireNonNull(promptIds, "promptIds");
        checkedIds(promptIds, 0, promptIds.length);
        return new IncrementalDetokenizer(this, promptIds, skipSpecialTokens);
    }

    /**
     * Ids that end generation, combined as vLLM does: the tokenizer's {@code eos_token}, plus
     * {@code eos_token_id} (an int or a list) of generation_config.json, or of config.json
     * when there is no generation_config.json (transformers derives the generation config
     * from the model config then).
     */
    public Set<Integer> stopTokenIds() {
        return stopIds;
    }

    public OptionalInt bosTokenId() {
        return bosId;
    }

    public OptionalInt eosTokenId() {
        return eosId;
    }

    /** tokenizer_config.json's bos_token, or null. */
    public String bosToken() {
        return bosToken;
    }

    /** tokenizer_config.json's eos_token, or null. */
    public String eosToken() {
        return eosToken;
    }

    /** Number of distinct ids: the model vocabulary plus added tokens (transformers' len(tokenizer)). */
    public int vocabSize() {
        return files.vocabSize();
    }

    /** Id of a single token (an added token or a vocabulary entry), if the text is exactly one token. */
    public OptionalInt tokenId(String token) {
        if (token == null) {
            return OptionalInt.empty();
        }
        Integer added = files.addedTokens().get(token);
        if (added != null) {
            return OptionalInt.of(added);
        }
        long[] ids = native_.encode(token, false, false).getIds();
        return ids.length == 1 && token.equals(native_.decode(ids, false))
                ? OptionalInt.of((int) ids[0]) : OptionalInt.empty();
    }

    /**
     * The default chat template: tokenizer_config.json's {@code chat_template} (a string, or
     * the entry named "default" of a list of {name, template}), overridden by a
     * {@code chat_template.jinja} file, else a {@code chat_template.json} file.
     */
    public Optional<ChatTemplate> chatTemplate() {
        return chatTemplate;
    }

    /** A named chat template of a list-valued {@code chat_template} (e.g. "tool_use"). */
    public Optional<ChatTemplate> chatTemplate(String name) {
        return ChatTemplates.named(files.config().get("chat_template"), name, ChatTemplates.specialTokens(files));
    }

    /**
     * A chat template from its Jinja source (a request's own {@code chat_template}), with this
     * tokenizer's special-token variables; compiled when rendered.
     */
    public ChatTemplate chatTemplateOf(String source) {
        return ChatTemplate.of(source, ChatTemplates.specialTokens(files));
    }

    /** The model directory, or the GGUF file, the tokenizer was loaded from. */
    public Path directory() {
        return dir;
    }

    /**
     * The Hugging Face {@code tokenizer.json} this tokenizer runs: the directory's file, or the one
     * rebuilt from a GGUF file's metadata. The caller closes the stream.
     */
    public InputStream openTokenizerJson() throws IOException {
        return builtJson != null ? new java.io.ByteArrayInputStream(builtJson)
                : java.nio.file.Files.newInputStream(dir.resolve("tokenizer.json"));
    }

    @Override
    public void close() {
        native_.close();
    }

    private Set<Integer> combineStopIds() {
        Set<Integer> out = new LinkedHashSet<>();
        eosId.ifPresent(out::add);
        Optional<JsonNode> gen = files.generationConfig();
        if (gen.isPresent()) {
            out.addAll(TokenizerFiles.eosIds(gen.get()));
        } else if (files.modelConfig().isPresent()) {
            JsonNode cfg = files.modelConfig().get();
            Set<Integer> ids = TokenizerFiles.eosIds(cfg);
            // Multimodal configs (Gemma 3) may keep the text model's ids under text_config.
            out.addAll(ids.isEmpty() && cfg.has("text_config") ? TokenizerFiles.eosIds(cfg.get("text_config")) : ids);
        }
        for (int id : out) {
            if (id < 0 || id > files.maxId()) {
                throw new IllegalArgumentException("eos_token_id " + id + " outside the vocabulary [0, "
                        + files.maxId() + "] of " + dir);
            }
        }
        return out;
    }

    void checkId(int id) {
        if (id < 0 || id > files.maxId()) {
            throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, "
                    + files.maxId() + "]");
        }
    }

    private long[] checkedIds(int[] ids, int from, int to) {
        Objects.checkFromToIndex(from, to, ids.length);
        long[] out = new long[to - from];
        int max = files.maxId();
        for (int i = from; i < to; i++) {
            int id = ids[i];
            if (id < 0 || id > max) {
                throw new IllegalArgumentException("token id " + id + " at index " + i
                        + " is outside the vocabulary [0, " + max + "]");
            }
            out[i - from] = id;
        }
        return out;
    }

    private static int[] toInts(long[] ids) {
        return Arrays.stream(ids).mapToInt(Math::toIntExact).toArray();
    }
}
