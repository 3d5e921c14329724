package io.radixkv.server.conn;

import io.helidon.common.buffers.BufferData;
import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.common.socket.HelidonSocket;
import io.helidon.webserver.CloseConnectionException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * One client connection as the server guards it. Every byte Helidon's HTTP/1 parser reads and
 * every byte it writes passes through here, so that:
 * <ul>
 *   <li>a read or write blocked past its timeout closes the connection ({@link Watchdog} checks);
 *   <li>a handler can learn that the peer hung up while its request runs ({@link #onHangup}): the
 *       connection's next read is started early, on its own thread, and its result is handed to
 *       the parser afterwards, so no byte is lost;
 *   <li>an HTTP/1.0 request line is served as HTTP/1.1 with {@code Connection: close} (Helidon
 *       parses only 1.1), which is what a 1.0 client without keep-alive expects.
 * </ul>
 * Threading: the connection's thread reads and writes; {@link #onHangup}'s probe thread reads
 * while the connection thread does not; the watchdog thread only closes the socket.
 */
public final class ClientChannel {
    /** Why the server closed a connection or saw it closed, as the access log names it. */
    public static final String WRITE_TIMEOUT = "write_timeout";
    public static final String READ_TIMEOUT = "read_timeout";
    public static final String KEEP_ALIVE_TIMEOUT = "keep_alive_timeout";
    public static final String CLIENT_CLOSED = "client_closed";
    public static final String SHUTDOWN = "shutdown";

    private static final ThreadLocal<ClientChannel> CURRENT = new ThreadLocal<>();
    private static final byte[] HTTP_1_0 = " HTTP/1.0".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONNECTION_CLOSE = "Connection: close\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_REQUEST_LINE = 8192;

    private final DataReader raw;
    private final HelidonSocket socket;
    private final DataWriter writer;
    private final DataWriter rawWriter;
    private volatile long readSince;   // 0: no read waiting
    private volatile long writeSince;  // 0: no write blocked
    private volatile boolean midRequest;
    private volatile boolean http10;
    private boolean firstRead = true;  // connection thread only
    private CompletableFuture<byte[]> pending; // guarded by this
    private Runnable hangup;                   // guarded by this
    private boolean gone;                      // guarded by this
    private String closeReason;                // guarded by this

    ClientChannel(DataReader raw, DataWriter rawWriter, HelidonSocket socket) {
        this.raw = raw;
        this.rawWriter = rawWriter;
        this.socket = socket;
        this.writer = new GuardedWriter();
    }

    /** The connection the calling request thread serves; empty outside a guarded connection. */
    public static Optional<ClientChannel> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    static void bind(ClientChannel c) {
        if (c == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(c);
        }
    }

    /** Whether the request came as HTTP/1.0 (served once, then the connection closes). */
    public boolean http10() {
        return http10;
    }

    /** Why the connection was closed ({@link #WRITE_TIMEOUT}, ...); null while it is open. */
    public synchronized String closeReason() {
        return closeReason;
    }

    /**
     * Runs {@code r} once when the peer closes the connection (or it is closed for a timeout)
     * before {@link #clearHangup()}; at once if that has already happened. {@code r} runs on the
     * probe's thread and must not block.
     */
    public void onHangup(Runnable r) {
        boolean now;
        synchronized (this) {
            now = gone;
            if (!now) {
                hangup = r;
                if (pending == null) {
                    CompletableFuture<byte[]> f = new CompletableFuture<>();
                    pending = f;
                    Thread.ofVirtual().name("radixkv-hangup-probe").start(() -> probe(f));
                }
            }
        }
        if (now) {
            r.run();
        }
    }

    public synchronized void clearHangup() {
        hangup = null;
    }

    /** The request's exchange is over: the next byte starts a new request (keep-alive timeout until then). */
    public void exchangeDone() {
        midRequest = false;
    }

    DataWriter writer() {
        return writer;
    }

    /** The parser's byte source (a {@link DataReader}'s supplier): null at the end of the stream. */
    byte[] read() {
        CompletableFuture<byte[]> f;
        synchronized (this) {
            f = pending;
            pending = null;
        }
        readSince = Math.max(1, System.nanoTime());
        try {
            byte[] b = f == null ? rawRead() : await(f);
            if (b != null) {
                midRequest = true;
                if (firstRead) {
                    firstRead = false;
                    b = requestLine(b);
                }
            }
            return b;
        } catch (RuntimeException e) {
            String why = closeReason();
            if (why != null) {
                throw new CloseConnectionException(why, e);
            }
            throw e;
        } finally {
            readSince = 0;
        }
    }

    /** Closes the connection if a read or a write has waited too long; called by the watchdog. */
    void sweep(long now, long keepAliveNanos, long readNanos, long writeNanos) {
        long r = readSince;
        if (r != 0 && now - r > (midRequest ? readNanos : keepAliveNanos)) {
            close(midRequest ? READ_TIMEOUT : KEEP_ALIVE_TIMEOUT);
        }
        long w = writeSince;
        if (w != 0 && now - w > writeNanos) {
            close(WRITE_TIMEOUT);
        }
    }

    /** Closes the connection now (a blocked read or write fails); {@code reason} is kept if it is the first. */
    public void close(String reason) {
        synchronized (this) {
            if (closeReason == null) {
                closeReason = reason;
            }
        }
        try {
            socket.close();
        } catch (RuntimeException ignored) {
            // already closed
        }
    }

    private byte[] rawRead() {
        try {
            raw.ensureAvailable();
            return raw.readBytes(raw.available());
        } catch (DataReader.InsufficientDataAvailableException e) {
            return null;
        }
    }

    private static byte[] await(CompletableFuture<byte[]> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CloseConnectionException("interrupted while reading", e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        }
    }

    private void probe(CompletableFuture<byte[]> f) {
        byte[] b;
        try {
            b = rawRead();
            f.complete(b);
        } catch (Throwable t) {
            f.completeExceptionally(t);
            b = null;
        }
        if (b == null) {
            Runnable r;
            synchronized (this) {
                gone = true;
                if (closeReason == null) {
                    closeReason = CLIENT_CLOSED;
                }
                r = hangup;
                hangup = null;
            }
            if (r != null) {
                r.run();
            }
        }
    }

    /**
     * The connection's first bytes, read up to the end of the request line; an HTTP/1.0 line is
     * rewritten to HTTP/1.1 and followed by {@code Connection: close}.
     */
    private byte[] requestLine(byte[] b) {
        while (indexOf(b, (byte) '\n') < 0 && b.length < MAX_REQUEST_LINE) {
            byte[] more = rawRead();
            if (more == null) {
                return b;
            }
            byte[] c = Arrays.copyOf(b, b.length + more.length);
            System.arraycopy(more, 0, c, b.length, more.length);
            b = c;
        }
        int lf = indexOf(b, (byte) '\n');
        if (lf < 0) {
            return b;
        }
        int end = lf > 0 && b[lf - 1] == '\r' ? lf - 1 : lf;
        if (end < HTTP_1_0.length || !Arrays.equals(b, end - HTTP_1_0.length, end, HTTP_1_0, 0, HTTP_1_0.length)) {
            return b;
        }
        http10 = true;
        byte[] out = new byte[b.length + CONNECTION_CLOSE.length];
        System.arraycopy(b, 0, out, 0, lf + 1);
        out[end - 1] = '1';
        System.arraycopy(CONNECTION_CLOSE, 0, out, lf + 1, CONNECTION_CLOSE.length);
        System.arraycopy(b, lf + 1, out, lf + 1 + CONNECTION_CLOSE.length, b.length - lf - 1);
        return out;
    }

    private static int indexOf(byte[] b, byte x) {
        for (int i = 0; i < b.length; i++) {
            if (b[i] == x) {
                return i;
            }
        }
        return -1;
    }

    /** Marks each write as blocked while it runs, for the watchdog. */
    private final class GuardedWriter implements DataWriter {
        @Override
        public void write(BufferData... buffers) {
            timed(() -> rawWriter.write(buffers));
        }

        @Override
        public void write(BufferData buffer) {
            timed(() -> rawWriter.write(buffer));
        }

        @Override
        public void writeNow(BufferData... buffers) {
            timed(() -> rawWriter.writeNow(buffers));
        }

        @Override
        public void writeNow(BufferData buffer) {
            timed(() -> rawWriter.writeNow(buffer));
        }

        @Override
        public void flush() {
            timed(rawWriter::flush);
        }

        @Override
        public void close() {
            rawWriter.close();
        }

        private void timed(Runnable write) {
            writeSince = Math.max(1, System.nanoTime());
            try {
                write.run();
            } finally {
                writeSince = 0;
            }
        }
    }
}
