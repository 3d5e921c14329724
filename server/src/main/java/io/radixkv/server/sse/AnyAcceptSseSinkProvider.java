package io.radixkv.server.sse;

import io.helidon.common.GenericType;
import io.helidon.http.sse.SseEvent;
import io.helidon.common.media.type.MediaType;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.util.function.BiConsumer;
import io.helidon.webserver.http.spi.Sink;
import io.helidon.webserver.http.spi.SinkProvider;
import io.helidon.webserver.http.spi.SinkProviderContext;
import io.helidon.webserver.sse.SseSink;
import io.helidon.webserver.sse.SseSinkProvider;

/**
 * Helidon's SSE sink, offered whatever the request's {@code Accept} header says. Helidon's own
 * provider only serves requests that accept {@code text/event-stream}, but OpenAI clients
 * (the official SDKs among them) send {@code Accept: application/json} and still expect the
 * stream that {@code "stream": true} asks for, as OpenAI, vLLM and SGLang send it. Found by
 * Helidon's service loader after its own provider declines.
 */
public final class AnyAcceptSseSinkProvider implements SinkProvider<SseEvent> {
    private final SseSinkProvider delegate = new SseSinkProvider();

    public AnyAcceptSseSinkProvider() {}

    @Override
    public boolean supports(GenericType<? extends Sink<?>> type, ServerRequest request) {
        return SseSink.TYPE.equals(type);
    }

    @Override
    public <X extends Sink<SseEvent>> X create(SinkProviderContext context) {
        return delegate.create(context);
    }

    /** The SPI's older entry point (deprecated there, still abstract). */
    @Override
    @SuppressWarnings("deprecation")
    public <X extends Sink<SseEvent>> X create(ServerResponse response, BiConsumer<Object, MediaType> eventConsumer,
                                              Runnable closeRunnable) {
        return delegate.create(response, eventConsumer, closeRunnable);
    }
}
