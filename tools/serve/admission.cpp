#include "tools/serve/admission.h"

#include <algorithm>

namespace ember::serve {

Admission::Admit Admission::admit(const std::string& client) {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts& c = clients_[client];
  Admit a;
  a.client_cap = limits_.max_per_client > 0 && c.general >= limits_.max_per_client;
  if (!a.client_cap && general_ < limits_.max_connections) {
    ++general_;
    ++c.general;
    a.slot = Slot::kGeneral;
    return a;
  }
  if (spare_ < limits_.spare && c.spare == 0) {
    ++spare_;
    ++c.spare;
    a.slot = Slot::kSpare;
    return a;
  }
  if (c.general == 0 && c.spare == 0) clients_.erase(client);
  a.slot = Slot::kRefused;
  return a;
}

void Admission::release(const std::string& client, Slot slot) {
  if (slot == Slot::kRefused) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  if (slot == Slot::kGeneral) {
    --general_;
    --it->second.general;
  } else {
    --spare_;
    --it->second.spare;
  }
  if (it->second.general == 0 && it->second.spare == 0) clients_.erase(it);
}

int Admission::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return general_ + spare_;
}

HttpMemory http_memory_bound(const HttpMemoryInputs& in) {
  HttpMemory m;
  const uint64_t body = in.http.max_body;
  const uint64_t headers = in.http.max_url + in.http.max_header_bytes + in.http.max_headers * 96;
  const uint64_t parse = body /* the lexer's buffer */ + in.read.kept_per_body_byte * body + in.read.kept_slack;
  // The ids buffer holds at most one more id than a prompt that fits.
  const uint64_t tokenize = std::min(in.max_prompt_bytes, kTokenizeGateBytes) * kTokenizerBytesPerByte;
  m.per_connection = in.read_buffer + headers + body + parse + tokenize + in.max_response_bytes + kConnectionFixedBytes;
  m.connections = static_cast<uint64_t>(in.admission.max_connections) + static_cast<uint64_t>(in.admission.spare);
  m.gate = in.max_prompt_bytes > kTokenizeGateBytes ? in.max_prompt_bytes * kTokenizerBytesPerByte : 0;
  m.total = m.per_connection * m.connections + m.gate;
  return m;
}

}  // namespace ember::serve
