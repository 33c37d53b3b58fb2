// The backend registry (backend/backend.h, the table in
// backends/backend_registry.cpp): entries, their capabilities, probes, the
// `auto` chooser on made-up probes, planning without opening a device, and
// the op parameters the model puts on the graph.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "backend/backend.h"
#include "model/llama_graph.h"
#include "model/model.h"
#include "model/session.h"
#include "model/stories_fixture.h"
#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace {

using namespace ember;

constexpr uint64_t kGiB = 1ull << 30;

AutoCandidate cpu_candidate() {
  AutoCandidate c;
  c.kind = BackendKind::Cpu;
  c.name = "cpu";
  c.device.available = true;
  c.device.type = DeviceType::Cpu;
  return c;
}

AutoCandidate gpu(DeviceType type, uint64_t memory, uint64_t needs, bool available = true) {
  AutoCandidate c;
  c.kind = BackendKind::Vulkan;
  c.name = "vulkan";
  c.device.available = available;
  c.device.type = type;
  c.device.name = available ? "Test GPU" : "";
  c.device.memory_bytes = memory;
  c.device_bytes = needs;
  if (!available) c.device.reason = "vulkan: no compatible driver is installed";
  return c;
}

}  // namespace

TEST_CASE("registry: the cpu entry comes first, probes the host and plans without a backend") {
  const auto& entries = backend_entries();
  REQUIRE(!entries.empty());
  CHECK(std::string(entries[0].name) == "cpu");
  CHECK(entries[0].kind == BackendKind::Cpu);
  CHECK(find_backend(BackendKind::Cpu) == &entries[0]);
  const DeviceInfo d = entries[0].probe();
  CHECK(d.available);
  CHECK(d.type == DeviceType::Cpu);
  CHECK(d.memory_bytes > 0);
  CHECK(!d.name.empty());
#if EMBER_VULKAN
  REQUIRE(find_backend(BackendKind::Vulkan) != nullptr);
  CHECK(std::string(find_backend(BackendKind::Vulkan)->name) == "vulkan");
#else
  CHECK(find_backend(BackendKind::Vulkan) == nullptr);
  CHECK(create_backend(BackendKind::Vulkan, BackendOptions()).status().code() == EMBER_ERR_UNSUPPORTED);
#endif
  CHECK(std::string(device_type_name(DeviceType::DiscreteGpu)) == "discrete gpu");
  CHECK(std::string(device_type_name(DeviceType::IntegratedGpu)) == "integrated gpu");
}

TEST_CASE("auto: the chooser on made-up probes") {
  SUBCASE("no vulkan built: the cpu, saying so") {
    const AutoChoice c = choose_auto({cpu_candidate()});
    CHECK(c.kind == BackendKind::Cpu);
    CHECK(c.note.find("no GPU backend") != std::string::npos);
    CHECK(c.note.find("using the cpu backend") != std::string::npos);
  }
  SUBCASE("no usable vulkan device: the cpu, with the probe's reason") {
    const AutoChoice c = choose_auto({cpu_candidate(), gpu(DeviceType::Other, 0, 0, false)});
    CHECK(c.kind == BackendKind::Cpu);
    CHECK(c.note.find("no compatible driver") != std::string::npos);
  }
  SUBCASE("a cpu vulkan device (lavapipe) or a virtual one: the cpu") {
    for (DeviceType t : {DeviceType::Cpu, DeviceType::Virtual, DeviceType::Other}) {
      const AutoChoice c = choose_auto({cpu_candidate(), gpu(t, 64 * kGiB, kGiB)});
      CHECK(c.kind == BackendKind::Cpu);
      CHECK(c.note.find("not a GPU") != std::string::npos);
      // Also when the probe found it but it is not allowed (lavapipe without
      // EMBER_VULKAN_ALLOW_CPU): the reason is its type.
      AutoCandidate refused = gpu(t, 64 * kGiB, kGiB);
      refused.device.available = false;
      refused.device.reason = "a CPU device; set EMBER_VULKAN_ALLOW_CPU=1 to use it";
      CHECK(choose_auto({cpu_candidate(), refused}).note.find("not a GPU") != std::string::npos);
    }
  }
  SUBCASE("a discrete gpu with too little memory: the cpu, with the figures") {
    const AutoChoice c = choose_auto({cpu_candidate(), gpu(DeviceType::DiscreteGpu, 2 * kGiB, 3 * kGiB)});
    CHECK(c.kind == BackendKind::Cpu);
    CHECK(c.note.find("2.00 GiB") != std::string::npos);
    CHECK(c.note.find("3.00 GiB") != std::string::npos);
  }
  SUBCASE("the margin counts: exactly the need is not enough") {
    const uint64_t need = 4 * kGiB;
    CHECK(auto_memory_margin(need) == need / 8);
    CHECK(auto_memory_margin(1000) == 256ull << 20);
    CHECK(choose_auto({cpu_candidate(), gpu(DeviceType::DiscreteGpu, need, need)}).kind == BackendKind::Cpu);
    CHECK(choose_auto({cpu_candidate(), gpu(DeviceType::DiscreteGpu, need + need / 8 - 1, need)}).kind ==
          BackendKind::Cpu);
    CHECK(choose_auto({cpu_candidate(), gpu(DeviceType::DiscreteGpu, need + need / 8, need)}).kind ==
          BackendKind::Vulkan);
  }
  SUBCASE("a discrete or integrated gpu that fits: vulkan, no note") {
    for (DeviceType t : {DeviceType::DiscreteGpu, DeviceType::IntegratedGpu}) {
      const AutoChoice c = choose_auto({cpu_candidate(), gpu(t, 16 * kGiB, kGiB)});
      CHECK(c.kind == BackendKind::Vulkan);
      CHECK(c.note.empty());
    }
  }
  SUBCASE("a gpu that fits but does not run the model: the cpu, naming why") {
    AutoCandidate g = gpu(DeviceType::DiscreteGpu, 16 * kGiB, kGiB);
    g.supported = Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: weight 'w' has dtype q4_k");
    const AutoChoice c = choose_auto({cpu_candidate(), g});
    CHECK(c.kind == BackendKind::Cpu);
    CHECK(c.note.find("q4_k") != std::string::npos);
  }
}

