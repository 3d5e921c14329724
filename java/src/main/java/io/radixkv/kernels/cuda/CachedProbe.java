package io.radixkv.kernels.cuda;

import java.util.Objects;
import java.util.function.Supplier;

/**
 * An availability check run at most once: the first {@link #reason()} computes it, every
 * later call (from any thread) returns the same answer. "" means available; anything else is
 * the reason it is not. A check that throws is answered with the exception's message, so
 * asking never throws and never retries a failed load.
 */
final class CachedProbe {
    private final Supplier<String> check;
    private String reason;

    CachedProbe(Supplier<String> check) {
        this.check = Objects.requireNonNull(check, "check");
    }

    synchronized String reason() {
        if (reason == null) {
            String r;
            try {
                r = check.get();
            } catch (LinkageError | RuntimeException e) {
                r = e.getMessage() == null ? e.toString() : e.getMessage();
            }
            reason = r == null ? "availability check returned no answer" : r;
        }
        return reason;
    }
}
