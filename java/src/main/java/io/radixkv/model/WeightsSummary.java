package io.radixkv.model;

/**
 * What a model's weights are held as, for reports ({@code info}, {@code llama_bench}).
 *
 * @param format the matrices' formats with their shares of the weights ({@link ModelWeights#formatSummary})
 * @param bytesPerWeight the matrices' bytes per weight ({@link ModelWeights#bytesPerWeight})
 * @param decodeBytes bytes one decode step streams once: every block but the embedding table,
 *     which is a gather of one row per token, unless it is also the (tied) LM head
 */
public record WeightsSummary(String format, double bytesPerWeight, long decodeBytes) {}
