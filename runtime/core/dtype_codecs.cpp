// Block codecs for Q4_1, Q5_0, Q5_1, the K-quants and IQ4_NL/IQ4_XS. The
// dequantizers follow the layouts documented in dtype.h (GGUF's, bit for
// bit). The quantizers are references: simple, unhurried searches for each
// (sub-)block's scale, then integer scales for the super-block, then every
// element rounded against the scales as stored (f16 and all).
#include "core/dtype_codecs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace ember {

// constexpr here (dtype.h declares it extern const), for kLevelAtOrBelow.
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

namespace {

int clampi(long v, int lo, int hi) { return static_cast<int>(std::min<long>(hi, std::max<long>(lo, v))); }

// std::lround, inline: the searches below round every element for every
// candidate scale, and lroundf is a libm call (a tenth of a quantization's
// time). The same result for every float: below 2^31 in magnitude x -
// trunc(x) is exact, anything else (NaN too) goes to std::lround.
long round_away(float x) {
  if (!(std::fabs(x) < 2147483648.0f)) return std::lround(x);
  const long t = static_cast<long>(x);
  const float frac = x - static_cast<float>(t);
  return t + (frac >= 0.5f) - (frac <= -0.5f);
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Nibble j of a 32-element block: the low nibbles hold elements 0..15, the
// high nibbles 16..31.
int nibble(const uint8_t* q, int j) { return j < 16 ? q[j] & 0x0f : q[j - 16] >> 4; }

void pack_nibbles(const int* v, uint8_t* q) {
  for (int j = 0; j < 16; ++j) q[j] = static_cast<uint8_t>(v[j] | (v[j + 16] << 4));
}

void k4_pack_scales(const int* scale, const int* min, uint8_t* sc) {
  for (int s = 0; s < 4; ++s) {
    sc[s] = static_cast<uint8_t>(scale[s] | ((scale[s + 4] >> 4) << 6));
    sc[s + 4] = static_cast<uint8_t>(min[s] | ((min[s + 4] >> 4) << 6));
    sc[s + 8] = static_cast<uint8_t>((scale[s + 4] & 0x0f) | ((min[s + 4] & 0x0f) << 4));
  }
}


// Element of largest magnitude, with its sign; 0 for an all-zero block.
float signed_max(const float* x, int n) {
  float amax = 0, m = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      m = x[i];
    }
  }
  return m;
}

// An element's weight in a fit: 1, or its importance (quantize_row_weighted).
inline double weight_at(const float* w, int i) { return w ? static_cast<double>(w[i]) : 1.0; }

// The scale s minimizing sum w (x - s q)^2 with q = round(x / s) clamped to
// qmin..qmax (w: 1 without weights): candidates map the largest element onto
// qmin or qmax (and +-1 around them, in tenths); for each, the
// least-squares s of its q.
float fit_symmetric(const float* x, int n, int qmin, int qmax, const float* w = nullptr) {
  const float xm = signed_max(x, n);
  if (xm == 0) return 0;
  float best_s = 0, best = -1;
  for (int target : {qmin, qmax}) {
    for (int k = -10; k <= 10; k += 2) {
      const float iscale = (target + 0.1f * k) / xm;
      double sxq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = clampi(round_away(x[i] * iscale), qmin, qmax);
        const double wi = weight_at(w, i);
        sxq += wi * x[i] * q;
        sqq += wi * q * q;
      }
      if (sqq > 0 && sxq * sxq / sqq > best) {
        best = sxq * sxq / sqq;
        best_s = static_cast<float>(sxq / sqq);
      }
    }
  }
  return best_s;
}

