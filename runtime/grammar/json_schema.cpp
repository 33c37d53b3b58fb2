// JSON Schema to GBNF. The grammar accepts a subset of what a validator
// accepts, never more (oneOf aside, below): every text it lets a model write
// validates. The choices that make it stricter, all deliberate:
//
// - Objects: the declared properties in declaration order (`properties`,
//   then `required` names it does not declare), required ones always,
//   optional ones optionally. Extra keys only where the schema gives them a
//   schema: `patternProperties` (keys the pattern matches), or
//   `additionalProperties: {schema}` (keys, without escapes, that differ from
//   every declared name); after the declared ones. `additionalProperties`
//   absent or true adds no extra keys, except to an object that declares
//   none (no properties, required or patternProperties): any object.
// - No `type`: the types the keywords present imply (properties -> object,
//   items -> array, ...); none -> any JSON value.
// - Numbers: at most 16 integer and 16 fraction digits (exponents, of up to
//   3 digits, only where no bound applies); integers without fraction or
//   exponent; no "-0". Bounds exact for integers; for numbers, integer
//   bounds only (a fractional bound is refused).
// - Strings: `\u` escapes only for valid code points (surrogates in pairs);
//   lengths counted in code points; `pattern` writes escapes only for " and
//   \; format grammars accept a faithful subset (below).
// - Arrays past `prefixItems` with no `items`: any JSON value.
// - enum/const: each value in its compact form (the values factored by
//   common prefix into a trie of rules).
// - oneOf is translated as anyOf: a text matching two branches is allowed
//   by the grammar though a validator rejects it.
// - Whitespace between tokens: none, one space, or a newline and up to 20
//   spaces.
//
// Ignored (annotations and unknown keys): title, description, default,
// examples, example, $comment, $schema, $id, id, $anchor, readOnly,
// writeOnly, deprecated, contentMediaType, contentEncoding, discriminator,
// xml, externalDocs, x-*, unknown format names, and any other key not named
// here. Refused by name (EMBER_ERR_UNSUPPORTED, with the JSON pointer): see
// kRefused.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_keywords.h"
#include "grammar/json_schema_text.h"
#include "grammar/schema_regex.h"

namespace ember {

namespace {

using json = nlohmann::ordered_json;
namespace rx = schema_regex;
using namespace schema_text;  // the text pieces (json_schema_text.h)
using namespace schema_keywords;  // keyword checks, $ref and allOf (json_schema_keywords.h)

class Translator {
 public:
  Translator(const json& root, const GrammarLimits& limits) : root_(root), limits_(limits) {
    for (const Primitive& p : kPrimitives) used_names_.insert(p.name);
    used_names_.insert("root");
  }

