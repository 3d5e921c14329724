package io.radixkv.checkpoint;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Loads a checkpoint (a directory, or a {@link Checkpoint} another container built) into a new
 * {@link ParameterStore}: headers are read and every tensor is checked against the model's
 * {@link TensorSpec}s first, and only then is the store allocated and filled from the
 * memory-mapped files.
 */
public final class CheckpointLoader {
    private static final Logger LOG = LogManager.getLogger(CheckpointLoader.class);

    private CheckpointLoader() {}

    /** Loads {@code dir} into a store of {@code params} as {@code tensors} say; the caller closes the store. */
    public static ParameterStore load(Path dir, List<ParamSpec> params, List<TensorSpec> tensors) throws IOException {
        return load(Checkpoint.open(dir), params, tensors);
    }

    /** Loads {@code checkpoint} (its headers already read) into a store of {@code params}; the caller closes the store. */
    public static ParameterStore load(Checkpoint checkpoint, List<ParamSpec> params, List<TensorSpec> tensors)
            throws IOException {
        Path dir = checkpoint.dir();
        LoadPlan plan = LoadPlan.of(checkpoint, params, tensors);
        ParameterStore store = ParameterStore.allocateUninitialized(params); // copyInto writes every element
        try {
            LoadPlan.Stats s = plan.copyInto(store);
            LOG.info(String.format(Locale.ROOT, "loaded %s: %d bytes in %.3f s (%.2f GB/s)", dir, s.bytes(),
                    s.seconds(), s.gbPerSecond()));
            return store;
        } catch (IOException | RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }
}
