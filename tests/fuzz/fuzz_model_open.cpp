// libFuzzer: an .ember file from arbitrary bytes, through everything
// ember_model_open runs before a model is used: framing, the FlatBuffers
// verifier, the semantic checks, the signature trailer, the llama tensor set
// and the tokenizer. Also checks a signature (refused, never a crash) when
// the file carries a trailer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/model_file.h"
#include "model/llama_graph.h"
#include "security/signature.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/signing.h"

namespace {

const std::string& public_key() {
  static const std::string pem = [] {
    auto k = ember::generate_key_pair();
    return k.is_ok() ? k->public_pem : std::string();
  }();
  return pem;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy at an 8-byte aligned address, as a mapping would be.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size) std::memcpy(aligned.data(), data, size);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(aligned.data());
  ember::ModelContents c;
  if (!ember::verify_model(p, size, &c).is_ok()) return 0;
  (void)ember::check_llama_tensors(c);
  if (c.has_signature) (void)ember::check_signature(p, c, public_key());
  (void)ember::check_data_digest(p, c);
  auto tok = ember::Tokenizer::create(c.vocab);
  if (tok.is_ok()) {
    std::vector<int32_t> ids;
    (void)tok->encode("Once upon a time", true, &ids);
    std::string out;
    (void)tok->decode(ids.data(), ids.size(), &out);
  }
  return 0;
}
