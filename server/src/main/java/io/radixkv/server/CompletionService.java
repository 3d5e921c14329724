package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.http.RequestException;
import io.helidon.http.sse.SseEvent;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.helidon.webserver.sse.SseSink;
import io.radixkv.engine.Engine;
import io.radixkv.server.conn.ClientChannel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * {@code /v1/completions} and {@code /v1/chat/completions}: parse, admit, run on the engine,
 * answer as one JSON document or as an SSE stream of chunks ending in {@code [DONE]}.
 */
final class CompletionService {
    private static final Logger ACCESS = LogManager.getLogger("io.radixkv.server.access");
    private static final Logger LOG = LogManager.getLogger(CompletionService.class);

    private final Engine engine;
    private final TextModel text;
    private final RequestParser parser;
    private final Admission admission;
    private final ServerMetrics metrics;
    private final ObjectMapper json;
    private final String modelName;
    private final StrictJson strictJson;
    private final LogprobsFormat logprobs;
    private final long maxRequestBytes;
    private final int contextLimit;
    /** Tests: makes the engine fail a request at a chosen token (see {@link Generation#start}). */
    volatile java.util.function.IntPredicate tokenFault;
    private final java.util.Set<Generation> active = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.Set<ClientChannel> activeChannels = java.util.concurrent.ConcurrentHashMap.newKeySet();

    CompletionService(Engine engine, TextModel text, Admission admission, ServerMetrics metrics, ObjectMapper json,
                      String modelName, long maxRequestBytes, ChatOutputConfig chatOutput) {
        this.engine = engine;
        this.text = text;
        this.admission = admission;
        this.metrics = metrics;
        this.json = json;
        this.modelName = modelName;
        this.strictJson = new StrictJson(json);
        this.logprobs = new LogprobsFormat(json, text);
        this.maxRequestBytes = maxRequestBytes;
        this.parser = new RequestParser(text, modelName, engine.modelConfig().vocab(), admission,
                new ChatOutputs(chatOutput, engine.modelConfig().arch().modelType()),
                name -> engine.adapters().contains(name));
        int maxSeqLen = engine.config().maxSeqLen() == 0 ? engine.modelConfig().maxPositions()
                : engine.config().maxSeqLen();
        this.contextLimit = (int) Math.min(maxSeqLen, (long) engine.numPages() * engine.config().pageSize());
    }

    /** The model a response names: the LoRA adapter the request selected, else the served model. */
    private String modelOf(ParsedRequest pr) {
        return pr.ns().loraId() != null ? pr.ns().loraId() : modelName;
    }

    /**
     * Closes the connections of the requests still running (shutdown, after {@link #cancelAll()}
     * left them time to answer): what remains is blocked writing to clients that do not read.
     */
    void closeConnections() {
        for (ClientChannel c : activeChannels) {
            c.close(ClientChannel.SHUTDOWN);
        }
    }

    /** Cancels every running request (shutdown after the grace period); returns how many. */
    int cancelAll() {
        int n = 0;
        for (Generation g : active) {
            g.cancel();
            n++;
        }
        return n;
    }

    RequestParser parser() {
        return parser;
    }

    int contextLimit() {
        return contextLimit;
    }

    /** What one HTTP request did, for the access log. */
    private static final class Access {
        int status = 200;
        int promptTokens;
        int completionTokens;
        int cachedTokens;
        long ttftNanos = -1;
        /** Why the connection ended the request early (a timeout, the client gone); null otherwise. */
        String reason;
    }