TEST_CASE("capabilities are asked of the entry: a graph wanting more than it runs is refused, naming what") {
  // What each built entry says it runs.
  const BackendCaps& cpu = find_backend(BackendKind::Cpu)->caps;
  CHECK(cpu.sliding_window_rings);
  CHECK(cpu.batched_sequences);
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) CHECK((cpu.kv_types & kv_type_bit(t)) != 0);
  for (int t = 0; t < kDTypeCount; ++t) CHECK((cpu.weight_types & dtype_bit(static_cast<DType>(t))) != 0);
#if EMBER_VULKAN
  CHECK_FALSE(find_backend(BackendKind::Vulkan)->caps.sliding_window_rings);
#endif

  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  auto m = Model::open(path, Model::Options());
  REQUIRE(m.is_ok());
  auto g = build_llama_graph(m.value()->file().contents(), 32, 4, KvType::F16, KvType::F32, 3);
  REQUIRE(g.is_ok());
  BackendEntry e = *find_backend(BackendKind::Cpu);
  e.name = "test";
  CHECK(check_capabilities(e, *g).is_ok());

  e.caps.batched_sequences = false;
  Status st = check_capabilities(e, *g);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find("test: batched decoding (3 sequences") == 0);
  auto one = build_llama_graph(m.value()->file().contents(), 32, 4, KvType::F16, KvType::F32, 1);
  REQUIRE(one.is_ok());
  CHECK(check_capabilities(e, *one).is_ok());

  e.caps.kv_types = kv_type_bit(KvType::F32);
  st = check_capabilities(e, *one);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find("kv type f16") != std::string::npos);
  e.caps.kv_types |= kv_type_bit(KvType::F16);

  const WeightRef& w = one->weights[0];
  e.caps.weight_types &= ~dtype_bit(w.dtype);
  st = check_capabilities(e, *one);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find(std::string("'") + w.name + "' has type " + dtype_name(w.dtype)) != std::string::npos);
  e.caps.weight_types = cpu.weight_types;

  // A ring (what set_sliding_kv_rings makes) only where the entry runs rings.
  Graph ring = one.value();
  ring.kv_rows.assign(ring.hparams.n_layers, ring.context);
  ring.kv_rows.back() = 8;
  CHECK(check_capabilities(e, ring).is_ok());
  e.caps.sliding_window_rings = false;
  st = check_capabilities(e, ring);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find("ring of 8 rows") != std::string::npos);
}

