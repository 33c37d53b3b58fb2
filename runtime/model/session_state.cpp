// Saved sessions: a header that says what the state is for, the token
// history, each layer's used KV rows as the cache stores them, and a
// SHA-256 over all of it (docs/decisions.md "Sessions: multi-turn, stop
// strings, saved state"). A state is checked completely before the session
// is touched; bad bytes are a status, never a crash.
#include <cstring>
#include <vector>

#include "model/session.h"

namespace ember {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'S', 'E', 'S', 'S'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 96;
constexpr uint64_t kDigestBytes = 32;

// Little-endian fields at fixed offsets (the header's layout).
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The header's fields.
struct Header {
  Sha256Digest model{};
  uint32_t context = 0, n_layers = 0, kv_dim = 0, n_pos = 0;
  uint8_t kv_type_k = 0, kv_type_v = 0;
  uint64_t k_row_bytes = 0, v_row_bytes = 0, payload_bytes = 0;
};

void write_header(const Header& h, uint8_t* p) {
  std::memset(p, 0, kHeaderBytes);
  std::memcpy(p, kMagic, 8);
  put32(p + 8, kVersion);
  put32(p + 12, static_cast<uint32_t>(kHeaderBytes));
  std::memcpy(p + 16, h.model.data(), 32);
  put32(p + 48, h.context);
  put32(p + 52, h.n_layers);
  put32(p + 56, h.kv_dim);
  p[60] = h.kv_type_k;
  p[61] = h.kv_type_v;
  put32(p + 64, h.n_pos);
  put64(p + 72, h.k_row_bytes);
  put64(p + 80, h.v_row_bytes);
  put64(p + 88, h.payload_bytes);
}

// payload = n_pos ids, then per layer n_pos key rows and n_pos value rows.
// False when it overflows.
bool payload_size(uint64_t n_pos, uint64_t n_layers, uint64_t k_row, uint64_t v_row, uint64_t* out) {
  const uint64_t kMax = uint64_t{1} << 62;
  if (n_pos > kMax / 4 || k_row > kMax || v_row > kMax || n_layers > kMax) return false;
  const uint64_t row = k_row + v_row;
  if (row && n_pos > kMax / row) return false;
  const uint64_t per_layer = n_pos * row;
  if (per_layer && n_layers > kMax / per_layer) return false;
  *out = n_pos * 4 + n_layers * per_layer;
  return *out <= kMax;
}

std::string hex_prefix(const Sha256Digest& d) { return to_hex(d.data(), 8); }

Status mismatch(const char* field, const std::string& saved, const std::string& here) {
  return Status::error(EMBER_ERR_STATE_MISMATCH,
                       "saved state: %s is %s but this session's is %s; a state loads only into a session of the "
                       "same model, context and KV types",
                       field, saved.c_str(), here.c_str());
}

}  // namespace

Sha256Digest Session::model_identity() const {
  const ModelFile& f = model_.file();
  return sha256(f.mapping().data(), static_cast<size_t>(f.contents().data_offset));
}

Result<uint64_t> Session::state_bytes() const {
  const HParams& hp = model_.hparams();
  EMBER_ASSIGN_OR_RETURN(uint64_t k_row, kv_row_bytes(graph_.kv_type_k, hp.kv_dim()));
  EMBER_ASSIGN_OR_RETURN(uint64_t v_row, kv_row_bytes(graph_.kv_type_v, hp.kv_dim()));
  uint64_t payload = 0;
  if (!payload_size(static_cast<uint64_t>(positions_[0]), hp.n_layers, k_row, v_row, &payload)) {
    return Status::error(EMBER_ERR_INTERNAL, "saved state size overflows");
  }
  return kHeaderBytes + payload + kDigestBytes;
}

