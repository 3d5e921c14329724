package io.radixkv.structured;

/**
 * One generation's position in a {@link Grammar}: which tokens may come next
 * ({@link #allowedTokens}) and the advance by each sampled token ({@link #accept}). Once an
 * end token is accepted the matcher is terminated and allows only end tokens. Confined to one
 * thread at a time (the engine thread).
 */
public final class GrammarMatcher {
    private final Grammar grammar;
    private ByteRegex.Node state;
    private boolean terminated;

    GrammarMatcher(Grammar grammar, ByteRegex.Node state) {
        this.grammar = grammar;
        this.state = state;
    }

    public Grammar grammar() {
        return grammar;
    }

    /**
     * The tokens allowed next as a bitmask of {@link Grammar#maskWords()} int32 words (bit
     * {@code i & 31} of word {@code i >>> 5} set when token i is allowed). The array is shared
     * by every matcher in the same state: read it, never modify it.
     */
    public int[] allowedTokens() {
        return grammar.mask(state);
    }

    /**
     * Advances by {@code token} and returns true, or returns false and stays where it is when
     * the token is not allowed here (a special token, bytes that leave the language, an end
     * token before the text is complete).
     */
    public boolean accept(int token) {
        if (token < 0 || token >= grammar.vocabulary().size()) {
            return false;
        }
        if (grammar.vocabulary().isEnd(token)) {
            if (!grammar.accepts(state)) {
                return false;
            }
            terminated = true;
            return true;
        }
        byte[] b = grammar.vocabulary().bytes(token);
        if (terminated || b == null || b.length == 0) {
            return false;
        }
        ByteRegex.Node next = grammar.step(state, b);
        if (grammar.isDead(next)) {
            return false;
        }
        state = next;
        return true;
    }

    /** True when the text so far is a complete match (an end token may follow). */
    public boolean isComplete() {
        return grammar.accepts(state);
    }

    /** True once an end token was accepted. */
    public boolean isTerminated() {
        return terminated;
    }
}
