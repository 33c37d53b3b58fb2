// An independent, deliberately plain reference of the llama forward pass,
// reading llama2.c checkpoints (stories260K.bin). Scalar f32, no tricks, one
// token at a time: it exists so tests can check ember's forward pass on
// prompts that have no golden file. It is validated against the golden
// logits and ids in ../shared/golden by tests/reference/test_reference.cpp.
// Test code only: never linked into the runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::test {

// Hyper-parameters from the checkpoint's 7 x int32 header.
struct ReferenceConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // always positive here; the sign is read into shared_classifier
  int32_t seq_len = 0;
  bool shared_classifier = true;  // header vocab_size > 0: wcls is the embedding
};

class ReferenceLlama {
 public:
  // Reads the whole checkpoint into memory. False on any error (missing
  // file, bad header, size that does not match the header).
  bool load(const std::string& path);

  // Runs `token` at position `pos` and returns vocab_size logits. Positions
  // must be fed in order 0, 1, 2, ... (the KV cache is filled as it goes;
  // feeding pos again overwrites that row and forgets later ones). Returns
  // an empty vector when not loaded or token/pos are out of range.
  std::vector<float> forward(int32_t token, int32_t pos);

  int32_t vocab_size() const { return config_.vocab_size; }
  int32_t seq_len() const { return config_.seq_len; }
  const ReferenceConfig& config() const { return config_; }

 private:
  ReferenceConfig config_;
  std::vector<float> data_;  // every tensor of the file, in file order
  // Offsets (in floats) of each tensor into data_.
  size_t token_embedding_ = 0, rms_att_ = 0, wq_ = 0, wk_ = 0, wv_ = 0, wo_ = 0,
         rms_ffn_ = 0, w1_ = 0, w2_ = 0, w3_ = 0, rms_final_ = 0, wcls_ = 0;
  // KV cache: [n_layers][seq_len][kv_dim] each.
  std::vector<float> key_cache_, value_cache_;
};

}  // namespace ember::test