  Result<std::string> run() {
    EMBER_ASSIGN_OR_RETURN(Expr top, translate(root_, "", 0, "root"));
    if (top.never) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "schema at /: accepts no JSON value");
    // Referenced schemas, each once (the rule name stands for it while it is
    // translated, so recursion ends at the name).
    for (size_t i = 0; i < ref_queue_.size(); ++i) {
      const auto [ptr, name] = ref_queue_[i];
      const json* target = nullptr;
      EMBER_TRY(resolve_pointer(root_, ptr, &target));
      EMBER_ASSIGN_OR_RETURN(Expr e, translate(*target, ptr.substr(1), 0, name));
      EMBER_TRY(define(name, e.never ? use("never") : e.text));
    }
    std::string out = "root ::= " + top.text + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const Primitive& p : kPrimitives) {
      if (prims_.count(p.name)) out += std::string(p.name) + " ::= " + p.body + "\n";
    }
    const size_t n_rules = rules_.size() + prims_.size() + 1;
    if (n_rules > limits_.max_rules) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "json schema: %zu grammar rules, more than limits.max_rules (%u)",
                           n_rules, limits_.max_rules);
    }
    if (out.size() > limits_.max_text_bytes) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "json schema: grammar text of %zu bytes, more than limits.max_text_bytes (%zu)", out.size(),
                           limits_.max_text_bytes);
    }
    return out;
  }

 private:
  struct Expr {
    std::string text;
    bool never = false;
  };
  static Expr never() { return Expr{"", true}; }

  // Marks a primitive (and what it uses) for output; returns its name.
  std::string use(const char* name) {
    if (prims_.insert(name).second) {
      for (const Primitive& p : kPrimitives) {
        if (std::string(p.name) != name) continue;
        for (const char* u : p.uses)
          if (u) use(u);
      }
    }
    return name;
  }

  std::string fresh_name(const std::string& hint) {
    std::string base;
    for (char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (ok) {
        base += c;
      } else if (!base.empty() && base.back() != '-') {
        base += '-';
      }
    }
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.size() > 48) base.resize(48);
    if (base.empty()) base = "rule";
    // The next suffix per base: a schema of 4,000 properties asks for the
    // same base thousands of times, and counting up from 2 each time was
    // quadratic.
    std::string name = base;
    int& next = next_suffix_[base];
    if (next < 2) next = 2;
    while (used_names_.count(name)) name = base + "-" + std::to_string(next++);
    used_names_.insert(name);
    return name;
  }

  Status charge(size_t bytes) {
    bytes_ += bytes;
    if (bytes_ > limits_.max_text_bytes) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "json schema: grammar text past limits.max_text_bytes (%zu)",
                           limits_.max_text_bytes);
    }
    if (rules_.size() + 1 > limits_.max_rules) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "json schema: grammar rules past limits.max_rules (%u)",
                           limits_.max_rules);
    }
    return Status::ok();
  }

  Status define(const std::string& name, const std::string& body) {
    EMBER_TRY(charge(name.size() + body.size() + 6));
    rules_.emplace_back(name, body);
    return Status::ok();
  }

  // A rule for `body`: an existing one with the same body, or a new one.
  Result<std::string> rule(const std::string& hint, const std::string& body) {
    auto it = by_body_.find(body);
    if (it != by_body_.end()) return it->second;
    const std::string name = fresh_name(hint);
    EMBER_TRY(define(name, body));
    by_body_.emplace(body, name);
    return name;
  }

  // The rule that stands for the schema at a local reference.
  Result<std::string> ref_rule(const std::string& ref, const std::string& ptr) {
    if (ref.empty() || ref[0] != '#') {
      return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword '$ref' at %s: remote reference '%s' is not supported",
                           at(ptr), ref.c_str());
    }
    if (ref == "#") return std::string("root");
    if (ref.size() > 1 && ref[1] != '/') {
      return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword '$ref' at %s: anchor reference '%s' is not supported",
                           at(ptr), ref.c_str());
    }
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    const json* target = nullptr;
    EMBER_TRY(resolve_pointer(root_, ref, &target).with_context(std::string("at ") + at(ptr)));
    const std::string name = fresh_name(ref.substr(ref.rfind('/') + 1));
    ref_rules_.emplace(ref, name);
    ref_queue_.emplace_back(ref, name);
    return name;
  }

  Result<Expr> translate(const json& s, const std::string& ptr, uint32_t depth, const std::string& hint) {
    if (depth > limits_.max_nesting) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "schema at %s: nested deeper than limits.max_nesting (%u)", at(ptr),
                           limits_.max_nesting);
    }
    if (++work_ > limits_.max_rules) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "schema at %s: more schemas to translate than limits.max_rules (%u)",
                           at(ptr), limits_.max_rules);
    }
    if (s.is_boolean()) return s.get<bool>() ? Expr{use("value")} : never();
    if (!s.is_object()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "schema at %s: must be an object or a boolean", at(ptr));
    }
    EMBER_TRY(check_keywords(s, ptr));
    if (s.contains("$ref")) {
      json rest = s;
      rest.erase("$ref");
      if (!has_validation(rest)) {
        EMBER_ASSIGN_OR_RETURN(std::string name, ref_rule(s["$ref"].get<std::string>(), ptr));
        return Expr{name};
      }
      json merged;
      EMBER_TRY(resolved_copy(root_, s, ptr, &merged));
      return translate(merged, ptr, depth + 1, hint);
    }
    if (s.contains("nullable") && s["nullable"].get<bool>()) {
      json rest = s;
      rest.erase("nullable");
      EMBER_ASSIGN_OR_RETURN(Expr e, translate(rest, ptr, depth + 1, hint));
      if (e.never) return Expr{use("null")};
      EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, e.text + " | " + use("null")));
      return Expr{name};
    }
    if (s.contains("allOf")) {
      json rest = s;
      rest.erase("allOf");
      json members = s["allOf"];
      if (has_validation(rest)) members.push_back(rest);
      json merged;
      EMBER_TRY(merge_all(root_, members, ptr, &merged));
      return translate(merged, ptr, depth + 1, hint);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) {
      if (s.contains("anyOf") && s.contains("oneOf")) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword 'oneOf' at %s: beside 'anyOf' is not supported", at(ptr));
      }
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      json base = s;
      base.erase(key);
      const bool distribute = has_validation(base);
      std::vector<std::string> alts;
      const json& branches = s[key];
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string bptr = ptr + "/" + key + "/" + std::to_string(i);
        Expr e;
        if (distribute) {
          json merged;
          EMBER_TRY(merge_all(root_, json::array({base, branches[i]}), bptr, &merged));
          EMBER_ASSIGN_OR_RETURN(e, translate(merged, bptr, depth + 1, hint + "-" + std::to_string(i)));
        } else {
          EMBER_ASSIGN_OR_RETURN(e, translate(branches[i], bptr, depth + 1, hint + "-" + std::to_string(i)));
        }
        if (!e.never) alts.push_back(e.text);
      }
      if (alts.empty()) return never();
      EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, join_alts(alts)));
      return Expr{name};
    }
    std::set<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) types.insert(t.get<std::string>());
      if (t.is_array())
        for (const json& e : t) types.insert(e.get<std::string>());
      if (types.count("number")) types.erase("integer");
      if (types.empty()) return never();
    }
    if (s.contains("enum") || s.contains("const")) return enum_values(s, ptr, types, hint);
    if (!s.contains("type")) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (in_list(kObjectKeys, it.key())) types.insert("object");
        if (in_list(kArrayKeys, it.key())) types.insert("array");
        if (in_list(kStringKeys, it.key())) types.insert("string");
        if (in_list(kNumberKeys, it.key())) types.insert("number");
      }
      if (types.empty()) return Expr{use("value")};
    }
    std::vector<std::string> alts;
    for (const char* t : {"object", "array", "string", "number", "integer", "boolean", "null"}) {
      if (!types.count(t)) continue;
      Expr e;
      const std::string th = types.size() > 1 ? hint + "-" + t : hint;
      if (std::string(t) == "object") {
        EMBER_ASSIGN_OR_RETURN(e, object(s, ptr, depth, th));
      } else if (std::string(t) == "array") {
        EMBER_ASSIGN_OR_RETURN(e, array(s, ptr, depth, th));
      } else if (std::string(t) == "string") {
        EMBER_ASSIGN_OR_RETURN(e, string(s, ptr, th));
      } else if (std::string(t) == "number" || std::string(t) == "integer") {
        EMBER_ASSIGN_OR_RETURN(e, number(s, ptr, std::string(t) == "integer", th));
      } else {
        e = Expr{use(t)};
      }
      if (!e.never) alts.push_back(e.text);
    }
    if (alts.empty()) return never();
    if (alts.size() == 1) return Expr{alts[0]};
    EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, join_alts(alts)));
    return Expr{name};
  }

  Result<Expr> enum_values(const json& s, const std::string& ptr, const std::set<std::string>& types,
                           const std::string& hint) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (!is_annotation(k) && k != "enum" && k != "const" && k != "type" && k != "nullable") {
        return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword '%s' at %s: beside 'enum'/'const' is not supported",
                             k.c_str(), at(ptr));
      }
    }
    std::vector<json> values;
    if (s.contains("enum")) {
      for (const json& v : s["enum"])
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
    } else {
      values.push_back(s["const"]);
    }
    auto type_ok = [&](const json& v) {
      if (types.empty()) return true;
      if (v.is_string()) return types.count("string") > 0;
      if (v.is_boolean()) return types.count("boolean") > 0;
      if (v.is_null()) return types.count("null") > 0;
      if (v.is_object()) return types.count("object") > 0;
      if (v.is_array()) return types.count("array") > 0;
      if (types.count("number")) return true;
      return types.count("integer") > 0 && (v.is_number_integer() || v.get<double>() == std::floor(v.get<double>()));
    };
    std::vector<std::string> texts;
    for (const json& v : values) {
      if (!type_ok(v)) continue;
      // An integral float (1.0) is written as the integer it equals.
      if (v.is_number_float() && std::fabs(v.get<double>()) < 1e15 && v.get<double>() == std::floor(v.get<double>())) {
        texts.push_back(std::to_string(static_cast<int64_t>(v.get<double>())));
      } else {
        texts.push_back(v.dump(-1, ' ', false, json::error_handler_t::replace));
      }
    }
    if (texts.empty()) return never();
    EMBER_ASSIGN_OR_RETURN(std::string name, one_of_texts(texts, hint));
    return Expr{name};
  }

  // A rule matching exactly one of `texts` (UTF-8), factored by common
  // prefix: one rule per node of their trie where it branches, so the
  // matcher keeps one stack per distinct continuation, not one per value (an
  // enum of 500 strings all begin with '"'). Built from the sorted texts
  // with a work list: no recursion, memory linear in the text.
  Result<std::string> one_of_texts(const std::vector<std::string>& texts, const std::string& hint) {
    std::vector<std::vector<uint32_t>> cps;
    for (const std::string& t : texts) cps.push_back(rx::decode_utf8(t));
    std::sort(cps.begin(), cps.end());
    cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
    std::string key;  // the same values again share the rule
    for (const auto& c : cps) key += literal(cp_text(c, 0, c.size())) + " | ";
    if (auto it = by_body_.find(key); it != by_body_.end()) return it->second;
    struct Branch {
      size_t lo, hi, depth;  // cps[lo, hi) share their first `depth` code points
      std::string name;
    };
    std::vector<Branch> todo{{0, cps.size(), 0, fresh_name(hint)}};
    const std::string root = todo[0].name;
    while (!todo.empty()) {
      const Branch b = todo.back();
      todo.pop_back();
      std::vector<std::string> alts;
      size_t a = b.lo;
      if (cps[a].size() == b.depth) alts.push_back("\"\""), ++a;  // sorted: the prefix itself comes first
      while (a < b.hi) {
        size_t e = a + 1;
        while (e < b.hi && cps[e][b.depth] == cps[a][b.depth]) ++e;
        // The group's common prefix: that of its first and last (sorted).
        size_t d = b.depth + 1;
        while (d < cps[a].size() && d < cps[e - 1].size() && cps[a][d] == cps[e - 1][d]) ++d;
        std::string alt = literal(cp_text(cps[a], b.depth, d));
        if (e - a > 1) {
          todo.push_back({a, e, d, fresh_name(hint)});
          alt += " " + todo.back().name;
        }
        alts.push_back(std::move(alt));
        a = e;
      }
      EMBER_TRY(define(b.name, join_alts(alts)));
    }
    by_body_.emplace(key, root);
    return root;
  }

  static std::string cp_text(const std::vector<uint32_t>& cps, size_t from, size_t to) {
    std::string out;
    for (size_t i = from; i < to; ++i) rx::append_utf8(out, cps[i]);
    return out;
  }

  // x repeated lo..hi times (hi may be kUnbounded); counts past
  // limits.max_repeat are written as nested repetitions, up to its square.
  Result<std::string> repeat(const std::string& x, uint64_t lo, uint64_t hi, const char* key, const std::string& ptr) {
    const uint64_t R = limits_.max_repeat;
    const uint64_t biggest = hi == rx::kUnbounded ? lo : hi;
    if (R == 0 || biggest > R * R) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "'%s' at %s: %llu is past limits.max_repeat (%u) squared", key,
                           at(ptr), static_cast<unsigned long long>(biggest), limits_.max_repeat);
    }
    auto fixed = [&](uint64_t c) -> std::string {
      if (c == 0) return "";
      if (c <= R) return x + repeat_suffix(c, c);
      std::string out = "( " + x + repeat_suffix(R, R) + " )" + repeat_suffix(c / R, c / R);
      if (c % R) out += " " + x + repeat_suffix(c % R, c % R);
      return out;
    };
    auto upto = [&](uint64_t c) -> std::string {
      if (c == 0) return "";
      if (c <= R) return x + repeat_suffix(0, c);
      const uint64_t q = c / R, r = c % R;
      std::string a = (q > 1 ? "( " + x + repeat_suffix(R, R) + " )" + repeat_suffix(0, q - 1) + " " : "") + x +
                      repeat_suffix(0, R);
      std::string b = "( " + x + repeat_suffix(R, R) + " )" + repeat_suffix(q, q) + (r ? " " + x + repeat_suffix(0, r) : "");
      return "( " + a + " | " + b + " )";
    };
    if (lo <= R && (hi == rx::kUnbounded || hi <= R)) return x + repeat_suffix(lo, hi);
    std::string out = fixed(lo);
    const std::string more = hi == rx::kUnbounded ? x + "*" : upto(hi - lo);
    if (!more.empty()) out += (out.empty() ? "" : " ") + more;
    return out.empty() ? std::string("\"\"") : out;
  }

  static uint64_t count_of(const json& s, const char* key, uint64_t absent) {
    if (!s.contains(key)) return absent;
    const json& v = s[key];
    if (v.is_number_unsigned()) return std::min<uint64_t>(v.get<uint64_t>(), rx::kUnbounded - 1);
    const double d = v.get<double>();
    return d >= double(rx::kUnbounded - 1) ? rx::kUnbounded - 1 : static_cast<uint64_t>(d);
  }

  Result<Expr> string(const json& s, const std::string& ptr, const std::string& hint) {
    const uint64_t min_len = count_of(s, "minLength", 0);
    const uint64_t max_len = count_of(s, "maxLength", rx::kUnbounded);
    if (min_len > max_len) return never();
    const Format* format = nullptr;
    if (s.contains("format")) {
      for (const Format& f : kFormats)
        if (s["format"].get<std::string>() == f.name) format = &f;
    }
    const std::string q = "\"\\\"\"";
    if (format && s.contains("pattern")) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword 'pattern' at %s: beside 'format' is not supported", at(ptr));
    }
    if (format) {
      if (min_len > format->min_len || max_len < format->max_len) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "schema keyword '%s' at %s: beside format '%s' is not supported",
                             min_len > format->min_len ? "minLength" : "maxLength", at(ptr), format->name);
      }
      EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, q + " " + use(format->name) + " " + q));
      return Expr{name};
    }
    if (s.contains("pattern")) {
      const std::string where = std::string("schema keyword 'pattern' at ") + at(ptr);
      EMBER_ASSIGN_OR_RETURN(rx::Regex re, rx::parse(s["pattern"].get<std::string>(), where, limits_));
      const rx::LengthBounds b = rx::length_bounds(re);
      if (b.min < min_len || (max_len != rx::kUnbounded && (b.max == rx::kUnbounded || b.max > max_len))) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "schema keyword '%s' at %s: beside a 'pattern' that does not imply it is not supported",
                             b.min < min_len ? "minLength" : "maxLength", at(ptr));
      }
      EMBER_ASSIGN_OR_RETURN(std::string body, rx::to_gbnf(re, where, use("char")));
      EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, q + " " + body + " " + q));
      return Expr{name};
    }
    if (min_len == 0 && max_len == rx::kUnbounded) return Expr{use("string")};
    EMBER_ASSIGN_OR_RETURN(std::string chars, repeat(use("char"), min_len, max_len, "maxLength", ptr));
    EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, q + " " + chars + " " + q));
    return Expr{name};
  }

  // A bound of `key` for an integer (rounded inward) or a number (integral
  // values only); `exclusive` for exclusiveMinimum/exclusiveMaximum.
  Status bound(const json& s, const std::string& ptr, const char* key, bool is_min, bool integer, Bound* b, bool* never_out) {
    if (!s.contains(key)) return Status::ok();
    const json& v = s[key];
    if (v.is_boolean()) return Status::ok();  // draft-4 form: read with minimum/maximum
    const double d = v.get<double>();
    if (!std::isfinite(d)) return malformed(key, ptr, "must be a finite number");
    bool exclusive = std::string(key).rfind("exclusive", 0) == 0;
    // Draft 4: exclusiveMinimum: true makes minimum exclusive.
    const char* draft4 = is_min ? "exclusiveMinimum" : "exclusiveMaximum";
    if (!exclusive && s.contains(draft4) && s[draft4].is_boolean()) exclusive = s[draft4].get<bool>();
    double r = d;
    if (d != std::floor(d)) {
      if (!integer) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "schema keyword '%s' at %s: %g is not an integer (number bounds are honoured for integers only)",
                             key, at(ptr), d);
      }
      r = is_min ? std::ceil(d) : std::floor(d);
      exclusive = false;
    }
    if (r > double(kCap)) {
      if (is_min) *never_out = true;
      return Status::ok();  // an upper bound past every generated number
    }
    if (r < -double(kCap)) {
      if (!is_min) *never_out = true;
      return Status::ok();
    }
    int64_t value = static_cast<int64_t>(r);
    if (integer && exclusive) {
      value += is_min ? 1 : -1;
      exclusive = false;
    }
    // Of two bounds on one side, the tighter one.
    const bool tighter = !b->present || (is_min ? (value > b->value || (value == b->value && exclusive))
                                                : (value < b->value || (value == b->value && exclusive)));
    if (tighter) *b = Bound{true, value, exclusive};
    return Status::ok();
  }

  Result<Expr> number(const json& s, const std::string& ptr, bool integer, const std::string& hint) {
    Bound lo, hi;
    bool empty = false;
    EMBER_TRY(bound(s, ptr, "minimum", true, integer, &lo, &empty));
    EMBER_TRY(bound(s, ptr, "exclusiveMinimum", true, integer, &lo, &empty));
    EMBER_TRY(bound(s, ptr, "maximum", false, integer, &hi, &empty));
    EMBER_TRY(bound(s, ptr, "exclusiveMaximum", false, integer, &hi, &empty));
    if (empty) return never();
    if (!lo.present && !hi.present) return Expr{use(integer ? "integer" : "number")};
    std::vector<std::string> alts;
    if (integer) {
      const int64_t a = lo.present ? lo.value : -kCap, b = hi.present ? hi.value : kCap;
      if (a > b) return never();
      if (a < 0) {
        std::vector<std::string> neg;
        uint_range(std::max<int64_t>(1, -std::min<int64_t>(b, -1)), -a, &neg);
        alts.push_back("\"-\" ( " + join_alts(neg) + " )");
      }
      if (b >= 0) uint_range(std::max<int64_t>(0, a), b, &alts);
    } else {
      // Non-negative values: magnitudes from max(lo, 0).
      Bound plo = lo.present && lo.value >= 0 ? lo : Bound{true, 0, false};
      Bound phi = hi;
      if (!(hi.present && (hi.value < 0 || (hi.value == 0 && hi.exclusive)))) magnitudes(plo, phi, "", &alts);
      // Negative values: magnitudes m = -v, m > 0, m <= -lo, m >= -hi.
      if (!(lo.present && lo.value >= 0)) {
        Bound nlo = hi.present && hi.value < 0 ? Bound{true, -hi.value, hi.exclusive} : Bound{true, 0, true};
        if (nlo.value == 0) nlo.exclusive = true;
        Bound nhi = lo.present ? Bound{true, -lo.value, lo.exclusive} : Bound{};
        magnitudes(nlo, nhi, "\"-\" ", &alts);
      }
    }
    if (alts.empty()) return never();
    EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, join_alts(alts)));
    return Expr{name};
  }

  // Object keys, written without escapes, that differ from each name in
  // `names`: a rule per node of the names' trie.
  Result<std::string> key_not_in(const std::vector<std::string>& names, const std::string& hint) {
    struct Node {
      std::map<uint32_t, size_t> kids;
      bool terminal = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& n : names) {
      size_t cur = 0;
      bool plain = true;
      for (uint32_t cp : rx::decode_utf8(n)) plain = plain && cp >= 0x20 && cp != '"' && cp != '\\';
      if (!plain) continue;  // a key with escapes is never generated anyway
      for (uint32_t cp : rx::decode_utf8(n)) {
        auto it = trie[cur].kids.find(cp);
        if (it == trie[cur].kids.end()) {
          trie.push_back(Node{});
          it = trie[cur].kids.emplace(cp, trie.size() - 1).first;
        }
        cur = it->second;
      }
      trie[cur].terminal = true;
    }
    const std::string kc = use("key-char");
    std::vector<std::string> node_names(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) node_names[i] = fresh_name(hint + "-key");
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<std::string> alts;
      if (!trie[i].terminal) alts.push_back("\"\"");
      std::string others = "[^\"\\\\\\x00-\\x1F";
      for (const auto& [cp, kid] : trie[i].kids) {
        std::string one;
        rx::append_utf8(one, cp);
        alts.push_back(literal(one) + " " + node_names[kid]);
        char buf[16];
        std::snprintf(buf, sizeof buf, cp < 0x10000 ? "\\u%04X" : "\\U%08X", cp);
        others += buf;
      }
      alts.push_back(others + "] " + kc + "*");
      EMBER_TRY(define(node_names[i], join_alts(alts)));
    }
    return node_names[0];
  }

  // One declared property: its `"key" ws ":" ws value ws` text.
  struct Member {
    std::string kv;
    bool required;
  };

  // The members of an object between its braces: the declared ones in
  // order (required always, optional optionally), then any number of
  // `extra` ones. Written from the last member back:
  //   after(i)  = "," ws choice(i), optional when members i.. are all optional
  //   choice(i) = kv(i) after(i+1) | choice(i+1)   (the second if i is optional)
  //   choice(k) = extra ("," ws extra)*
  // so a comma is read once and is followed by one stack per member that
  // may come next: live stacks stay linear in the optional members. Where
  // two texts use choice(i) (member i-1 optional) it is a rule, so the text
  // stays linear too.
  Result<std::string> member_list(const std::vector<Member>& members, const std::string& extra, const std::string& ws,
                                  const std::string& hint) {
    const std::string more_extra = extra.empty() ? "" : "( \",\" " + ws + " " + extra + " )*";
    std::string choice = extra.empty() ? "" : extra + " " + more_extra;  // choice(i+1)
    bool choice_alts = false;                                           // it has alternatives
    std::string after = more_extra;                                     // after(i+1)
    bool optional_tail = true;                                         // members i.. all optional
    for (size_t i = members.size(); i-- > 0;) {
      const Member& m = members[i];
      std::string own = m.kv + (after.empty() ? "" : " " + after);
      choice_alts = !m.required && !choice.empty();
      choice = choice_alts ? own + " | " + choice : std::move(own);
      optional_tail = optional_tail && !m.required;
      if (i > 0 && !members[i - 1].required) {  // used by choice(i-1) and after(i)
        EMBER_ASSIGN_OR_RETURN(choice, rule(hint + "-members", choice));
        choice_alts = false;
      }
      after = "\",\" " + ws + " " + (choice_alts ? "( " + choice + " )" : choice);
      if (optional_tail) after = "( " + after + " )?";
    }
    if (choice.empty()) return std::string();
    if (optional_tail) return "( " + choice + " )?";
    return choice_alts ? "( " + choice + " )" : choice;
  }

  Result<Expr> object(const json& s, const std::string& ptr, uint32_t depth, const std::string& hint) {
    const std::string ws = use("ws");
    std::vector<Member> members;
    std::vector<std::string> declared;
    std::set<std::string> required;
    if (s.contains("required"))
      for (const json& r : s["required"]) required.insert(r.get<std::string>());
    const json additional = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
    const bool closed = additional.is_boolean() && !additional.get<bool>();
    const bool extra_schema = additional.is_object() && !additional.empty();
    json props = s.contains("properties") ? s["properties"] : json::object();
    const json no_names = json::array();
    for (const json& r : s.contains("required") ? s["required"] : no_names) {
      const std::string& name = r.get_ref<const std::string&>();
      if (props.contains(name)) continue;
      // Required but not declared: the value additionalProperties allows.
      if (closed) return never();
      props[name] = additional;
    }
    // No declared keys and nothing said of others: a free-form object.
    const bool open = !additional.is_boolean() ? additional.empty() : additional.get<bool>();
    if (props.empty() && open && (!s.contains("patternProperties") || s["patternProperties"].empty())) {
      return Expr{use("object")};
    }
    const json* pattern_schema = nullptr;
    std::string pattern_keys;
    if (s.contains("patternProperties") && !s["patternProperties"].empty()) {
      const json& pp = s["patternProperties"];
      std::vector<std::string> key_alts;
      for (auto it = pp.begin(); it != pp.end(); ++it) {
        const std::string where = "schema keyword 'patternProperties' at " + std::string(at(ptr));
        if (pattern_schema && *pattern_schema != it.value()) {
          return Status::error(EMBER_ERR_UNSUPPORTED, "%s: patterns with different schemas are not supported", where.c_str());
        }
        pattern_schema = &it.value();
        EMBER_ASSIGN_OR_RETURN(rx::Regex re, rx::parse(it.key(), where, limits_));
        for (auto p = props.begin(); p != props.end(); ++p) {
          if (rx::search(re, p.key())) {
            return Status::error(EMBER_ERR_UNSUPPORTED, "%s: property '%s' also matches pattern '%s'; not supported",
                                 where.c_str(), p.key().c_str(), it.key().c_str());
          }
        }
        EMBER_ASSIGN_OR_RETURN(std::string body, rx::to_gbnf(re, where, use("char")));
        key_alts.push_back(body);
      }
      pattern_keys = "\"\\\"\" ( " + join_alts(key_alts) + " ) \"\\\"\"";
    }
    size_t index = 0;
    for (auto it = props.begin(); it != props.end(); ++it, ++index) {
      const std::string& name = it.key();
      const bool req = required.count(name) > 0;
      EMBER_ASSIGN_OR_RETURN(Expr v, translate(it.value(), ptr + "/properties/" + escape_pointer_token(name), depth + 1,
                                               hint + "-" + name));
      if (v.never) {
        if (req) return never();
        continue;
      }
      declared.push_back(name);
      members.push_back(Member{json_literal(json(name)) + " " + ws + " \":\" " + ws + " " + v.text + " " + ws, req});
    }
    // Extra members: keys of a pattern, or any other key with additionalProperties' schema.
    std::string extra;
    if (pattern_schema) {
      EMBER_ASSIGN_OR_RETURN(Expr v, translate(*pattern_schema, ptr + "/patternProperties", depth + 1, hint + "-pattern"));
      if (!v.never) extra = pattern_keys + " " + ws + " \":\" " + ws + " " + v.text + " " + ws;
    } else if (extra_schema) {
      EMBER_ASSIGN_OR_RETURN(Expr v, translate(additional, ptr + "/additionalProperties", depth + 1, hint + "-extra"));
      if (!v.never) {
        std::vector<std::string> all_names;
        for (auto p = props.begin(); p != props.end(); ++p) all_names.push_back(p.key());
        EMBER_ASSIGN_OR_RETURN(std::string key, key_not_in(all_names, hint));
        extra = "\"\\\"\" " + key + " \"\\\"\" " + ws + " \":\" " + ws + " " + v.text + " " + ws;
      }
    }
    if (!extra.empty()) {
      EMBER_ASSIGN_OR_RETURN(extra, rule(hint + "-extra-member", extra));
    }
    EMBER_ASSIGN_OR_RETURN(std::string list, member_list(members, extra, ws, hint));
    std::string body = "\"{\" " + ws + (list.empty() ? "" : " " + list) + " \"}\"";
    EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, body));
    return Expr{name};
  }

  Result<Expr> array(const json& s, const std::string& ptr, uint32_t depth, const std::string& hint) {
    const std::string ws = use("ws");
    // Tuple items: prefixItems (2020-12) or an items array (earlier drafts).
    const json* prefix = nullptr;
    const json* rest_schema = nullptr;
    std::string prefix_key = "prefixItems", rest_key = "items";
    if (s.contains("items") && s["items"].is_array()) {
      prefix = &s["items"];
      prefix_key = "items";
      rest_key = "additionalItems";
      if (s.contains("additionalItems")) rest_schema = &s["additionalItems"];
    } else {
      if (s.contains("prefixItems")) prefix = &s["prefixItems"];
      if (s.contains("items")) rest_schema = &s["items"];
    }
    uint64_t min = count_of(s, "minItems", 0);
    uint64_t max = count_of(s, "maxItems", rx::kUnbounded);
    std::vector<std::string> items;
    if (prefix) {
      for (size_t i = 0; i < prefix->size() && i < max; ++i) {
        EMBER_ASSIGN_OR_RETURN(Expr e, translate((*prefix)[i], ptr + "/" + prefix_key + "/" + std::to_string(i), depth + 1,
                                                 hint + "-" + std::to_string(i)));
        if (e.never) {
          max = i;  // an array can stop before a slot no value fills
          break;
        }
        items.push_back(e.text);
      }
    }
    std::string rest = use("value");
    if (rest_schema) {
      EMBER_ASSIGN_OR_RETURN(Expr e, translate(*rest_schema, ptr + "/" + rest_key, depth + 1, hint + "-item"));
      if (e.never) {
        max = std::min<uint64_t>(max, items.size());
      } else {
        rest = e.text;
      }
    }
    if (min > max) return never();
    const uint64_t k = items.size();
    std::string body;
    if (max > k) {
      if (k == 0) {
        const uint64_t more_hi = max == rx::kUnbounded ? max : max - 1;
        EMBER_ASSIGN_OR_RETURN(std::string more,
                               repeat("( \",\" " + ws + " " + rest + " " + ws + " )", min > 0 ? min - 1 : 0, more_hi,
                                      "maxItems", ptr));
        body = rest + " " + ws + (more_hi == 0 ? "" : " " + more);
        if (min == 0) body = "( " + body + " )?";
      } else {
        const uint64_t lo = min > k ? min - k : 0, hi = max == rx::kUnbounded ? max : max - k;
        EMBER_ASSIGN_OR_RETURN(body, repeat("( \",\" " + ws + " " + rest + " " + ws + " )", lo, hi, "maxItems", ptr));
      }
    }
    for (uint64_t i = k; i-- > 0;) {
      std::string elem = (i == 0 ? "" : "\",\" " + ws + " ") + items[i] + " " + ws;
      std::string t = body.empty() ? elem : elem + " " + body;
      body = i >= min ? "( " + t + " )?" : t;
    }
    EMBER_ASSIGN_OR_RETURN(std::string name, rule(hint, "\"[\" " + ws + (body.empty() ? "" : " " + body) + " \"]\""));
    return Expr{name};
  }

  const json& root_;
  const GrammarLimits& limits_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> used_names_;
  std::map<std::string, int> next_suffix_;  // fresh_name's next suffix per base
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> ref_rules_;
  std::vector<std::pair<std::string, std::string>> ref_queue_;
  std::set<std::string> prims_;
  size_t bytes_ = 0;
  size_t work_ = 0;
};