// The (weighted) least-squares scale a and offset b of x ~ a q + b for
// given levels q; b kept <= 0 unless any_min. Returns the error, or -1 when
// the levels admit no such fit (all equal with any_min; a < 0).
double refit_affine(const float* x, const int* q, int n, const float* w, bool any_min, double* a, double* b) {
  double sw = 0, sx = 0, sq = 0, sxq = 0, sqq = 0;
  for (int i = 0; i < n; ++i) {
    const double wi = weight_at(w, i);
    sw += wi;
    sx += wi * x[i];
    sq += wi * q[i];
    sxq += wi * x[i] * q[i];
    sqq += wi * q[i] * q[i];
  }
  const double den = sw * sqq - sq * sq;
  if (any_min && !(den > 0)) return -1;
  *a = den > 0 ? (sw * sxq - sx * sq) / den : 0;
  *b = den > 0 ? (sx - *a * sq) / sw : 1;
  if (*b > 0 && !any_min) {  // the offset must be <= 0 (and all q equal: scale alone)
    *b = 0;
    *a = sqq > 0 ? sxq / sqq : 0;
  }
  if (*a < 0 || (any_min && *a == 0)) return -1;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = x[i] - *a * q[i] - *b;
    err += weight_at(w, i) * e * e;
  }
  return err;
}

// x ~ scale * q - min with q in 0..qmax, scale >= 0 and min >= 0 (what the
// K-quants store). Candidates spread [min(x, 0), max(x)] over qmax +- 1
// levels; for each, (scale, min) by (weighted) least squares on its q, min
// kept >= 0. any_min (Q4_1, Q5_1, which store the offset with its sign):
// candidates spread [min(x), max(x)] over qmax +- 1 in 0.05 steps, the min
// of either sign, each refined before they are compared: its elements
// re-rounded against its own (scale, min) and refit, while the error falls
// (a candidate's levels come from the raw range, not from its fit;
// docs/decisions.md "Q4_1 and Q5_1 with an importance matrix"); without a
// candidate, the plain range (scale (max - min) / qmax).
void fit_affine(const float* x, int n, int qmax, float* scale, float* min, const float* w = nullptr,
                bool any_min = false) {
  float lo = any_min ? x[0] : 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *scale = any_min ? (hi - lo) / qmax : 0;
  *min = -lo;
  if (hi <= lo) return;
  double best_err = INFINITY, best_a = 0, best_b = 0;
  const int reach = any_min ? 20 : 10, stride = any_min ? 1 : 2;
  const float step = any_min ? 0.05f : 0.1f;
  int q[256];
  for (int k = -reach; k <= reach; k += stride) {
    const float iscale = (qmax + step * k) / (hi - lo);
    for (int i = 0; i < n; ++i) q[i] = clampi(round_away((x[i] - lo) * iscale), 0, qmax);
    double a = 0, b = 0;
    double err = refit_affine(x, q, n, w, any_min, &a, &b);
    if (err < 0) continue;
    // any_min: the candidate refined (its elements re-rounded against its
    // own fit, and refit, while the error falls).
    for (int round = 0; any_min && round < 8; ++round) {
      for (int i = 0; i < n; ++i) {
        q[i] = clampi(round_away((x[i] - static_cast<float>(b)) / static_cast<float>(a)), 0, qmax);
      }
      double ra = 0, rb = 0;
      const double rerr = refit_affine(x, q, n, w, any_min, &ra, &rb);
      if (!(rerr >= 0 && rerr < err)) break;
      err = rerr;
      a = ra;
      b = rb;
    }
    if (err < best_err) {
      best_err = err;
      best_a = a;
      best_b = b;
    }
  }
  if (best_err == INFINITY) return;
  *scale = static_cast<float>(best_a);
  *min = static_cast<float>(-best_b);
}

int nearest_level_scan(float v) {
  int best = 0;
  float bd = std::fabs(v - kIq4Levels[0]);
  for (int i = 1; i < 16; ++i) {
    const float d = std::fabs(v - kIq4Levels[i]);
    if (d < bd) {
      bd = d;
      best = i;
    }
  }
  return best;
}

// kLevelAtOrBelow[f + 128]: the last IQ4 level <= f, for the integers f in
// -128..127 (0 below them all).
constexpr auto kLevelAtOrBelow = [] {
  std::array<uint8_t, 256> t{};
  for (int f = -128; f < 128; ++f) {
    int lo = 0;
    for (int i = 0; i < 16; ++i) {
      if (kIq4Levels[i] <= f) lo = i;
    }
    t[f + 128] = static_cast<uint8_t>(lo);
  }
  return t;
}();

