// `ember template`: the rendered prompt exactly (no newline added), from a
// built-in, a template file or a model's own template; errors by status.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "cli/cli_run.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

TEST_CASE("cli: ember template renders exactly") {
  const std::string dir = test::temp_dir("cli-template");
  const std::string msgs = dir + "/m.json";
  write_text(msgs, R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi \u00e9"}])");
  auto r = test::run_ember("template --messages " + msgs + " --template chatml --add-generation-prompt");
  CHECK(r.code == 0);
  CHECK(r.out == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi \xc3\xa9<|im_end|>\n<|im_start|>assistant\n");
  // A template file, the tokens from flags, tools from the JSON object.
  write_text(dir + "/t.jinja", "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{% endfor %}{{ tools | tojson }}{{ eos_token }}");
  write_text(dir + "/o.json", R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "b": 1}]})");
  r = test::run_ember("template --messages " + dir + "/o.json --template-file " + dir + "/t.jinja --bos-token '<s>' --eos-token '</s>'");
  CHECK(r.code == 0);
  CHECK(r.out == "<s>[user][{\"name\": \"f\", \"b\": 1}]</s>");
  // The model's own template, with its BOS piece.
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto model = make_synthetic(shape, DType::F32, 3, "");
  REQUIRE(model.is_ok());
  model.value()->spec.vocab.chat_template = "{{ messages[-1].content }}!";
  REQUIRE(write_model(model.value()->spec, dir + "/m.ember").is_ok());
  r = test::run_ember("template --messages " + msgs + " -m " + dir + "/m.ember");
  CHECK(r.code == 0);
  CHECK(r.out == "Hi \xc3\xa9!");
  // Errors: status names on stderr, nothing on stdout.
  r = test::run_ember("template --messages " + msgs + " --template nonesuch");
  CHECK(r.code != 0);
  CHECK(r.err.find("EMBER_ERR_INVALID_ARGUMENT") != std::string::npos);
  write_text(dir + "/bad.json", "[{\"role\": ");
  r = test::run_ember("template --messages " + dir + "/bad.json --template chatml");
  CHECK(r.code != 0);
  CHECK(r.err.find("not valid JSON") != std::string::npos);
  write_text(dir + "/u.jinja", "{% include 'x' %}");
  r = test::run_ember("template --messages " + msgs + " --template-file " + dir + "/u.jinja");
  CHECK(r.code != 0);
  CHECK(r.err.find("EMBER_ERR_UNSUPPORTED") != std::string::npos);
  CHECK(r.out.empty());
  r = test::run_ember("template --messages " + msgs);
  CHECK(r.code != 0);
  CHECK(r.err.find("exactly one of") != std::string::npos);
}

}  // namespace
}  // namespace ember
