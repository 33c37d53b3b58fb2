// `ember backends [--json | --markdown]`: every backend built into this
// binary (ember_backend_get_info), with what its probe found: the device
// type, name and memory, or why it is unavailable, and what its entry's
// capabilities say it runs (weight and KV types, batched sequences). Probing opens
// no device. --json and --markdown give the backend tracking table the
// deployment notes ask for (docs/decisions.md, "Deployment decisions"): per
// device found, the support status, quantizations, model families,
// continuous batching and readiness.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

// Every backend runs every family's ops today (the tests hold both to the
// same logits); a backend that cannot run a model says why in supports(),
// and auto then takes the cpu.
const char* const kFamilies = "llama (incl. Llama 3.x rope_freqs), qwen2, qwen3, phi3 (incl. LongRoPE, partial rotary), gemma2, gemma3 (text)";

// The weight types (or KV types) an entry's capabilities name, by name.
void append_word(std::string* s, const char* word) {
  if (!s->empty()) s->push_back(' ');
  s->append(word);
}
std::string weight_types(uint32_t bits) {
  std::string s;
  for (int32_t t = 0; t < EMBER_TYPE_COUNT; ++t) {
    if (bits & (1u << t)) append_word(&s, ember_weight_type_name(t));
  }
  return s;
}
std::string kv_types(uint32_t bits) {
  std::string s;
  for (int32_t t : {EMBER_KV_F32, EMBER_KV_F16, EMBER_KV_Q8_0}) {
    if (bits & (1u << t)) append_word(&s, ember_kv_type_name(t));
  }
  return s;
}

struct Row {
  std::string backend, status, device_type, device, memory, quantizations, kv_types, families, batching, readiness,
      why;
  uint64_t memory_bytes = 0;
  bool batched = false;  // the entry's batched_sequences
};

// Readiness, by what the project tests on each: the cpu backend's kernels
// are each held to a scalar reference on every ISA it dispatches to; the
// Vulkan backend is held to the cpu's logits, in CI on a software device
// (lavapipe) only.
Row row_for(const ember_backend_info& b) {
  Row r;
  r.backend = b.name;
  r.status = b.available ? "supported" : "unavailable";
  r.device_type = b.device_name[0] == '\0' && !b.available ? "-" : b.device_type_name;
  r.device = b.device_name[0] == '\0' ? "-" : b.device_name;
  r.why = b.available ? "" : b.unavailable_reason;
  r.memory_bytes = b.memory_bytes;
  char memory[32] = "-";
  if (b.memory_bytes) {
    std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(b.memory_bytes) / (1ull << 30));
  }
  r.memory = memory;
  r.quantizations = weight_types(b.weight_types);
  r.kv_types = kv_types(b.kv_types);
  r.families = kFamilies;
  r.batched = b.batched_decoding != 0;
  r.batching = r.batched
                   ? "yes (sequences of one session decoded as one step; ember serve, with a prefix cache)"
                   : "no (one sequence per session)";
  if (b.kind == EMBER_BACKEND_CPU) {
    r.readiness = "production (kernels tested against scalar references)";
  } else if (!b.available) {
    r.readiness = "not applicable (no device)";
  } else if (b.device_type == EMBER_DEVICE_CPU || b.device_type == EMBER_DEVICE_VIRTUAL) {
    r.readiness = "testing only (a software device: slower than the cpu backend)";
  } else {
    r.readiness = "experimental (tested against the cpu's logits on a software device)";
  }
  return r;
}

// Every backend built in, and a row for Vulkan when it is not.
std::vector<Row> backend_rows() {
  std::vector<Row> rows;
  bool vulkan = false;
  for (size_t i = 0; i < ember_backend_count(); ++i) {
    ember_backend_info b;
    std::memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    if (ember_backend_get_info(i, &b) != EMBER_OK) continue;
    vulkan = vulkan || b.kind == EMBER_BACKEND_VULKAN;
    rows.push_back(row_for(b));
  }
  if (!vulkan) {
    Row r;
    r.backend = "vulkan";
    r.status = "not built";
    r.device_type = r.device = r.memory = "-";
    r.why = "not built into this binary (EMBER_VULKAN=OFF)";
    r.quantizations = r.kv_types = r.families = "-";
    r.batching = "no";
    r.readiness = "not applicable (not built)";
    rows.push_back(r);
  }
  return rows;
}

