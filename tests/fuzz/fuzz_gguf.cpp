// libFuzzer: GGUF import from arbitrary bytes: GgufFile::parse, then the
// vocabulary importer and the tokenizer it would build; and the same bytes
// as an importance matrix (GGUF or legacy .dat: parse_imatrix).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/imatrix.h"
#include "tools/convert/vocab_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size) std::memcpy(aligned.data(), data, size);
  auto m = ember::parse_imatrix(reinterpret_cast<const uint8_t*>(aligned.data()), size, "fuzz");
  if (m.is_ok()) {
    for (const auto& e : m.value().entries) (void)ember::imatrix_importance(e);
  }
  auto g = ember::GgufFile::parse(reinterpret_cast<const uint8_t*>(aligned.data()), size);
  if (!g.is_ok()) return 0;
  auto v = ember::vocab_from_gguf(g.value());
  if (!v.is_ok()) return 0;
  auto tok = ember::Tokenizer::create(std::move(v).value());
  if (!tok.is_ok()) return 0;
  std::vector<int32_t> ids;
  (void)tok->encode("Hello world \xf0\x9f\x94\xa5 <s>", true, &ids);
  std::string out;
  (void)tok->decode(ids.data(), ids.size(), &out);
  return 0;
}
