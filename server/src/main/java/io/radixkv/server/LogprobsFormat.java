package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.TokenLogprob;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A choice's {@code logprobs} and echoed prompt in OpenAI's shapes, as vLLM's server writes them.
 *
 * <ul>
 *   <li>Completions: {@code {tokens, token_logprobs, top_logprobs, text_offset}}; each
 *       {@code top_logprobs} entry maps token text to log-probability for the chosen token and
 *       the k most probable (one map of up to k + 1 entries, the chosen first); the echoed
 *       prompt's first token has null for both; {@code text_offset} counts the characters of
 *       the token texts before each token (from the text already streamed, in a stream).</li>
 *   <li>Chat: {@code {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}}
 *       with the k most probable tokens, most probable first.</li>
 * </ul>
 * A token's text is its id decoded alone, special tokens included ({@code bytes}: its UTF-8
 * bytes); without a tokenizer it is {@code token_id:ID}. A log-probability below -9999 (-inf)
 * is written as -9999.0, as vLLM and OpenAI do, so no JSON carries -Infinity or NaN.
 */
final class LogprobsFormat {
    /** OpenAI's and vLLM's floor for a log-probability in JSON. */
    static final double FLOOR = -9999.0;

    private final ObjectMapper json;
    private final TextModel text;

    LogprobsFormat(ObjectMapper json, TextModel text) {
        this.json = json;
        this.text = text;
    }

    static double clamp(double lp) {
        return lp >= FLOOR ? lp : FLOOR; // NaN too
    }

    String token(int id) {
        return text.hasTokenizer() ? text.decode(new int[] {id}) : "token_id:" + id;
    }

    /** The text an echo puts before the completion: the prompt decoded (special tokens as the request says). */
    String promptText(int[] prompt, ParsedRequest pr) {
        if (!text.hasTokenizer()) {
            return "";
        }
        Detokenizer d = text.detokenizer(new int[0], pr.output().skipSpecialTokens());
        StringBuilder sb = new StringBuilder();
        for (int id : prompt) {
            sb.append(d.next(id));
        }
        return sb.append(d.flush()).toString();
    }

    /**
     * The choice's {@code logprobs} value: null where none were asked for.
     *
     * @param prompt the echoed prompt's ids (null: no echo, or not in this chunk)
     * @param promptLogprobs the prompt's tokens 1 .. n-1
     * @param ids the generated tokens of this choice (or chunk)
     * @param logprobs one per id
     * @param offset the characters already streamed before these tokens (0 for a whole choice)
     */
    JsonNode choice(ParsedRequest pr, int[] prompt, List<TokenLogprob> promptLogprobs, int[] ids,
                    List<TokenLogprob> logprobs, int offset) {
        LogprobsRequest lr = pr.logprobs();
        if (!lr.wanted()) {
            return NullNode.getInstance();
        }
        List<Integer> tokens = new ArrayList<>();
        List<TokenLogprob> lps = new ArrayList<>();
        if (prompt != null) {
            for (int j = 0; j < prompt.length; j++) {
                tokens.add(prompt[j]);
                lps.add(j == 0 || j - 1 >= promptLogprobs.size() ? null : promptLogprobs.get(j - 1));
            }
        }
        for (int j = 0; j < ids.length; j++) {
            tokens.add(ids[j]);
            lps.add(logprobs == null || j >= logprobs.size() ? null : logprobs.get(j));
        }
        return pr.chat() ? chat(tokens, lps, lr.topK()) : completion(tokens, lps, lr.topK(), offset);
    }

    private ObjectNode completion(List<Integer> tokens, List<TokenLogprob> lps, int k, int offset) {
        ObjectNode o = json.createObjectNode();
        ArrayNode toks = o.putArray("tokens");
        ArrayNode tokenLps = o.putArray("token_logprobs");
        ArrayNode tops = o.putArray("top_logprobs");
        ArrayNode offsets = o.putArray("text_offset");
        int at = offset;
        for (int i = 0; i < tokens.size(); i++) {
            String t = token(tokens.get(i));
            TokenLogprob lp = lps.get(i);
            toks.add(t);
            offsets.add(at);
            at += t.codePointCount(0, t.length());
            if (lp == null) {
                tokenLps.addNull();
                tops.addNull();
                continue;
            }
            tokenLps.add(clamp(lp.logprob()));
            ObjectNode top = tops.addObject();
            top.put(t, clamp(lp.logprob()));
            for (int j = 0; j < Math.min(k, lp.topCount()); j++) {
                top.put(token(lp.topId(j)), clamp(lp.topLogprob(j)));
            }
        }
        return o;
    }

    private ObjectNode chat(List<Integer> tokens, List<TokenLogprob> lps, int k) {
        ObjectNode o = json.createObjectNode();
        ArrayNode content = o.putArray("content");
        for (int i = 0; i < tokens.size(); i++) {
            TokenLogprob lp = lps.get(i);
            ObjectNode e = entry(content.addObject(), tokens.get(i), lp == null ? FLOOR : lp.logprob());
            ArrayNode top = e.putArray("top_logprobs");
            for (int j = 0; lp != null && j < Math.min(k, lp.topCount()); j++) {
                entry(top.addObject(), lp.topId(j), lp.topLogprob(j));
            }
        }
        return o;
    }

    private ObjectNode entry(ObjectNode e, int id, double logprob) {
        String t = token(id);
        e.put("token", t);
        e.put("logprob", clamp(logprob));
        ArrayNode bytes = e.putArray("bytes");
        for (byte b : t.getBytes(StandardCharsets.UTF_8)) {
            bytes.add(b & 0xff);
        }
        return e;
    }

    /** One choice of a stream: the echoed prompt goes with its first chunk, offsets run on. */
    Stream stream(ParsedRequest pr, Generation g) {
        return new Stream(pr, pr.logprobs().echo() ? g.prompt() : null, g);
    }

    /** A chunk's text and {@code logprobs} value. */
    record Part(String text, JsonNode logprobs) {}

    /** The per-choice state of a stream. Used by the choice's one writer thread. */
    final class Stream {
        private final ParsedRequest pr;
        private final Generation g;
        private int[] prompt;
        private int offset;

        private Stream(ParsedRequest pr, int[] prompt, Generation g) {
            this.pr = pr;
            this.prompt = prompt;
            this.g = g;
        }

        /** True while the echoed prompt has not been sent (no chunk yet). */
        boolean echoPending() {
            return prompt != null;
        }

        /** The next chunk's text (the prompt's before the first) and log-probabilities. */
        Part next(String piece, int[] ids, List<TokenLogprob> logprobs) {
            String t = prompt == null ? piece : promptText(prompt, pr) + piece;
            JsonNode lp = choice(pr, prompt, prompt == null ? List.of() : g.promptLogprobs(), ids, logprobs, offset);
            prompt = null;
            offset += t.codePointCount(0, t.length());
            return new Part(t, lp);
        }
    }
}
