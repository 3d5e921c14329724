package io.radixkv.cli.http;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.Reader;

/**
 * The {@code data} of server-sent events, per the HTML living standard's event-stream
 * interpretation, reduced to what an OpenAI stream uses: lines end in LF, CRLF or CR; a line
 * starting with ':' is a comment; {@code data:} lines (one optional space after the colon)
 * accumulate, joined by LF; a blank line dispatches the event; other fields (event, id, retry)
 * are ignored; an event without data is not dispatched; an unterminated last event is dropped.
 * Line splitting and UTF-8 decoding are the JDK's ({@link BufferedReader} over a decoding
 * reader), so network chunk boundaries anywhere (inside a field name, between CR and LF, inside a
 * multi-byte character) do not matter.
 */
public final class SseReader implements Closeable {
    private final BufferedReader in;
    private boolean first = true;

    public SseReader(Reader in) {
        this.in = in instanceof BufferedReader b ? b : new BufferedReader(in);
    }

    /** The data of the next event, or null at the end of the stream. Blocks until it is complete. */
    public String next() throws IOException {
        StringBuilder data = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (first) {
                first = false;
                if (line.startsWith("\uFEFF")) {
                    line = line.substring(1);
                }
            }
            if (line.isEmpty()) {
                if (data != null) {
                    return data.toString();
                }
                continue;
            }
            if (line.charAt(0) == ':') {
                continue;
            }
            int colon = line.indexOf(':');
            String field = colon < 0 ? line : line.substring(0, colon);
            if (!field.equals("data")) {
                continue;
            }
            String value = colon < 0 ? "" : line.substring(colon + 1);
            if (value.startsWith(" ")) {
                value = value.substring(1);
            }
            if (data == null) {
                data = new StringBuilder(value);
            } else {
                data.append('\n').append(value);
            }
        }
        return null;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
