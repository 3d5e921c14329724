package io.radixkv.kvtier;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Publishes KV events as vLLM's {@code ZmqEventPublisher} does: a PUB socket sending multipart
 * messages {@code [topic, seq (8 bytes big-endian), msgpack batch]}, and an optional ROUTER socket
 * for replay: a request {@code [identity, "", start seq (8 bytes)]} is answered with every buffered
 * batch from that sequence number on ({@code [identity, "", seq, payload]}) and an end marker
 * {@code [identity, "", -1 (8 bytes), ""]}.
 *
 * <p>{@link #offer} never blocks: events go into a bounded queue and are dropped (and counted in
 * {@link #dropped()}) when it is full, so a slow network or subscriber never slows the engine
 * thread. The publisher thread drains the queue into one batch per wake-up, encodes and sends it.
 */
final class KvEventPublisher implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(KvEventPublisher.class);
    private static final int MAX_BATCH_EVENTS = 1024;

    private final BlockingQueue<KvEvent> queue;
    private final ArrayDeque<Object[]> replayBuffer = new ArrayDeque<>();
    private final int replayCapacity;
    private final byte[] topic;
    private final int dataParallelRank;
    private final ZContext ctx = new ZContext();
    private final ZMQ.Socket pub;
    private final ZMQ.Socket replay;
    private final Thread thread;
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong published = new AtomicLong();
    private volatile boolean running = true;
    private long seq;

    /**
     * @param endpoint       PUB endpoint; bound when it contains {@code *} or is ipc/inproc (vLLM's rule),
     *                       connected otherwise
     * @param replayEndpoint ROUTER endpoint (bound), or null for no replay
     */
    KvEventPublisher(String endpoint, String replayEndpoint, String topic, int queueCapacity, int replayCapacity,
                     int dataParallelRank) {
        this.queue = new ArrayBlockingQueue<>(queueCapacity);
        this.replayCapacity = replayCapacity;
        this.topic = topic.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        this.dataParallelRank = dataParallelRank;
        try {
            pub = ctx.createSocket(SocketType.PUB);
            pub.setSndHWM(100_000);
            pub.setLinger(0);
            if (endpoint.contains("*") || endpoint.startsWith("ipc://") || endpoint.startsWith("inproc://")) {
                pub.bind(endpoint);
            } else {
                pub.connect(endpoint);
            }
            if (replayEndpoint != null) {
                replay = ctx.createSocket(SocketType.ROUTER);
                replay.setLinger(0);
                replay.bind(replayEndpoint);
            } else {
                replay = null;
            }
        } catch (RuntimeException e) {
            ctx.close();
            throw new IllegalArgumentException("cannot open KV event sockets " + endpoint + " / " + replayEndpoint
                    + ": " + e.getMessage(), e);
        }
        thread = Thread.ofPlatform().name("radixkv-kv-events").daemon().unstarted(this::run);
        thread.start();
    }

    /** Queues an event; false (counted as dropped) when the queue is full. Never blocks. */
    boolean offer(KvEvent e) {
        if (!running || !queue.offer(e)) {
            dropped.incrementAndGet();
            return false;
        }
        return true;
    }

    /** Events dropped because the queue was full (a slow subscriber or network). */
    long dropped() {
        return dropped.get();
    }

    /** Batches sent so far. */
    long published() {
        return published.get();
    }

    private void run() {
        List<KvEvent> batch = new ArrayList<>();
        while (running || !queue.isEmpty()) {
            try {
                serviceReplay();
                KvEvent first = queue.poll(20, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, MAX_BATCH_EVENTS - 1);
                byte[] payload = KvEvent.encodeBatch(System.currentTimeMillis() / 1000.0, batch, dataParallelRank);
                batch.clear();
                byte[] seqBytes = ByteBuffer.allocate(8).putLong(seq).array();
                pub.sendMore(topic);
                pub.sendMore(seqBytes);
                pub.send(payload);
                replayBuffer.addLast(new Object[] {seq, payload});
                if (replayBuffer.size() > replayCapacity) {
                    replayBuffer.removeFirst();
                }
                seq++;
                published.incrementAndGet();
            } catch (InterruptedException e) {
                break;
            } catch (IOException | RuntimeException e) {
                batch.clear();
                LOG.warn("KV event publisher: {}", e.toString());
            }
        }
    }

    private void serviceReplay() {
        if (replay == null) {
            return;
        }
        while (true) {
            byte[] id = replay.recv(ZMQ.DONTWAIT);
            if (id == null) {
                return;
            }
            List<byte[]> frames = new ArrayList<>();
            while (replay.hasReceiveMore()) {
                frames.add(replay.recv());
            }
            if (frames.size() != 2 || frames.get(1).length != 8) {
                LOG.warn("invalid KV event replay request ({} frames)", frames.size() + 1);
                continue;
            }
            long start = ByteBuffer.wrap(frames.get(1)).getLong();
            for (Object[] entry : replayBuffer) {
                long s = (Long) entry[0];
                if (s >= start) {
                    replay.sendMore(id);
                    replay.sendMore(new byte[0]);
                    replay.sendMore(ByteBuffer.allocate(8).putLong(s).array());
                    replay.send((byte[]) entry[1]);
                }
            }
            replay.sendMore(id);
            replay.sendMore(new byte[0]);
            replay.sendMore(ByteBuffer.allocate(8).putLong(-1L).array());
            replay.send(new byte[0]);
        }
    }

    /** Sends what is queued (up to ~1 s), then closes the sockets. */
    @Override
    public void close() {
        running = false;
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            thread.interrupt();
            try {
                thread.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        ctx.close();
    }
}
