package io.radixkv.model;

import java.util.Map;

/**
 * The families' decoder in double precision, written from the families' rules as
 * transformers' modeling files state them and independent of the production code: it reads the
 * tensors by their Hugging Face names, as a checkpoint holds them (no fused q/k/v or
 * gate/up), and takes every family feature as an explicit {@link Spec}.
 */
final class ReferenceDecoder {
    /**
     * Everything the reference needs to know about a model.
     *
     * @param normOffset 0: RMSNorm x̂·w; 1: Gemma's x̂·(1+w) (all norms, q/k norms too)
     * @param qkvBias q/k/v projections add q_proj.bias etc.
     * @param qkNorm per-head RMSNorm of q and k (q_norm / k_norm) before RoPE
     * @param sandwich Gemma's post_attention / pre_feedforward / post_feedforward norms
     * @param gelu MLP gelu_tanh(gate)·up instead of silu(gate)·up
     * @param embedScale embeddings multiplied by this
     * @param attnScale softmax scale of q·k
     * @param finalCap c &gt; 0: logits c·tanh(logits/c)
     * @param window per layer: 0 global, W: keys q-W &lt; k ≤ q
     * @param invFreq per layer: RoPE inverse frequencies (headDim / 2)
     * @param tied lm_head is the embedding
     */
    record Spec(int hidden, int inter, int layers, int heads, int kvHeads, int headDim, int vocab, double eps,
                double normOffset, boolean qkvBias, boolean qkNorm, boolean sandwich, boolean gelu, double embedScale,
                double attnScale, double finalCap, int[] window, double[][] invFreq, boolean tied) {}

    private final Spec s;
    private final Map<String, float[]> t;

    ReferenceDecoder(Spec spec, Map<String, float[]> tensors) {
        this.s = spec;
        this.t = tensors;
    }

    private float[] tensor(String name) {
        float[] v = t.get(name);
        if (v == null) {
            throw new IllegalArgumentException("reference: no tensor " + name);
        }
        return v;
    }

    /** y = W · x (+ b), W [out, x.length] row-major. */
    private static double[] matvec(float[] w, double[] x, float[] bias) {
        int out = w.length / x.length;
        double[] y = new double[out];
        for (int r = 0; r < out; r++) {
            double acc = bias == null ? 0 : bias[r];
            int base = r * x.length;
            for (int i = 0; i < x.length; i++) {
                acc += w[base + i] * x[i];
            }
            y[r] = acc;
        }
        return y;
    }

