package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.structured.Grammar;
import io.radixkv.cache.Namespace;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Validates request bodies against what radixkv supports, as vLLM's OpenAI server does: a field
 * whose meaning radixkv cannot honour (beam search, {@code suffix}, ...) is refused with a 400 that names it, and passes only at its neutral value;
 * a field that changes nothing here ({@code store}, {@code metadata}, {@code user},
 * {@code service_tier}, ... and any field neither OpenAI nor vLLM defines) is accepted and ignored,
 * with one log line per request naming the ignored fields. Known fields are type-checked.
 */
final class RequestParser {
    private static final Logger LOG = LogManager.getLogger(RequestParser.class);
    private static final Set<String> COMMON = Set.of("model", "max_tokens", "temperature", "top_p", "seed", "stop",
            "stop_token_ids", "stream", "stream_options", "cache_salt", "n", "presence_penalty", "frequency_penalty",
            "logit_bias", "logprobs", "top_k", "min_p", "repetition_penalty", "min_tokens", "ignore_eos",
            "include_stop_str_in_output", "skip_special_tokens", "spaces_between_special_tokens", "use_beam_search",
            "prompt_logprobs", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
            "bad_words", "allowed_token_ids", "logits_processors", "truncate_prompt_tokens", "echo", "best_of",
            "top_logprobs", "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call",
            "response_format");
    private static final Set<String> COMPLETION = Set.of("prompt", "suffix", "add_special_tokens");
    private static final Set<String> CHAT = Set.of("messages", "max_completion_tokens", "chat_template_kwargs",
            "chat_template", "add_generation_prompt", "continue_final_message");
    /** vLLM's fields that select what radixkv does not do: refused unless null (or false). */
    private static final List<String> VLLM_UNSUPPORTED = List.of("prompt_logprobs", "guided_json", "guided_regex",
            "guided_choice", "guided_grammar", "allowed_token_ids",
            "logits_processors", "truncate_prompt_tokens");
    /** OpenAI's fields that change nothing about the generated text: accepted and ignored. */
    private static final Set<String> IGNORED = Set.of("store", "metadata", "user", "service_tier", "reasoning_effort",
            "prediction", "modalities", "audio", "web_search_options", "request_id", "priority");
    /** OpenAI's {@code max_tokens} default for {@code /v1/completions} (vLLM keeps it). */
    static final int COMPLETION_DEFAULT_MAX_TOKENS = 16;
    /** Stop strings a request may give, and the longest (in UTF-16 units): each is matched against every piece. */
    static final int MAX_STOPS = 16;
    static final int MAX_STOP_LENGTH = 256;
    /** The longest {@code cache_salt} in UTF-8 bytes: the engine keeps it while its namespace has cached pages. */
    static final int MAX_CACHE_SALT_BYTES = 256;

    private final TextModel text;
    private final String servedModelName;
    private final int vocab;
    private final Admission admission;
    private final StructuredOutputFields structured;
    private final ChatOutputs chatOutputs;

    /** Whether a name is a LoRA adapter the engine serves (requests select one by {@code model}). */
    private final java.util.function.Predicate<String> adapters;

    RequestParser(TextModel text, String servedModelName, int vocab, Admission admission) {
        this(text, servedModelName, vocab, admission,
                new ChatOutputs(ChatOutputConfig.DEFAULT, ""), name -> false);
    }

    /**
     * @param chatOutputs how chat outputs are read (tool calls, reasoning)
     * @param adapters whether a name is a LoRA adapter the engine serves
     */
    RequestParser(TextModel text, String servedModelName, int vocab, Admission admission, ChatOutputs chatOutputs,
                  java.util.function.Predicate<String> adapters) {
        this.structured = new StructuredOutputFields(text, vocab);
        this.adapters = adapters;
        this.text = text;
        this.servedModelName = servedModelName;
        this.vocab = vocab;
        this.admission = admission;
        this.chatOutputs = chatOutputs;
    }

