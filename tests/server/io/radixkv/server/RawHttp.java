package io.radixkv.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A client on a plain socket, for what the JDK's HTTP client will not do: stall, send broken
 * framing or bytes that are not UTF-8, speak HTTP/1.0. Every read has a deadline, so a server
 * that never answers fails the test instead of hanging it.
 */
final class RawHttp implements AutoCloseable {
    /** The longest any read waits: far beyond every timeout the tests configure. */
    static final Duration READ_DEADLINE = Duration.ofSeconds(20);

    record Response(int status, Map<String, String> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    private RawHttp(Socket socket) throws IOException {
        this.socket = socket;
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
    }

    static RawHttp connect(URI base) throws IOException {
        return connect(base, 0);
    }

    /** {@code receiveBuffer} > 0: a small receive window, so that a client that does not read stalls the server soon. */
    static RawHttp connect(URI base, int receiveBuffer) throws IOException {
        Socket s = new Socket();
        if (receiveBuffer > 0) {
            s.setReceiveBufferSize(receiveBuffer);
        }
        s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 10_000);
        s.setSoTimeout((int) READ_DEADLINE.toMillis());
        return new RawHttp(s);
    }

    RawHttp send(String ascii) throws IOException {
        return send(ascii.getBytes(StandardCharsets.ISO_8859_1));
    }

    RawHttp send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        return this;
    }

    /** A POST with a Content-Length body of raw bytes. */
    RawHttp post(String path, String version, String extraHeaders, byte[] body) throws IOException {
        send("POST " + path + " " + version + "\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + extraHeaders + "Content-Length: " + body.length + "\r\n\r\n");
        return send(body);
    }

    /** Reads one response: status line, headers, then a body by Content-Length, chunks, or to the end. */
    Response read() throws IOException {
        String status = line();
        if (status == null) {
            throw new IOException("the server closed the connection without a response");
        }
        int code = Integer.parseInt(status.split(" ")[1]);
        Map<String, String> headers = new HashMap<>();
        for (String l; !(l = line()).isEmpty(); ) {
            int c = l.indexOf(':');
            headers.merge(l.substring(0, c).trim().toLowerCase(Locale.ROOT), l.substring(c + 1).trim(),
                    (a, b) -> a + ", " + b);
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (headers.containsKey("content-length")) {
            body.write(in.readNBytes(Integer.parseInt(headers.get("content-length"))));
        } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            for (int n; (n = Integer.parseInt(line().split(";")[0].trim(), 16)) > 0; ) {
                body.write(in.readNBytes(n));
                line();
            }
            line();
        } else {
            in.transferTo(body);
        }
        return new Response(code, headers, body.toByteArray());
    }

    /** Whether the server closes the connection within {@code d} (end of stream or reset), reading past any bytes. */
    boolean closedWithin(Duration d) throws IOException {
        socket.setSoTimeout((int) d.toMillis());
        try {
            while (in.read() != -1) {
                // skip what is still sent
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        } finally {
            socket.setSoTimeout((int) READ_DEADLINE.toMillis());
        }
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int b; (b = in.read()) != -1; ) {
            if (b == '\n') {
                int n = sb.length();
                return n > 0 && sb.charAt(n - 1) == '\r' ? sb.substring(0, n - 1) : sb.toString();
            }
            sb.append((char) b);
        }
        return sb.isEmpty() ? null : sb.toString();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
