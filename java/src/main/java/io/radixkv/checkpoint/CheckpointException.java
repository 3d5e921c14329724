package io.radixkv.checkpoint;

import java.io.IOException;

/** A checkpoint that cannot be loaded; the message is one line naming the file and the tensor. */
public final class CheckpointException extends IOException {
    public CheckpointException(String message) {
        super(message);
    }

    public CheckpointException(String message, Throwable cause) {
        super(message, cause);
    }
}
