package io.radixkv.server;

import io.radixkv.engine.Engine;
import io.radixkv.sched.FinishReason;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestLogprobs;
import io.radixkv.engine.TokenLogprob;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.IntConsumer;
import java.util.function.IntPredicate;
import java.util.function.Supplier;

/**
 * One prompt on the engine, turned into text pieces. The engine thread only enqueues token
 * ids; the request's own (virtual) thread detokenizes, applies stop strings and writes to the
 * client, so a slow client never stalls the engine. If writing fails (the client went away)
 * the request is cancelled and its pages freed before the failure propagates.
 */
final class Generation {
    /** Where text goes as it is generated; may throw when the client is gone. */
    interface Sink {
        /** @param logprobs one per token id, or null when the request asked for none */
        void piece(String text, int[] tokenIds, List<TokenLogprob> logprobs);
    }

    /**
     * How the request ended.
     *
     * @param finishReason OpenAI's {@code stop} / {@code length}, or {@code abort} (cancelled,
     *     shut down) / {@code error} (engine fault: {@code error} holds the message)
     */
    record Outcome(String finishReason, int promptTokens, int completionTokens, int cachedTokens, String text,
                   RequestResult result, String error) {}

    /** Told once per request how it ended (metrics). */
    interface Listener {
        void finished(RequestResult result, String finishReason, int completionTokens);
    }

    private static final int END = -1;
    private static final long CANCEL_WAIT_SECONDS = 30;

    private final LinkedBlockingQueue<Integer> queue;
    private final RequestHandle handle;
    private final int[] prompt;
    private final int promptTokens;
    private final Set<Integer> stopIds;
    private final Detokenizer detok;
    private final StopStrings stops;
    private final int minTokens; // stop strings are matched only past it, as vLLM does
    private final boolean idsOnly;
    private final Listener listener;
    private final boolean promptOnly;
    private boolean reported;

    /**
     * The generation of a submitted request's {@code handle}, whose listener feeds {@code queue}
     * ({@link #feed}); {@code promptTokens} is what it reports as its prompt (0 for the further
     * samples of one prompt, which counts once).
     */
    Generation(RequestHandle handle, LinkedBlockingQueue<Integer> queue, int[] prompt, int promptTokens,
               Set<Integer> stopIds, Detokenizer detok, StopStrings stops, int minTokens, boolean idsOnly,
               Listener listener,
               boolean promptOnly) {
        this.promptOnly = promptOnly;
        this.prompt = prompt;
        this.queue = queue;
        this.handle = handle;
        this.promptTokens = promptTokens;
        this.stopIds = stopIds;
        this.detok = detok;
        this.stops = stops;
        this.minTokens = minTokens;
        this.idsOnly = idsOnly;
        this.listener = listener;
        handle.result().whenComplete((r, t) -> queue.add(END));
    }

    /** A token listener that queues the tokens for {@link #run}, failing at a token {@code fault} picks (tests; may be null). */
    static IntConsumer feed(LinkedBlockingQueue<Integer> queue, IntPredicate fault) {
        return fault == null ? queue::add : t -> {
            if (fault.test(t)) {
                throw new IllegalStateException("injected fault at token " + t);
            }
            queue.add(t);
        };
    }

    /**
     * Submits through {@code submit} with the engine's refusals as API errors: a malformed request
     * 400, an engine closed 503, one stopped after an internal error 500, a request that can never
     * fit (REJECTED, {@code rejected(handle)}) 400 naming {@code max_tokens}.
     */
    static <T> T submit(Supplier<T> submit, Function<T, RequestHandle> rejected) {
        T h;
        try {
            h = submit.get();
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("prompt", e.getMessage());
        } catch (IllegalStateException e) {
            // closed: the server is going down (503); stopped after an internal error: a fault (500)
            if (String.valueOf(e.getMessage()).contains("closed")) {
                throw ApiException.unavailable("the engine is not accepting requests: " + e.getMessage());
            }
            throw ApiException.internal(e.getMessage());
        }
        RequestHandle first = rejected.apply(h);
        if (first.isDone()) {
            RequestResult r = first.result().join();
            if (r.reason() == FinishReason.REJECTED) {
                throw ApiException.badRequest("max_tokens", r.error());
            }
        }
        return h;
    }

    /**
     * Submits one prompt. Throws 400 when the engine refuses it (it can never fit the pool or
     * the context), 503 when the engine is closed.
     *
     * @param fault tests: when it returns true for a token, the token listener throws, which the
     *     engine reports as a failed request (ERROR); null in production
     */
    static Generation start(Engine engine, String id, int[] prompt, ParsedRequest req, int maxTokens, TextModel text,
                            Listener listener, IntPredicate fault) {
        GenerateRequest request = request(id, prompt, req, maxTokens, text);
        LinkedBlockingQueue<Integer> queue = new LinkedBlockingQueue<>();
        RequestHandle h = submit(() -> engine.submit(request, feed(queue, fault)), x -> x);
        return of(h, queue, prompt, prompt.length, req, text, listener);
    }

    /** The engine request for one prompt of {@code req}. */
    static GenerateRequest request(String id, int[] prompt, ParsedRequest req, int maxTokens, TextModel text) {
        SamplingParams p = req.sampling().params(maxTokens, req.temperature(), req.topP(), req.seed(),
                List.copyOf(stopIds(text, req)));
        return new GenerateRequest(id, prompt, req.ns(), p, req.logprobs().engineOptions(), req.grammar());
    }

