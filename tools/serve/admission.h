// Which connections `ember serve` takes, and the memory its HTTP side may
// hold.
//
// Slots: --max-connections general ones, at most --max-connections-per-client
// of them from one address, and a few spare ones beyond them. A connection
// that finds the general slots full (or its address at its cap) gets a spare
// slot, where only GET/HEAD /health and /metrics are served and anything
// else is answered 503 (or 429 for the address cap) with Retry-After, over
// TLS too; so a load balancer's probe and an honest refusal get through
// while slow clients hold every general slot. Spare slots hold a connection
// for one short request (kSpareHeaderMs) and take one connection per address.
// Only when the spares are taken too is a connection closed unanswered.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "tools/serve/http_request.h"
#include "tools/serve/request_reader.h"

namespace ember::serve {

struct AdmissionLimits {
  int max_connections = 64;  // general slots
  int max_per_client = 32;   // general slots one address may hold (0: no cap)
  int spare = 4;             // spare slots (one per address)
};

// How long a spare slot waits for its request's headers.
constexpr int kSpareHeaderMs = 2000;

class Admission {
 public:
  enum class Slot { kGeneral, kSpare, kRefused };
  struct Admit {
    Slot slot = Slot::kRefused;
    bool client_cap = false;  // the address holds its cap (else: the general slots are full)
  };

  explicit Admission(const AdmissionLimits& limits) : limits_(limits) {}
  // Takes a slot for a connection from `client` (an address). Thread-safe.
  Admit admit(const std::string& client);
  // Gives the slot back (slot as admit() returned it; kRefused: nothing).
  void release(const std::string& client, Slot slot);
  // Connections held (general and spare).
  int open() const;

 private:
  struct Counts {
    int general = 0;
    int spare = 0;
  };
  AdmissionLimits limits_;
  mutable std::mutex mutex_;
  int general_ = 0, spare_ = 0;
  std::map<std::string, Counts> clients_;
};

// The bytes the HTTP side may hold, stated in the plan `ember serve` prints
// (and checked against its peak RSS by tests/serve/hostile_client_test.mjs).
// Per connection: its receive buffer, the headers, the body, the JSON
// lexer's buffer (<= the body), what the reader keeps (ReadLimits), the
// prompt's tokenization, the response, and a fixed allowance (the thread's
// stack, TLS buffers). Prompts longer than kTokenizeGateBytes are rendered
// and tokenized one at a time across the server (the tokenizer takes ~40
// bytes of working memory per byte of text: a tenth of a second and a few
// hundred MiB for 8 MiB), counted once beside the connections.
constexpr uint64_t kTokenizeGateBytes = 16 << 10;
constexpr uint64_t kTokenizerBytesPerByte = 64;  // measured ~40 (tools/serve/admission.cpp)
constexpr uint64_t kConnectionFixedBytes = 256 << 10;

struct HttpMemoryInputs {
  HttpLimits http;
  ReadLimits read;
  AdmissionLimits admission;
  uint64_t read_buffer = 0;         // each connection's receive buffer
  uint64_t max_prompt_bytes = 0;    // the longest prompt text tokenized (context x longest piece)
  uint64_t max_response_bytes = 0;  // the longest response body built
};

struct HttpMemory {
  uint64_t per_connection = 0;
  uint64_t connections = 0;  // general + spare slots
  uint64_t gate = 0;         // the one long prompt tokenized at a time
  uint64_t total = 0;
};

HttpMemory http_memory_bound(const HttpMemoryInputs& in);

}  // namespace ember::serve