    ParsedRequest completion(JsonNode body) {
        requireObject(body);
        checkFields(body, COMPLETION, "/v1/completions");
        common(body);
        unsupportedUnless(body, "suffix", n -> n.isTextual() && n.asText().isEmpty(), "suffix is not supported");
        unsupportedUnless(body, "top_logprobs", n -> n.isIntegralNumber() && n.asInt() == 0,
                "completions take 'logprobs': k");
        LogprobsRequest logprobs = LogprobsRequest.completion(body);
        // tools are a chat feature; without tools parallel_tool_calls changes nothing
        unsupportedUnless(body, "tools", n -> n.isArray() && n.isEmpty(), "tools need /v1/chat/completions");
        unsupportedUnless(body, "tool_choice", n -> n.isTextual() && n.asText().equals("none"),
                "tools need /v1/chat/completions");
        bool(body, "parallel_tool_calls", true);
        boolean addSpecial = bool(body, "add_special_tokens", true);
        JsonNode p = body.get("prompt");
        if (p == null || p.isNull()) {
            throw ApiException.badRequest("prompt", "'prompt' is required");
        }
        List<int[]> prompts = new ArrayList<>();
        if (p.isTextual()) {
            prompts.add(encodeText(p.asText(), addSpecial, "prompt"));
        } else if (p.isArray() && !p.isEmpty()) {
            if (p.get(0).isIntegralNumber()) {
                prompts.add(tokenIds(p, "prompt"));
            } else {
                if (p.size() > admission.capacity()) {
                    throw admission.neverFits("prompt", p.size()); // before tokenizing any of them
                }
                for (int i = 0; i < p.size(); i++) {
                    JsonNode e = p.get(i);
                    String param = "prompt[" + i + "]";
                    if (e.isTextual()) {
                        prompts.add(encodeText(e.asText(), addSpecial, param));
                    } else if (e.isArray()) {
                        prompts.add(tokenIds(e, param));
                    } else {
                        throw ApiException.badRequest(param, "'" + param
                                + "' must be a string or an array of token ids, got " + kind(e));
                    }
                }
            }
        } else {
            throw ApiException.badRequest("prompt", "'prompt' must be a string, an array of token ids or a non-empty "
                    + "array of those, got " + (p.isArray() ? "an empty array" : kind(p)));
        }
        // echo with max_tokens 0: one token is computed, none returned (LogprobsRequest)
        int maxTokens = logprobs.promptOnly() ? 1 : maxTokens(body, "max_tokens");
        return build(body, false, prompts, maxTokens == 0 ? COMPLETION_DEFAULT_MAX_TOKENS : maxTokens, logprobs,
                ChatOutput.PLAIN, null);
    }

    ParsedRequest chat(JsonNode body) {
        requireObject(body);
        checkFields(body, CHAT, "/v1/chat/completions");
        common(body);
        LogprobsRequest logprobs = LogprobsRequest.chat(body);
        ToolRequest tools = ToolRequest.parse(body);
        Grammar toolGrammar = structured.toolGrammar(tools); // required / named: the arguments follow the schema
        ChatPrompt.Rendered prompt = ChatPrompt.render(text, body, tools.rendered(chatOutputs.excludeToolsWhenNone()));
        ChatOutput output = chatOutputs.of(body, tools, prompt.text(), toolGrammar != null);
        int maxTokens = maxTokens(body, "max_completion_tokens");
        if (maxTokens == 0) {
            maxTokens = maxTokens(body, "max_tokens");
        }
        return build(body, true, List.of(prompt.ids()), maxTokens, logprobs, output, toolGrammar);
    }

