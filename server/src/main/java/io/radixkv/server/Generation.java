package io.radixkv.server;

import io.radixkv.engine.Engine;
import io.radixkv.sched.FinishReason;
import io.radixkv.engine.GenerateRequest;
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
import java.util.function.IntPredicate;

/**
 * One prompt on the engine, turned into text pieces. The engine thread only enqueues token
 * ids; the request's own (virtual) thread detokenizes, applies stop strings and writes to the
 * client, so a slow client never stalls the engine. If writing fails (the client went away)
 * the request is cancelled and its pages freed before the failure propagates.
 */
final class Generation {
    /** Where text goes as it is generated; may throw when the client is gone. */
    interface Sink {
        void piece(String text, int[] tokenIds);
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

    private final LinkedBlockingQueue<Integer> queue = new LinkedBlockingQueue<>();
    private final RequestHandle handle;
    private final int promptTokens;
    private final Set<Integer> stopIds;
    private final Detokenizer detok;
    private final StopStrings stops;
    private final int minTokens; // stop strings are matched only past it, as vLLM does
    private final boolean idsOnly;
    private final Listener listener;
    private boolean reported;

    private Generation(Engine engine, GenerateRequest request, Set<Integer> stopIds, Detokenizer detok,
                       StopStrings stops, boolean idsOnly, Listener listener, IntPredicate fault) {
        this.promptTokens = request.promptTokens().length;
        this.stopIds = stopIds;
        this.detok = detok;
        this.stops = stops;
        this.minTokens = request.params().minTokens();
        this.idsOnly = idsOnly;
        this.listener = listener;
        RequestHandle h;
        try {
            h = engine.submit(request, fault == null ? queue::add : t -> {
                if (fault.test(t)) {
                    throw new IllegalStateException("injected fault at token " + t);
                }
                queue.add(t);
            });
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("prompt", e.getMessage());
        } catch (IllegalStateException e) {
            // closed: the server is going down (503); stopped after an internal error: a fault (500)
            if (String.valueOf(e.getMessage()).contains("closed")) {
                throw ApiException.unavailable("the engine is not accepting requests: " + e.getMessage());
            }
            throw ApiException.internal(e.getMessage());
        }
        this.handle = h;
        if (h.isDone()) {
            RequestResult r = h.result().join();
            if (r.reason() == FinishReason.REJECTED) {
                throw ApiException.badRequest("max_tokens", r.error());
            }
        }
        h.result().whenComplete((r, t) -> queue.add(END));
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
        Set<Integer> stopIds = stopIds(text, req);
        SamplingParams p = req.sampling().params(maxTokens, req.temperature(), req.topP(), req.seed(),
                List.copyOf(stopIds));
        return new Generation(engine, new GenerateRequest(id, prompt, req.ns(), p), Set.copyOf(stopIds),
                text.detokenizer(prompt, req.output().skipSpecialTokens()), new StopStrings(req.stops(),
                req.output().includeStopString()), !text.hasTokenizer(), listener, fault);
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

    /** Streams the generation into {@code sink} and returns how it ended. */
    Outcome run(Sink sink) {
        StringBuilder all = new StringBuilder();
        List<Integer> pendingIds = new ArrayList<>();
        int generated = 0;
        boolean stopped = false;
        try {
            while (true) {
                int t = queue.take();
                if (t == END) {
                    break;
                }
                generated++;
                if (stopIds.contains(t)) {
                    continue; // ends the request; a stop token is never part of the text
                }
                pendingIds.add(t);
                String piece = stops.accept(detok.next(t), generated > minTokens);
                if (stops.matched()) {
                    stopped = true;
                    handle.cancel();
                    emit(sink, all, piece, pendingIds, true);
                    break;
                }
                emit(sink, all, piece, pendingIds, idsOnly);
            }
            if (!stopped) {
                String tail = stops.accept(detok.flush(), generated > minTokens);
                stopped = stops.matched();
                emit(sink, all, stopped ? tail : tail + stops.drain(), pendingIds, false);
            }
            RequestResult r = awaitResult();
            String reason = stopped ? "stop" : switch (r.reason()) {
                case STOP -> "stop";
                case LENGTH -> "length";
                case CANCELLED, ABORTED -> "abort";
                case ERROR, REJECTED -> "error";
            };
            report(r, reason, generated);
            return new Outcome(reason, promptTokens, generated, r.stats() == null ? 0 : r.stats().cachedPromptTokens(),
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

    private static void emit(Sink sink, StringBuilder all, String piece, List<Integer> pendingIds, boolean force) {
        if (piece.isEmpty() && !(force && !pendingIds.isEmpty())) {
            return;
        }
        int[] ids = pendingIds.stream().mapToInt(Integer::intValue).toArray();
        pendingIds.clear();
        all.append(piece);
        sink.piece(piece, ids);
    }
}
