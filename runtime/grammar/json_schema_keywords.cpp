#include "grammar/json_schema_keywords.h"

#include <algorithm>
#include <set>
#include <vector>

#include "grammar/json_schema_text.h"

namespace ember::schema_keywords {

using schema_text::at;

// A local JSON pointer ("#/$defs/a", "#") to the value it names.
Status resolve_pointer(const json& root, const std::string& ref, const json** out) {
  const json* cur = &root;
  if (ref != "#") {
    if (ref.size() < 2 || ref[0] != '#' || ref[1] != '/') {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "'$ref' '%s': not a local JSON pointer", ref.c_str());
    }
    size_t i = 1;
    while (i < ref.size()) {
      size_t next = ref.find('/', i + 1);
      if (next == std::string::npos) next = ref.size();
      std::string token;
      for (size_t k = i + 1; k < next; ++k) {
        const char c = ref[k];
        auto hexval = [](char h) {
          return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        };
        if (c == '~' && k + 1 < next && (ref[k + 1] == '0' || ref[k + 1] == '1')) {
          token += ref[++k] == '0' ? '~' : '/';
        } else if (c == '%' && k + 2 < next && hexval(ref[k + 1]) >= 0 && hexval(ref[k + 2]) >= 0) {
          token += static_cast<char>(hexval(ref[k + 1]) * 16 + hexval(ref[k + 2]));
          k += 2;
        } else {
          token += c;
        }
      }
      const json* step = nullptr;
      if (cur->is_object()) {
        auto it = cur->find(token);
        if (it != cur->end()) step = &*it;
      } else if (cur->is_array() && !token.empty() && token.size() < 10 &&
                 token.find_first_not_of("0123456789") == std::string::npos) {
        size_t idx = 0;
        for (char d : token) idx = idx * 10 + static_cast<size_t>(d - '0');
        if (idx < cur->size()) step = &(*cur)[idx];
      }
      if (!step) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "'$ref' '%s': does not resolve in this schema", ref.c_str());
      cur = step;
      i = next;
    }
  }
  *out = cur;
  return Status::ok();
}

Status malformed(const char* key, const std::string& ptr, const char* what) {
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "'%s' at %s: %s", key, at(ptr), what);
}

// Checks the keywords of one schema object: refused ones, and the form
// of the values this translator reads.
Status check_keywords(const json& s, const std::string& ptr) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (in_list(kRefused, k)) {
      const bool no_op = (k == "uniqueItems" && v.is_boolean() && !v.get<bool>()) ||
                         ((k == "minProperties" || k == "minContains") && v.is_number_unsigned() && v.get<uint64_t>() == 0);
      if (!no_op) return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword '%s' at %s", k.c_str(), at(ptr));
    }
    if ((k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems") && !v.is_number_unsigned() &&
        !(v.is_number_float() && v.get<double>() >= 0 && v.get<double>() == std::floor(v.get<double>()))) {
      return malformed(k.c_str(), ptr, "must be a non-negative integer");
    }
    if ((k == "minimum" || k == "maximum") && !v.is_number()) return malformed(k.c_str(), ptr, "must be a number");
    if ((k == "exclusiveMinimum" || k == "exclusiveMaximum") && !v.is_number() && !v.is_boolean()) {
      return malformed(k.c_str(), ptr, "must be a number");
    }
    if ((k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions") && !v.is_object()) {
      return malformed(k.c_str(), ptr, "must be an object");
    }
    if (k == "required") {
      if (!v.is_array()) return malformed("required", ptr, "must be an array of strings");
      for (const json& e : v)
        if (!e.is_string()) return malformed("required", ptr, "must be an array of strings");
    }
    if ((k == "anyOf" || k == "oneOf" || k == "allOf") && (!v.is_array() || v.empty())) {
      return malformed(k.c_str(), ptr, "must be a non-empty array of schemas");
    }
    if ((k == "enum" || k == "prefixItems") && !v.is_array()) return malformed(k.c_str(), ptr, "must be an array");
    if ((k == "pattern" || k == "format" || k == "$ref") && !v.is_string()) return malformed(k.c_str(), ptr, "must be a string");
    if ((k == "additionalProperties" || k == "additionalItems") && !v.is_boolean() && !v.is_object()) {
      return malformed(k.c_str(), ptr, "must be a schema");
    }
    if (k == "items" && !v.is_boolean() && !v.is_object() && !v.is_array()) return malformed("items", ptr, "must be a schema");
    if (k == "nullable" && !v.is_boolean()) return malformed("nullable", ptr, "must be true or false");
    if (k == "type") {
      auto known = [](const json& t) {
        if (!t.is_string()) return false;
        const std::string& n = t.get_ref<const std::string&>();
        return n == "string" || n == "number" || n == "integer" || n == "boolean" || n == "null" || n == "object" ||
               n == "array";
      };
      bool ok = v.is_array() || known(v);
      if (v.is_array())
        for (const json& t : v) ok = ok && known(t);
      if (!ok) return malformed("type", ptr, "must be a type name or an array of type names");
    }
  }
  return Status::ok();
}