    private ParsedRequest build(JsonNode body, boolean chat, List<int[]> prompts, int maxTokens,
                                LogprobsRequest logprobs, ChatOutput chatOutput, Grammar toolGrammar) {
        float temperature = (float) number(body, "temperature", 1.0);
        if (!(temperature >= 0f && temperature <= 2f)) {
            throw ApiException.badRequest("temperature", "'temperature' must be in [0, 2], got " + temperature);
        }
        float topP = (float) number(body, "top_p", 1.0);
        if (!(topP > 0f && topP <= 1f)) {
            throw ApiException.badRequest("top_p", "'top_p' must be in (0, 1], got " + topP);
        }
        long seed;
        JsonNode s = body.get("seed");
        if (s == null || s.isNull()) {
            seed = ThreadLocalRandom.current().nextLong();
        } else if (s.isIntegralNumber() && s.canConvertToLong()) {
            seed = s.asLong();
        } else {
            throw ApiException.badRequest("seed", "'seed' must be an integer, got " + kind(s));
        }
        List<String> stops = new ArrayList<>();
        JsonNode st = body.get("stop");
        if (st != null && !st.isNull()) {
            if (st.isTextual()) {
                stops.add(st.asText());
            } else if (st.isArray()) {
                for (JsonNode e : st) {
                    if (!e.isTextual()) {
                        throw ApiException.badRequest("stop", "'stop' must be a string or an array of strings");
                    }
                    stops.add(e.asText());
                }
            } else {
                throw ApiException.badRequest("stop", "'stop' must be a string or an array of strings, got " + kind(st));
            }
            if (stops.size() > MAX_STOPS) {
                throw ApiException.badRequest("stop", "at most " + MAX_STOPS + " stop strings, got " + stops.size());
            }
            if (stops.stream().anyMatch(String::isEmpty)) {
                throw ApiException.badRequest("stop", "stop strings must not be empty");
            }
            for (String x : stops) {
                if (x.length() > MAX_STOP_LENGTH) {
                    throw ApiException.badRequest("stop", "stop strings are at most " + MAX_STOP_LENGTH
                            + " characters long, got one of " + x.length());
                }
            }
            if (!stops.isEmpty()) {
                text.requireTokenizer("stop", "stop strings");
            }
        }
        List<Integer> stopIds = new ArrayList<>();
        JsonNode sti = body.get("stop_token_ids");
        if (sti != null && !sti.isNull()) {
            for (int id : tokenIds(sti, "stop_token_ids")) {
                stopIds.add(id);
            }
        }
        boolean stream = bool(body, "stream", false);
        boolean includeUsage = false;
        JsonNode so = body.get("stream_options");
        if (so != null && !so.isNull()) {
            if (!so.isObject()) {
                throw ApiException.badRequest("stream_options", "'stream_options' must be an object");
            }
            for (Iterator<String> it = so.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!f.equals("include_usage") && !f.equals("continuous_usage_stats")) {
                    throw ApiException.badRequest("stream_options." + f, "'stream_options." + f + "' is not supported");
                }
            }
            if (!stream) {
                throw ApiException.badRequest("stream_options", "'stream_options' is only allowed with stream: true");
            }
            includeUsage = bool(so, "include_usage", false);
            unsupportedUnless(so, "continuous_usage_stats", n -> n.isBoolean() && !n.asBoolean(),
                    "continuous usage stats are not supported");
        }
        Namespace ns = Namespace.DEFAULT;
        JsonNode salt = body.get("cache_salt");
        if (salt != null && !salt.isNull()) {
            if (!salt.isTextual() || salt.asText().isEmpty()) {
                throw ApiException.badRequest("cache_salt", "'cache_salt' must be a non-empty string");
            }
            // the body was strict UTF-8 with no unpaired surrogate, so equal strings are equal bytes
            int bytes = salt.asText().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
            if (bytes > MAX_CACHE_SALT_BYTES) {
                throw ApiException.badRequest("cache_salt", "'cache_salt' is at most " + MAX_CACHE_SALT_BYTES
                        + " bytes (UTF-8), got " + bytes);
            }
            ns = Namespace.ofSalt(salt.asText());
        }
        ns = new Namespace(adapterOf(body), ns.cacheSalt()); // an adapter's KV is its own, per salt too
        boolean ignoreEos = bool(body, "ignore_eos", false);
        boolean includeStop = bool(body, "include_stop_str_in_output", false);
        boolean skipSpecial = bool(body, "skip_special_tokens", true);
        // the Rust decoder joins special tokens without spaces either way; only the default is honoured
        unsupportedUnless(body, "spaces_between_special_tokens", n -> n.isBoolean() && n.asBoolean(),
                "special tokens are decoded without added spaces");
        return new ParsedRequest(chat, prompts, maxTokens, temperature, topP, seed, stops, stopIds, stream, includeUsage,
                ns, new ParsedRequest.Output(ignoreEos, includeStop, skipSpecial),
                SamplingFields.parse(body, text, vocab, maxTokens), logprobs, grammar(body, toolGrammar), chatOutput);
    }

    /** The request's structured output: its response_format / structured_outputs, or the tool call a tool_choice demands. */
    private Grammar grammar(JsonNode body, Grammar toolGrammar) {
        Grammar g = structured.grammar(body);
        if (toolGrammar == null) {
            return g;
        }
        if (g != null) {
            throw ApiException.badRequest("tool_choice", "a tool_choice of \"required\" or a named function constrains "
                    + "the output to a tool call: it cannot be combined with response_format or structured_outputs");
        }
        return toolGrammar;
    }

    /** Model and the fields radixkv does not implement, shared by both endpoints ({@code n}: {@link MultiSample}). */
    private void common(JsonNode body) {
        model(body);
        unsupportedUnless(body, "functions", n -> n.isArray() && n.isEmpty(),
                "function calling is not supported (use tools)");
        unsupportedUnless(body, "function_call", n -> n.isTextual() && n.asText().equals("none"),
                "function calling is not supported (use tools)");
        unsupportedUnless(body, "use_beam_search", n -> n.isBoolean() && !n.asBoolean(),
                "beam search is not supported");
        for (String f : VLLM_UNSUPPORTED) {
            unsupportedUnless(body, f, n -> n.isBoolean() && !n.asBoolean(), "not supported");
        }
        JsonNode user = body.get("user");
        if (user != null && !user.isNull() && !user.isTextual()) {
            throw ApiException.badRequest("user", "'user' must be a string, got " + kind(user));
        }
    }

    /** 404 unless {@code model} is absent, null, the served model's name or a LoRA adapter's (vLLM's message). */
    void model(JsonNode body) {
        JsonNode model = body.get("model");
        if (model != null && !model.isNull()) {
            if (!model.isTextual()) {
                throw ApiException.badRequest("model", "'model' must be a string, got " + kind(model));
            }
            if (!model.asText().equals(servedModelName) && !adapters.test(model.asText())) {
                throw ApiException.notFound("model", "The model `" + model.asText() + "` does not exist.");
            }
        }
    }

    /** The LoRA adapter {@code model} names, or null for the base model ({@link #model} validated it). */
    private String adapterOf(JsonNode body) {
        JsonNode model = body.get("model");
        return model == null || !model.isTextual() || model.asText().equals(servedModelName) ? null : model.asText();
    }

    static void requireObject(JsonNode body) {
        if (body == null || !body.isObject()) {
            throw ApiException.badRequest(null, "the request body must be a JSON object");
        }
    }

    /**
     * Logs (once, field names only) the fields that change nothing here: {@link #IGNORED} and
     * any field this endpoint does not know, as vLLM accepts extra fields.
     */
    private static void checkFields(JsonNode body, Set<String> endpointFields, String endpoint) {
        Set<String> ignored = new TreeSet<>();
        for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!COMMON.contains(f) && !endpointFields.contains(f)) {
                ignored.add(f);
            }
        }
        if (!ignored.isEmpty()) {
            Set<String> extra = new TreeSet<>(ignored);
            extra.removeAll(IGNORED);
            LOG.info("{}: ignoring fields {}{}", endpoint, ignored,
                    extra.isEmpty() ? "" : " (unknown: " + extra + ")");
        }
    }

    private interface Check {
        boolean neutral(JsonNode n);
    }

    /** Refuses {@code field} unless it is absent, null or at its neutral value. */
    private static void unsupportedUnless(JsonNode body, String field, Check neutral, String why) {
        JsonNode n = body.get(field);
        if (n != null && !n.isNull() && !neutral.neutral(n)) {
            throw ApiException.badRequest(field, "unsupported value for '" + field + "' (" + n + "): " + why);
        }
    }

    private int[] encodeText(String s, boolean addSpecial, String param) {
        int[] ids = text.encode(s, addSpecial, param);
        if (ids.length == 0) {
            throw ApiException.badRequest(param, "'" + param + "' encodes to no tokens");
        }
        return ids;
    }

    int[] tokenIds(JsonNode arr, String param) {
        if (!arr.isArray()) {
            throw ApiException.badRequest(param, "'" + param + "' must be an array of token ids, got " + kind(arr));
        }
        if (arr.isEmpty() && param.startsWith("prompt")) {
            throw ApiException.badRequest(param, "'" + param + "' must hold at least one token id");
        }
        int[] ids = new int[arr.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode e = arr.get(i);
            if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                throw ApiException.badRequest(param, "'" + param + "[" + i + "]' must be an integer token id, got " + e);
            }
            int id = e.asInt();
            if (id < 0 || id >= vocab) {
                throw ApiException.badRequest(param, "'" + param + "[" + i + "]' = " + id
                        + " is outside the vocabulary [0, " + vocab + ")");
            }
            ids[i] = id;
        }
        return ids;
    }

    static boolean bool(JsonNode body, String field, boolean dflt) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw ApiException.badRequest(field, "'" + field + "' must be a boolean, got " + kind(n));
        }
        return n.asBoolean();
    }

    static double number(JsonNode body, String field, double dflt) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isNumber()) {
            throw ApiException.badRequest(field, "'" + field + "' must be a number, got " + kind(n));
        }
        return n.asDouble();
    }

    /** A token limit: absent = 0 (the context decides), otherwise an integer of at least 1. */
    private static int maxTokens(JsonNode body, String field) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return 0;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw ApiException.badRequest(field, "'" + field + "' must be an integer, got " + n);
        }
        if (n.asInt() < 1) {
            throw ApiException.badRequest(field, "'" + field + "' must be at least 1, got " + n.asInt());
        }
        return n.asInt();
    }

    static String kind(JsonNode n) {
        return switch (n.getNodeType()) {
            case STRING -> "a string";
            case NUMBER -> "a number";
            case BOOLEAN -> "a boolean";
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            case NULL -> "null";
            default -> n.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
        };
    }
}
