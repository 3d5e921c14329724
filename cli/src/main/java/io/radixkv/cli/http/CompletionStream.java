package io.radixkv.cli.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Arrays;

/**
 * What a client sees of one streamed {@code /v1/completions} response, taken as vLLM's serving
 * benchmark client takes it: the first chunk carrying a choice is the first token (TTFT), each
 * later one the next (inter-token latency: the gaps between chunks), {@code [DONE]} the end
 * (end-to-end latency); the usage chunk ({@code stream_options.include_usage}) gives the
 * completion token count and, where the server reports it,
 * {@code prompt_tokens_details.cached_tokens}. A chunk whose only content is a
 * {@code finish_reason} (no text, no token ids) closes the choice and is not a token. An
 * {@code error} object in the stream fails the request.
 */
public final class CompletionStream {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The outcome.
     *
     * @param sentNanos when the request was sent (the clock's start)
     * @param eventNanos arrival time of each token chunk
     * @param completionTokens usage.completion_tokens, or -1 when not reported
     * @param promptTokens usage.prompt_tokens, or -1
     * @param cachedTokens usage.prompt_tokens_details.cached_tokens, or -1
     * @param finishReason the choice's finish_reason, or null
     * @param endNanos when [DONE] (or the failure) arrived
     * @param error why the request failed, or null
     */
    public record Result(long sentNanos, long[] eventNanos, int completionTokens, int promptTokens, int cachedTokens,
                         String finishReason, long endNanos, String error) {
        public Result {
            eventNanos = eventNanos.clone();
        }

        @Override
        public long[] eventNanos() {
            return eventNanos.clone();
        }

        public boolean ok() {
            return error == null;
        }

        static Result failed(long sentNanos, String error, long endNanos) {
            return new Result(sentNanos, new long[0], -1, -1, -1, null, Math.max(sentNanos, endNanos), error);
        }
    }

    private final long sentNanos;
    private long[] events = new long[16];
    private int count;
    private int completionTokens = -1;
    private int promptTokens = -1;
    private int cachedTokens = -1;
    private String finishReason;
    private String error;
    private boolean done;
    private long endNanos;

    /** @param sentNanos when the request was sent */
    public CompletionStream(long sentNanos) {
        this.sentNanos = sentNanos;
    }

    /**
     * Takes the data of one event that arrived at {@code nanos}.
     *
     * @return true when the stream is over ([DONE] or an error): read no further
     */
    public boolean accept(String data, long nanos) {
        if (done) {
            return true;
        }
        if (data.strip().equals("[DONE]")) {
            return end(nanos, null);
        }
        JsonNode n;
        try {
            n = JSON.readTree(data);
        } catch (JsonProcessingException e) {
            return end(nanos, "malformed stream chunk (" + e.getOriginalMessage() + "): " + clip(data));
        }
        if (n == null || !n.isObject()) {
            return end(nanos, "stream chunk is not a JSON object: " + clip(data));
        }
        if (n.hasNonNull("error") || "error".equals(n.path("object").asText())) {
            return end(nanos, "error in the stream: " + clip(n.has("error") ? n.get("error").toString() : data));
        }
        JsonNode choices = n.path("choices");
        if (choices.isArray() && !choices.isEmpty()) {
            JsonNode c = choices.get(0);
            JsonNode fr = c.path("finish_reason");
            boolean hasText = !c.path("text").asText("").isEmpty();
            boolean hasIds = c.path("token_ids").isArray() && !c.path("token_ids").isEmpty();
            if (hasText || hasIds || fr.isMissingNode() || fr.isNull()) {
                if (count == events.length) {
                    events = Arrays.copyOf(events, count * 2);
                }
                events[count++] = nanos;
            }
            if (fr.isTextual()) {
                finishReason = fr.asText();
            }
        }
        JsonNode usage = n.path("usage");
        if (usage.isObject()) {
            completionTokens = intOr(usage.path("completion_tokens"), completionTokens);
            promptTokens = intOr(usage.path("prompt_tokens"), promptTokens);
            cachedTokens = intOr(usage.path("prompt_tokens_details").path("cached_tokens"), cachedTokens);
        }
        return false;
    }

    /** The outcome; a stream that ended without [DONE] (at {@code nanos}) failed. */
    public Result result(long nanos) {
        if (!done) {
            end(nanos, "the stream ended before data: [DONE]" + (count > 0 ? " after " + count + " token chunks" : ""));
        }
        if (error == null && count == 0) {
            error = "the stream carried no token";
        }
        return new Result(sentNanos, Arrays.copyOf(events, count), completionTokens, promptTokens, cachedTokens, finishReason,
                endNanos, error);
    }

    private boolean end(long nanos, String why) {
        done = true;
        endNanos = nanos;
        error = why;
        return true;
    }

    private static int intOr(JsonNode v, int dflt) {
        return v.isIntegralNumber() && v.canConvertToInt() && v.asInt() >= 0 ? v.asInt() : dflt;
    }

    static String clip(String s) {
        String t = s.strip().replaceAll("\\s*\\R\\s*", " ");
        return t.length() <= 500 ? t : t.substring(0, 500) + "...";
    }
}
