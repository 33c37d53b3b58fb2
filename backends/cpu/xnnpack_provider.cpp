// XNNPACK's f32 fully-connected operators for the CPU backend
// (xnnpack_provider.h). Compiled only with EMBER_HAVE_XNNPACK (CMake adds
// this file when it finds libxnnpack-dev). Written against Debian
// bookworm's snapshot (2022-02): setup takes the batch size and the
// pointers, there is no separate reshape.
#include "backends/cpu/xnnpack_provider.h"

#include <xnnpack.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/thread_pool.h"
#include "core/dtype.h"
#include "core/layout.h"

namespace ember {
namespace {

// --- The counting allocator ----------------------------------------------------
// Every block carries a header (its size, so reallocate and the counts know
// it) of 64 bytes, or the alignment asked for when larger; what a block
// costs is header + size, the figure the plan counts.
constexpr size_t kHeader = 64;
std::atomic<uint64_t> g_calls{0};
std::atomic<uint64_t> g_live{0};  // bytes held now (header + size per block)
// Bytes allocated on this thread, and the sizes of the last allocations
// (the probe reads them): per thread, so sessions preparing at once on other
// threads do not disturb a count.
thread_local uint64_t t_bytes = 0;
thread_local size_t t_sizes[8];
thread_local int t_n_sizes = 0;

size_t header_for(size_t alignment) { return alignment > kHeader ? alignment : kHeader; }

void* counted_alloc(size_t alignment, size_t size) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  const size_t header = header_for(alignment);
  const size_t total = (header + size + header - 1) / header * header;
  uint8_t* base = static_cast<uint8_t*>(std::aligned_alloc(header, total));
  if (base == nullptr) return nullptr;
  uint8_t* p = base + header;
  const size_t fields[2] = {size, header};
  std::memcpy(p - sizeof fields, fields, sizeof fields);
  t_bytes += header + size;
  g_live.fetch_add(header + size, std::memory_order_relaxed);
  if (t_n_sizes < 8) t_sizes[t_n_sizes] = size;
  if (t_n_sizes < 1000) ++t_n_sizes;  // counts past 8 only to say "more"
  return p;
}

void counted_free(void* pointer) {
  if (pointer == nullptr) return;
  uint8_t* p = static_cast<uint8_t*>(pointer);
  size_t fields[2];
  std::memcpy(fields, p - sizeof fields, sizeof fields);
  g_live.fetch_sub(fields[1] + fields[0], std::memory_order_relaxed);
  std::free(p - fields[1]);
}

void* xa_allocate(void*, size_t size) { return counted_alloc(16, size); }
void* xa_aligned_allocate(void*, size_t alignment, size_t size) { return counted_alloc(alignment, size); }
void xa_deallocate(void*, void* pointer) { counted_free(pointer); }
void* xa_reallocate(void*, void* pointer, size_t size) {
  void* q = counted_alloc(16, size);
  if (q == nullptr || pointer == nullptr) return q;
  size_t fields[2];
  std::memcpy(fields, static_cast<uint8_t*>(pointer) - sizeof fields, sizeof fields);
  std::memcpy(q, pointer, std::min(fields[0], size));
  counted_free(pointer);
  return q;
}

xnn_allocator g_allocator = {nullptr, xa_allocate, xa_reallocate, xa_deallocate, xa_aligned_allocate,
                             xa_deallocate};

// One f32 operator over a rows x cols block of `w` (row stride cols) whose
// output rows are `out_stride` apart; what it allocated is added to *bytes.
xnn_status create_f32(const float* w, int64_t rows, int64_t cols, int64_t out_stride, xnn_operator_t* op,
                      uint64_t* bytes) {
  const uint64_t before = t_bytes;
  const xnn_status st = xnn_create_fully_connected_nc_f32(static_cast<size_t>(cols), static_cast<size_t>(rows),
                                                          static_cast<size_t>(cols), static_cast<size_t>(out_stride),
                                                          w, nullptr, -INFINITY, INFINITY, 0, op);
  if (bytes) *bytes += t_bytes - before;
  return st;
}

// The packed size of a rows x cols operator as this snapshot computes it:
// rows rounded up to nr, each with a bias and cols rounded up to k_round.
uint64_t packed_bytes(const XnnpackInfo& i, int64_t rows, int64_t cols) {
  const uint64_t n = (static_cast<uint64_t>(rows) + i.nr - 1) / i.nr * i.nr;
  const uint64_t k = (static_cast<uint64_t>(cols) + i.k_round - 1) / i.k_round * i.k_round;
  return kHeader + n * (1 + k) * sizeof(float);
}

XnnpackInfo probe() {
  XnnpackInfo info;
  const xnn_status st = xnn_initialize(&g_allocator);
  if (st != xnn_status_success) {
    info.reason = st == xnn_status_unsupported_hardware ? "XNNPACK does not run on this CPU"
                                                        : "xnn_initialize failed (status " + std::to_string(st) + ")";
    return info;
  }
  // Three tiny operators: their allocations (descriptor, then packed
  // weights) give the descriptor's size, nr and the input rounding; the
  // third checks the formula.
  static const float w[17 * 257] = {};
  uint64_t sizes[3][2] = {};
  const int64_t shapes[3][2] = {{1, 1}, {1, 257}, {17, 3}};
  for (int s = 0; s < 3; ++s) {
    t_n_sizes = 0;
    const uint64_t calls = g_calls.load();
    xnn_operator_t op = nullptr;
    if (create_f32(w, shapes[s][0], shapes[s][1], shapes[s][0], &op, nullptr) != xnn_status_success) {
      info.reason = "XNNPACK could not create an f32 fully-connected operator";
      return info;
    }
    const int n = t_n_sizes;
    xnn_delete_operator(op);
    if (g_calls.load() == calls) {
      info.reason = "XNNPACK was initialized by another part of this process with its own allocator, so ember "
                    "cannot account its memory";
      return info;
    }
    if (n != 2) {
      info.reason = "XNNPACK made " + std::to_string(n) + " allocations for one operator (expected 2)";
      return info;
    }
    sizes[s][0] = t_sizes[0];
    sizes[s][1] = t_sizes[1];
  }
  // packed(1, k) = nr * (1 + round_up(k, kr)) * 4: 257 and 1 input channels
  // differ by 256 for every power-of-two rounding up to 256.
  info.nr = static_cast<uint32_t>((sizes[1][1] - sizes[0][1]) / (256 * sizeof(float)));
  if (info.nr == 0 || sizes[0][1] % (info.nr * sizeof(float)) != 0) {
    info.reason = "XNNPACK's packing is not the layout ember plans for";
    return info;
  }
  info.k_round = static_cast<uint32_t>(sizes[0][1] / (info.nr * sizeof(float)) - 1);
  info.descriptor = kHeader + sizes[0][0];
  if (info.k_round == 0 || sizes[2][0] != sizes[0][0] || kHeader + sizes[2][1] != packed_bytes(info, 17, 3)) {
    info.reason = "XNNPACK's packing is not the layout ember plans for";
    info.nr = 0;
    return info;
  }
  info.usable = true;
  return info;
}

}  // namespace