    void handle(ServerRequest req, ServerResponse res, boolean chat) {
        long t0 = System.nanoTime();
        String id = (chat ? "chatcmpl-" : "cmpl-") + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        Access acc = new Access();
        Optional<ClientChannel> channel = ClientChannel.current();
        try {
            JsonNode body = readJson(req);
            ParsedRequest pr = chat ? parser.chat(body) : parser.completion(body);
            int samples = MultiSample.parse(body, MultiSample.limit(engine));
            int n = pr.prompts().size() * samples;
            admission.acquire(n);
            try {
                List<Generation> gens = start(id, pr, samples);
                active.addAll(gens);
                channel.ifPresent(activeChannels::add);
                // a client that hangs up (or is cut off by a timeout) stops its prompts at once,
                // not when they are done, whether it streams or waits for one JSON document
                channel.ifPresent(c -> c.onHangup(() -> gens.forEach(Generation::cancel)));
                try {
                    if (pr.stream()) {
                        stream(res, id, pr, gens, acc);
                    } else {
                        complete(res, id, pr, gens, acc);
                    }
                } finally {
                    channel.ifPresent(ClientChannel::clearHangup);
                    channel.ifPresent(activeChannels::remove);
                    gens.forEach(active::remove);
                    // whatever ended this request early (a failed choice, a client gone), no
                    // prompt of it keeps running: no-op for those that finished
                    gens.forEach(g -> g.abort(0));
                }
            } finally {
                admission.release(n);
            }
        } catch (ClientGone e) {
            acc.status = 499;
            // a connection closed while draining was closed by the shutdown, not by its client
            acc.reason = admission.draining() ? ClientChannel.SHUTDOWN
                    : channel.map(ClientChannel::closeReason).orElse(ClientChannel.CLIENT_CLOSED);
        } catch (ApiException e) {
            acc.status = e.status();
            OpenAiServer.sendError(res, json, e);
        } catch (RuntimeException e) {
            String gone = channel.map(ClientChannel::closeReason).orElse(null);
            if (gone != null) {
                // the connection was closed under the request (a timeout, the client gone): nothing to answer
                acc.status = 499;
                acc.reason = gone;
            } else if (Thread.currentThread().isInterrupted() || admission.draining()) {
                acc.status = 503;
                acc.reason = ClientChannel.SHUTDOWN;
                LOG.info("request {} ended by the server's shutdown: {}", id, e.toString());
            } else {
                acc.status = 500;
                LOG.error("request {} failed", id, e);
                OpenAiServer.sendError(res, json, ApiException.internal(e.toString()));
            }
        } finally {
            // a shutdown that interrupted this thread has ended the request; Helidon's connection
            // loop must not see the interrupt as a failure of its own
            Thread.interrupted();
            ACCESS.info("{} {} status={} prompt_tokens={} completion_tokens={} cached_tokens={} ttft_ms={} duration_ms={}{}",
                    id, req.path().path(), acc.status, acc.promptTokens, acc.completionTokens, acc.cachedTokens,
                    acc.ttftNanos < 0 ? "-" : String.format("%.1f", acc.ttftNanos / 1e6),
                    String.format("%.1f", (System.nanoTime() - t0) / 1e6), acc.reason == null ? "" : " reason=" + acc.reason);
        }
        if (acc.status == 499 && !res.isSent()) {
            // nobody to answer: end the connection rather than have Helidon answer on a dead socket
            throw new CloseConnectionException("request " + id + " ended: " + acc.reason);
        }
    }

    /**
     * The body, read to its end before anything is parsed: at most the server's limit (Helidon
     * refuses a larger Content-Length up front and a longer chunked body as it arrives), broken
     * framing a 400 that closes the connection.
     */
    JsonNode readJson(ServerRequest req) {
        byte[] body;
        // not closed on failure: closing drains the rest of the body, which a broken or stalled
        // body does not have; the error response closes the connection instead
        try {
            body = req.content().inputStream().readAllBytes();
        } catch (CloseConnectionException e) {
            throw new ClientGone(e); // the read timed out or the client went away mid-body
        } catch (RequestException e) {
            if (e.status().code() == 413) {
                throw ApiException.tooLarge(maxRequestBytes);
            }
            throw ApiException.malformedBody("cannot read the request body: " + safe(e.getMessage()));
        } catch (IOException | UncheckedIOException e) {
            throw new ClientGone(e);
        } catch (RuntimeException e) {
            if (ClientChannel.current().map(ClientChannel::closeReason).orElse(null) != null) {
                throw new ClientGone(e);
            }
            throw ApiException.malformedBody("cannot read the request body: " + safe(e.getMessage()));
        }
        return strictJson.parse(body);
    }

    private static String safe(String message) {
        return message == null || message.isBlank() ? "malformed framing" : message;
    }

