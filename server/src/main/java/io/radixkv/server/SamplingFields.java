package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * vLLM's sampling fields beyond temperature and top-p, parsed and checked as vLLM checks them
 * (a 400 naming the field): {@code top_k} (an integer ≥ -1; -1 and 0 are off), {@code min_p} (in
 * [0, 1]), {@code repetition_penalty} (&gt; 0), {@code presence_penalty} and
 * {@code frequency_penalty} (in [-2, 2]), {@code logit_bias} (token id as a string → bias, each
 * bias clamped to [-100, 100] as vLLM does, ids inside the vocabulary), {@code min_tokens} (an
 * integer ≥ 0, at most {@code max_tokens} where that is given), {@code bad_words} (strings, each
 * never generated: tokenized as vLLM does, without and with a leading space).
 */
record SamplingFields(int topK, float minP, float repetitionPenalty, float presencePenalty, float frequencyPenalty,
                      Map<Integer, Float> logitBias, int minTokens, List<List<Integer>> badWords) {
    /** The bias range of OpenAI's API; vLLM clamps values outside it. */
    static final double MAX_BIAS = 100;

    /** Every field at its neutral value. */
    static final SamplingFields NONE = new SamplingFields(0, 0f, 1f, 0f, 0f, Map.of(), 0, List.of());

    /**
     * @param maxTokens the request's token limit, 0 where it gave none
     */
    static SamplingFields parse(JsonNode body, TextModel text, int vocab, int maxTokens) {
        int topK = integer(body, "top_k", 0);
        if (topK < -1) {
            throw ApiException.badRequest("top_k", "'top_k' must be -1 or 0 (off) or at least 1, got " + topK);
        }
        double minP = RequestParser.number(body, "min_p", 0);
        if (!(minP >= 0 && minP <= 1)) {
            throw ApiException.badRequest("min_p", "'min_p' must be in [0, 1], got " + minP);
        }
        double repetition = RequestParser.number(body, "repetition_penalty", 1);
        if (!(repetition > 0)) {
            throw ApiException.badRequest("repetition_penalty", "'repetition_penalty' must be greater than zero, got "
                    + repetition);
        }
        float presence = penalty(body, "presence_penalty");
        float frequency = penalty(body, "frequency_penalty");
        int minTokens = integer(body, "min_tokens", 0);
        if (minTokens < 0) {
            throw ApiException.badRequest("min_tokens", "'min_tokens' must be at least 0, got " + minTokens);
        }
        if (maxTokens > 0 && minTokens > maxTokens) {
            throw ApiException.badRequest("min_tokens", "'min_tokens' must be at most max_tokens = " + maxTokens
                    + ", got " + minTokens);
        }
        return new SamplingFields(Math.max(topK, 0), (float) minP, (float) repetition, presence, frequency,
                logitBias(body, vocab), minTokens, badWords(body, text));
    }

    /** The engine's parameters: these fields with the request's others. */
    SamplingParams params(int maxTokens, float temperature, float topP, long seed, List<Integer> stopTokenIds) {
        // without max_tokens the context sets the limit, which min_tokens may exceed: it then ends there
        return new SamplingParams(maxTokens, temperature, topP, seed, stopTokenIds, topK, minP, repetitionPenalty,
                presencePenalty, frequencyPenalty, logitBias, Math.min(minTokens, maxTokens), badWords);
    }

    /**
     * Each word's token ids as vLLM's {@code SamplingParams.update_from_tokenizer} makes them:
     * the word (leading spaces stripped), and " " + the word where that is another first token
     * of as many tokens (the word inside a text).
     */
    private static List<List<Integer>> badWords(JsonNode body, TextModel text) {
        JsonNode n = body.get("bad_words");
        if (n == null || n.isNull()) {
            return List.of();
        }
        if (!n.isArray()) {
            throw ApiException.badRequest("bad_words", "'bad_words' must be an array of strings, got "
                    + RequestParser.kind(n));
        }
        List<List<Integer>> out = new ArrayList<>();
        for (JsonNode w : n) {
            if (!w.isTextual() || w.asText().isBlank()) {
                throw ApiException.badRequest("bad_words", "'bad_words' must hold non-blank strings, got " + w);
            }
            String word = w.asText().stripLeading();
            int[] plain = text.encode(word, false, "bad_words");
            int[] spaced = text.encode(" " + word, false, "bad_words");
            out.add(Arrays.stream(plain).boxed().toList());
            if (spaced.length == plain.length && spaced[0] != plain[0]) {
                out.add(Arrays.stream(spaced).boxed().toList());
            }
        }
        return out;
    }

    private static Map<Integer, Float> logitBias(JsonNode body, int vocab) {
        JsonNode n = body.get("logit_bias");
        if (n == null || n.isNull()) {
            return Map.of();
        }
        if (!n.isObject()) {
            throw ApiException.badRequest("logit_bias", "'logit_bias' must be an object of token id to bias, got "
                    + RequestParser.kind(n));
        }
        Map<Integer, Float> bias = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            int id;
            try {
                id = Integer.parseInt(e.getKey().trim());
            } catch (NumberFormatException ex) {
                throw ApiException.badRequest("logit_bias", "'logit_bias' key '" + e.getKey()
                        + "' is not an integer token id");
            }
            if (id < 0 || id >= vocab) {
                throw ApiException.badRequest("logit_bias", "'logit_bias' token id " + id
                        + " is outside the vocabulary [0, " + vocab + ")");
            }
            if (!e.getValue().isNumber()) {
                throw ApiException.badRequest("logit_bias", "'logit_bias' value for " + id + " must be a number, got "
                        + RequestParser.kind(e.getValue()));
            }
            bias.put(id, (float) Math.max(-MAX_BIAS, Math.min(MAX_BIAS, e.getValue().asDouble())));
        }
        return bias;
    }

    private static float penalty(JsonNode body, String field) {
        double v = RequestParser.number(body, field, 0);
        if (!(v >= -2 && v <= 2)) {
            throw ApiException.badRequest(field, "'" + field + "' must be in [-2, 2], got " + v);
        }
        return (float) v;
    }

    private static int integer(JsonNode body, String field, int dflt) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw ApiException.badRequest(field, "'" + field + "' must be an integer, got " + n);
        }
        return n.asInt();
    }
}