// Records where the JSON reader stopped (nothing is thrown: the reader hands
// its error object to parse_error).
struct ErrorSax : nlohmann::json_sax<json> {
  size_t position = 0;
  std::string token;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string& last_token, const nlohmann::detail::exception&) override {
    position = pos;
    token = last_token;
    return false;
  }
};

// How deeply brackets nest in JSON text (outside strings).
size_t json_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const GrammarLimits& limits) {
  if (schema_json.size() > limits.max_text_bytes) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "json schema: %zu bytes, more than limits.max_text_bytes (%zu)",
                         schema_json.size(), limits.max_text_bytes);
  }
  // Each schema level is at most a few JSON levels (properties, a name, the
  // schema); deeper text is refused before anything walks it.
  const size_t depth = json_depth(schema_json);
  if (depth > 4 * size_t{limits.max_nesting} + 4) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "json schema: JSON nested %zu deep, more than 4 x limits.max_nesting (%u) + 4", depth,
                         limits.max_nesting);
  }
  json schema = json::parse(schema_json.begin(), schema_json.end(), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    ErrorSax sax;
    json::sax_parse(schema_json.begin(), schema_json.end(), &sax);
    size_t line = 1, column = 1;
    const size_t stop = std::min(sax.position > 0 ? sax.position - 1 : 0, schema_json.size());
    for (size_t i = 0; i < stop; ++i) {
      if (schema_json[i] == '\n') {
        ++line, column = 1;
      } else {
        ++column;
      }
    }
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "json schema:%zu:%zu: invalid JSON near '%s'", line, column,
                         sax.token.c_str());
  }
  return Translator(schema, limits).run();
}

std::string json_value_gbnf() {
  return "root ::= value\n"
         "value ::= object | array | string | number | boolean | null\n"
         "object ::= \"{\" ws ( member ( \",\" ws member )* )? \"}\"\n"
         "member ::= string ws \":\" ws value ws\n"
         "array ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n"
         "string ::= \"\\\"\" char* \"\\\"\"\n"
         "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" unicode-escape )\n"
         "unicode-escape ::= [0-9a-cA-Ce-fE-F] hex{3} | [dD] [0-7] hex{2} | [dD] [89abAB] hex{2} \"\\\\u\" [dD] [c-fC-F] hex{2}\n"
         "hex ::= [0-9a-fA-F]\n"
         "number ::= \"-\"? int-part ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
         "int-part ::= \"0\" | [1-9] [0-9]{0,15}\n"
         "boolean ::= \"true\" | \"false\"\n"
         "null ::= \"null\"\n"
         "ws ::= ( \" \" | \"\\n\" \" \"{0,20} )?\n";
}

std::string json_object_gbnf() {
  std::string g = json_value_gbnf();
  return "root ::= object\n" + g.substr(g.find('\n') + 1);
}

}  // namespace ember
