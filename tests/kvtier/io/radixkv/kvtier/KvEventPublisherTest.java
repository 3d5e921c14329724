package io.radixkv.kvtier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The publisher never blocks its caller: a full queue drops events and counts them. */
class KvEventPublisherTest {

    @Test
    void aFloodIsDroppedAndCountedNeverBlocking() throws Exception {
        int port = TestSupport.freePort();
        try (KvEventPublisher pub = new KvEventPublisher("tcp://*:" + port, null, "kv-events", 4, 16, 0)) {
            int[] accepted = new int[1];
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                for (int i = 0; i < 200_000; i++) {
                    if (pub.offer(new KvEvent.BlockRemoved(new long[] {i}, "CPU"))) {
                        accepted[0]++;
                    }
                }
            });
            assertTrue(pub.dropped() > 0, "a 4-event queue cannot take 200000 events at once");
            assertEquals(200_000, accepted[0] + pub.dropped());
        }
    }
}