    /** How a prompt aborted by the engine ends the request: its client is gone, or the server is shutting down. */
    private static RuntimeException aborted(Generation g) {
        if (ClientChannel.current().map(ClientChannel::closeReason).orElse(null) != null) {
            return new ClientGone(null);
        }
        return ApiException.unavailable("request " + g.id() + " was aborted: the server is shutting down");
    }

    /** One generation per choice, prompt-major: prompt p's sample i is choice p * samples + i. */
    private List<Generation> start(String id, ParsedRequest pr, int samples) {
        List<Generation> gens = new ArrayList<>();
        try {
            for (int i = 0; i < pr.prompts().size(); i++) {
                int[] prompt = pr.prompts().get(i);
                String param = pr.chat() ? "messages" : pr.prompts().size() == 1 ? "prompt" : "prompt[" + i + "]";
                if (prompt.length >= contextLimit) {
                    throw ApiException.badRequest(param, "the prompt has " + prompt.length
                            + " tokens; this model's context holds " + contextLimit
                            + " (prompt + generated tokens, limited by maxSeqLen and the KV pool)");
                }
                int maxTokens = pr.maxTokens() > 0 ? pr.maxTokens() : contextLimit - prompt.length + 1;
                if (samples == 1) {
                    gens.add(Generation.start(engine, id + "-" + i, prompt, pr, maxTokens, text, metrics::finished,
                            tokenFault));
                } else {
                    gens.addAll(MultiSample.start(engine, id + "-" + i, prompt, pr, maxTokens, samples, text,
                            metrics::finished, tokenFault));
                }
            }
        } catch (RuntimeException e) {
            gens.forEach(g -> g.abort(0));
            throw e;
        }
        return gens;
    }

    private void complete(ServerResponse res, String id, ParsedRequest pr, List<Generation> gens, Access acc) {
        ObjectNode root = json.createObjectNode();
        root.put("id", id);
        root.put("object", pr.chat() ? "chat.completion" : "text_completion");
        root.put("created", System.currentTimeMillis() / 1000);
        root.put("model", modelOf(pr));
        ArrayNode choices = root.putArray("choices");
        List<Generation.Outcome> outs = new ArrayList<>();
        for (Generation g : gens) {
            List<Integer> ids = new ArrayList<>();
            List<io.radixkv.engine.TokenLogprob> lps = new ArrayList<>();
            Generation.Outcome o = g.run((piece, tokenIds, tokenLogprobs) -> {
                for (int t : tokenIds) {
                    ids.add(t);
                }
                if (tokenLogprobs != null) {
                    lps.addAll(tokenLogprobs);
                }
            });
            outs.add(o);
            account(acc, o);
            if (o.finishReason().equals("error")) {
                throw ApiException.internal("engine fault in request " + g.id() + ": " + o.error());
            }
            if (o.finishReason().equals("abort")) {
                throw aborted(g);
            }
            ObjectNode c = choices.addObject();
            c.put("index", choices.size() - 1);
            int[] echo = pr.logprobs().echo() ? g.prompt() : null;
            String finishReason = o.finishReason();
            if (pr.chat()) {
                ObjectNode m = c.putObject("message");
                m.put("role", "assistant");
                finishReason = pr.chatOutput().message(m, o.text(), finishReason);
            } else {
                c.put("text", (echo == null ? "" : logprobs.promptText(echo, pr)) + o.text());
            }
            c.set("logprobs", logprobs.choice(pr, echo, g.promptLogprobs(),
                    ids.stream().mapToInt(Integer::intValue).toArray(), lps, 0));
            c.put("finish_reason", finishReason);
            ArrayNode tids = c.putArray("token_ids");
            ids.forEach(tids::add);
        }
        root.set("usage", usage(outs));
        OpenAiServer.sendJson(res, json, 200, root);
    }

