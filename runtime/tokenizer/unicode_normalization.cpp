#include "tokenizer/unicode_normalization.h"

#include <algorithm>
#include <iterator>

namespace ember {
namespace {

struct CanonicalBaseRange {
  uint32_t first;
  uint32_t last;  // inclusive
  uint32_t base;
};

struct LowercaseRun {
  uint32_t first;
  uint32_t last;  // inclusive
  uint32_t step;  // first, first + step, ... map; the code points between do not
  int32_t delta;
};

struct CodepointSpan {
  uint32_t first;
  uint32_t last;  // inclusive
};

// kUnicodeTablesVersion, kCanonicalBase, kLowercase, kControl: made by the
// build (tokenizer/gen_unicode_tables.py), sorted, not overlapping.
#include "unicode_tables.inc"

// The entry whose `last` is the first at or above cp (nullptr when none);
// the caller checks `first`.
template <typename Entry, size_t N>
const Entry* find_entry(const Entry (&table)[N], uint32_t cp) {
  const Entry* it = std::lower_bound(std::begin(table), std::end(table), cp,
                                     [](const Entry& e, uint32_t v) { return e.last < v; });
  return it == std::end(table) || it->first > cp ? nullptr : it;
}

}  // namespace

uint32_t unicode_canonical_base(uint32_t cp) {
  const CanonicalBaseRange* r = find_entry(kCanonicalBase, cp);
  return r == nullptr ? cp : r->base;
}

uint32_t unicode_simple_lowercase(uint32_t cp) {
  const LowercaseRun* r = find_entry(kLowercase, cp);
  if (r == nullptr || (cp - r->first) % r->step != 0) return cp;
  return static_cast<uint32_t>(static_cast<int64_t>(cp) + r->delta);
}

bool is_unicode_control(uint32_t cp) { return find_entry(kControl, cp) != nullptr; }

const char* unicode_tables_version() { return kUnicodeTablesVersion; }

}  // namespace ember
