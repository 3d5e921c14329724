package io.radixkv.engine;

import java.util.List;

/**
 * The engine's LoRA adapters at the end of the last step, as vLLM's {@code lora_requests_info}
 * gauge reports them.
 *
 * @param running adapters of the admitted requests (sorted)
 * @param waiting adapters of the queued requests (sorted)
 * @param maxLoras adapters the kernels can run at once ({@code --max-loras})
 * @param loaded every adapter loaded and not being unloaded (sorted)
 */
public record LoraStats(List<String> running, List<String> waiting, int maxLoras, List<String> loaded) {
    public LoraStats {
        running = List.copyOf(running);
        waiting = List.copyOf(waiting);
        loaded = List.copyOf(loaded);
    }
}
