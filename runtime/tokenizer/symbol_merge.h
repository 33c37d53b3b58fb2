// The merge loop shared by the SentencePiece and byte-level BPE encoders:
// adjacent symbols are merged best-pair-first until no pair qualifies. A
// max-heap of candidate pairs plus a linked list of live symbols makes it
// O(n log n) in the number of symbols (llama2.c rescans all pairs after each
// merge: O(n^2), seconds for a long prompt).
#pragma once

#include <cstdint>
#include <queue>
#include <string_view>
#include <vector>

namespace ember {

// A span [start, start + len) of the working text; len == 0 once merged
// into its left neighbour. prev/next link the live symbols (-1 at the ends).
struct MergeSymbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;
};

// Merges `symbols` (laid out left to right over `text`, linked in order).
// `priority(left, right, &p)` says whether the pair may merge and with what
// priority p (higher first); ties go to the leftmost pair, as in llama2.c's
// scan and llama.cpp's queues. Afterwards the live symbols are reached from
// symbols[0] through `next`.
template <typename PairPriority>
void merge_symbols(std::string_view text, std::vector<MergeSymbol>& symbols,
                   PairPriority&& priority) {
  struct Candidate {
    double priority;
    int32_t left;
    int32_t right;
    uint32_t len;  // left.len + right.len when queued: detects stale entries
  };
  struct Lower {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> queue;
  auto view = [&](int32_t i) { return text.substr(symbols[i].start, symbols[i].len); };
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    double p = 0;
    if (!priority(view(l), view(r), &p)) return;
    queue.push({p, l, r, symbols[l].len + symbols[r].len});
  };
  for (size_t i = 1; i < symbols.size(); ++i) {
    consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    MergeSymbol& l = symbols[c.left];
    MergeSymbol& r = symbols[c.right];
    // A symbol only grows by absorbing its right neighbour, which then
    // dies; so an entry is current iff both are alive, adjacent and their
    // lengths are unchanged.
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
}

}  // namespace ember