// The index of the IQ4 level nearest v, the lower one on a tie: what the
// scan above gives, without its 16 steps (the searches call it for every
// element and candidate scale: a third of a quantization's time). The
// levels are integers, sorted and at least 10 apart, so only the last one
// <= floor(v) and the next can be nearest; from 2^22 on, rounding can tie
// the distances, and the scan decides.
int nearest_level(float v) {
  if (!(std::fabs(v) < 4194304.0f)) return nearest_level_scan(v);
  const float c = std::min(std::max(v, -128.0f), 127.0f);
  int f = static_cast<int>(c);
  f -= static_cast<float>(f) > c;  // floor
  const int lo = kLevelAtOrBelow[f + 128];
  const int hi = lo < 15 ? lo + 1 : 15;
  return std::fabs(v - kIq4Levels[hi]) < std::fabs(v - kIq4Levels[lo]) ? hi : lo;
}

// One candidate inverse scale of an IQ4 search: its elements' nearest
// levels L, their least-squares scale (*s) and the squared error that scale
// removes, (sum w x L)^2 / sum w L^2 (the larger the better; -1 when every
// level is 0).
double fit_levels_candidate(const float* x, int n, const float* w, float iscale, float* s) {
  double sxl = 0, sll = 0;
  for (int i = 0; i < n; ++i) {
    const int l = kIq4Levels[nearest_level(x[i] * iscale)];
    const double wi = weight_at(w, i);
    sxl += wi * x[i] * l;
    sll += wi * l * l;
  }
  if (!(sll > 0)) return -1;
  *s = static_cast<float>(sxl / sll);
  return sxl * sxl / sll;
}

// The scale s minimizing sum w (x - s L[q])^2 over the IQ4 levels L, q the
// nearest level to x / s: candidates map the largest element onto -127 or
// 113 (+-10 around them); for each, the least-squares s of its levels.
float fit_levels(const float* x, int n, const float* w = nullptr) {
  const float xm = signed_max(x, n);
  if (xm == 0) return 0;
  float best_s = 0, best = -1;
  for (int target : {-127, 113}) {
    for (int k = -10; k <= 10; ++k) {
      float s = 0;
      const double score = fit_levels_candidate(x, n, w, (target + k) / xm, &s);
      if (score > best) {
        best = static_cast<float>(score);
        best_s = s;
      }
    }
  }
  return best_s;
}

// The scale of one IQ4_NL block (32 elements, one scale): the candidate
// scales map the largest element m onto +127 (so onto the top level, 113,
// or past it) and onto -127 + k for k = -7..7 (the bottom level, -127, and
// its neighbourhood); each candidate's levels get their least-squares scale,
// and the one of least sum w (x - s L)^2 wins. A narrower and more
// asymmetric set than fit_levels' (whose 42 candidates find smaller squared
// errors): on stories260K's real weights it measured closer to the float
// model, with an importance matrix and without (docs/decisions.md "IQ4_NL's
// scale candidates").
float fit_levels_block(const float* x, const float* w) {
  constexpr int n = 32;
  const float xm = signed_max(x, n);
  if (xm == 0) return 0;
  float best_s = 0;
  double best = -1;
  for (int k = -8; k <= 7; ++k) {
    // k = -8 stands for the +127 candidate.
    const float iscale = k == -8 ? 127.0f / xm : static_cast<float>(k - 127) / xm;
    float s = 0;
    const double score = fit_levels_candidate(x, n, w, iscale, &s);
    if (score > best) {
      best = score;
      best_s = s;
    }
  }
  return best_s;
}

// Largest of n scales, and the f16 super-block scale d = max / top (as
// stored, back in f32).
float super_scale(const float* s, int n, float top, uint16_t* d16) {
  float m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, s[i]);
  *d16 = f32_to_f16(m / top);
  return f16_to_f32(*d16);
}