    /** The generation of {@code handle}, a submitted request for {@code prompt}, with {@code req}'s output options. */
    static Generation of(RequestHandle handle, LinkedBlockingQueue<Integer> queue, int[] prompt, int promptTokens,
                         ParsedRequest req, TextModel text, Listener listener) {
        return new Generation(handle, queue, prompt, promptTokens, Set.copyOf(stopIds(text, req)),
                text.detokenizer(prompt, req.output().skipSpecialTokens()), new StopStrings(req.stops(),
                req.output().includeStopString()), req.sampling().minTokens(), !text.hasTokenizer(), listener,
                req.logprobs().promptOnly());
    }

    /** The ids that end generation: the request's {@code stop_token_ids}, plus EOS unless {@code ignore_eos}. */
    static Set<Integer> stopIds(TextModel text, ParsedRequest req) {
        Set<Integer> ids = new HashSet<>(req.stopTokenIds());
        if (!req.output().ignoreEos()) {
            ids.addAll(text.stopTokenIds());
        }
        return ids;
    }

    String id() {
        return handle.id();
    }

    /** The prompt's token ids (every sample of one prompt has the same; an echo writes them). */
    int[] prompt() {
        return prompt;
    }

    /** The prompt's log-probabilities (tokens 1 .. n-1); complete once {@link #run} has seen a token or ended. */
    List<TokenLogprob> promptLogprobs() {
        RequestLogprobs lp = handle.logprobs();
        return lp == null ? List.of() : lp.prompt();
    }

    /** Streams the generation into {@code sink} and returns how it ended. */
    Outcome run(Sink sink) {
        StringBuilder all = new StringBuilder();
        List<Integer> pendingIds = new ArrayList<>();
        // looked up at the first token: a forked sample has its log-probabilities from its fork on
        RequestLogprobs logprobs = null;
        List<TokenLogprob> pendingLogprobs = null;
        int generated = 0;
        boolean stopped = false;
        try {
            while (true) {
                int t = queue.take();
                if (t == END) {
                    break;
                }
                generated++;
                if (generated == 1) {
                    logprobs = handle.logprobs();
                    pendingLogprobs = logprobs != null && logprobs.options().sampled() ? new ArrayList<>() : null;
                }
                if (promptOnly) {
                    continue; // echo with max_tokens 0: the token computed is not returned
                }
                if (stopIds.contains(t)) {
                    continue; // ends the request; a stop token is never part of the text
                }
                pendingIds.add(t);
                if (pendingLogprobs != null) {
                    pendingLogprobs.add(logprobs.generated(generated - 1));
                }
                String piece = stops.accept(detok.next(t), generated > minTokens);
                if (stops.matched()) {
                    stopped = true;
                    handle.cancel();
                    emit(sink, all, piece, pendingIds, pendingLogprobs, true);
                    break;
                }
                emit(sink, all, piece, pendingIds, pendingLogprobs, idsOnly);
            }
            if (!stopped && !promptOnly) {
                String tail = stops.accept(detok.flush(), generated > minTokens);
                stopped = stops.matched();
                emit(sink, all, stopped ? tail : tail + stops.drain(), pendingIds, pendingLogprobs, false);
            }
            if (promptOnly) {
                generated = 0;
            }
            RequestResult r = awaitResult();
            String reason = stopped ? "stop" : switch (r.reason()) {
                case STOP -> "stop";
                case LENGTH -> "length";
                case CANCELLED, ABORTED -> "abort";
                case ERROR, REJECTED -> "error";
            };
            report(r, reason, generated);
            return new Outcome(reason, promptTokens, generated,
                    r.stats() == null || promptTokens == 0 ? 0 : r.stats().cachedPromptTokens(),
                    all.toString(), r, reason.equals("error") ? r.error() : null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abort(generated);
            throw new IllegalStateException("interrupted while streaming request " + id(), e);
        } catch (RuntimeException e) {
            abort(generated);
            throw e;
        }
    }

    /** Asks the engine to stop the request; {@link #run} then ends with {@code abort}. */
    void cancel() {
        handle.cancel();
    }

    /**
     * Cancels the request (pages are freed at the engine's next step) and waits for its end;
     * no-op for a request that has already been reported.
     */
    void abort(int generated) {
        synchronized (this) {
            if (reported) {
                return;
            }
        }
        handle.cancel();
        try {
            RequestResult r = awaitResult();
            report(r, "abort", generated);
        } catch (RuntimeException | InterruptedException ignored) {
            // the engine is gone or stuck: nothing more to free from here
        }
    }

    private RequestResult awaitResult() throws InterruptedException {
        try {
            return handle.result().get(CANCEL_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("request " + id() + " failed in the engine: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("request " + id() + " did not end within " + CANCEL_WAIT_SECONDS + " s", e);
        }
    }

    private synchronized void report(RequestResult r, String reason, int generated) {
        if (!reported) {
            reported = true;
            listener.finished(r, reason, generated);
        }
    }

    private static void emit(Sink sink, StringBuilder all, String piece, List<Integer> pendingIds,
                             List<TokenLogprob> pendingLogprobs, boolean force) {
        if (piece.isEmpty() && !(force && !pendingIds.isEmpty())) {
            return;
        }
        int[] ids = pendingIds.stream().mapToInt(Integer::intValue).toArray();
        pendingIds.clear();
        List<TokenLogprob> lps = null;
        if (pendingLogprobs != null) {
            lps = List.copyOf(pendingLogprobs);
            pendingLogprobs.clear();
        }
        all.append(piece);
        sink.piece(piece, ids, lps);
    }
}
