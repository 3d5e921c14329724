package io.radixkv.server;

import io.radixkv.checkpoint.gguf.GgufFile;
import io.radixkv.model.ModelWeights;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The tokenizer a served model speaks, found as vLLM and llama.cpp find it: an explicit Hugging
 * Face tokenizer directory wins; otherwise a model directory's own {@code tokenizer.json}, or a
 * GGUF file's {@code tokenizer.*} metadata (rebuilt by {@link HfTokenizer#fromGguf}). A preset, a
 * directory without tokenizer.json or a GGUF file without a vocabulary has none: prompts are then
 * token ids.
 */
public final class ModelTokenizer {
    private ModelTokenizer() {}

    /**
     * @param model the model as {@code --model} names it (a preset name, a directory or a .gguf file)
     * @param tokenizerDir a Hugging Face tokenizer directory that overrides the model's, or null
     * @throws io.radixkv.text.UnsupportedTokenizerException when a GGUF vocabulary cannot be
     *     rebuilt (the message names the file and the reason)
     */
    public static Optional<HfTokenizer> load(String model, Path tokenizerDir) throws IOException {
        if (tokenizerDir != null) {
            return Optional.of(HfTokenizer.load(tokenizerDir));
        }
        Path path = Path.of(model);
        if (Files.isDirectory(path)) {
            return Files.isRegularFile(path.resolve("tokenizer.json")) ? Optional.of(HfTokenizer.load(path)) : Optional.empty();
        }
        if (!ModelWeights.isGgufFile(path)) {
            return Optional.empty();
        }
        try (GgufFile gguf = GgufFile.open(path)) {
            var metadata = gguf.metadata().values();
            return HfTokenizer.ggufHasTokenizer(metadata) ? Optional.of(HfTokenizer.fromGguf(metadata, path)) : Optional.empty();
        }
    }
}
