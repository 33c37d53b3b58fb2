#include "backends/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ember {
int64_t cpu_attention_scratch_floats(const HParams& hp, int32_t context, int32_t heads) {
  // scores for each of the call's heads over the context, plus one converted
  // K and V row.
  return static_cast<int64_t>(heads) * context + 2 * static_cast<int64_t>(hp.kv_dim()) + 32;
}

void cpu_rope(const RopeParams& p, float* x, int64_t cols, int32_t n, const float* cos, const float* sin) {
  // Only the first n_rot elements of a head rotate (partial rotary); the
  // rest stay as they are (in place).
  const int64_t head_dim = p.head_dim, half = rope_rotated_dims(p) / 2;
  const int64_t heads = p.n_heads;
  const bool adjacent = p.style == RopeStyle::Adjacent;
  // LongRoPE's attention factor scales cos and sin (as ggml scales its
  // cache); x * 1.0f is exact, so without one the results are unchanged.
  const float m = p.mscale;
  for (int32_t i = 0; i < n; ++i) {
    const float* cs = cos + i * half;
    const float* sn = sin + i * half;
    for (int64_t hh = 0; hh < heads; ++hh) {
      float* v = x + i * cols + hh * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        // Adjacent: (2j, 2j+1) as llama2.c and GGUF llama; Half: (j, j+half)
        // as Hugging Face checkpoints.
        const int64_t a = adjacent ? 2 * j : j;
        const int64_t b = adjacent ? 2 * j + 1 : j + half;
        const float c = cs[j] * m, s = sn[j] * m;
        const float v0 = v[a], v1 = v[b];
        v[a] = v0 * c - v1 * s;
        v[b] = v0 * s + v1 * c;
      }
    }
  }
}

void cpu_kv_store(int64_t kv_dim, const CpuKvLayer& kv, const float* k, const float* v, int32_t n,
                  const CpuStepRows& rows) {
  for (int32_t i = 0; i < n; ++i) {
    const int64_t r = cpu_kv_slot(kv, rows.seq[i], rows.pos[i]);
    kv_store_row(kv.k_type, k + i * kv_dim, kv.k + r * kv.k_row_bytes, kv_dim);
    kv_store_row(kv.v_type, v + i * kv_dim, kv.v + r * kv.v_row_bytes, kv_dim);
  }
}

void cpu_attention(const AttentionParams& p, const CpuKvLayer& kv, const float* q, float* out, const CpuStepRows& rows,
                   int32_t row_begin, int32_t row_end, int32_t head_begin, int32_t head_end, int32_t context,
                   float* scratch, const AttentionKernels& kern) {
  const int64_t head_dim = p.head_dim, kv_dim = head_dim * p.n_kv_heads, q_dim = head_dim * p.n_heads;
  const int64_t group = p.n_heads / p.n_kv_heads;
  const float scale = p.scale;
  // scores[hh - head_begin][t]: this call's heads only.
  float* scores = scratch - static_cast<int64_t>(head_begin) * context;
  float* krow = scratch + static_cast<int64_t>(head_end - head_begin) * context;
  float* vrow = krow + kv_dim;
  for (int32_t i = row_begin; i < row_end; ++i) {
    // Keys t0 .. pos[i] of the row's sequence: all of them, or a sliding
    // window's last p.window. In a ring they lie in at most two runs of
    // slots: n1 from slot s1, then the rest from the ring's first slot.
    const int32_t n_all = rows.visible ? rows.visible[i] : rows.pos[i] + 1;
    const int32_t t0 = p.window != 0 && n_all > static_cast<int32_t>(p.window) ? n_all - static_cast<int32_t>(p.window) : 0;
    const int32_t n_pos = n_all - t0;
    const int64_t s1 = cpu_kv_slot(kv, rows.seq[i], t0);
    const int64_t ring_base = static_cast<int64_t>(rows.seq[i]) * kv.rows;
    const int32_t n1 = kv.ring ? std::min<int32_t>(n_pos, static_cast<int32_t>(ring_base + kv.rows - s1)) : n_pos;
    auto slot = [&](int32_t t) { return t < n1 ? s1 + t : ring_base + (t - n1); };
    const float* qi = q + i * q_dim;
    // The call's heads in runs sharing a key head: fn(first head, count,
    // the key head's offset in a cache row); the row kernels read each key
    // and value row once per run.
    auto kv_runs = [&](auto&& fn) {
      for (int32_t h0 = head_begin; h0 < head_end;) {
        const int32_t h1 = std::min<int32_t>(head_end, static_cast<int32_t>((h0 / group + 1) * group));
        fn(h0, h1 - h0, (h0 / group) * head_dim);
        h0 = h1;
      }
    };
    if (kv.k_type == KvType::F32) {
      const float* k = reinterpret_cast<const float*>(kv.k);
      const int64_t stride = static_cast<int64_t>(kv.k_row_bytes / sizeof(float));
      kv_runs([&](int32_t h0, int32_t nh, int64_t off) {
        kern.dot_rows(qi + h0 * head_dim, nh, head_dim, k + s1 * stride + off, stride, n1, head_dim, scale,
                      scores + h0 * context, context);
        if (n1 < n_pos) {
          kern.dot_rows(qi + h0 * head_dim, nh, head_dim, k + ring_base * stride + off, stride, n_pos - n1,
                        head_dim, scale, scores + h0 * context + n1, context);
        }
      });
    } else {
      for (int32_t t = 0; t < n_pos; ++t) {
        kv_load_row(kv.k_type, kv.k + slot(t) * kv.k_row_bytes, krow, kv_dim);
        for (int32_t hh = head_begin; hh < head_end; ++hh) {
          scores[hh * context + t] = kern.dot(qi + hh * head_dim, krow + (hh / group) * head_dim, head_dim) * scale;
        }
      }
    }
    for (int32_t hh = head_begin; hh < head_end; ++hh) {
      if (p.softcap != 0.0f) {
        // Gemma 2: scores = cap * tanh(scores / cap) before the softmax.
        float* sc = scores + hh * context;
        for (int32_t t = 0; t < n_pos; ++t) sc[t] = p.softcap * std::tanh(sc[t] / p.softcap);
      }
      kern.softmax(scores + hh * context, n_pos);
      std::memset(out + i * q_dim + hh * head_dim, 0, head_dim * sizeof(float));
    }
    if (kv.v_type == KvType::F32) {
      const float* v = reinterpret_cast<const float*>(kv.v);
      const int64_t stride = static_cast<int64_t>(kv.v_row_bytes / sizeof(float));
      kv_runs([&](int32_t h0, int32_t nh, int64_t off) {
        float* o = out + i * q_dim + h0 * head_dim;
        kern.axpy_rows(o, nh, head_dim, scores + h0 * context, context, v + s1 * stride + off, stride, n1, head_dim);
        if (n1 < n_pos) {
          kern.axpy_rows(o, nh, head_dim, scores + h0 * context + n1, context, v + ring_base * stride + off, stride,
                         n_pos - n1, head_dim);
        }
      });
    } else {
      for (int32_t t = 0; t < n_pos; ++t) {
        kv_load_row(kv.v_type, kv.v + slot(t) * kv.v_row_bytes, vrow, kv_dim);
        for (int32_t hh = head_begin; hh < head_end; ++hh) {
          kern.axpy(out + i * q_dim + hh * head_dim, scores[hh * context + t], vrow + (hh / group) * head_dim,
                    head_dim);
        }
      }
    }
  }
}

}  // namespace ember
