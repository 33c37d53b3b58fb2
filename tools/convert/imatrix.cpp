#include "tools/convert/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "platforms/linux/mapped_file.h"
#include "tools/convert/gguf.h"
#include "tools/convert/gguf_writer.h"

namespace ember {
namespace {

constexpr std::string_view kSums = ".in_sum2";
constexpr std::string_view kCounts = ".counts";
// Longest tensor name a legacy file may give (GGUF's own limit is its
// string length; ggml's names are at most 64 bytes).
constexpr int32_t kMaxLegacyName = 4096;

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

Result<Imatrix> parse_gguf(const uint8_t* data, size_t size, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(data, size));
  if (const GgufKv* type = gguf.find("general.type")) {
    if (type->value.type != GgufType::String || type->value.str != "imatrix") {
      return Status::error(EMBER_ERR_FORMAT, "'%s': general.type is not \"imatrix\" (a model file?)", path.c_str());
    }
  }
  Imatrix m;
  if (gguf.find("imatrix.datasets")) {
    EMBER_ASSIGN_OR_RETURN(m.datasets, gguf.get_string_array("imatrix.datasets"));
  }
  if (gguf.find("imatrix.chunk_count")) {
    EMBER_ASSIGN_OR_RETURN(m.chunk_count, gguf.get_u32("imatrix.chunk_count"));
  }
  if (gguf.find("imatrix.chunk_size")) {
    EMBER_ASSIGN_OR_RETURN(m.chunk_size, gguf.get_u32("imatrix.chunk_size"));
  }
  for (const GgufTensorInfo& t : gguf.tensors()) {
    if (ends_with(t.name, kCounts)) continue;  // read with its sums
    if (!ends_with(t.name, kSums)) {
      return Status::error(EMBER_ERR_FORMAT, "'%s': tensor '%.*s' is neither NAME%s nor NAME%s", path.c_str(),
                           static_cast<int>(t.name.size()), t.name.data(), kSums.data(), kCounts.data());
    }
    const std::string name(t.name.substr(0, t.name.size() - kSums.size()));
    const GgufTensorInfo* counts = gguf.find_tensor(name + std::string(kCounts));
    if (counts == nullptr) {
      return Status::error(EMBER_ERR_FORMAT, "'%s': '%s%s' has no '%s%s'", path.c_str(), name.c_str(), kSums.data(),
                           name.c_str(), kCounts.data());
    }
    for (const GgufTensorInfo* x : {&t, counts}) {
      if (x->type != static_cast<uint32_t>(GgmlType::F32) || !x->size_known || x->n_dims > 2 ||
          x->dims[2] != 1 || x->dims[3] != 1) {
        return Status::error(EMBER_ERR_FORMAT, "'%s': '%.*s' is not an f32 tensor of at most 2 dimensions",
                             path.c_str(), static_cast<int>(x->name.size()), x->name.data());
      }
    }
    const uint64_t cols = t.dims[0], n_mat = t.dims[1];
    if (n_mat != 1 || counts->n_elements != 1) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "'%s': '%s' holds statistics of %llu matrices (experts); ember runs models with one",
                           path.c_str(), name.c_str(), static_cast<unsigned long long>(n_mat));
    }
    if (cols == 0) return Status::error(EMBER_ERR_FORMAT, "'%s': '%s%s' is empty", path.c_str(), name.c_str(), kSums.data());
    ImatrixEntry e;
    e.name = name;
    e.sum_sq.resize(cols);
    std::memcpy(e.sum_sq.data(), t.data, cols * sizeof(float));
    float rows = 0;
    std::memcpy(&rows, counts->data, sizeof rows);
    if (!(rows >= 0) || !std::isfinite(rows)) {
      return Status::error(EMBER_ERR_FORMAT, "'%s': '%s%s' = %g is not a count", path.c_str(), name.c_str(),
                           kCounts.data(), static_cast<double>(rows));
    }
    e.rows = rows;
    m.entries.push_back(std::move(e));
  }
  return m;
}

// The legacy .dat, every read bounded by the bytes left.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const std::string& path) : p_(p), n_(n), path_(path) {}
  Status i32(const char* what, int32_t* v) { return bytes(what, v, 4); }
  Status bytes(const char* what, void* out, size_t n) {
    if (n > n_ - at_) {
      return Status::error(EMBER_ERR_TRUNCATED, "'%s': %s needs %zu bytes at offset %zu, %zu remain", path_.c_str(),
                           what, n, at_, n_ - at_);
    }
    std::memcpy(out, p_ + at_, n);
    at_ += n;
    return Status::ok();
  }
  size_t left() const { return n_ - at_; }

 private:
  const uint8_t* p_;
  size_t n_, at_ = 0;
  const std::string& path_;
};