Status Session::save_state(uint8_t* out, uint64_t capacity) const {
  EMBER_ASSIGN_OR_RETURN(uint64_t total, state_bytes());
  if (!out || capacity < total) {
    return Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "the saved state needs %llu bytes, the buffer has %llu",
                         static_cast<unsigned long long>(total), static_cast<unsigned long long>(capacity));
  }
  const HParams& hp = model_.hparams();
  Header h;
  h.model = model_identity();
  h.context = static_cast<uint32_t>(graph_.context);
  h.n_layers = hp.n_layers;
  h.kv_dim = hp.kv_dim();
  h.n_pos = static_cast<uint32_t>(positions_[0]);
  h.kv_type_k = static_cast<uint8_t>(graph_.kv_type_k);
  h.kv_type_v = static_cast<uint8_t>(graph_.kv_type_v);
  h.k_row_bytes = kv_row_bytes(graph_.kv_type_k, h.kv_dim).value();
  h.v_row_bytes = kv_row_bytes(graph_.kv_type_v, h.kv_dim).value();
  h.payload_bytes = total - kHeaderBytes - kDigestBytes;
  write_header(h, out);
  uint8_t* p = out + kHeaderBytes;
  for (int32_t i = 0; i < positions_[0]; ++i, p += 4) put32(p, static_cast<uint32_t>(history_[i]));
  if (positions_[0] > 0) {
    for (uint32_t l = 0; l < hp.n_layers; ++l) {
      EMBER_TRY(backend_->read_kv(static_cast<int32_t>(l), false, positions_[0], p));
      p += h.k_row_bytes * h.n_pos;
      EMBER_TRY(backend_->read_kv(static_cast<int32_t>(l), true, positions_[0], p));
      p += h.v_row_bytes * h.n_pos;
    }
  }
  const Sha256Digest d = sha256(out, static_cast<size_t>(total - kDigestBytes));
  std::memcpy(p, d.data(), kDigestBytes);
  return Status::ok();
}

