package io.radixkv.kvtier;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import redis.clients.jedis.Jedis;

/** Real processes for the tests: free loopback ports and Debian's redis-server. */
final class TestSupport {
    private TestSupport() {}

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    /**
     * Waits until {@code condition} holds (checked every millisecond), failing after 30 s with
     * {@code what}: for state another thread publishes without a signal to wait on.
     */
    static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    static Path root() {
        return Path.of(System.getProperty("radixkv.root", "..")).toAbsolutePath().normalize();
    }

    /** A redis-server on a free loopback port, no persistence; stop() kills it. */
    static final class Redis implements AutoCloseable {
        final int port;
        final Process process;

        Redis() throws IOException, InterruptedException {
            Path exe = Path.of("/usr/bin/redis-server");
            if (!Files.isExecutable(exe)) {
                throw new IllegalStateException("redis-server missing: install Debian's redis-server (scripts/env.sh does)");
            }
            port = freePort();
            process = new ProcessBuilder(exe.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "allkeys-lru")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            long end = System.currentTimeMillis() + 10_000;
            while (true) {
                try (Jedis j = new Jedis("127.0.0.1", port)) {
                    if ("PONG".equals(j.ping())) {
                        return;
                    }
                } catch (RuntimeException e) {
                    if (System.currentTimeMillis() > end || !process.isAlive()) {
                        process.destroyForcibly();
                        throw new IllegalStateException("redis-server did not start on port " + port, e);
                    }
                    Thread.sleep(50);
                }
            }
        }

        String uri() {
            return "redis://127.0.0.1:" + port;
        }

        Jedis client() {
            return new Jedis("127.0.0.1", port);
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws InterruptedException {
            kill();
        }
    }

    static List<String> debianPython() {
        return List.of("/usr/bin/python3");
    }
}
