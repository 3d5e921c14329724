#!/usr/bin/env python3
"""Writes the small preset (hidden 768, 12 layers, 12 query / 4 KV heads of 64, MLP 2048, a
32,000-token vocabulary) as a llama-architecture GGUF file with random weights, for running
radixkv and llama.cpp on the same file (llama.cpp's llama-quantize then makes the Q8_0, Q4_0 and
Q4_K_M files from it).

The tokenizer is a SentencePiece vocabulary (tokenizer.ggml.model "llama"): <unk>, <s>, </s>, the
256 byte tokens and lower-case pieces, so that both engines tokenize a prompt alike. Matrices are
N(0, 0.02) (the output projection N(0, 0.05), so that greedy decoding has clear winners), norms 1.

  scripts/small-gguf.py LLAMA_CPP_DIR OUT.gguf [f32|f16|bf16]

LLAMA_CPP_DIR is a llama.cpp checkout: its gguf-py package writes the file.
"""
import sys

import numpy as np

if len(sys.argv) < 3:
    sys.exit(__doc__)
sys.path.insert(0, sys.argv[1] + "/gguf-py")
import gguf  # noqa: E402

out, dtype = sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "f16")
hidden, inter, layers, heads, kv_heads, head_dim, vocab = 768, 2048, 12, 12, 4, 64, 32000
rng = np.random.default_rng(7)

w = gguf.GGUFWriter(out, "llama")
w.add_name("radixkv small preset (random weights)")
w.add_context_length(8192)
w.add_embedding_length(hidden)
w.add_block_count(layers)
w.add_feed_forward_length(inter)
w.add_head_count(heads)
w.add_head_count_kv(kv_heads)
w.add_rope_dimension_count(head_dim)
w.add_rope_freq_base(10000.0)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type({"f32": 0, "f16": 1, "bf16": 32}[dtype])

tokens, scores, types = [b"<unk>", b"<s>", b"</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
for b in range(256):
    tokens.append(("<0x%02X>" % b).encode())
    scores.append(0.0)
    types.append(6)
letters = "abcdefghijklmnopqrstuvwxyz"
seen = set(tokens)
pieces = ["\u2581" + c for c in letters] + list(letters)
for a in letters:
    for b in letters:
        pieces += ["\u2581" + a + b, a + b]
for a in letters:
    for b in letters:
        for c in letters:
            pieces += ["\u2581" + a + b + c, a + b + c]
for p in pieces:
    if len(tokens) == vocab:
        break
    t = p.encode()
    if t in seen:
        continue
    seen.add(t)
    tokens.append(t)
    scores.append(-float(len(tokens)))  # shorter, earlier pieces first
    types.append(1)
assert len(tokens) == vocab
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)


def mat(rows, cols, std=0.02):
    v = rng.standard_normal((rows, cols), dtype=np.float32) * std
    if dtype == "f16":
        return v.astype(np.float16), None
    if dtype == "bf16":
        bits = v.view(np.uint32)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # nearest even
        return bits, gguf.GGMLQuantizationType.BF16
    return v, None


def add(name, rows, cols, std=0.02):
    data, qtype = mat(rows, cols, std)
    if qtype is None:
        w.add_tensor(name, data)
    else:
        w.add_tensor(name, data, raw_shape=(rows, cols), raw_dtype=qtype)


add("token_embd.weight", vocab, hidden, 1.0)
w.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
add("output.weight", vocab, hidden, 0.05)
for i in range(layers):
    p = "blk.%d." % i
    w.add_tensor(p + "attn_norm.weight", np.ones(hidden, dtype=np.float32))
    w.add_tensor(p + "ffn_norm.weight", np.ones(hidden, dtype=np.float32))
    add(p + "attn_q.weight", heads * head_dim, hidden)
    add(p + "attn_k.weight", kv_heads * head_dim, hidden)
    add(p + "attn_v.weight", kv_heads * head_dim, hidden)
    add(p + "attn_output.weight", hidden, heads * head_dim)
    add(p + "ffn_gate.weight", inter, hidden)
    add(p + "ffn_up.weight", inter, hidden)
    add(p + "ffn_down.weight", hidden, inter)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out)
