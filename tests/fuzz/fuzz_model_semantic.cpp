// libFuzzer: the semantic checks alone. The input chooses field values
// (hyper-parameters, tokenizer pieces and ids, tensor dtypes, shapes,
// offsets, sizes, the data size) that are written as a well-formed
// FlatBuffer (tests/format/malformed_builder.h), so every input gets past the
// FlatBuffers verifier and exercises verify_model's rules,
// check_llama_tensors and Tokenizer::create.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/malformed_builder.h"
#include "format/model_file.h"
#include "model/llama_graph.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  ember::test::RawModel m;
  m.schema_version = in.ConsumeBool() ? ember::kSchemaVersion : in.ConsumeIntegral<uint32_t>();
  m.arch = in.ConsumeIntegralInRange<uint8_t>(0, 2);
  auto& h = m.hparams;
  h.dim = in.ConsumeIntegralInRange<uint32_t>(0, 80);
  h.hidden_dim = in.ConsumeIntegralInRange<uint32_t>(0, 200);
  h.n_layers = in.ConsumeIntegralInRange<uint32_t>(0, 3);
  h.n_heads = in.ConsumeIntegralInRange<uint32_t>(0, 9);
  h.n_kv_heads = in.ConsumeIntegralInRange<uint32_t>(0, 9);
  h.max_seq_len = in.ConsumeIntegralInRange<uint32_t>(0, 64);
  h.norm_eps = in.ConsumeFloatingPoint<float>();
  h.rope_theta = in.ConsumeBool() ? 10000.0f : in.ConsumeFloatingPoint<float>();
  h.rope_style = in.ConsumeIntegralInRange<uint8_t>(0, 2);
  h.tied_embeddings = in.ConsumeBool();
  auto& t = m.tokenizer;
  t.kind = in.ConsumeIntegralInRange<uint8_t>(0, 3);
  const size_t n_pieces = in.ConsumeIntegralInRange<size_t>(0, 40);
  for (size_t i = 0; i < n_pieces; ++i) {
    t.pieces.push_back(in.ConsumeRandomLengthString(12));
    if (in.ConsumeBool()) t.types.push_back(in.ConsumeIntegralInRange<uint8_t>(0, 8));
  }
  if (t.types.size() != t.pieces.size() && in.ConsumeBool()) t.types.resize(t.pieces.size(), 1);
  if (in.ConsumeBool()) t.scores.assign(t.pieces.size(), 0.0f);
  const size_t n_merges = in.ConsumeIntegralInRange<size_t>(0, 8);
  for (size_t i = 0; i < n_merges; ++i) t.merges.push_back(in.ConsumeRandomLengthString(8));
  t.bos_id = in.ConsumeIntegralInRange<int32_t>(-2, 42);
  t.eos_id = in.ConsumeIntegralInRange<int32_t>(-2, 42);
  t.unk_id = in.ConsumeIntegralInRange<int32_t>(-2, 42);
  t.pad_id = in.ConsumeIntegralInRange<int32_t>(-2, 42);
  t.add_space_prefix = in.ConsumeBool();
  t.byte_fallback = in.ConsumeBool();
  h.vocab_size = in.ConsumeBool() ? static_cast<uint32_t>(t.pieces.size()) : in.ConsumeIntegral<uint32_t>();
  const size_t n_tensors = in.ConsumeIntegralInRange<size_t>(0, 12);
  uint64_t next = 0;
  static const char* kNames[] = {"token_embd.weight", "output_norm.weight", "output.weight",
                                 "blk.0.attn_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                 "blk.0.attn_v.weight", "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
                                 "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"};
  for (size_t i = 0; i < n_tensors; ++i) {
    ember::test::RawTensor r;
    r.name = in.ConsumeBool() ? kNames[in.ConsumeIntegralInRange<size_t>(0, 11)] : in.ConsumeRandomLengthString(24);
    r.dtype = in.ConsumeIntegralInRange<uint8_t>(0, 6);
    r.layout = in.ConsumeIntegralInRange<uint8_t>(0, 1) * in.ConsumeIntegralInRange<uint8_t>(0, 1);
    const size_t nd = in.ConsumeIntegralInRange<size_t>(0, 5);
    uint64_t elems = 1;
    for (size_t d = 0; d < nd; ++d) {
      const uint64_t dim = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 256) : in.ConsumeIntegral<uint64_t>();
      r.shape.push_back(dim);
      elems *= dim;
    }
    r.offset = in.ConsumeBool() ? next : in.ConsumeIntegral<uint64_t>();
    r.size = in.ConsumeBool() ? elems * 4 : in.ConsumeIntegralInRange<uint64_t>(0, 1 << 16);
    next = (r.offset + r.size + 63) / 64 * 64;
    m.tensors.push_back(r);
  }
  m.data_size = in.ConsumeBool() ? next : in.ConsumeIntegralInRange<uint64_t>(0, 1 << 18);
  // At most 256 KiB of data bytes, filled from the rest of the input.
  m.data.assign(std::min<uint64_t>(m.data_size, 1 << 18), 0);
  const std::vector<uint8_t> rest = in.ConsumeRemainingBytes<uint8_t>();
  for (size_t i = 0; i < m.data.size() && i < rest.size(); ++i) m.data[i] = rest[i];
  m.digest.assign(32, 0);

  const std::vector<uint8_t> file = m.bytes();
  ember::ModelContents c;
  if (!ember::verify_model(file.data(), file.size(), &c).is_ok()) return 0;
  (void)ember::check_llama_tensors(c);
  auto tok = ember::Tokenizer::create(c.vocab);
  if (tok.is_ok()) {
    std::vector<int32_t> ids;
    (void)tok->encode("a b\xe2\x96\x81<0x41>\xff", true, &ids);
    std::string out;
    (void)tok->decode(ids.data(), ids.size(), &out);
  }
  return 0;
}
