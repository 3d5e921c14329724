package io.radixkv.kernels;

/**
 * A native kernel returned an error status. Java-side validation runs before every
 * downcall, so this signals a condition Java could not check (CUDA errors, out of memory).
 */
public final class NativeException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;

    public NativeException(String function, int status, String message) {
        super(function + " failed with status " + status + ": " + message);
        this.status = status;
    }

    public int status() {
        return status;
    }
}
