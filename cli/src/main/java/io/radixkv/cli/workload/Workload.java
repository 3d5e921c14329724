package io.radixkv.cli.workload;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A named synthetic serving workload: requests in id order.
 *
 * @param name workload name ({@link Workloads#NAMES})
 * @param description one line describing what was generated (sizes, rate)
 * @param requests the requests; request i has id i
 */
public record Workload(String name, String description, List<WorkloadRequest> requests) {
    public Workload {
        requests = List.copyOf(requests);
        for (int i = 0; i < requests.size(); i++) {
            if (requests.get(i).id() != i) {
                throw new IllegalArgumentException("request at index " + i + " has id " + requests.get(i).id());
            }
        }
    }

    public int size() {
        return requests.size();
    }

    public long promptTokens() {
        return requests.stream().mapToLong(WorkloadRequest::promptLength).sum();
    }

    /**
     * The earliest time the last request can be sent, in seconds from the start, if every
     * request finished the moment it was sent: arrivals plus think times along conversations.
     * A run takes at least this long (times {@code timeScale}).
     */
    public double scheduleSeconds() {
        double[] sendAt = new double[requests.size()];
        double last = 0;
        for (WorkloadRequest r : requests) {
            sendAt[r.id()] = r.after() < 0 ? r.arrivalSeconds() : sendAt[r.after()] + r.afterDelaySeconds();
            last = Math.max(last, sendAt[r.id()]);
        }
        return last;
    }

    public long maxOutputTokens() {
        return requests.stream().mapToLong(WorkloadRequest::maxTokens).sum();
    }

    /**
     * Prompt tokens an ideal prefix cache would not recompute: unbounded, requests in id order,
     * each request's full prompt pages cached before the next one starts, prompts only. Per
     * request: the longest prefix made of whole pages that an earlier prompt cached, backed off
     * by one page when it covers the whole prompt (the last prompt token is always computed:
     * the full-match rule). The ideal prefill ratio without vs with cache is
     * {@code promptTokens / (promptTokens - idealCachedTokens)}.
     */
    public long idealCachedTokens(int pageSize) {
        return idealCachedTokens(pageSize, false);
    }

    /**
     * As {@link #idealCachedTokens(int)}; with {@code cacheReplies} a finished request's reply
     * (the stand-in its next turn repeats, {@link WorkloadRequest#replyTokens}) is cached after
     * its prompt, as an engine that caches generated tokens does.
     */
    public long idealCachedTokens(int pageSize, boolean cacheReplies) {
        if (pageSize < 1) {
            throw new IllegalArgumentException("pageSize must be >= 1, got " + pageSize);
        }
        // A token trie over the cached (page-aligned) parts of earlier prompts.
        Map<Long, Integer> children = new HashMap<>();
        int nextNode = 1;
        int[][] cachedSeq = new int[requests.size()][];
        if (cacheReplies) {
            for (WorkloadRequest r : requests) {
                if (r.replyTokens() > 0 && cachedSeq[r.after()] == null) {
                    cachedSeq[r.after()] = Arrays.copyOf(r.prompt(),
                            requests.get(r.after()).promptLength() + r.replyTokens());
                }
            }
        }
        long cached = 0;
        for (WorkloadRequest r : requests) {
            int[] p = r.prompt();
            int[] c = cachedSeq[r.id()] != null ? cachedSeq[r.id()] : p;
            int node = 0;
            int matched = 0;
            while (matched < p.length) {
                Integer child = children.get(key(node, p[matched]));
                if (child == null) {
                    break;
                }
                node = child;
                matched++;
            }
            int reusable = matched / pageSize * pageSize;
            if (reusable == p.length) {
                reusable -= pageSize;
            }
            cached += reusable;
            // c extends p, so the walk so far is a prefix of c too; continue it over c.
            while (matched < c.length / pageSize * pageSize) {
                Integer child = children.get(key(node, c[matched]));
                if (child == null) {
                    children.put(key(node, c[matched]), nextNode);
                    child = nextNode++;
                }
                node = child;
                matched++;
            }
        }
        return cached;
    }

    private static long key(int node, int token) {
        return ((long) node << 32) | (token & 0xffffffffL);
    }
}
