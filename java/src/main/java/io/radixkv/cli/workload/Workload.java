package io.radixkv.cli.workload;

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
        if (pageSize < 1) {
            throw new IllegalArgumentException("pageSize must be >= 1, got " + pageSize);
        }
        // A token trie over the cached (page-aligned) parts of earlier prompts.
        Map<Long, Integer> children = new HashMap<>();
        int nextNode = 1;
        long cached = 0;
        for (WorkloadRequest r : requests) {
            int[] p = r.prompt();
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
            int cachable = p.length / pageSize * pageSize;
            for (int i = matched; i < cachable; i++) {
                children.put(key(node, p[i]), nextNode);
                node = nextNode++;
            }
        }
        return cached;
    }

    private static long key(int node, int token) {
        return ((long) node << 32) | (token & 0xffffffffL);
    }
}
