#!/usr/bin/env python3
# A small Hugging Face llama checkpoint (config.json, model.safetensors, a
# BPE tokenizer.json over "▁"-joined text, as TinyStories-656K's) written as
# an f32 GGUF by llama.cpp's own writer (gguf-py), so that ember and
# llama.cpp quantize and evaluate the same real weights (issue 45). Not a
# general converter: llama.cpp's convert_hf_to_gguf.py needs torch, which
# this machine lacks.
#
# usage: GGUF_PY=.../gguf-py /usr/bin/python3 hf_llama_gguf.py CHECKPOINT_DIR OUT.gguf
#
# - q_proj/k_proj rows are reordered from Hugging Face's rotate-half layout
#   to GGUF llama's interleaved pairs, as llama.cpp's converter does.
# - The vocabulary is written as a SentencePiece one ("llama"): the pieces
#   in id order, scores -id (a later BPE merge ranks lower, so the greedy
#   highest-score merge follows the merge order), the added tokens as
#   control pieces and <unk> as unknown.
# - A tied embedding (no lm_head in the file, or the metadata's alias) is
#   written once, as token_embd.
import json
import os
import struct
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", os.path.join(os.path.dirname(__file__), "../../../../peer/llama.cpp/gguf-py")))
import numpy as np  # noqa: E402
import gguf  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(src, "config.json")))
tok = json.load(open(os.path.join(src, "tokenizer.json")))
if cfg.get("model_type") != "llama":
    sys.exit(f"model_type {cfg.get('model_type')!r}: only llama checkpoints")
if tok["model"]["type"] != "BPE":
    sys.exit(f"tokenizer model {tok['model']['type']!r}: only BPE")

raw = open(os.path.join(src, "model.safetensors"), "rb").read()
(header_len,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + header_len])
base = 8 + header_len


def tensor(name):
    h = header[name]
    if h["dtype"] != "F32":
        sys.exit(f"{name}: dtype {h['dtype']}, only F32")
    a, b = h["data_offsets"]
    return np.frombuffer(raw[base + a:base + b], dtype=np.float32).reshape(h["shape"])


def unrotate(w, heads):
    # rows of each head: [first halves..., second halves...] -> pairs
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


dim, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
heads = cfg["num_attention_heads"]
kv_heads = cfg.get("num_key_value_heads", heads)
w = gguf.GGUFWriter(out, "llama")
w.add_name(os.path.basename(os.path.normpath(src)))
w.add_context_length(cfg["max_position_embeddings"])
w.add_embedding_length(dim)
w.add_block_count(layers)
w.add_feed_forward_length(cfg["intermediate_size"])
w.add_head_count(heads)
w.add_head_count_kv(kv_heads)
w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
w.add_rope_dimension_count(dim // heads)
w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
w.add_vocab_size(cfg["vocab_size"])
w.add_file_type(gguf.LlamaFileType.ALL_F32)

vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
if [i for _, i in vocab] != list(range(len(vocab))):
    sys.exit("the vocabulary's ids are not 0..n-1")
added = {t["id"]: t["content"] for t in tok.get("added_tokens", [])}
unk = tok["model"].get("unk_token")
pieces, types = [], []
for piece, i in vocab:
    pieces.append(added.get(i, piece))
    if piece == unk:
        types.append(gguf.TokenType.UNKNOWN)
    elif i in added:
        types.append(gguf.TokenType.CONTROL)
    else:
        types.append(gguf.TokenType.NORMAL)
w.add_tokenizer_model("llama")
w.add_token_list(pieces)
w.add_token_scores([-float(i) for i in range(len(pieces))])
w.add_token_types(types)
w.add_bos_token_id(cfg["bos_token_id"])
w.add_eos_token_id(cfg["eos_token_id"])
if unk is not None:
    w.add_unk_token_id(tok["model"]["vocab"][unk])
w.add_add_bos_token(True)
w.add_add_eos_token(False)

names = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
w.add_tensor("token_embd.weight", tensor("model.embed_tokens.weight") if "model.embed_tokens.weight" in header
             else tensor("lm_head.weight"))
for b in range(layers):
    for hf, gg in names.items():
        t = tensor(f"model.layers.{b}.{hf}.weight")
        if gg == "attn_q":
            t = unrotate(t, heads)
        elif gg == "attn_k":
            t = unrotate(t, kv_heads)
        w.add_tensor(f"blk.{b}.{gg}.weight", np.ascontiguousarray(t))
w.add_tensor("output_norm.weight", tensor("model.norm.weight"))
tied = cfg.get("tie_word_embeddings", False) or header.get("__metadata__", {}).get("model.embed_tokens.weight") == "lm_head.weight"
if not tied:
    w.add_tensor("output.weight", tensor("lm_head.weight"))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"{out}: {sum(int(np.prod(h['shape'])) for k, h in header.items() if k != '__metadata__')} parameters, "
      f"{len(pieces)} pieces, tied {tied}")