const XnnpackInfo& xnnpack_info() {
  static const XnnpackInfo info = probe();
  return info;
}

uint64_t xnnpack_allocations() { return g_calls.load(); }
uint64_t xnnpack_live_bytes() { return g_live.load(); }

uint64_t xnnpack_weight_bytes(int64_t rows, int64_t cols, int32_t slices) {
  const XnnpackInfo& info = xnnpack_info();
  if (!info.usable) return 0;
  uint64_t total = 0;
  for (int32_t s = 0; s < slices; ++s) {
    int64_t r0, r1;
    split_range(rows, 16, s, slices, &r0, &r1);
    if (r0 < r1) total += info.descriptor + packed_bytes(info, r1 - r0, cols);
  }
  return total;
}

Result<std::unique_ptr<XnnpackMatmuls>> XnnpackMatmuls::create() {
  const XnnpackInfo& info = xnnpack_info();
  if (!info.usable) return Status::error(EMBER_ERR_UNSUPPORTED, "xnnpack: %s", info.reason.c_str());
  std::unique_ptr<XnnpackMatmuls> m(new (std::nothrow) XnnpackMatmuls());
  if (!m) return Status::error(EMBER_ERR_NO_MEMORY, "xnnpack: no memory for the operator table");
  return m;
}

XnnpackMatmuls::~XnnpackMatmuls() {
  for (const Op& o : ops_) {
    if (o.op) xnn_delete_operator(static_cast<xnn_operator_t>(o.op));
  }
}

