/**
 * radixkv's OpenAI-compatible HTTP server: {@code /v1/completions}, {@code /v1/chat/completions}
 * (with server-sent event streams), {@code /v1/models}, {@code /health} and Prometheus
 * {@code /metrics}, on Helidon SE's virtual-thread web server in front of one
 * {@link io.radixkv.engine.Engine}.
 */
module io.radixkv.server {
    requires transitive io.radixkv;
    requires transitive io.radixkv.text;
    requires io.helidon.webserver;
    requires io.helidon.webserver.sse;
    requires io.helidon.http.sse;
    requires io.helidon.http;
    requires io.helidon.common.media.type;
    requires io.helidon.common;
    requires io.helidon.common.buffers;
    requires io.helidon.common.socket;
    requires io.helidon.common.concurrency.limits;
    requires io.prometheus.metrics.core;
    requires io.prometheus.metrics.model;
    requires io.prometheus.writer.text;
    requires org.apache.logging.log4j;
    requires com.fasterxml.jackson.databind;

    exports io.radixkv.server;

    // SSE for "stream": true whatever the client's Accept header (see AnyAcceptSseSinkProvider)
    provides io.helidon.webserver.http.spi.SinkProvider with io.radixkv.server.sse.AnyAcceptSseSinkProvider;
}
