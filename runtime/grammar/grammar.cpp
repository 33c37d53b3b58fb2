#include "grammar/grammar.h"

namespace ember {

std::vector<bool> nullable_rules(const Grammar& g) {
  const size_t n = g.alts.size();
  std::vector<bool> nullable(n, false);
  // Fixed point: a rule is nullable when one alternative's elements are all
  // nullable rules (an empty alternative included).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t a : g.alts[r]) {
        bool all = true;
        for (uint32_t i = a; i < g.elems.size() && g.elems[i].kind != GrammarElem::End; ++i) {
          const GrammarElem& e = g.elems[i];
          if (e.kind != GrammarElem::Ref || e.value >= n || !nullable[e.value]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

namespace {

// The rules rule r can start with: the leading Refs of each alternative, past
// every nullable one.
std::vector<std::vector<uint32_t>> leading_refs(const Grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<uint32_t>> lead(g.alts.size());
  for (size_t r = 0; r < g.alts.size(); ++r) {
    for (uint32_t a : g.alts[r]) {
      for (uint32_t i = a; i < g.elems.size() && g.elems[i].kind == GrammarElem::Ref; ++i) {
        lead[r].push_back(g.elems[i].value);
        if (!nullable[g.elems[i].value]) break;
      }
    }
  }
  return lead;
}

}  // namespace

Status check_grammar(const Grammar& g, const GrammarLimits& limits) {
  const size_t n = g.alts.size();
  if (n == 0) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: no rules");
  if (n > limits.max_rules) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: %zu rules, more than the limit of %u", n,
                         limits.max_rules);
  }
  if (g.elems.size() > limits.max_elements) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: %zu elements, more than the limit of %u",
                         g.elems.size(), limits.max_elements);
  }
  if (g.names.size() != n) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule names do not match rules");
  if (g.root >= n) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: no root rule");
  for (size_t r = 0; r < n; ++r) {
    if (g.alts[r].empty()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule '%s' has no alternative", g.names[r].c_str());
    }
    for (uint32_t a : g.alts[r]) {
      uint32_t i = a;
      for (; i < g.elems.size() && g.elems[i].kind != GrammarElem::End; ++i) {
        const GrammarElem& e = g.elems[i];
        if (e.kind == GrammarElem::Ref && e.value >= n) {
          return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule '%s' refers to rule %u, which does not exist",
                               g.names[r].c_str(), e.value);
        }
        if (e.kind == GrammarElem::Chars && e.value >= g.char_sets.size()) {
          return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule '%s' refers to character set %u, which does not exist",
                               g.names[r].c_str(), e.value);
        }
        if (e.kind != GrammarElem::Ref && e.kind != GrammarElem::Chars) {
          return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule '%s' has an element of kind %d",
                               g.names[r].c_str(), static_cast<int>(e.kind));
        }
      }
      if (i >= g.elems.size()) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: rule '%s' has an alternative without an end",
                             g.names[r].c_str());
      }
    }
  }
  // Left recursion: a cycle in "starts with" (iterative DFS, colours).
  const std::vector<bool> nullable = nullable_rules(g);
  const std::vector<std::vector<uint32_t>> lead = leading_refs(g, nullable);
  std::vector<uint8_t> colour(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s = 0; s < n; ++s) {
    if (colour[s]) continue;
    stack.push_back({s, 0});
    colour[s] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == lead[r].size()) {
        colour[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t to = lead[r][next++];
      if (colour[to] == 1) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                             "grammar: rule '%s' is left-recursive (it can begin with itself, through '%s')",
                             g.names[to].c_str(), g.names[r].c_str());
      }
      if (colour[to] == 0) {
        colour[to] = 1;
        stack.push_back({to, 0});
      }
    }
  }
  return Status::ok();
}

}  // namespace ember
