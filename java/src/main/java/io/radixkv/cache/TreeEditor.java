package io.radixkv.cache;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Walks and reshapes namespace trees in whole pages: the one descent shared by match, peek and
 * insert, node splits, new leaves, and the page list of a path. Callers hold the tree's lock.
 */
final class TreeEditor {

    private final int pageSize;
    private final AtomicLong ids;
    private final CacheCounters counters;

    TreeEditor(int pageSize, AtomicLong ids, CacheCounters counters) {
        this.pageSize = pageSize;
        this.ids = ids;
        this.counters = counters;
    }

    /**
     * Cursor of a descent: the deepest node reached, the KV position matched so far, and the query
     * token containing that position with the offset in it (a page boundary may cut an image).
     */
    static final class Walk {
        Node node;
        Node child;
        int kv;
        int t;
        int off;

        private Walk(Node root) {
            this.node = root;
        }
    }

    /**
     * Follows {@code q} from {@code root} while whole pages match, limited to tokens &lt; tLim and KV
     * &lt; kvLim (page-aligned). When the match ends inside a node, {@code split} cuts it there and
     * the walk ends on the new prefix node; otherwise (peek) the tree is not changed and the walk
     * ends on the last fully matched node, with {@link Walk#kv} still counting the partial match.
     * {@link Walk#t} and {@link Walk#off} are current only when the walk ended on a node boundary.
     */
    Walk descend(Node root, TokenSequence q, int tLim, int kvLim, boolean split) {
        Walk w = new Walk(root);
        while (kvLim - w.kv >= pageSize) {
            int got = step(w, q, tLim, kvLim);
            if (got == 0) {
                break;
            }
            Node c = w.child;
            w.kv += got * pageSize;
            if (got < c.pages.length) {
                if (split) {
                    w.node = split(c, got);
                }
                break;
            }
            w.node = c;
            locate(w, q);
        }
        return w;
    }

    /**
     * Adds a leaf under {@code w.node} holding the query's KV {@code [w.kv, kvLim)} in
     * {@code pages[w.kv / pageSize, kvLim / pageSize)}, created and accessed at {@code now}. The
     * caller has claimed the pages.
     */
    Node addLeaf(Walk w, TokenSequence q, int kvLim, int[] pages, int priority, long now) {
        locate(w, q);
        Node nn = new Node(w.node.tree, ids.getAndIncrement());
        nn.parent = w.node;
        int lastTok = q.tokenAtKv(kvLim - 1);
        nn.label = q.slice(w.t, lastTok + 1);
        nn.head = w.off;
        nn.pages = Arrays.copyOfRange(pages, w.kv / pageSize, kvLim / pageSize);
        nn.firstHash = nn.label.hashKeys(0, nn.label.tokensCovering(0, nn.head, pageSize));
        nn.created = now;
        nn.lastAccess = now;
        nn.priority = priority;
        w.node.addChild(nn);
        counters.nodeInserted(nn.pages.length);
        return nn;
    }

    /** The page ids of the path from the root through {@code last}, which spans {@code total} pages. */
    static int[] collectPages(Node last, int total) {
        if (total == 0) {
            return Node.NO_PAGES;
        }
        int[] out = new int[total];
        int pos = total;
        for (Node n = last; n.parent != null; n = n.parent) {
            pos -= n.pages.length;
            System.arraycopy(n.pages, 0, out, pos, n.pages.length);
        }
        return out;
    }

    /**
     * Looks up the child of w.node matching the query's next page and returns how many of its pages
     * match (0 if none), limited to tokens &lt; tLim and KV &lt; kvLim. Requires kvLim - w.kv &ge;
     * pageSize.
     */
    private int step(Walk w, TokenSequence q, int tLim, int kvLim) {
        int cnt = q.tokensCovering(w.t, w.off, pageSize);
        Node c = w.node.findChild(q.hashKeys(w.t, cnt), q, w.t, cnt);
        w.child = c;
        if (c == null) {
            return 0;
        }
        int len = Math.min(c.label.size(), tLim - w.t);
        int eq = TokenSequence.commonPrefix(c.label, 0, q, w.t, len);
        int covered = q.kvStart(w.t + eq) - w.kv;
        int span = c.pages.length * pageSize;
        int got = Math.min(span, Math.min(covered, kvLim - w.kv));
        return Math.max(0, got / pageSize);
    }

    private static void locate(Walk w, TokenSequence q) {
        int t = q.tokenAtKv(w.kv);
        w.t = t;
        w.off = t < q.size() ? w.kv - q.kvStart(t) : 0;
    }

    /** Splits {@code n} after its first {@code p} pages; returns the new parent (the prefix). */
    private Node split(Node n, int p) {
        TokenSequence l = n.label;
        int abs = p * pageSize + n.head; // cut, in label KV coordinates
        int i = l.tokenAtKv(abs);
        int offIn = abs - l.kvStart(i);
        Node pre = new Node(n.tree, ids.getAndIncrement());
        pre.label = l.slice(0, offIn == 0 ? i : i + 1);
        pre.head = n.head;
        pre.pages = Arrays.copyOfRange(n.pages, 0, p);
        pre.parent = n.parent;
        pre.firstHash = n.firstHash;
        pre.lockRef = n.lockRef;
        pre.lastAccess = n.lastAccess;
        pre.created = n.created;
        pre.hits = n.hits;
        pre.priority = n.priority;
        n.parent.replaceChild(n, pre);
        n.label = l.slice(i, l.size());
        n.head = offIn;
        n.pages = Arrays.copyOfRange(n.pages, p, n.pages.length);
        n.parent = pre;
        n.firstHash = n.label.hashKeys(0, n.label.tokensCovering(0, n.head, pageSize));
        pre.addChild(n);
        counters.nodeSplit();
        return pre;
    }
}
