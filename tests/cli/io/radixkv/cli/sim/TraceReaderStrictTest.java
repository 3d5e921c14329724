package io.radixkv.cli.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.StringReader;
import org.junit.jupiter.api.Test;

/** A trace is strict JSON lines: one JSON object per line, no duplicate keys. */
class TraceReaderStrictTest {
    private static IllegalArgumentException refused(String text) {
        return assertThrows(IllegalArgumentException.class, () -> TraceReader.read(new StringReader(text), "t"));
    }

    @Test
    void twoObjectsOnOneLineAreRefused() {
        IllegalArgumentException e = refused("{\"tokens\":[1,2]}\n{\"tokens\":[1]} {\"tokens\":[2]}\n");
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }

    @Test
    void trailingGarbageIsRefused() {
        refused("{\"tokens\":[1,2]} x\n");
        refused("{\"tokens\":[1,2]}]\n");
    }

    @Test
    void duplicateKeysAreRefused() {
        IllegalArgumentException e = refused("{\"tokens\":[1,2], \"tokens\":[3]}\n");
        assertTrue(e.getMessage().contains("line 1") && e.getMessage().contains("tokens"), e.getMessage());
        refused("{\"tokens\":[1,2], \"output\":[1], \"output\":[2]}\n");
    }

    @Test
    void oneObjectPerLineStillReads() throws Exception {
        assertEquals(2, TraceReader.read(new StringReader("{\"tokens\":[1,2]}  \n\n{\"tokens\":[3]}\n"), "t").size());
    }
}
