package io.radixkv.text;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BPE merges of a SentencePiece vocabulary, generated from the token scores as transformers'
 * {@code generate_merges} generates them when it converts a {@code tokenizer.model} (which is how
 * the Hugging Face tokenizer.json of SentencePiece models got its merges): for each token in id
 * order, every split into two tokens of the vocabulary (by code point, ordered by the ids of the
 * two halves), then all of them stably ordered by the token's score, the left half's length and
 * the right half's length, each descending. Merging the highest-scored pair first is also what
 * llama.cpp's SentencePiece tokenizer does.
 *
 * <p>The score of a normal token is its GGUF score. SentencePiece gives control, user-defined,
 * unknown and byte pieces the score 0 (above every learned piece's negative score), while GGUF
 * converters write -1000 for the added ones: those rank at 0, as in the original model.
 */
final class SpmMerges {
    private SpmMerges() {}

    private record Merge(String left, String right, float score, int leftLength, int rightLength) {}

    static List<String[]> generate(GgufVocab v, String[] keys, BitSet inVocab) {
        Map<String, Integer> ids = new HashMap<>(inVocab.cardinality() * 2);
        for (int i = inVocab.nextSetBit(0); i >= 0; i = inVocab.nextSetBit(i + 1)) {
            ids.put(keys[i], i);
        }
        List<Merge> merges = new ArrayList<>();
        List<int[]> local = new ArrayList<>();
        for (int i = inVocab.nextSetBit(0); i >= 0; i = inVocab.nextSetBit(i + 1)) {
            String piece = keys[i];
            int type = v.types()[i];
            float score = type == GgufVocab.NORMAL || type == 0 ? v.scores()[i] : 0f;
            local.clear();
            int codePoints = piece.codePointCount(0, piece.length());
            for (int k = 1, at = 0; k < codePoints; k++) {
                at = piece.offsetByCodePoints(at, 1);
                Integer l = ids.get(piece.substring(0, at));
                Integer r = l == null ? null : ids.get(piece.substring(at));
                if (r != null) {
                    local.add(new int[] {l, r, k});
                }
            }
            local.sort(Comparator.<int[]>comparingInt(x -> x[0]).thenComparingInt(x -> x[1]));
            for (int[] m : local) {
                merges.add(new Merge(keys[m[0]], keys[m[1]], score, m[2], codePoints - m[2]));
            }
        }
        // Python compares -0.0 and 0.0 as equal, so the scores are compared as primitives.
        merges.sort((a, b) -> a.score != b.score ? (a.score > b.score ? -1 : 1)
                : a.leftLength != b.leftLength ? Integer.compare(b.leftLength, a.leftLength)
                : Integer.compare(b.rightLength, a.rightLength));
        List<String[]> out = new ArrayList<>(merges.size());
        for (Merge m : merges) {
            out.add(new String[] {m.left, m.right});
        }
        return out;
    }
}