enum class Format { Text, Json, Markdown };

int parse_backends(int argc, char** argv, Format* format) {
  Args args(argc, argv, {});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember backends [--json | --markdown]\n"
              "  the backends built in, the device each found, and the tracking table: support status,\n"
              "  quantizations, model families, continuous batching, readiness");
    return 0;
  }
  args.check_known({"--json", "--markdown"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (args.has("--json") && args.has("--markdown")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--json and --markdown: give one");
  }
  *format = args.has("--json") ? Format::Json : args.has("--markdown") ? Format::Markdown : Format::Text;
  return kRun;
}

void report_json(const std::vector<Row>& rows) {
  Json j;
  j.begin_object().begin_array("backends");
  for (const Row& r : rows) {
    j.begin_object()
        .str("backend", r.backend)
        .str("support_status", r.status)
        .str("device_type", r.device_type)
        .str("device", r.device)
        .integer("memory_bytes", static_cast<int64_t>(r.memory_bytes))
        .str("quantizations", r.quantizations)
        .str("kv_types", r.kv_types)
        .str("families", r.families)
        .str("continuous_batching", r.batching)
        .str("readiness", r.readiness)
        .str("why_not", r.why)
        .end_object();
  }
  j.end_array().end_object();
  std::fputs(j.text().c_str(), stdout);
}

void report_markdown(const std::vector<Row>& rows) {
  std::printf("| Backend | Device | Support status | Available quantization | Model families | "
              "Continuous batching | Production readiness |\n|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    std::string device = r.device == "-" ? r.why : r.device + " (" + r.device_type + ", " + r.memory + ")";
    if (r.device != "-" && !r.why.empty()) device += ": " + r.why;
    std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", r.backend.c_str(), device.c_str(), r.status.c_str(),
                r.quantizations.c_str(), r.families.c_str(), r.batching.c_str(), r.readiness.c_str());
  }
}

void report_text(const std::vector<Row>& rows) {
  std::printf("%-8s %-11s %-14s %10s  %s\n", "backend", "state", "device type", "memory", "device / why not");
  for (const Row& r : rows) {
    if (r.status == "not built") {
      std::printf("%-8s %-11s (not built into this binary)\n", r.backend.c_str(), "absent");
      continue;
    }
    std::string device = r.device;
    if (!r.why.empty()) device = r.device == "-" ? r.why : r.device + " (" + r.why + ")";
    std::printf("%-8s %-11s %-14s %10s  %s\n", r.backend.c_str(),
                r.status == "supported" ? "available" : "unavailable", r.device_type.c_str(), r.memory.c_str(),
                device.c_str());
  }
  std::printf("\nmodel families (GGUF general.architecture): %s - cpu and vulkan\n", kFamilies);
  for (const Row& r : rows) {
    if (r.status == "not built") continue;
    std::printf("%s: weight types %s; kv types %s; batched sequences %s\n", r.backend.c_str(), r.quantizations.c_str(),
                r.kv_types.c_str(), r.batched ? "yes" : "no");
  }
#if EMBER_SERVE
  std::printf("ember serve: built in (HTTP/1.1, TLS by mbedTLS; --parallel slots batched into one step on the cpu and vulkan backends, a prefix cache)\n");
#else
  std::printf("ember serve: not built into this binary (%s)\n", EMBER_SERVE_MISSING);
#endif
  std::printf(
      "\n--backend auto picks a discrete or integrated GPU that runs the model and whose memory holds the\n"
      "session's device bytes plus a margin (an eighth, at least 256 MiB), else the cpu.\n"
      "`ember backends --markdown` (or --json) prints the tracking table: support, readiness, batching.\n");
}

}  // namespace

int cmd_backends(int argc, char** argv) {
  Format format = Format::Text;
  if (const int code = parse_backends(argc, argv, &format); code != kRun) return code;
  const std::vector<Row> rows = backend_rows();
  if (format == Format::Json) {
    report_json(rows);
  } else if (format == Format::Markdown) {
    report_markdown(rows);
  } else {
    report_text(rows);
  }
  return 0;
}

}  // namespace ember::cli
