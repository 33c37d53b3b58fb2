#!/usr/bin/env python3
# A small random f32 model of a llama.cpp architecture (qwen3, phi3), written
# by llama.cpp's own GGUF writer (gguf-py) with its own key and tensor names,
# so that ember's reading of such files is checked against a writer that is
# not ember's (issue 13: "GGUFs written by llama.cpp's tools load too").
# usage: GGUF_PY=.../gguf-py python3 gguf_py_family.py ARCH OUT.gguf [--separate-qkv]
#          [--rope-dims N] [--longrope ORIG] [--context N]
#   phi3 writes a fused attn_qkv unless --separate-qkv, and always a fused
#   ffn_up (gate rows first); qwen3 writes heads of 32 over dim 64.
#   --rope-dims N: partial rotary (rope.dimension_count N of the head's 16).
#   --longrope ORIG (phi3): rope_factors_long/short of random factors, the
#   original context ORIG and the attention factor phi3's converter derives
#   (conversion/phi.py: sqrt(1 + ln(ctx / ORIG) / ln(ORIG))); --context N:
#   the training context (default 256).
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", os.path.join(os.path.dirname(__file__), "../../../../peer/llama.cpp/gguf-py")))
import numpy as np  # noqa: E402
import gguf  # noqa: E402

arch, out = sys.argv[1], sys.argv[2]
separate = "--separate-qkv" in sys.argv[3:]


def opt(flag, default):
    a = sys.argv[3:]
    return int(a[a.index(flag) + 1]) if flag in a else default


rng = np.random.default_rng(7)
dim, hidden, layers, heads, kv_heads = 64, 192, 2, 4, 2
ctx = opt("--context", 256)
head = 32 if arch == "qwen3" else dim // heads
q, kv = heads * head, kv_heads * head
n_rot = opt("--rope-dims", head)
orig = opt("--longrope", 0)

w = gguf.GGUFWriter(out, arch)
w.add_name(f"gguf-py-{arch}-tiny")
w.add_context_length(ctx)
w.add_embedding_length(dim)
w.add_block_count(layers)
w.add_feed_forward_length(hidden)
w.add_head_count(heads)
w.add_head_count_kv(kv_heads)
w.add_layer_norm_rms_eps(1e-6)
w.add_rope_dimension_count(n_rot)
if orig:
    scale = ctx / orig
    w.add_rope_scaling_orig_ctx_len(orig)
    w.add_rope_scaling_attn_factors(float(np.sqrt(1 + np.log(scale) / np.log(orig))) if scale > 1.0 else 1.0)
if arch == "qwen3":
    w.add_rope_freq_base(1000000.0)
    w.add_key_length(head)
    w.add_value_length(head)
else:
    w.add_rope_freq_base(10000.0)
    w.add_sliding_window(2047)  # llama.cpp turns phi3's window off
w.add_file_type(gguf.LlamaFileType.ALL_F32)

# A SentencePiece vocabulary: control pieces, the 256 byte pieces, letters.
# phi3 adds <|endoftext|> (llama.cpp's vocabulary loader looks it up for a
# model named phi3).
pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581"] + [chr(c) for c in range(33, 127)]
types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256 + \
        [gguf.TokenType.NORMAL] * (len(pieces) - 259)
if arch == "phi3":
    pieces.append("<|endoftext|>")
    types.append(gguf.TokenType.CONTROL)
w.add_tokenizer_model("llama")
w.add_token_list(pieces)
w.add_token_scores([0.0] * 259 + [-1.0 - i / 100.0 for i in range(len(pieces) - 259)])
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
vocab = len(pieces)

T, N = gguf.MODEL_TENSOR, gguf.TENSOR_NAMES


def name(t, bid=None):
    return (N[t].format(bid=bid) if bid is not None else N[t]) + ".weight"


def mat(rows, cols):
    return (rng.uniform(-1, 1, (rows, cols)) * 1.7 / np.sqrt(cols)).astype(np.float32)


def norm(n):
    return (1.0 + 0.1 * rng.uniform(-1, 1, n)).astype(np.float32)


if orig:
    # First, long then short, as llama.cpp's converter writes them (its rope
    # reads factors past n_rot / 2 with partial rotary: a factor tensor at
    # the end of the file can fault). Increasing across the pairs, as the
    # real ones (short ~1..1.3, long ~1..60).
    w.add_tensor(name(T.ROPE_FACTORS_LONG), np.sort(1.0 + 20.0 * rng.uniform(0, 1, n_rot // 2)).astype(np.float32))
    w.add_tensor(name(T.ROPE_FACTORS_SHORT), np.sort(1.0 + 0.3 * rng.uniform(0, 1, n_rot // 2)).astype(np.float32))
w.add_tensor(name(T.TOKEN_EMBD), mat(vocab, dim))
for l in range(layers):
    w.add_tensor(name(T.ATTN_NORM, l), norm(dim))
    wq, wk, wv = mat(q, dim), mat(kv, dim), mat(kv, dim)
    if arch == "phi3" and not separate:
        w.add_tensor(name(T.ATTN_QKV, l), np.concatenate([wq, wk, wv]))
    else:
        w.add_tensor(name(T.ATTN_Q, l), wq)
        w.add_tensor(name(T.ATTN_K, l), wk)
        w.add_tensor(name(T.ATTN_V, l), wv)
    if arch == "qwen3":
        # Far from 1, so that a norm applied wrongly shows in the logits.
        w.add_tensor(name(T.ATTN_Q_NORM, l), (0.5 + rng.uniform(0, 1, head)).astype(np.float32))
        w.add_tensor(name(T.ATTN_K_NORM, l), (0.5 + rng.uniform(0, 1, head)).astype(np.float32))
    w.add_tensor(name(T.ATTN_OUT, l), mat(dim, q))
    w.add_tensor(name(T.FFN_NORM, l), norm(dim))
    if arch == "phi3":
        w.add_tensor(name(T.FFN_UP, l), np.concatenate([mat(hidden, dim), mat(hidden, dim)]))
    else:
        w.add_tensor(name(T.FFN_GATE, l), mat(hidden, dim))
        w.add_tensor(name(T.FFN_UP, l), mat(hidden, dim))
    w.add_tensor(name(T.FFN_DOWN, l), mat(dim, hidden))
w.add_tensor(name(T.OUTPUT_NORM), norm(dim))
w.add_tensor(name(T.OUTPUT), mat(vocab, dim))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"{out}: {arch}, {vocab} tokens, dim {dim}, {layers} layers, {heads} heads of {head}, rope on {n_rot}"
      + (f", LongRoPE from {orig} of {ctx}" if orig else ""))
