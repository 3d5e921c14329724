package io.radixkv.sched;

/**
 * A per-request condition on admission beyond KV pages, e.g. a free LoRA slot for the request's
 * adapter. A request the gate holds back stays queued in its place while later requests that the
 * gate lets through are admitted (as vLLM does for requests over its LoRA limit). The scheduler
 * calls {@link #admitted} for each admitted request and {@link #released} for every request that
 * leaves the running set (finished, preempted, aborted), once per stay there; a gate ignores the
 * release of a request it never admitted (one rejected during admission). Engine thread only.
 */
public interface AdmissionGate {
    /** Lets every request through. */
    AdmissionGate OPEN = new AdmissionGate() {
        @Override
        public boolean canAdmit(Sequence s) {
            return true;
        }

        @Override
        public void admitted(Sequence s) {}

        @Override
        public void released(Sequence s) {}
    };

    /** True when {@code s} may be admitted now (its KV cost is checked after). */
    boolean canAdmit(Sequence s);

    /** {@code s} was admitted. */
    void admitted(Sequence s);

    /** {@code s}, admitted earlier, left the running set. */
    void released(Sequence s);
}
