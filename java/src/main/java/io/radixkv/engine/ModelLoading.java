package io.radixkv.engine;

import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The engine's only entry into weight loading: a preset (random weights), a checkpoint directory
 * or a GGUF file.
 */
final class ModelLoading {
    private ModelLoading() {}

    /**
     * @throws IllegalArgumentException when {@code config.model()} is neither a preset, a directory nor a
     *     {@code .gguf} file
     * @throws UncheckedIOException when the checkpoint cannot be read
     */
    static ModelWeights load(EngineConfig config) {
        String m = config.model().trim();
        if (ModelPresets.names().contains(m.toLowerCase(Locale.ROOT))) {
            return ModelWeights.random(ModelPresets.byName(m), config.weightsDtype(), config.weightsSeed(),
                    config.weightsQuant());
        }
        Path dir = Path.of(m);
        if (!Files.isDirectory(dir) && !ModelWeights.isGgufFile(dir)) {
            throw new IllegalArgumentException("model '" + m + "' is neither a preset " + ModelPresets.names()
                    + " nor a checkpoint directory nor a .gguf file");
        }
        try {
            return ModelWeights.load(dir, config.weightsDtype(), config.weightsQuant());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot load checkpoint " + dir + ": " + e.getMessage(), e);
        }
    }
}