    private void stream(ServerResponse res, String id, ParsedRequest pr, List<Generation> gens, Access acc) {
        long created = System.currentTimeMillis() / 1000;
        SseSink sink = res.sink(SseSink.TYPE);
        // a failed write throws ClientGone: handle() cancels what still runs and frees its pages
        List<Generation.Outcome> outs = new ArrayList<>();
        if (gens.size() == 1) {
            outs.add(streamChoice(sink, id, pr, created, gens.get(0), 0));
        } else {
            // several prompts: their chunks interleave as they are generated, one writer at a time
            try (ExecutorService each = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Generation.Outcome>> fs = new ArrayList<>();
                for (int i = 0; i < gens.size(); i++) {
                    int index = i;
                    fs.add(each.submit(() -> streamChoice(sink, id, pr, created, gens.get(index), index)));
                }
                for (Future<Generation.Outcome> f : fs) {
                    outs.add(outcome(f));
                }
            }
        }
        outs.forEach(o -> account(acc, o));
        for (int i = 0; i < outs.size(); i++) {
            Generation.Outcome o = outs.get(i);
            if (o.finishReason().equals("error") || o.finishReason().equals("abort")) {
                RuntimeException r = o.finishReason().equals("error")
                        ? ApiException.internal("engine fault in request " + gens.get(i).id() + ": " + o.error())
                        : aborted(gens.get(i));
                if (!(r instanceof ApiException e)) {
                    throw r;
                }
                acc.status = e.status();
                emit(sink, e.toJson(json));
                break;
            }
        }
        if (pr.includeUsage() && acc.status == 200) {
            ObjectNode u = json.createObjectNode();
            u.put("id", id);
            u.put("object", pr.chat() ? "chat.completion.chunk" : "text_completion");
            u.put("created", created);
            u.put("model", modelOf(pr));
            u.putArray("choices");
            u.set("usage", usage(outs));
            emit(sink, u);
        }
        synchronized (sink) {
            sink.emit(sseData("[DONE]"));
            sink.close();
        }
    }

    /** One choice of a stream: role chunk (chat), text chunks, the finishing chunk. */
    private Generation.Outcome streamChoice(SseSink sink, String id, ParsedRequest pr, long created, Generation g,
                                            int index) {
        if (pr.chat()) {
            ObjectNode delta = json.createObjectNode().put("role", "assistant").put("content", "");
            emit(sink, chunk(id, pr, created, index, delta, null, null));
        }
        LogprobsFormat.Stream lp = logprobs.stream(pr, g);
        ChatOutput.Stream out = pr.chatOutput().stream();
        // token ids (and chat log-probabilities) of pieces whose text a parser holds back go out
        // with the next chunk
        List<Integer> heldIds = new ArrayList<>();
        ArrayNode heldLogprobs = json.createArrayNode();
        Generation.Outcome o = g.run((piece, tokenIds, tokenLogprobs) -> {
            if (!pr.chat()) {
                emit(sink, logprobsChunk(id, pr, created, index, lp.next(piece, tokenIds, tokenLogprobs), tokenIds));
                return;
            }
            for (int t : tokenIds) {
                heldIds.add(t);
            }
            JsonNode part = lp.next(piece, tokenIds, tokenLogprobs).logprobs();
            if (part.has("content")) {
                heldLogprobs.addAll((ArrayNode) part.get("content"));
            }
            for (ObjectNode delta : out.deltas(piece)) {
                emit(sink, withLogprobs(chunk(id, pr, created, index, delta, piece, takeIds(heldIds)), pr, heldLogprobs));
            }
        });
        if (!o.finishReason().equals("error") && !o.finishReason().equals("abort")) {
            if (!pr.chat() && lp.echoPending()) { // nothing generated was streamed (max_tokens 0): the prompt alone
                emit(sink, logprobsChunk(id, pr, created, index, lp.next("", new int[0], List.of()), new int[0]));
            }
            for (ObjectNode delta : pr.chat() ? out.finish() : List.<ObjectNode>of()) {
                emit(sink, withLogprobs(chunk(id, pr, created, index, delta, "", takeIds(heldIds)), pr, heldLogprobs));
            }
            ObjectNode last = withLogprobs(finalChunk(id, pr, created, index, out.finishReason(o.finishReason())), pr,
                    heldLogprobs);
            if (!heldIds.isEmpty()) {
                ArrayNode a = ((ObjectNode) last.get("choices").get(0)).putArray("token_ids");
                heldIds.forEach(a::add);
            }
            emit(sink, last);
        }
        return o;
    }

