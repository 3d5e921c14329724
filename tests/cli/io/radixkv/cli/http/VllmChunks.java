package io.radixkv.cli.http;

/**
 * Stream chunks of vLLM's OpenAI-compatible {@code /v1/completions} in its format
 * (CompletionStreamResponse): one chunk per token with {@code usage: null}, the last token's
 * chunk carrying {@code finish_reason}; with {@code stream_options.include_usage} a chunk with
 * {@code choices: []} and the usage ({@code prompt_tokens_details.cached_tokens} where the
 * server reports it); then {@code [DONE]}. Written after vLLM's protocol classes and streams
 * shown in its issues (e.g. vllm-project/vllm#44475), not captured from a running vLLM: no vLLM
 * server is reachable from this build.
 */
public final class VllmChunks {
    private VllmChunks() {}

    public static final String MODEL = "meta-llama/Llama-3.2-3B-Instruct";

    public static String token(String text, String finish) {
        return "{\"id\":\"cmpl-0c8f5e2b9d4a4f7e8a1b3c5d7e9f1a2b\",\"object\":\"text_completion\",\"created\":1732345678,"
                + "\"model\":\"" + MODEL + "\",\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"logprobs\":null,"
                + "\"finish_reason\":" + (finish == null ? "null" : "\"" + finish + "\"") + ",\"stop_reason\":null}],"
                + "\"usage\":null}";
    }

    public static String usage(int prompt, int completion, Integer cached) {
        return "{\"id\":\"cmpl-0c8f5e2b9d4a4f7e8a1b3c5d7e9f1a2b\",\"object\":\"text_completion\",\"created\":1732345678,"
                + "\"model\":\"" + MODEL + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":" + prompt
                + ",\"total_tokens\":" + (prompt + completion) + ",\"completion_tokens\":" + completion
                + (cached == null ? "" : ",\"prompt_tokens_details\":{\"cached_tokens\":" + cached + "}") + "}}";
    }
}
