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

// "Rule r can start with rule to": a leading Ref of one of r's alternatives,
// past every nullable one. `grows` when something follows the Ref in its
// alternative: expanding it pushes a stack node, so a cycle through such an
// edge would push without end. A Ref that ends its alternative (a tail
// call: the form of every repetition rule, R ::= x R | ) pushes nothing, so
// a cycle of those returns to a (position, stack) pair the matcher's
// closure has seen and ends there.
struct LeadEdge {
  uint32_t to;
  bool grows;
};

std::vector<std::vector<LeadEdge>> leading_refs(const Grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<LeadEdge>> lead(g.alts.size());
  for (size_t r = 0; r < g.alts.size(); ++r) {
    for (uint32_t a : g.alts[r]) {
      for (uint32_t i = a; i < g.elems.size() && g.elems[i].kind == GrammarElem::Ref; ++i) {
        lead[r].push_back({g.elems[i].value, g.elems[i + 1].kind != GrammarElem::End});
        if (!nullable[g.elems[i].value]) break;
      }
    }
  }
  return lead;
}

// Strongly connected components of the lead graph (Kosaraju, iterative: a
// grammar of 65,536 rules must not recurse 65,536 deep): per rule, its
// component's number.
std::vector<uint32_t> lead_components(const std::vector<std::vector<LeadEdge>>& lead) {
  const size_t n = lead.size();
  std::vector<std::vector<uint32_t>> back(n);
  for (size_t r = 0; r < n; ++r) {
    for (const LeadEdge& e : lead[r]) back[e.to].push_back(static_cast<uint32_t>(r));
  }
  // Pass 1: rules in order of finishing.
  std::vector<uint32_t> order;
  std::vector<uint8_t> seen(n, 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s = 0; s < n; ++s) {
    if (seen[s]) continue;
    seen[s] = 1;
    stack.push_back({s, 0});
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == lead[r].size()) {
        order.push_back(r);
        stack.pop_back();
        continue;
      }
      const uint32_t to = lead[r][next++].to;
      if (!seen[to]) {
        seen[to] = 1;
        stack.push_back({to, 0});
      }
    }
  }
  // Pass 2: on the reversed graph, latest finisher first.
  const uint32_t kUnset = 0xffffffffu;
  std::vector<uint32_t> comp(n, kUnset);
  std::vector<uint32_t> todo;
  uint32_t count = 0;
  for (size_t k = n; k-- > 0;) {
    if (comp[order[k]] != kUnset) continue;
    comp[order[k]] = count;
    todo.push_back(order[k]);
    while (!todo.empty()) {
      const uint32_t r = todo.back();
      todo.pop_back();
      for (uint32_t from : back[r]) {
        if (comp[from] == kUnset) {
          comp[from] = count;
          todo.push_back(from);
        }
      }
    }
    ++count;
  }
  return comp;
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
  // Left recursion the matcher could not end: a cycle in "starts with"
  // that takes a growing edge. A cycle of tail calls only is kept: the
  // repetition of something that can match nothing ("a"?)* is one, and
  // means the repetition of its non-empty matches.
  const std::vector<bool> nullable = nullable_rules(g);
  const std::vector<std::vector<LeadEdge>> lead = leading_refs(g, nullable);
  const std::vector<uint32_t> comp = lead_components(lead);
  for (size_t r = 0; r < n; ++r) {
    for (const LeadEdge& e : lead[r]) {
      if (e.grows && comp[e.to] == comp[r]) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                             "grammar: rule '%s' is left-recursive (it can begin with itself, through '%s')",
                             g.names[e.to].c_str(), g.names[r].c_str());
      }
    }
  }
  return Status::ok();
}

}  // namespace ember