Result<int32_t> XnnpackMatmuls::add(const WeightRef& w, int32_t slices) {
  if ((w.layout != Layout::RowMajor && w.layout != Layout::Rows16) ||
      (w.dtype != DType::F32 && w.dtype != DType::F16 && w.dtype != DType::BF16) ||
      !layout_fits(w.layout, w.dtype, w.rows, w.cols)) {
    return Status::error(EMBER_ERR_INTERNAL, "xnnpack: weight '%s' (%s, %s) is not a float weight it reads", w.name,
                         dtype_name(w.dtype), layout_name(w.layout));
  }
  const int32_t first = static_cast<int32_t>(ops_.size());
  // F16/BF16, or any Rows16 matrix: one run's rows in row-major f32, while
  // it is packed (XNNPACK keeps its own packed copy either way).
  std::vector<float> wide;
  std::vector<uint8_t> gathered(w.layout == Layout::Rows16 ? static_cast<size_t>(w.cols) * 4 : 0);
  for (int32_t s = 0; s < slices; ++s) {
    int64_t r0, r1;
    split_range(w.rows, 16, s, slices, &r0, &r1);
    Op o;
    o.r0 = r0;
    if (r0 < r1) {
      const float* src = reinterpret_cast<const float*>(w.data) + r0 * w.cols;
      if (w.dtype != DType::F32 || w.layout == Layout::Rows16) {
        wide.resize(static_cast<size_t>((r1 - r0) * w.cols));
        for (int64_t r = 0; r < r1 - r0; ++r) {
          const uint8_t* row = layout_row(w.layout, w.dtype, w.data, w.cols, r0 + r, gathered.data());
          dequantize_row(w.dtype, row, &wide[r * w.cols], w.cols);
        }
        src = wide.data();
      }
      xnn_operator_t op = nullptr;
      const xnn_status st = create_f32(src, r1 - r0, w.cols, w.rows, &op, &bytes_);
      if (st != xnn_status_success) {
        return Status::error(st == xnn_status_out_of_memory ? EMBER_ERR_NO_MEMORY : EMBER_ERR_BACKEND,
                             "xnnpack: creating the operator for rows %lld..%lld of '%s' failed (status %d)",
                             static_cast<long long>(r0), static_cast<long long>(r1), w.name, static_cast<int>(st));
      }
      o.op = op;
    }
    ops_.push_back(o);
  }
  return first;
}

void XnnpackMatmuls::run(int32_t index, const float* in, int32_t n, float* out) {
  const Op& o = ops_[index];
  if (o.op == nullptr) return;
  xnn_operator_t op = static_cast<xnn_operator_t>(o.op);
  if (xnn_setup_fully_connected_nc_f32(op, static_cast<size_t>(n), in, out + o.r0, nullptr) != xnn_status_success ||
      xnn_run_operator(op, nullptr) != xnn_status_success) {
    failed_.store(true, std::memory_order_relaxed);
  }
}

}  // namespace ember