// For symmetric sub-block scales: d maps the scale of largest magnitude onto
// `bottom` (negative), so its sign is used and the range is fully spent.
float signed_super_scale(const float* s, int n, float bottom, uint16_t* d16) {
  *d16 = f32_to_f16(signed_max(s, n) / bottom);
  return f16_to_f32(*d16);
}

int round_scale(float s, float d, int lo, int hi) { return d != 0 ? clampi(round_away(s / d), lo, hi) : 0; }

// Elements of an affine (sub-)block against the stored scale and min.
void round_affine(const float* x, int n, float dl, float ml, int qmax, int* q) {
  for (int i = 0; i < n; ++i) q[i] = dl != 0 ? clampi(round_away((x[i] + ml) / dl), 0, qmax) : 0;
}

void round_symmetric(const float* x, int n, float dl, int qmin, int qmax, int* q) {
  for (int i = 0; i < n; ++i) q[i] = dl != 0 ? clampi(round_away(x[i] / dl), qmin, qmax) : 0;
}

// The integer scale and min of an affine sub-block: the nearest ones to the
// fitted (sc0, mn0), or a neighbour of either (+-1, within 0..top) where
// the elements rounded against it represent the sub-block better (weighted):
// rounding a small scale to a few bits is coarse, and the neighbour often
// wins.
void best_affine_ints(const float* x, const float* w, int n, float d, float dmin, int qmax, int top, int* sc, int* mn) {
  const int sc0 = *sc, mn0 = *mn;
  double best = INFINITY;
  int q[32];
  for (int a = std::max(0, sc0 - 1); a <= std::min(top, sc0 + 1); ++a) {
    for (int m = std::max(0, mn0 - 1); m <= std::min(top, mn0 + 1); ++m) {
      const float dl = d * a, ml = dmin * m;
      round_affine(x, n, dl, ml, qmax, q);
      double err = 0;
      for (int i = 0; i < n; ++i) {
        const double e = x[i] - (static_cast<double>(dl) * q[i] - ml);
        err += weight_at(w, i) * e * e;
      }
      if (err < best) {
        best = err;
        *sc = a;
        *mn = m;
      }
    }
  }
}

// The same for a symmetric sub-block's signed integer scale (lo..hi).
int best_symmetric_int(const float* x, const float* w, int n, float d, int sc0, int lo, int hi, int qmin, int qmax) {
  double best = INFINITY;
  int pick = sc0, q[32];
  for (int a = std::max(lo, sc0 - 1); a <= std::min(hi, sc0 + 1); ++a) {
    const float dl = d * a;
    round_symmetric(x, n, dl, qmin, qmax, q);
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = x[i] - static_cast<double>(dl) * q[i];
      err += weight_at(w, i) * e * e;
    }
    if (err < best) {
      best = err;
      pick = a;
    }
  }
  return pick;
}

// The same for an IQ4_XS sub-block's 6-bit signed scale (elements on the
// IQ4 levels).
int best_levels_int(const float* x, const float* w, float d, int ls0) {
  double best = INFINITY;
  int pick = ls0;
  for (int a = std::max(-32, ls0 - 1); a <= std::min(31, ls0 + 1); ++a) {
    const float dl = d * a;
    double err = 0;
    for (int i = 0; i < 32; ++i) {
      const double e = x[i] - (dl != 0 ? static_cast<double>(dl) * kIq4Levels[nearest_level(x[i] / dl)] : 0.0);
      err += weight_at(w, i) * e * e;
    }
    if (err < best) {
      best = err;
      pick = a;
    }
  }
  return pick;
}

// The five-bit blocks share their placement: 4 low bits as nibbles, bit 4
// of element j at bit j of qh.
void pack5(const int* q, uint8_t* qs, uint8_t* qh) {
  int low[32];
  uint32_t h = 0;
  for (int j = 0; j < 32; ++j) {
    low[j] = q[j] & 0x0f;
    h |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  }
  pack_nibbles(low, qs);
  store_u32(qh, h);
}