Result<Imatrix> parse_legacy(const uint8_t* data, size_t size, const std::string& path) {
  Reader r(data, size, path);
  Imatrix m;
  int32_t n_entries = 0;
  EMBER_TRY(r.i32("the entry count", &n_entries));
  // Each entry takes at least 12 bytes: a count beyond that is a lie.
  if (n_entries <= 0 || static_cast<size_t>(n_entries) > r.left() / 12) {
    return Status::error(EMBER_ERR_FORMAT, "'%s': entry count %d does not fit the file's %zu bytes (not an imatrix file?)",
                         path.c_str(), n_entries, size);
  }
  for (int32_t i = 0; i < n_entries; ++i) {
    int32_t len = 0;
    EMBER_TRY(r.i32("an entry's name length", &len));
    if (len <= 0 || len > kMaxLegacyName) {
      return Status::error(EMBER_ERR_FORMAT, "'%s': entry %d's name length %d is not in 1..%d", path.c_str(), i, len,
                           kMaxLegacyName);
    }
    ImatrixEntry e;
    e.name.resize(static_cast<size_t>(len));
    EMBER_TRY(r.bytes("an entry's name", e.name.data(), e.name.size()));
    int32_t calls = 0, n_values = 0;
    EMBER_TRY(r.i32("an entry's calls", &calls));
    EMBER_TRY(r.i32("an entry's value count", &n_values));
    if (calls < 0 || n_values <= 0 || static_cast<size_t>(n_values) > r.left() / 4) {
      return Status::error(EMBER_ERR_FORMAT, "'%s': entry '%s': %d calls, %d values (%zu bytes remain)", path.c_str(),
                           e.name.c_str(), calls, n_values, r.left());
    }
    e.sum_sq.resize(static_cast<size_t>(n_values));
    EMBER_TRY(r.bytes("an entry's values", e.sum_sq.data(), e.sum_sq.size() * sizeof(float)));
    e.rows = calls;
    m.entries.push_back(std::move(e));
  }
  // The trailer (chunks and dataset) is optional in old files.
  int32_t chunks = 0, len = 0;
  if (r.left() >= 4 && r.i32("the chunk count", &chunks).is_ok() && chunks >= 0) m.chunk_count = static_cast<uint32_t>(chunks);
  if (r.left() >= 4 && r.i32("the dataset name length", &len).is_ok() && len > 0 &&
      static_cast<size_t>(len) <= r.left()) {
    std::string dataset(static_cast<size_t>(len), '\0');
    if (r.bytes("the dataset name", dataset.data(), dataset.size()).is_ok()) m.datasets.push_back(std::move(dataset));
  }
  return m;
}

}  // namespace

const ImatrixEntry* Imatrix::find(const std::string& name) const {
  for (const ImatrixEntry& e : entries) {
    if (e.name == name) return &e;
  }
  // llama.cpp's phi3 fuses Q/K/V into attn_qkv and gate/up into ffn_up,
  // which ember's importer splits (tools/convert/importers.h): the fused
  // matrix's input is each part's, so its entry serves them.
  const auto swap_suffix = [&](const std::string& from, const std::string& to) -> const ImatrixEntry* {
    if (name.size() <= from.size() || name.compare(name.size() - from.size(), from.size(), from) != 0) return nullptr;
    const std::string alias = name.substr(0, name.size() - from.size()) + to;
    for (const ImatrixEntry& e : entries) {
      if (e.name == alias) return &e;
    }
    return nullptr;
  };
  for (const char* part : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight"}) {
    if (const ImatrixEntry* e = swap_suffix(part, ".attn_qkv.weight")) return e;
  }
  return swap_suffix(".ffn_gate.weight", ".ffn_up.weight");
}

std::vector<float> imatrix_importance(const ImatrixEntry& e) {
  if (!(e.rows > 0) || e.sum_sq.empty()) return {};
  std::vector<float> w(e.sum_sq.size());
  double mean = 0;
  for (size_t c = 0; c < w.size(); ++c) {
    const float v = e.sum_sq[c];
    w[c] = std::isfinite(v) && v > 0 ? static_cast<float>(v / e.rows) : 0.0f;
    mean += w[c];
  }
  mean /= static_cast<double>(w.size());
  const float floor = static_cast<float>(mean * 1e-6);
  for (float& v : w) v = std::max(v, floor);
  return w;
}

Status write_imatrix(const std::string& path, const Imatrix& m) {
  GgufPlainFile f;
  f.str.push_back({"general.type", "imatrix"});
  f.strs.push_back({"imatrix.datasets", m.datasets});
  f.u32.push_back({"imatrix.chunk_count", m.chunk_count});
  f.u32.push_back({"imatrix.chunk_size", m.chunk_size});
  // llama-imatrix stores entries sorted by name.
  std::vector<const ImatrixEntry*> order;
  for (const ImatrixEntry& e : m.entries) {
    if (e.sum_sq.empty()) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "imatrix entry '%s' has no columns", e.name.c_str());
    order.push_back(&e);
  }
  std::sort(order.begin(), order.end(), [](const ImatrixEntry* a, const ImatrixEntry* b) { return a->name < b->name; });
  std::vector<float> counts(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const ImatrixEntry& e = *order[i];
    counts[i] = static_cast<float>(e.rows);
    TensorSource sums;
    sums.name = e.name + std::string(kSums);
    sums.dtype = DType::F32;
    sums.shape = {1, static_cast<int64_t>(e.sum_sq.size())};
    sums.data = e.sum_sq.data();
    sums.size = e.sum_sq.size() * sizeof(float);
    TensorSource count;
    count.name = e.name + std::string(kCounts);
    count.dtype = DType::F32;
    count.shape = {1, 1};
    count.data = &counts[i];
    count.size = sizeof(float);
    f.tensors.push_back(std::move(sums));
    f.tensors.push_back(std::move(count));
  }
  return write_gguf_plain(path, f);
}

Result<Imatrix> parse_imatrix(const uint8_t* data, size_t size, const std::string& path) {
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) return parse_gguf(data, size, path);
  return parse_legacy(data, size, path);
}

Result<Imatrix> read_imatrix(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  return parse_imatrix(file.data(), file.size(), path);
}

}  // namespace ember