    /** RMSNorm of x[off .. off+n) in place. */
    private void norm(double[] x, int off, int n, float[] g) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            ss += x[off + i] * x[off + i];
        }
        double inv = 1.0 / Math.sqrt(ss / n + s.eps());
        for (int i = 0; i < n; i++) {
            x[off + i] = x[off + i] * inv * (s.normOffset() + g[i]);
        }
    }

    private double[] normed(double[] x, float[] g) {
        double[] y = x.clone();
        norm(y, 0, y.length, g);
        return y;
    }

    /** Rotate-half RoPE: pairs (i, i + d/2) rotated by pos · invFreq[i]. */
    private void rope(double[] v, int heads, int pos, double[] invFreq) {
        int d = s.headDim();
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < d / 2; i++) {
                double a = pos * invFreq[i];
                double x1 = v[h * d + i];
                double x2 = v[h * d + i + d / 2];
                v[h * d + i] = x1 * Math.cos(a) - x2 * Math.sin(a);
                v[h * d + i + d / 2] = x2 * Math.cos(a) + x1 * Math.sin(a);
            }
        }
    }

    /** Next-token logits after each of {@code positions} of {@code tokens}. */
    double[][] logits(int[] tokens, int... positions) {
        int n = tokens.length;
        int h = s.hidden();
        int d = s.headDim();
        float[] embed = tensor("model.embed_tokens.weight");
        double[][] x = new double[n][h];
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < h; i++) {
                x[p][i] = embed[tokens[p] * h + i] * s.embedScale();
            }
        }
        for (int l = 0; l < s.layers(); l++) {
            String pre = "model.layers." + l + ".";
            double[][] q = new double[n][];
            double[][] k = new double[n][];
            double[][] v = new double[n][];
            for (int p = 0; p < n; p++) {
                double[] a = normed(x[p], tensor(pre + "input_layernorm.weight"));
                q[p] = matvec(tensor(pre + "self_attn.q_proj.weight"), a, s.qkvBias() ? tensor(pre + "self_attn.q_proj.bias") : null);
                k[p] = matvec(tensor(pre + "self_attn.k_proj.weight"), a, s.qkvBias() ? tensor(pre + "self_attn.k_proj.bias") : null);
                v[p] = matvec(tensor(pre + "self_attn.v_proj.weight"), a, s.qkvBias() ? tensor(pre + "self_attn.v_proj.bias") : null);
                if (s.qkNorm()) {
                    for (int hh = 0; hh < s.heads(); hh++) {
                        norm(q[p], hh * d, d, tensor(pre + "self_attn.q_norm.weight"));
                    }
                    for (int hh = 0; hh < s.kvHeads(); hh++) {
                        norm(k[p], hh * d, d, tensor(pre + "self_attn.k_norm.weight"));
                    }
                }
                rope(q[p], s.heads(), p, s.invFreq()[l]);
                rope(k[p], s.kvHeads(), p, s.invFreq()[l]);
            }
            int group = s.heads() / s.kvHeads();
            int w = s.window()[l];
            for (int p = 0; p < n; p++) {
                int first = w > 0 ? Math.max(0, p - w + 1) : 0;
                double[] attn = new double[s.heads() * d];
                for (int hh = 0; hh < s.heads(); hh++) {
                    int g = hh / group;
                    double[] sc = new double[p + 1];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int j = first; j <= p; j++) {
                        double dot = 0;
                        for (int e = 0; e < d; e++) {
                            dot += q[p][hh * d + e] * k[j][g * d + e];
                        }
                        sc[j] = dot * s.attnScale();
                        max = Math.max(max, sc[j]);
                    }
                    double sum = 0;
                    for (int j = first; j <= p; j++) {
                        sc[j] = Math.exp(sc[j] - max);
                        sum += sc[j];
                    }
                    for (int e = 0; e < d; e++) {
                        double o = 0;
                        for (int j = first; j <= p; j++) {
                            o += sc[j] * v[j][g * d + e];
                        }
                        attn[hh * d + e] = o / sum;
                    }
                }
                double[] o = matvec(tensor(pre + "self_attn.o_proj.weight"), attn, null);
                if (s.sandwich()) {
                    norm(o, 0, h, tensor(pre + "post_attention_layernorm.weight"));
                }
                for (int i = 0; i < h; i++) {
                    x[p][i] += o[i];
                }
                double[] m = normed(x[p], tensor(pre + (s.sandwich() ? "pre_feedforward_layernorm.weight"
                        : "post_attention_layernorm.weight")));
                double[] gate = matvec(tensor(pre + "mlp.gate_proj.weight"), m, null);
                double[] up = matvec(tensor(pre + "mlp.up_proj.weight"), m, null);
                double[] act = new double[s.inter()];
                for (int i = 0; i < s.inter(); i++) {
                    double gg = gate[i];
                    double f = s.gelu() ? 0.5 * gg * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (gg + 0.044715 * gg * gg * gg)))
                            : gg / (1 + Math.exp(-gg));
                    act[i] = f * up[i];
                }
                double[] dn = matvec(tensor(pre + "mlp.down_proj.weight"), act, null);
                if (s.sandwich()) {
                    norm(dn, 0, h, tensor(pre + "post_feedforward_layernorm.weight"));
                }
                for (int i = 0; i < h; i++) {
                    x[p][i] += dn[i];
                }
            }
        }
        float[] head = tensor(s.tied() ? "model.embed_tokens.weight" : "lm_head.weight");
        double[][] out = new double[positions.length][];
        for (int i = 0; i < positions.length; i++) {
            double[] lg = matvec(head, normed(x[positions[i]], tensor("model.norm.weight")), null);
            if (s.finalCap() > 0) {
                for (int j = 0; j < lg.length; j++) {
                    lg[j] = s.finalCap() * Math.tanh(lg[j] / s.finalCap());
                }
            }
            out[i] = lg;
        }
        return out;
    }
}