int unpack5(const uint8_t* qs, uint32_t qh, int j) { return nibble(qs, j) | static_cast<int>(((qh >> j) & 1) << 4); }

}  // namespace

float fit_symmetric_weighted(const float* x, int n, int qmin, int qmax, const float* w) {
  return fit_symmetric(x, n, qmin, qmax, w);
}

void k4_scale_min(const uint8_t* sc, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = sc[s] & 63;
    *min = sc[s + 4] & 63;
  } else {
    *scale = (sc[s + 4] & 0x0f) | ((sc[s - 4] >> 6) << 4);
    *min = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
  }
}

int q3_scale(const uint8_t* sc, int s) {
  const int lo = (sc[s % 8] >> (4 * (s / 8))) & 0x0f;
  const int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
  return lo | (hi << 4);
}

// ---- dequantization -------------------------------------------------------

void dequantize_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < 32; ++j) y[j] = nibble(b[i].q, j) * d + m;
  }
}

void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < 32; ++j) y[j] = (unpack5(b[i].q, qh, j) - 16) * d;
  }
}

void dequantize_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < 32; ++j) y[j] = unpack5(b[i].q, qh, j) * d + m;
  }
}

void dequantize_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int e = 0; e < 256; ++e) {
      const int sc = b[i].scales[e / 16];
      const int q = (b[i].q[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const float dl = d * (sc & 0x0f), ml = dmin * (sc >> 4);
      y[e] = dl * q - ml;
    }
  }
}

void dequantize_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < 256; ++e) {
      const int low = (b[i].q[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const int high = (b[i].hmask[e % 32] >> (e / 32)) & 1;
      const float dl = d * (q3_scale(b[i].scales, e / 16) - 32);
      y[e] = dl * ((low | (high << 2)) - 4);
    }
  }
}

void dequantize_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int s = 0; s < 8; ++s) {
      int sc, mn;
      k4_scale_min(b[i].scales, s, &sc, &mn);
      const float dl = d * sc, ml = dmin * mn;
      const uint8_t* q = b[i].q + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) y[32 * s + l] = dl * ((q[l] >> shift) & 0x0f) - ml;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int s = 0; s < 8; ++s) {
      int sc, mn;
      k4_scale_min(b[i].scales, s, &sc, &mn);
      const float dl = d * sc, ml = dmin * mn;
      const uint8_t* q = b[i].q + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0x0f) | (((b[i].qh[l] >> s) & 1) << 4);
        y[32 * s + l] = dl * v - ml;
      }
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int low = (b[i].ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
      const int high = (b[i].qh[32 * h + l] >> (2 * k)) & 3;
      y[e] = d * b[i].scales[e / 16] * ((low | (high << 4)) - 32);
    }
  }
}

void dequantize_iq4_nl(const BlockIQ4_NL* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 32; ++j) y[j] = d * kIq4Levels[nibble(b[i].q, j)];
  }
}

