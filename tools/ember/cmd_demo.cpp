// `ember demo`: the first thing a new user runs. Converts the real
// stories260K model from the test data directory when it is there, otherwise
// makes a tiny synthetic model, and generates text with it — saying which.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/convert_steps.h"

namespace ember::cli {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// The test data directory: $EMBER_TEST_DATA, else ../shared beside the
// current directory or beside the directory holding the binary's build.
std::string find_data_dir() {
  if (const char* d = std::getenv("EMBER_TEST_DATA"); d && *d) return d;
  for (const char* c : {"../shared", "../../shared", "../../../shared"}) {
    if (exists(std::string(c) + "/models/stories260K.bin")) return c;
  }
  return "";
}

}  // namespace

int cmd_demo(int argc, char** argv) {
  Args args(argc, argv, {"-p", "-n", "--out"});
  args.check_known({"-p", "-n", "--out"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = args.get("--out", std::string(tmp && *tmp ? tmp : "/tmp") + "/ember-demo");
  ::mkdir(dir.c_str(), 0755);
  const std::string data = find_data_dir();
  std::string model_path, error;
  ember_status st = EMBER_OK;
  if (!data.empty() && exists(data + "/models/stories260K.bin") && exists(data + "/models/tok512.bin")) {
    model_path = dir + "/stories260K.ember";
    std::fprintf(stderr, "demo: using the real stories260K model from %s/models\n", data.c_str());
    // `ember convert` with its defaults.
    ConvertRequest convert;
    convert.input = data + "/models/stories260K.bin";
    convert.tokenizer = data + "/models/tok512.bin";
    convert.output = model_path;
    ConvertOutcome outcome;
    st = run_convert(convert, &outcome, &error);
  } else {
    model_path = dir + "/synthetic-tiny.ember";
    std::fprintf(stderr,
                 "demo: no test data found (set EMBER_TEST_DATA to the directory holding models/stories260K.bin);\n"
                 "      using a tiny SYNTHETIC model with random weights: the text will be gibberish\n");
    // `ember synth --shape tiny --vocab builtin`.
    SynthRequest synth;
    synth.shape = "tiny";
    synth.output = model_path;
    SynthOutcome outcome;
    st = run_synth(synth, &outcome, &error);
  }
  if (st != EMBER_OK) return report(st, error);
  std::fprintf(stderr, "demo: model written to %s; generating (greedy):\n\n", model_path.c_str());
  std::string prompt = args.get("-p", "Once upon a time");
  std::string n = args.get("-n", "120");
  std::vector<std::string> run_args = {"run", "-m", model_path, "-p", prompt, "-n", n};
  std::vector<char*> argv_run;
  for (auto& a : run_args) argv_run.push_back(a.data());
  return cmd_run(static_cast<int>(argv_run.size()), argv_run.data());
}

}  // namespace ember::cli