bool has_validation(const json& s) {
  for (auto it = s.begin(); it != s.end(); ++it)
    if (!is_annotation(it.key())) return true;
  return false;
}

// The schema `ref` names, merged with the keywords beside `$ref` in `s`.
Status resolved_copy(const json& root, const json& s, const std::string& ptr, json* out) {
  const json* target = nullptr;
  const std::string ref = s["$ref"].get<std::string>();
  if (ref.empty() || ref[0] != '#') {
    return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword '$ref' at %s: remote reference '%s' is not supported",
                         at(ptr), ref.c_str());
  }
  EMBER_TRY(resolve_pointer(root, ref, &target).with_context(std::string("at ") + at(ptr)));
  json rest = s;
  rest.erase("$ref");
  *out = json::object();
  (*out)["allOf"] = json::array({*target, rest});
  return Status::ok();
}

// allOf: one schema with every member's constraints, or a refusal
// naming what cannot be merged.
Status merge_all(const json& root, const json& members, const std::string& ptr, json* out) {
  json merged = json::object();
  std::vector<std::set<std::string>> closed;  // declared keys of members with additionalProperties: false
  auto refuse = [&](const std::string& key) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "schema keyword 'allOf' at %s: cannot merge '%s'", at(ptr), key.c_str());
  };
  for (size_t i = 0; i < members.size(); ++i) {
    json m = members[i];
    const std::string mptr = ptr + "/allOf/" + std::to_string(i);
    if (m.is_boolean()) {
      if (!m.get<bool>()) merged["type"] = json::array();  // false: nothing validates
      continue;
    }
    if (!m.is_object()) return malformed("allOf", ptr, "must be a non-empty array of schemas");
    EMBER_TRY(check_keywords(m, mptr));
    // One level of $ref / nested allOf is flattened here; deeper ones
    // are merged when the result is translated (bounded by the nesting).
    if (m.contains("$ref")) {
      json r;
      EMBER_TRY(resolved_copy(root, m, mptr, &r));
      json flat;
      EMBER_TRY(merge_all(root, r["allOf"], mptr, &flat));
      m = std::move(flat);
    }
    if (m.contains("allOf")) {
      json inner = m["allOf"];
      m.erase("allOf");
      inner.push_back(m);
      json flat;
      EMBER_TRY(merge_all(root, inner, mptr, &flat));
      m = std::move(flat);
    }
    if (m.contains("additionalProperties") && m["additionalProperties"].is_boolean() &&
        !m["additionalProperties"].get<bool>()) {
      std::set<std::string> keys;
      if (m.contains("properties"))
        for (auto it = m["properties"].begin(); it != m["properties"].end(); ++it) keys.insert(it.key());
      closed.push_back(std::move(keys));
    }
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (is_annotation(k)) continue;
      if (!merged.contains(k)) {
        merged[k] = v;
        continue;
      }
      json& cur = merged[k];
      if (k == "properties") {
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (cur.contains(p.key())) {
            cur[p.key()] = json::object({{"allOf", json::array({cur[p.key()], p.value()})}});
          } else {
            cur[p.key()] = p.value();
          }
        }
      } else if (k == "required") {
        for (const json& r : v)
          if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
      } else if (k == "type") {
        auto names = [](const json& t) {
          std::set<std::string> s;
          if (t.is_string()) s.insert(t.get<std::string>());
          if (t.is_array())
            for (const json& e : t) s.insert(e.get<std::string>());
          return s;
        };
        const std::set<std::string> a = names(cur), b = names(v);
        json both = json::array();
        for (const std::string& t : a) {
          if (b.count(t)) {
            both.push_back(t);
          } else if (t == "number" && b.count("integer")) {
            both.push_back("integer");
          } else if (t == "integer" && b.count("number")) {
            both.push_back("integer");
          }
        }
        cur = both;
      } else if (k == "items" && cur.is_object() && v.is_object()) {
        cur = json::object({{"allOf", json::array({cur, v})}});
      } else if (k == "minLength" || k == "minItems" || k == "minimum") {
        if (v > cur) cur = v;
      } else if (k == "maxLength" || k == "maxItems" || k == "maximum") {
        if (v < cur) cur = v;
      } else if (k == "nullable") {
        cur = cur.get<bool>() && v.get<bool>();
      } else if (cur != v) {
        return refuse(k);
      }
    }
  }
  if (!closed.empty() && merged.contains("properties")) {
    json kept = json::object();
    for (auto p = merged["properties"].begin(); p != merged["properties"].end(); ++p) {
      bool allowed = true;
      for (const auto& keys : closed) allowed = allowed && keys.count(p.key());
      if (allowed) kept[p.key()] = p.value();
    }
    merged["properties"] = kept;
  }
  if (!closed.empty()) merged["additionalProperties"] = false;
  *out = std::move(merged);
  return Status::ok();
}

}  // namespace ember::schema_keywords
