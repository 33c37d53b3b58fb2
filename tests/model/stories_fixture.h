// The real stories260K model converted to .ember once per test process, from
// the llama2.c checkpoint and from the GGUF file.
#pragma once

#include <string>

#include "test_data.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/quantize.h"

namespace ember::test {

// Path of the converted model, or "" when the test data is missing (the
// helper has already reported it). source: "llama2c" or "gguf".
inline std::string stories_model(const std::string& source) {
  static std::string cached[2];
  const int slot = source == "gguf" ? 1 : 0;
  if (!cached[slot].empty()) return cached[slot];
  std::string out = temp_dir("stories") + "/stories260K-" + source + ".ember";
  if (source == "gguf") {
    const std::string gguf = test_data("models/stories260K-f32.gguf");
    if (gguf.empty()) return "";
    auto m = import_gguf(gguf);
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    REQUIRE(write_model(m.value()->spec, out).is_ok());
  } else {
    const std::string bin = test_data("models/stories260K.bin");
    const std::string tok = test_data("models/tok512.bin");
    if (bin.empty() || tok.empty()) return "";
    auto m = import_llama2c(bin, tok);
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    REQUIRE(write_model(m.value()->spec, out).is_ok());
  }
  cached[slot] = out;
  return out;
}

// stories260K (the llama2.c checkpoint) quantized to Q8_0, written once per
// test process: another file of the same vocabulary, as a draft model.
// "" when the test data is missing.
inline std::string stories_q8_0_model() {
  static std::string cached;
  if (!cached.empty()) return cached;
  const std::string bin = test_data("models/stories260K.bin");
  const std::string tok = test_data("models/tok512.bin");
  if (bin.empty() || tok.empty()) return "";
  auto m = import_llama2c(bin, tok);
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  QuantizeReport qr;
  REQUIRE(quantize_model(m.value().get(), DType::Q8_0, &qr).is_ok());
  const std::string out = temp_dir("stories") + "/stories260K-q8_0.ember";
  REQUIRE(write_model(m.value()->spec, out).is_ok());
  cached = out;
  return out;
}

}  // namespace ember::test
