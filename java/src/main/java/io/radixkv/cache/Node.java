package io.radixkv.cache;

/**
 * A radix-tree node: an edge label of cache tokens (the tokens overlapping this node's KV span) and
 * the pages holding that span. Every span is a whole number of pages. With page size &gt; 1 a span
 * boundary can fall inside an image token; the image then appears in both nodes' labels and
 * {@link #head} says how many of its KV positions the parent already covers.
 *
 * <p>All fields except the heap bookkeeping ({@link #heapVersion}, {@link #inHeap}, guarded by the
 * heap's lock) are guarded by the owning {@link Tree}'s lock.
 */
final class Node implements NodeRef {

    static final int[] NO_PAGES = new int[0];

    /** Owning tree; null only for the detached root returned by a miss in an unknown namespace. */
    final Tree tree;
    final long id;
    Node parent;
    /** Edge label; null for roots. */
    TokenSequence label;
    /** KV positions of label token 0 already covered by the parent (non-zero only for images). */
    int head;
    int[] pages = NO_PAGES;

    /** Children: open-addressing table keyed by {@link #firstHash}; null when a leaf. */
    Node[] kids;
    int kidCount;
    /** Hash of the keys overlapping this node's first page (its index in the parent's table). */
    int firstHash;

    int lockRef;
    long lastAccess;
    long created;
    long hits;
    int priority;
    boolean evicted;

    // guarded by the eviction heap's lock
    int heapVersion;
    boolean inHeap;

    Node(Tree tree, long id) {
        this.tree = tree;
        this.id = id;
    }

    boolean isLeaf() {
        return kidCount == 0;
    }

    @Override
    public Namespace namespace() {
        return tree == null ? null : tree.ns;
    }

    @Override
    public boolean isRoot() {
        return parent == null;
    }

    @Override
    public int lockRef() {
        return lockRef;
    }

    @Override
    public boolean isEvicted() {
        return evicted;
    }

    @Override
    public int kvEnd() {
        int p = 0;
        for (Node n = this; n != null; n = n.parent) {
            p += n.pages.length;
        }
        return tree == null ? 0 : p * tree.pageSize;
    }

    // ---- child table -------------------------------------------------------------------

    private static int slot(int hash, int mask) {
        int h = hash * 0x9E3779B9;
        return (h ^ (h >>> 16)) & mask;
    }

    /** Adds a child whose firstHash is set. */
    void addChild(Node c) {
        if (kids == null) {
            kids = new Node[2];
        } else if ((kidCount + 1) * 2 > kids.length) {
            Node[] old = kids;
            kids = new Node[old.length * 2];
            for (Node o : old) {
                if (o != null) {
                    place(o);
                }
            }
        }
        place(c);
        kidCount++;
    }

    private void place(Node c) {
        int mask = kids.length - 1;
        int i = slot(c.firstHash, mask);
        while (kids[i] != null) {
            i = (i + 1) & mask;
        }
        kids[i] = c;
    }

    /** Replaces child {@code old} by {@code repl} (same firstHash). */
    void replaceChild(Node old, Node repl) {
        int mask = kids.length - 1;
        int i = slot(old.firstHash, mask);
        while (kids[i] != old) {
            i = (i + 1) & mask;
        }
        kids[i] = repl;
    }

    /** Removes child {@code c} (backward-shift deletion keeps probe chains intact). */
    void removeChild(Node c) {
        int mask = kids.length - 1;
        int i = slot(c.firstHash, mask);
        while (kids[i] != c) {
            i = (i + 1) & mask;
        }
        kids[i] = null;
        kidCount--;
        if (kidCount == 0) {
            kids = null;
            return;
        }
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            Node k = kids[j];
            if (k == null) {
                return;
            }
            int home = slot(k.firstHash, mask);
            // move k into the hole at i if its home is not in (i, j] cyclically
            boolean between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
            if (!between) {
                kids[i] = k;
                kids[j] = null;
                i = j;
            }
        }
    }

    /**
     * The child whose first page holds exactly the {@code count} tokens of {@code q} from token
     * {@code t}, or null.
     */
    Node findChild(int hash, TokenSequence q, int t, int count) {
        Node[] ks = kids;
        if (ks == null) {
            return null;
        }
        int mask = ks.length - 1;
        for (int i = slot(hash, mask); ; i = (i + 1) & mask) {
            Node k = ks[i];
            if (k == null) {
                return null;
            }
            if (k.firstHash == hash && k.label.size() >= count
                    && TokenSequence.commonPrefix(k.label, 0, q, t, count) == count) {
                return k;
            }
        }
    }

    /** Any child (for traversals). */
    void forEachChild(java.util.function.Consumer<Node> f) {
        if (kids != null) {
            for (Node k : kids) {
                if (k != null) {
                    f.accept(k);
                }
            }
        }
    }

    @Override
    public String toString() {
        return "Node#" + id + (parent == null ? "(root)" : "") + "[pages=" + pages.length + ", lockRef=" + lockRef
                + (evicted ? ", evicted" : "") + "]";
    }
}
