package io.radixkv.checkpoint;

import java.nio.file.Path;

/** A file whose tensors a {@link Checkpoint} lists: {@link LoadPlan} maps it and refuses it if its size changed. */
public interface CheckpointFile {
    /** The file. */
    Path file();

    /** Its size in bytes when its header was read. */
    long size();
}