void dequantize_iq4_xs(const BlockIQ4_XS* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int s = 0; s < 8; ++s, y += 32) {
      const int ls = ((b[i].scales_l[s / 2] >> (4 * (s % 2))) & 0x0f) | (((b[i].scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * (ls - 32);
      for (int j = 0; j < 32; ++j) y[j] = dl * kIq4Levels[nibble(b[i].q + 16 * s, j)];
    }
  }
}

// ---- quantization ---------------------------------------------------------

// Q4_1 / Q5_1: the block's range [min, max] in 2^bits - 1 steps; with
// weights, the (d, m) of least weighted error.
template <typename Block, int kMax>
void quantize_minmax(const float* x, Block* b, int64_t nb, const float* w, void (*pack)(const int*, Block*)) {
  for (int64_t i = 0; i < nb; ++i, x += 32, w = w ? w + 32 : nullptr) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < 32; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    float dm = (hi - lo) / kMax, mm = lo;
    if (w) {
      fit_affine(x, 32, kMax, &dm, &mm, w, /*any_min=*/true);
      mm = -mm;  // fit_affine's min is subtracted; Q4_1 / Q5_1 add theirs
    }
    b[i].d = f32_to_f16(dm);
    b[i].m = f32_to_f16(mm);
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    int q[32];
    round_affine(x, 32, d, -m, kMax, q);
    pack(q, &b[i]);
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* b, int64_t nb, const float* w) {
  quantize_minmax<BlockQ4_1, 15>(x, b, nb, w, [](const int* q, BlockQ4_1* blk) { pack_nibbles(q, blk->q); });
}

void quantize_q5_1(const float* x, BlockQ5_1* b, int64_t nb, const float* w) {
  quantize_minmax<BlockQ5_1, 31>(x, b, nb, w, [](const int* q, BlockQ5_1* blk) { pack5(q, blk->q, blk->qh); });
}

// Q5_0 as Q4_0: the element of largest magnitude maps onto -16; with
// weights, the scale of least weighted error.
void quantize_q5_0(const float* x, BlockQ5_0* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 32, w = w ? w + 32 : nullptr) {
    b[i].d = f32_to_f16(w ? fit_symmetric(x, 32, -16, 15, w) : signed_max(x, 32) / -16.0f);
    const float d = f16_to_f32(b[i].d);
    int q[32];
    round_symmetric(x, 32, d, -16, 15, q);
    for (int& v : q) v += 16;
    pack5(q, b[i].q, b[i].qh);
  }
}

void quantize_q2_k(const float* x, BlockQ2_K* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    float scale[16], min[16];
    for (int s = 0; s < 16; ++s) fit_affine(x + 16 * s, 16, 3, &scale[s], &min[s], w ? w + 16 * s : nullptr);
    const float d = super_scale(scale, 16, 15, &b[i].d);
    const float dmin = super_scale(min, 16, 15, &b[i].dmin);
    std::memset(b[i].q, 0, sizeof b[i].q);
    for (int s = 0; s < 16; ++s) {
      int sc = round_scale(scale[s], d, 0, 15), mn = round_scale(min[s], dmin, 0, 15);
      best_affine_ints(x + 16 * s, w ? w + 16 * s : nullptr, 16, d, dmin, 3, 15, &sc, &mn);
      b[i].scales[s] = static_cast<uint8_t>(sc | (mn << 4));
      int q[16];
      round_affine(x + 16 * s, 16, d * sc, dmin * mn, 3, q);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * s + l;
        b[i].q[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[l] << (2 * ((e % 128) / 32)));
      }
    }
  }
}

void quantize_q3_k(const float* x, BlockQ3_K* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    float scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = fit_symmetric(x + 16 * s, 16, -4, 3, w ? w + 16 * s : nullptr);
    const float d = signed_super_scale(scale, 16, -32, &b[i].d);
    std::memset(b[i].q, 0, sizeof b[i].q);
    std::memset(b[i].hmask, 0, sizeof b[i].hmask);
    std::memset(b[i].scales, 0, sizeof b[i].scales);
    for (int s = 0; s < 16; ++s) {
      const int sc = best_symmetric_int(x + 16 * s, w ? w + 16 * s : nullptr, 16, d, round_scale(scale[s], d, -32, 31),
                                        -32, 31, -4, 3) + 32;
      b[i].scales[s % 8] |= static_cast<uint8_t>((sc & 0x0f) << (4 * (s / 8)));
      b[i].scales[8 + s % 4] |= static_cast<uint8_t>((sc >> 4) << (2 * (s / 4)));
      int q[16];
      round_symmetric(x + 16 * s, 16, d * (sc - 32), -4, 3, q);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * s + l, u = q[l] + 4;
        b[i].q[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((u & 3) << (2 * ((e % 128) / 32)));
        b[i].hmask[e % 32] |= static_cast<uint8_t>((u >> 2) << (e / 32));
      }
    }
  }
}

