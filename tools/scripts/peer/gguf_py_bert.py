#!/usr/bin/env python3
# A random BERT encoder (GGUF "bert") written by llama.cpp's own GGUF writer
# (gguf-py) with its key and tensor names, for checking ember's embeddings
# against llama-embedding on the same file (issue 46). Its vocabulary is a
# small SentencePiece one (as gguf_py_family.py's), which both programs
# tokenize alike, or --vocab FILE.gguf's tokenizer (e.g. a WordPiece one).
# usage: GGUF_PY=.../gguf-py /usr/bin/python3 gguf_py_bert.py OUT.gguf [--shape tiny|base]
#          [--type f32|f16|q8_0] [--pooling mean|cls|rank] [--seed N] [--arch bert|nomic-bert]
#   rank: a reranker, with the classifier head llama.cpp's rank pooling reads
#   (cls: dim x dim and its bias, cls.output: one label and its bias).
#   nomic-bert (nomic-embed-text's form): RoPE base 1000 instead of learned
#   positions, a fused attn_qkv, a SwiGLU FFN (ffn_gate), no biases.
#   tiny: dim 64, 2 layers, 4 heads, FFN 256, 128 positions; base: BERT-base
#   (768, 12 layers, 12 heads, FFN 3072, 512 positions). Norms, biases and token types f32.
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", os.path.join(os.path.dirname(__file__), "../../../../peer/llama.cpp/gguf-py")))
import numpy as np  # noqa: E402
import gguf  # noqa: E402

out = sys.argv[1]
args = sys.argv[2:]


def opt(flag, default):
    return args[args.index(flag) + 1] if flag in args else default


shape, wtype, pooling = opt("--shape", "tiny"), opt("--type", "f32"), opt("--pooling", "mean")
arch = opt("--arch", "bert")
nomic = arch == "nomic-bert"
rng = np.random.default_rng(int(opt("--seed", "11")))
dim, layers, heads, hidden, ctx = (64, 2, 4, 256, 128) if shape == "tiny" else (768, 12, 12, 3072, 512)

w = gguf.GGUFWriter(out, arch)
w.add_name(f"gguf-py-{arch}-{shape}")
w.add_context_length(ctx)
w.add_embedding_length(dim)
w.add_block_count(layers)
w.add_feed_forward_length(hidden)
w.add_head_count(heads)
w.add_layer_norm_eps(1e-12)
w.add_causal_attention(False)
if nomic:
    w.add_rope_freq_base(1000.0)
w.add_pooling_type({"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS, "rank": gguf.PoolingType.RANK}[pooling])
file_types = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
w.add_file_type(file_types[wtype])

vocab_src = opt("--vocab", None)
if vocab_src:
    r = gguf.GGUFReader(vocab_src)
    for key, field in r.fields.items():
        if key.startswith("tokenizer."):
            value = field.contents()
            w.add_key_value(key, value, field.types[0], sub_type=field.types[-1] if len(field.types) > 1 else None)
    vocab = len(r.fields["tokenizer.ggml.tokens"].contents())
else:
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581"] + [chr(c) for c in range(33, 127)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256 + \
            [gguf.TokenType.NORMAL] * (len(pieces) - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores([0.0] * 259 + [-1.0 - i / 100.0 for i in range(len(pieces) - 259)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_token_type_count(2)
    vocab = len(pieces)

T, N = gguf.MODEL_TENSOR, gguf.TENSOR_NAMES


def name(t, bid=None, suffix="weight"):
    return (N[t].format(bid=bid) if bid is not None else N[t]) + "." + suffix


def typed(a):
    if wtype == "f16":
        return a.astype(np.float16), None
    if wtype == "q8_0":
        return gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0
    return a, None


def mat(tname, rows, cols, f32=False):
    a = (rng.uniform(-1, 1, (rows, cols)) * 1.7 / np.sqrt(cols)).astype(np.float32)
    data, qtype = (a, None) if f32 else typed(a)
    w.add_tensor(tname, data, raw_dtype=qtype)


def vec(tname, n, base, spread):
    w.add_tensor(tname, (base + spread * rng.uniform(-1, 1, n)).astype(np.float32))


mat(name(T.TOKEN_EMBD), vocab, dim)
mat(name(T.TOKEN_TYPES), 2, dim, f32=True)  # f32 as converters keep it (llama.cpp adds it as is)
if not nomic:
    mat(name(T.POS_EMBD), ctx, dim)
vec(name(T.TOKEN_EMBD_NORM), dim, 1.0, 0.1)
vec(name(T.TOKEN_EMBD_NORM, suffix="bias"), dim, 0.0, 0.1)
for l in range(layers):
    if nomic:
        mat(name(T.ATTN_QKV, l), 3 * dim, dim)
        mat(name(T.ATTN_OUT, l), dim, dim)
    else:
        for t, rows, cols in ((T.ATTN_Q, dim, dim), (T.ATTN_K, dim, dim), (T.ATTN_V, dim, dim), (T.ATTN_OUT, dim, dim)):
            mat(name(t, l), rows, cols)
            vec(name(t, l, "bias"), rows, 0.0, 0.3)
    vec(name(T.ATTN_OUT_NORM, l), dim, 1.0, 0.1)
    vec(name(T.ATTN_OUT_NORM, l, "bias"), dim, 0.0, 0.1)
    mat(name(T.FFN_UP, l), hidden, dim)
    if nomic:
        mat(name(T.FFN_GATE, l), hidden, dim)
    else:
        vec(name(T.FFN_UP, l, "bias"), hidden, 0.0, 0.3)
    mat(name(T.FFN_DOWN, l), dim, hidden)
    if not nomic:
        vec(name(T.FFN_DOWN, l, "bias"), dim, 0.0, 0.3)
    vec(name(T.LAYER_OUT_NORM, l), dim, 1.0, 0.1)
    vec(name(T.LAYER_OUT_NORM, l, "bias"), dim, 0.0, 0.1)

if pooling == "rank":
    mat(name(T.CLS), dim, dim)
    vec(name(T.CLS, suffix="bias"), dim, 0.0, 0.3)
    mat(name(T.CLS_OUT), 1, dim)
    vec(name(T.CLS_OUT, suffix="bias"), 1, 0.0, 0.3)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"{out}: {arch} {shape}, {wtype}, {vocab} tokens, dim {dim}, {layers} layers, {heads} heads, FFN {hidden}, "
      f"{ctx} positions, {pooling} pooling")
