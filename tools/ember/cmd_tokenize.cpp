// `ember tokenize FILE (--text T | --file F) [--special]`: ids without BOS,
// from an .ember file or any GGUF file holding a vocabulary; --special turns
// text spelling a control token into that token (a rendered chat template).
#include <cstdio>
#include <cstring>

#include "format/model_file.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {

int cmd_tokenize(int argc, char** argv) {
  Args args(argc, argv, {"--text", "--file"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember tokenize FILE (--text T | --file F) [--special]\n  FILE: an .ember model or a GGUF file\n"
              "  --special  text spelling a control token (\"<|im_start|>\") becomes that token");
    return 0;
  }
  args.check_known({"--text", "--file", "--special"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (args.positionals().size() != 1 || args.has("--text") == args.has("--file")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected FILE and exactly one of --text or --file");
  }
  std::string text = args.get("--text");
  if (args.has("--file")) {
    auto t = read_file(args.get("--file"));
    if (!t.is_ok()) return report(t.status().code(), t.status().message());
    text = std::move(t).value();
  }
  const std::string path = args.positionals()[0];
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return report(mapped.status().code(), mapped.status().message());
  Vocab vocab;
  if (mapped->size() >= 4 && std::memcmp(mapped->data(), "GGUF", 4) == 0) {
    auto gguf = GgufFile::parse(mapped->data(), mapped->size());
    if (!gguf.is_ok()) return report(gguf.status().code(), gguf.status().message());
    auto v = vocab_from_gguf(gguf.value());
    if (!v.is_ok()) return report(v.status().code(), v.status().message());
    vocab = std::move(v).value();
  } else {
    ModelContents contents;
    const Status s = verify_model(mapped->data(), mapped->size(), &contents);
    if (!s.is_ok()) return report(s.code(), s.message());
    vocab = std::move(contents.vocab);
  }
  auto tok = Tokenizer::create(std::move(vocab));
  if (!tok.is_ok()) return report(tok.status().code(), tok.status().message());
  std::vector<int32_t> ids;
  EncodeOptions eo;
  eo.parse_special = args.has("--special");
  const Status s = tok->encode(text, eo, &ids);
  if (!s.is_ok()) return report(s.code(), s.message());
  for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
  std::printf("\n");
  return 0;
}

}  // namespace ember::cli