// Q4_K and Q5_K: 8 affine sub-blocks of 32 with 6-bit scales and mins.
template <int kMax>
void quantize_k4(const float* x, uint16_t* d16, uint16_t* dmin16, uint8_t* scales, int* q, const float* w) {
  float scale[8], min[8];
  for (int s = 0; s < 8; ++s) fit_affine(x + 32 * s, 32, kMax, &scale[s], &min[s], w ? w + 32 * s : nullptr);
  const float d = super_scale(scale, 8, 63, d16);
  const float dmin = super_scale(min, 8, 63, dmin16);
  int sc[8], mn[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = round_scale(scale[s], d, 0, 63);
    mn[s] = round_scale(min[s], dmin, 0, 63);
    const float* xs = x + 32 * s;
    best_affine_ints(xs, w ? w + 32 * s : nullptr, 32, d, dmin, kMax, 63, &sc[s], &mn[s]);
    round_affine(xs, 32, d * sc[s], dmin * mn[s], kMax, q + 32 * s);
  }
  k4_pack_scales(sc, mn, scales);
}

void quantize_q4_k(const float* x, BlockQ4_K* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    int q[256];
    quantize_k4<15>(x, &b[i].d, &b[i].dmin, b[i].scales, q, w);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) b[i].q[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    int q[256];
    quantize_k4<31>(x, &b[i].d, &b[i].dmin, b[i].scales, q, w);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b[i].q[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0x0f) | ((q[64 * c + 32 + l] & 0x0f) << 4));
      }
    }
    for (int e = 0; e < 256; ++e) b[i].qh[e % 32] |= static_cast<uint8_t>((q[e] >> 4) << (e / 32));
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    float scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = fit_symmetric(x + 16 * s, 16, -32, 31, w ? w + 16 * s : nullptr);
    const float d = signed_super_scale(scale, 16, -128, &b[i].d);
    std::memset(b[i].ql, 0, sizeof b[i].ql);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int s = 0; s < 16; ++s) {
      const int sc = best_symmetric_int(x + 16 * s, w ? w + 16 * s : nullptr, 16, d, round_scale(scale[s], d, -128, 127),
                                        -128, 127, -32, 31);
      b[i].scales[s] = static_cast<int8_t>(sc);
      int q[16];
      round_symmetric(x + 16 * s, 16, d * sc, -32, 31, q);
      for (int l16 = 0; l16 < 16; ++l16) {
        const int e = 16 * s + l16, u = q[l16] + 32;
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        b[i].ql[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>((u & 0x0f) << (4 * (k / 2)));
        b[i].qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
      }
    }
  }
}

void quantize_iq4_nl(const float* x, BlockIQ4_NL* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 32, w = w ? w + 32 : nullptr) {
    b[i].d = f32_to_f16(fit_levels_block(x, w));
    const float d = f16_to_f32(b[i].d);
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = d != 0 ? nearest_level(x[j] / d) : 8;
    pack_nibbles(q, b[i].q);
  }
}

void quantize_iq4_xs(const float* x, BlockIQ4_XS* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += 256, w = w ? w + 256 : nullptr) {
    float scale[8];
    for (int s = 0; s < 8; ++s) scale[s] = fit_levels(x + 32 * s, 32, w ? w + 32 * s : nullptr);
    const float d = signed_super_scale(scale, 8, -32, &b[i].d);
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof b[i].scales_l);
    for (int s = 0; s < 8; ++s) {
      const int ls = best_levels_int(x + 32 * s, w ? w + 32 * s : nullptr, d, round_scale(scale[s], d, -32, 31)) + 32;
      b[i].scales_l[s / 2] |= static_cast<uint8_t>((ls & 0x0f) << (4 * (s % 2)));
      b[i].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * s));
      const float dl = d * (ls - 32);
      int q[32];
      for (int j = 0; j < 32; ++j) q[j] = dl != 0 ? nearest_level(x[32 * s + j] / dl) : 8;
      pack_nibbles(q, b[i].q + 16 * s);
    }
  }
}

}  // namespace ember
