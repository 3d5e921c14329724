package io.radixkv.structured;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The vocabulary's byte strings as a trie laid out in preorder: node i is entered by byte
 * {@code edge[i]} at depth {@code depth[i]}, its subtree is {@code [i, end[i])}, and the tokens
 * whose bytes end there are {@code tokens[tokenStart[i] .. tokenStart[i+1])}. A walk visits the
 * nodes in index order and skips a dead subtree by jumping to its end, so computing a mask
 * touches each live trie node once, with no pointers to chase. Immutable.
 */
final class TokenTrie {
    final byte[] edge;
    final int[] depth;
    final int[] end;
    final int[] tokenStart;
    final int[] tokens;
    final int maxDepth;
    final int size;

    TokenTrie(TokenVocabulary vocab) {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < vocab.size(); i++) {
            byte[] b = vocab.bytes(i);
            if (b != null && b.length > 0) {
                ids.add(i);
            }
        }
        ids.sort((x, y) -> Arrays.compareUnsigned(vocab.bytes(x), vocab.bytes(y)));
        int cap = 1;
        for (int id : ids) {
            cap += vocab.bytes(id).length;
        }
        byte[] e = new byte[cap];
        int[] d = new int[cap];
        int[] tokenNode = new int[ids.size()];
        int n = 1; // node 0: the root
        int longest = 0;
        for (int id : ids) {
            longest = Math.max(longest, vocab.bytes(id).length);
        }
        int[] path = new int[longest + 1];
        byte[] prev = new byte[0];
        for (int k = 0; k < ids.size(); k++) {
            byte[] s = vocab.bytes(ids.get(k));
            int l = 0;
            while (l < prev.length && l < s.length && prev[l] == s[l]) {
                l++;
            }
            for (int i = l; i < s.length; i++) {
                e[n] = s[i];
                d[n] = i + 1;
                path[i + 1] = n++;
            }
            tokenNode[k] = path[s.length];
            prev = s;
        }
        size = n;
        edge = Arrays.copyOf(e, n);
        depth = Arrays.copyOf(d, n);
        depth[0] = 0;
        end = new int[n];
        // a node's subtree ends at the next node no deeper than it
        int[] open = new int[longest + 2];
        int top = 0;
        open[top++] = 0;
        for (int i = 1; i < n; i++) {
            while (top > 0 && depth[open[top - 1]] >= depth[i]) {
                end[open[--top]] = i;
            }
            open[top++] = i;
        }
        while (top > 0) {
            end[open[--top]] = n;
        }
        tokenStart = new int[n + 1];
        for (int node : tokenNode) {
            tokenStart[node + 1]++;
        }
        for (int i = 0; i < n; i++) {
            tokenStart[i + 1] += tokenStart[i];
        }
        tokens = new int[ids.size()];
        int[] fill = Arrays.copyOf(tokenStart, n);
        for (int k = 0; k < ids.size(); k++) {
            tokens[fill[tokenNode[k]]++] = ids.get(k);
        }
        maxDepth = longest;
    }
}