    private static int[] takeIds(List<Integer> held) {
        int[] ids = held.stream().mapToInt(Integer::intValue).toArray();
        held.clear();
        return ids;
    }

    private static Generation.Outcome outcome(Future<Generation.Outcome> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while streaming", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** A text chunk with its part's text and {@code logprobs} ({@link LogprobsFormat.Stream}). */
    private ObjectNode logprobsChunk(String id, ParsedRequest pr, long created, int index, LogprobsFormat.Part part,
                                     int[] tokenIds) {
        ObjectNode c = chunk(id, pr, created, index,
                pr.chat() ? json.createObjectNode().put("content", part.text()) : null, part.text(), tokenIds);
        ((ObjectNode) c.get("choices").get(0)).set("logprobs", part.logprobs());
        return c;
    }

    /** {@code c} with the chat log-probabilities held so far (then cleared), where the request wants them. */
    private ObjectNode withLogprobs(ObjectNode c, ParsedRequest pr, ArrayNode held) {
        if (pr.chat() && pr.logprobs().wanted() && !held.isEmpty()) {
            ((ObjectNode) c.get("choices").get(0)).putObject("logprobs").set("content", held.deepCopy());
            held.removeAll();
        }
        return c;
    }

    private ObjectNode finalChunk(String id, ParsedRequest pr, long created, int index, String finishReason) {
        ObjectNode c = chunk(id, pr, created, index, pr.chat() ? json.createObjectNode() : null, "", null);
        ((ObjectNode) c.get("choices").get(0)).put("finish_reason", finishReason);
        return c;
    }

    private ObjectNode chunk(String id, ParsedRequest pr, long created, int index, ObjectNode delta, String piece,
                             int[] tokenIds) {
        ObjectNode c = json.createObjectNode();
        c.put("id", id);
        c.put("object", pr.chat() ? "chat.completion.chunk" : "text_completion");
        c.put("created", created);
        c.put("model", modelOf(pr));
        ObjectNode ch = c.putArray("choices").addObject();
        ch.put("index", index);
        if (pr.chat()) {
            ch.set("delta", delta);
        } else {
            ch.put("text", piece);
        }
        ch.putNull("logprobs");
        ch.putNull("finish_reason");
        if (tokenIds != null) {
            ArrayNode a = ch.putArray("token_ids");
            for (int t : tokenIds) {
                a.add(t);
            }
        }
        return c;
    }

    /** Thrown when writing to the client failed: it disconnected. */
    private static final class ClientGone extends RuntimeException {
        ClientGone(Throwable cause) {
            super("client disconnected", cause);
        }
    }

    private void emit(SseSink sink, ObjectNode data) {
        String s;
        try {
            s = json.writeValueAsString(data);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        try {
            synchronized (sink) {
                sink.emit(sseData(s));
            }
        } catch (RuntimeException e) {
            throw new ClientGone(e);
        }
    }

    /**
     * One {@code data: ...} event. Helidon writes {@code data:} + value; the leading space makes
     * the line {@code data: {...}} as OpenAI, vLLM and SGLang send it (clients that match the
     * prefix literally need it), and SSE parsers drop exactly one space after the colon.
     */
    private static SseEvent sseData(String payload) {
        return SseEvent.create(" " + payload);
    }

    private ObjectNode usage(List<Generation.Outcome> outs) {
        int prompt = 0;
        int completion = 0;
        int cached = 0;
        for (Generation.Outcome o : outs) {
            prompt += o.promptTokens();
            completion += o.completionTokens();
            cached += o.cachedTokens();
        }
        ObjectNode u = json.createObjectNode();
        u.put("prompt_tokens", prompt);
        u.put("completion_tokens", completion);
        u.put("total_tokens", prompt + completion);
        u.putObject("prompt_tokens_details").put("cached_tokens", cached);
        return u;
    }

    private static void account(Access acc, Generation.Outcome o) {
        acc.promptTokens += o.promptTokens();
        acc.completionTokens += o.completionTokens();
        acc.cachedTokens += o.cachedTokens();
        if (acc.ttftNanos < 0 && o.result().stats() != null) {
            acc.ttftNanos = o.result().stats().ttftNanos();
        }
    }
}
