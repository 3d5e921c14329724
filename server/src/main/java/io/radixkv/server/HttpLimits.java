package io.radixkv.server;

import java.time.Duration;
import java.util.Objects;

/**
 * What one client connection may hold: how long the server waits on it and how large a request
 * it reads. A connection that passes a timeout is closed; a request running on it is cancelled
 * and its admission slots and KV pages freed.
 *
 * @param keepAliveTimeout how long an idle connection (before a request's first byte, or after a
 *     response) stays open (uvicorn's and vLLM's {@code --timeout-keep-alive})
 * @param readTimeout how long the server waits for the next bytes of a request it has started to
 *     read (the rest of its headers, its body)
 * @param writeTimeout how long one write to the client may stay blocked (a client that stops
 *     reading a stream fills the socket's buffers)
 * @param maxRequestBytes the largest request body; larger ones get 413 before they are parsed
 */
public record HttpLimits(Duration keepAliveTimeout, Duration readTimeout, Duration writeTimeout,
                         long maxRequestBytes) {
    /** 5 s keep-alive (uvicorn's default), 30 s read and write timeouts, 8 MiB bodies. */
    public static final HttpLimits DEFAULT = new HttpLimits(Duration.ofSeconds(5), Duration.ofSeconds(30),
            Duration.ofSeconds(30), 8L << 20);

    public HttpLimits {
        positive("keepAliveTimeout", keepAliveTimeout);
        positive("readTimeout", readTimeout);
        positive("writeTimeout", writeTimeout);
        if (maxRequestBytes <= 0) {
            throw new IllegalArgumentException("maxRequestBytes must be positive, got " + maxRequestBytes);
        }
    }

    private static void positive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + d);
        }
    }
}
