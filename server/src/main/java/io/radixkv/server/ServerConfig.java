package io.radixkv.server;

import java.time.Duration;
import java.util.Objects;

/**
 * HTTP-side settings.
 *
 * @param host address to bind ({@code 0.0.0.0} for all interfaces)
 * @param port TCP port; 0 picks a free one ({@link OpenAiServer#port()} tells which)
 * @param servedModelName the model id clients send in {@code model} and {@code /v1/models} lists
 * @param maxWaiting requests queued beyond the engine's running slots before new ones are
 *     refused with 429 (the bounded waiting queue)
 * @param shutdownGrace how long shutdown lets running requests finish before aborting them
 * @param limits connection timeouts and the largest request body
 * @param metricsPrefix the prefix of every {@code /metrics} series ({@code radixkv:...}; {@code vllm}
 *     makes them vLLM's names)
 * @param trustRequestChatTemplate whether a request may bring its own {@code chat_template}: off by
 *     default, as in vLLM, because the server then renders client-written Jinja
 * @param chatOutput how chat responses read tool calls and reasoning out of the text
 */
public record ServerConfig(String host, int port, String servedModelName, int maxWaiting, Duration shutdownGrace,
                           HttpLimits limits, String metricsPrefix, boolean trustRequestChatTemplate,
                           ChatOutputConfig chatOutput) {
    /** The default {@link #metricsPrefix}. */
    public static final String DEFAULT_METRICS_PREFIX = "radixkv";

    public ServerConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in 0..65535, got " + port);
        }
        if (servedModelName == null || servedModelName.isBlank()) {
            throw new IllegalArgumentException("servedModelName must not be blank");
        }
        if (maxWaiting < 0) {
            throw new IllegalArgumentException("maxWaiting must not be negative, got " + maxWaiting);
        }
        Objects.requireNonNull(shutdownGrace, "shutdownGrace");
        if (shutdownGrace.isNegative()) {
            throw new IllegalArgumentException("shutdownGrace must not be negative, got " + shutdownGrace);
        }
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(chatOutput, "chatOutput");
        if (metricsPrefix == null || !metricsPrefix.matches("[a-zA-Z_][a-zA-Z0-9_]*")) {
            throw new IllegalArgumentException("metricsPrefix must be a Prometheus name ([a-zA-Z_][a-zA-Z0-9_]*), got "
                    + metricsPrefix);
        }
    }

    /** With the {@link #DEFAULT_METRICS_PREFIX}. */
    public ServerConfig(String host, int port, String servedModelName, int maxWaiting, Duration shutdownGrace,
                        HttpLimits limits) {
        this(host, port, servedModelName, maxWaiting, shutdownGrace, limits, DEFAULT_METRICS_PREFIX, false,
                ChatOutputConfig.DEFAULT);
    }

    /** With {@link HttpLimits#DEFAULT}. */
    public ServerConfig(String host, int port, String servedModelName, int maxWaiting, Duration shutdownGrace) {
        this(host, port, servedModelName, maxWaiting, shutdownGrace, HttpLimits.DEFAULT);
    }

    /** Loopback, an ephemeral port, 256 waiting requests, 30 s grace, the default limits. */
    public static ServerConfig local(String servedModelName) {
        return new ServerConfig("127.0.0.1", 0, servedModelName, 256, Duration.ofSeconds(30));
    }

    public ServerConfig withMaxWaiting(int n) {
        return new ServerConfig(host, port, servedModelName, n, shutdownGrace, limits, metricsPrefix, trustRequestChatTemplate, chatOutput);
    }

    public ServerConfig withShutdownGrace(Duration d) {
        return new ServerConfig(host, port, servedModelName, maxWaiting, d, limits, metricsPrefix, trustRequestChatTemplate, chatOutput);
    }

    public ServerConfig withLimits(HttpLimits l) {
        return new ServerConfig(host, port, servedModelName, maxWaiting, shutdownGrace, l, metricsPrefix, trustRequestChatTemplate, chatOutput);
    }

    public ServerConfig withMetricsPrefix(String p) {
        return new ServerConfig(host, port, servedModelName, maxWaiting, shutdownGrace, limits, p, trustRequestChatTemplate, chatOutput);
    }

    public ServerConfig withTrustRequestChatTemplate(boolean trust) {
        return new ServerConfig(host, port, servedModelName, maxWaiting, shutdownGrace, limits, metricsPrefix, trust, chatOutput);
    }

    public ServerConfig withChatOutput(ChatOutputConfig c) {
        return new ServerConfig(host, port, servedModelName, maxWaiting, shutdownGrace, limits, metricsPrefix,
                trustRequestChatTemplate, c);
    }
}
