package io.radixkv.structured;

/**
 * A constraint that cannot be compiled: an unsupported JSON Schema keyword or regex feature,
 * a schema that matches nothing, a malformed definition. {@link #keyword()} names what was
 * refused (a schema keyword such as {@code "oneOf"}, or {@code "regex"}, {@code "choice"}).
 */
public final class ConstraintException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String keyword;

    public ConstraintException(String keyword, String message) {
        super(message);
        this.keyword = keyword;
    }

    /** The keyword or constraint kind refused. */
    public String keyword() {
        return keyword;
    }
}
