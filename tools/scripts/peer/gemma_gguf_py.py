#!/usr/bin/env python3
# Rewrites a gemma2/gemma3 GGUF (e.g. `ember synth --arch gemma2 --gguf`)
# through llama.cpp's own writer, gguf-py's GGUFWriter, calling its typed
# add_* methods as convert_hf_to_gguf.py's Gemma2Model / Gemma3Model do: the
# keys a real conversion writes and no others (gemma3: no sliding-window
# pattern or SWA RoPE base, so llama.cpp's and ember's defaults are what run).
# usage: GGUF_PY=.../gguf-py python3 gemma_gguf_py.py IN.gguf OUT.gguf
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", os.path.join(os.path.dirname(__file__), "../../../../peer/llama.cpp/gguf-py")))
import gguf  # noqa: E402

src, dst = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(src)


def val(key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    v = f.contents()
    return v


arch = val("general.architecture")
assert arch in ("gemma2", "gemma3"), arch
w = gguf.GGUFWriter(dst, arch)
a = arch + "."
w.add_context_length(val(a + "context_length"))
w.add_embedding_length(val(a + "embedding_length"))
w.add_block_count(val(a + "block_count"))
w.add_feed_forward_length(val(a + "feed_forward_length"))
w.add_head_count(val(a + "attention.head_count"))
w.add_head_count_kv(val(a + "attention.head_count_kv"))
w.add_layer_norm_rms_eps(val(a + "attention.layer_norm_rms_epsilon"))
w.add_key_length(val(a + "attention.key_length"))
w.add_value_length(val(a + "attention.value_length"))
w.add_file_type(val("general.file_type", 0))
if arch == "gemma2":
    w.add_attn_logit_softcapping(val(a + "attn_logit_softcapping"))
    w.add_final_logit_softcapping(val(a + "final_logit_softcapping"))
    w.add_sliding_window(val(a + "attention.sliding_window"))
else:
    w.add_rope_freq_base(val(a + "rope.freq_base"))
    if val(a + "final_logit_softcapping") is not None:
        w.add_final_logit_softcapping(val(a + "final_logit_softcapping"))
    w.add_sliding_window(val(a + "attention.sliding_window"))
    if val(a + "rope.scaling.factor") is not None:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(val(a + "rope.scaling.factor"))
w.add_tokenizer_model("llama")
w.add_token_list(val("tokenizer.ggml.tokens"))
w.add_token_scores(val("tokenizer.ggml.scores"))
w.add_token_types(val("tokenizer.ggml.token_type"))
w.add_bos_token_id(val("tokenizer.ggml.bos_token_id"))
w.add_eos_token_id(val("tokenizer.ggml.eos_token_id"))
w.add_unk_token_id(val("tokenizer.ggml.unknown_token_id"))
w.add_add_space_prefix(False)
for t in r.tensors:
    assert t.tensor_type == gguf.GGMLQuantizationType.F32, (t.name, t.tensor_type)
    w.add_tensor(t.name, t.data.copy())
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"{dst}: {arch}, {len(r.tensors)} tensors, written by gguf-py")