TEST_CASE("op params: the model puts eps, rope and attention parameters on its ops") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  auto m = Model::open(path, Model::Options());
  REQUIRE(m.is_ok());
  const HParams& hp = m.value()->hparams();
  auto g = build_llama_graph(m.value()->file().contents(), 32, 4);
  REQUIRE(g.is_ok());
  int norms = 0, ropes = 0, attentions = 0;
  for (const Op& op : g->ops) {
    if (op.kind == OpKind::RmsNorm) {
      ++norms;
      CHECK(op.params.rmsnorm.eps == hp.norm_eps);
    } else if (op.kind == OpKind::Rope) {
      ++ropes;
      CHECK(op.params.rope.head_dim == hp.head_dim());
      CHECK(op.params.rope.n_heads * op.params.rope.head_dim == g->activations[op.a].cols);
      CHECK(op.params.rope.theta == hp.rope_theta);
      CHECK(op.params.rope.style == hp.rope_style);
    } else if (op.kind == OpKind::Attention) {
      ++attentions;
      CHECK(op.params.attention.n_heads == hp.n_heads);
      CHECK(op.params.attention.n_kv_heads == hp.n_kv_heads);
      CHECK(op.params.attention.scale == 1.0f / std::sqrt(static_cast<float>(hp.head_dim())));
      CHECK(key_rope(*g, op.layer).n_heads == hp.n_kv_heads);
    }
  }
  CHECK(norms == 2 * static_cast<int>(hp.n_layers) + 1);
  CHECK(ropes == 2 * static_cast<int>(hp.n_layers));
  CHECK(attentions == static_cast<int>(hp.n_layers));
  CHECK(check_op_params(*g).is_ok());
  CHECK(find_backend(BackendKind::Cpu)->supports(*g).is_ok());

  // Params that do not fit their rows are refused before anything runs.
  Graph bad = g.value();
  for (Op& op : bad.ops) {
    if (op.kind == OpKind::Rope) {
      op.params.rope.n_heads += 1;
      break;
    }
  }
  const Status st = check_op_params(bad);
  CHECK(st.code() == EMBER_ERR_BAD_TENSOR);
  CHECK(st.message().find("rope") != std::string::npos);
  CHECK(find_backend(BackendKind::Cpu)->supports(bad).code() == EMBER_ERR_BAD_TENSOR);
}

#if EMBER_VULKAN
TEST_CASE("vulkan: planning opens no device, creating a session opens one") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES")) setenv("VK_ICD_FILENAMES", lvp, 1);
  const char* had = std::getenv("EMBER_VULKAN_ALLOW_CPU");
  const std::string saved = had ? had : "";
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  const DeviceInfo d = find_backend(BackendKind::Vulkan)->probe();
  MESSAGE("vulkan probe: " << d.name << " (" << std::string(device_type_name(d.type)) << "), "
                           << (d.available ? std::string("available") : d.reason));
  auto m = Model::open(path, Model::Options());
  REQUIRE(m.is_ok());
  SessionOptions o;
  o.backend = BackendKind::Vulkan;
  o.context_length = 64;
  o.backend_options.vulkan.pipeline_cache = false;
  const uint64_t before = vulkan_devices_opened();
  auto plan = Session::plan(*m.value(), o);
  CHECK(vulkan_devices_opened() == before);
  if (d.available) {
    REQUIRE_MESSAGE(plan.is_ok(), plan.status().message());
    CHECK(plan->backend == BackendKind::Vulkan);
    CHECK(plan->device_bytes > 0);
    CHECK(plan->memory.scratch_bytes == 0);
    // auto plans without opening one either (and never picks a cpu device).
    SessionOptions a = o;
    a.backend = std::nullopt;
    auto ap = Session::plan(*m.value(), a);
    REQUIRE(ap.is_ok());
    CHECK(vulkan_devices_opened() == before);
    if (d.type == DeviceType::Cpu) {
      CHECK(ap->backend == BackendKind::Cpu);
      CHECK(ap->backend_description.find("not a GPU; using the cpu backend") != std::string::npos);
    }
    auto s = Session::create(*m.value(), o);
    REQUIRE_MESSAGE(s.is_ok(), s.status().message());
    CHECK(vulkan_devices_opened() == before + 1);
    CHECK(s.value()->backend_description().find("vulkan (") == 0);
  } else {
    CHECK(plan.status().code() == EMBER_ERR_UNSUPPORTED);
  }
  if (had) {
    setenv("EMBER_VULKAN_ALLOW_CPU", saved.c_str(), 1);
  } else {
    unsetenv("EMBER_VULKAN_ALLOW_CPU");
  }
}
#endif
