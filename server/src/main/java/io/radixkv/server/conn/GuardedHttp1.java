package io.radixkv.server.conn;

import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.common.concurrency.limits.Limit;
import io.helidon.common.socket.HelidonSocket;
import io.helidon.common.socket.PeerInfo;
import io.helidon.common.buffers.BufferData;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.ListenerContext;
import io.helidon.webserver.ProxyProtocolData;
import io.helidon.webserver.Router;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http1.Http1ConnectionSelector;
import io.helidon.webserver.spi.ServerConnection;
import io.helidon.webserver.spi.ServerConnectionSelector;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The listener's only connection selector: Helidon's HTTP/1 connection, its reads and writes
 * routed through a {@link ClientChannel} each, and a watchdog that closes connections whose
 * read or write has waited past its timeout. Helidon has an idle-connection timer, but it
 * measures whole seconds and cannot stop a request that is half read or a write that blocks;
 * this is the part it lacks.
 */
public final class GuardedHttp1 implements ServerConnectionSelector, AutoCloseable {
    private final ServerConnectionSelector http1;
    private final Set<ClientChannel> open = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService watchdog;
    private final long keepAliveNanos;
    private final long readNanos;
    private final long writeNanos;

    /**
     * @param http1 Helidon's HTTP/1 settings (prologue and header sizes, validation)
     * @param keepAlive how long a connection may wait for a request's first byte
     * @param read how long a started request may wait for its next bytes
     * @param write how long one write may block
     */
    public GuardedHttp1(Http1Config http1, Duration keepAlive, Duration read, Duration write) {
        this.http1 = Http1ConnectionSelector.builder().config(http1).build();
        this.keepAliveNanos = keepAlive.toNanos();
        this.readNanos = read.toNanos();
        this.writeNanos = write.toNanos();
        long shortest = Math.min(keepAliveNanos, Math.min(readNanos, writeNanos));
        // a few checks within the shortest timeout: a connection is closed at most a quarter late
        long tick = Math.clamp(shortest / 4, TimeUnit.MILLISECONDS.toNanos(5), TimeUnit.MILLISECONDS.toNanos(500));
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "radixkv-connection-watchdog");
            t.setDaemon(true);
            return t;
        });
        watchdog.scheduleAtFixedRate(this::sweep, tick, tick, TimeUnit.NANOSECONDS);
    }

    /** Connections open now (tests). */
    public int openConnections() {
        return open.size();
    }

    private void sweep() {
        long now = System.nanoTime();
        for (ClientChannel c : open) {
            c.sweep(now, keepAliveNanos, readNanos, writeNanos);
        }
    }

    @Override
    public int bytesToIdentifyConnection() {
        return 0;
    }

    @Override
    public Support supports(BufferData data) {
        return Support.SUPPORTED; // the only selector: whatever arrives gets the HTTP/1 parser's answer
    }

    @Override
    public Set<String> supportedApplicationProtocols() {
        return http1.supportedApplicationProtocols();
    }

    @Override
    public ServerConnection connection(ConnectionContext ctx) {
        ClientChannel channel = new ClientChannel(ctx.dataReader(), ctx.dataWriter(), ctx.serverSocket());
        ServerConnection inner = http1.connection(new Context(ctx, DataReader.create(channel::read), channel.writer()));
        return new Connection(inner, channel);
    }

    @Override
    public void close() {
        watchdog.shutdownNow();
    }

    /** Helidon's connection, run with its channel registered for the watchdog and the handlers. */
    private final class Connection implements ServerConnection {
        private final ServerConnection inner;
        private final ClientChannel channel;

        Connection(ServerConnection inner, ClientChannel channel) {
            this.inner = inner;
            this.channel = channel;
        }

        @Override
        public void handle(Limit limit) throws InterruptedException {
            open.add(channel);
            ClientChannel.bind(channel);
            try {
                inner.handle(limit);
            } finally {
                ClientChannel.bind(null);
                open.remove(channel);
                channel.clearHangup();
            }
        }

        @Override
        public Duration idleTime() {
            return inner.idleTime();
        }

        @Override
        public void close(boolean interrupt) {
            inner.close(interrupt);
        }
    }

    /** The connection's context with the channel's reader and writer in place of the socket's. */
    private record Context(ConnectionContext ctx, DataReader reader, DataWriter writer) implements ConnectionContext {
        @Override
        public ListenerContext listenerContext() {
            return ctx.listenerContext();
        }

        @Override
        public ExecutorService executor() {
            return ctx.executor();
        }

        @Override
        public DataWriter dataWriter() {
            return writer;
        }

        @Override
        public DataReader dataReader() {
            return reader;
        }

        @Override
        public Router router() {
            return ctx.router();
        }

        @Override
        public Optional<ProxyProtocolData> proxyProtocolData() {
            return ctx.proxyProtocolData();
        }

        @Override
        public HelidonSocket serverSocket() {
            return ctx.serverSocket();
        }

        @Override
        public PeerInfo remotePeer() {
            return ctx.remotePeer();
        }

        @Override
        public PeerInfo localPeer() {
            return ctx.localPeer();
        }

        @Override
        public boolean isSecure() {
            return ctx.isSecure();
        }

        @Override
        public String socketId() {
            return ctx.socketId();
        }

        @Override
        public String childSocketId() {
            return ctx.childSocketId();
        }
    }
}