Status Session::load_state(const uint8_t* data, uint64_t size) {
  if (!data && size) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "saved state: data is NULL");
  // Framing: what the bytes are, before what they are for.
  if (size < kHeaderBytes + kDigestBytes) {
    return Status::error(EMBER_ERR_TRUNCATED, "saved state: %llu bytes, shorter than the %llu-byte header and digest",
                         static_cast<unsigned long long>(size),
                         static_cast<unsigned long long>(kHeaderBytes + kDigestBytes));
  }
  if (std::memcmp(data, kMagic, 8) != 0) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: the magic is not EMBRSESS (not an ember session state)");
  }
  if (get32(data + 8) != kVersion) {
    return Status::error(EMBER_ERR_VERSION, "saved state: version %u; this build reads version %u", get32(data + 8),
                         kVersion);
  }
  if (get32(data + 12) != kHeaderBytes) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: header_bytes = %u, expected %llu", get32(data + 12),
                         static_cast<unsigned long long>(kHeaderBytes));
  }
  if (get32(data + 60) >> 16 != 0 || get32(data + 68) != 0) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: reserved header bytes are not zero");
  }
  Header h;
  std::memcpy(h.model.data(), data + 16, 32);
  h.context = get32(data + 48);
  h.n_layers = get32(data + 52);
  h.kv_dim = get32(data + 56);
  h.kv_type_k = data[60];
  h.kv_type_v = data[61];
  h.n_pos = get32(data + 64);
  h.k_row_bytes = get64(data + 72);
  h.v_row_bytes = get64(data + 80);
  h.payload_bytes = get64(data + 88);
  for (uint8_t t : {h.kv_type_k, h.kv_type_v}) {
    if (t > static_cast<uint8_t>(KvType::Q8_0)) {
      return Status::error(EMBER_ERR_FORMAT, "saved state: kv type %u is not a known type (0 f32, 1 f16, 2 q8_0)", t);
    }
  }
  if (h.n_pos > h.context) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: %u positions in a context of %u", h.n_pos, h.context);
  }
  for (int v = 0; v < 2; ++v) {
    const KvType t = static_cast<KvType>(v ? h.kv_type_v : h.kv_type_k);
    const uint64_t stored = v ? h.v_row_bytes : h.k_row_bytes;
    auto want = kv_row_bytes(t, h.kv_dim);
    if (!want.is_ok() || want.value() != stored) {
      return Status::error(EMBER_ERR_FORMAT, "saved state: %s_row_bytes = %llu does not fit kv_dim %u of type %s",
                           v ? "v" : "k", static_cast<unsigned long long>(stored), h.kv_dim, kv_type_name(t));
    }
  }
  uint64_t payload = 0;
  if (!payload_size(h.n_pos, h.n_layers, h.k_row_bytes, h.v_row_bytes, &payload) || payload != h.payload_bytes) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: payload_bytes = %llu does not match its %u positions, %u "
                         "layers and rows",
                         static_cast<unsigned long long>(h.payload_bytes), h.n_pos, h.n_layers);
  }
  const uint64_t total = kHeaderBytes + payload + kDigestBytes;
  if (size < total) {
    return Status::error(EMBER_ERR_TRUNCATED, "saved state: %llu bytes, but its header describes %llu",
                         static_cast<unsigned long long>(size), static_cast<unsigned long long>(total));
  }
  if (size > total) {
    return Status::error(EMBER_ERR_FORMAT, "saved state: %llu bytes after the %llu its header describes",
                         static_cast<unsigned long long>(size - total), static_cast<unsigned long long>(total));
  }
  const Sha256Digest d = sha256(data, static_cast<size_t>(total - kDigestBytes));
  if (std::memcmp(d.data(), data + total - kDigestBytes, kDigestBytes) != 0) {
    return Status::error(EMBER_ERR_INTEGRITY, "saved state: the SHA-256 of its contents does not match (corrupt)");
  }

  // What the state is for against this session.
  const HParams& hp = model_.hparams();
  const Sha256Digest here = model_identity();
  if (h.model != here) {
    return mismatch("the model identity (SHA-256 of the file's metadata)", hex_prefix(h.model) + "...",
                    hex_prefix(here) + "...");
  }
  if (h.context != static_cast<uint32_t>(graph_.context)) {
    return mismatch("context_length", std::to_string(h.context), std::to_string(graph_.context));
  }
  if (h.kv_type_k != static_cast<uint8_t>(graph_.kv_type_k)) {
    return mismatch("kv_type_k", kv_type_name(static_cast<KvType>(h.kv_type_k)), kv_type_name(graph_.kv_type_k));
  }
  if (h.kv_type_v != static_cast<uint8_t>(graph_.kv_type_v)) {
    return mismatch("kv_type_v", kv_type_name(static_cast<KvType>(h.kv_type_v)), kv_type_name(graph_.kv_type_v));
  }
  if (h.n_layers != hp.n_layers) return mismatch("n_layers", std::to_string(h.n_layers), std::to_string(hp.n_layers));
  if (h.kv_dim != hp.kv_dim()) return mismatch("kv_dim", std::to_string(h.kv_dim), std::to_string(hp.kv_dim()));
  const uint8_t* ids = data + kHeaderBytes;
  for (uint32_t i = 0; i < h.n_pos; ++i) {
    const int32_t id = static_cast<int32_t>(get32(ids + 4 * i));
    if (id < 0 || static_cast<uint32_t>(id) >= hp.vocab_size) {
      return Status::error(EMBER_ERR_FORMAT, "saved state: token %u = %d is outside the vocabulary (0..%u)", i, id,
                           hp.vocab_size - 1);
    }
  }

  // Checked: now the session changes.
  const int32_t n = static_cast<int32_t>(h.n_pos);
  const uint8_t* p = ids + 4ull * h.n_pos;
  for (uint32_t l = 0; l < h.n_layers && n > 0; ++l) {
    Status st = backend_->write_kv(static_cast<int32_t>(l), false, n, p);
    p += h.k_row_bytes * h.n_pos;
    if (st.is_ok()) st = backend_->write_kv(static_cast<int32_t>(l), true, n, p);
    p += h.v_row_bytes * h.n_pos;
    if (!st.is_ok()) {
      // A backend that cannot write its cache refuses before any row moved.
      if (l == 0 && st.code() == EMBER_ERR_UNSUPPORTED) return st;
      positions_[0] = 0;
      return st.with_context("loading a saved state (the session was reset)");
    }
  }
  for (int32_t i = 0; i < n; ++i) history_[i] = static_cast<int32_t>(get32(ids + 4ull * i));
  positions_[0] = n;
  return Status::ok();
}

}  // namespace ember
