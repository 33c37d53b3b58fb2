// json_schema_to_gbnf, keyword by keyword: the GBNF it writes is read by a
// test-only reader and matcher (mini_gbnf.h) and checked on texts that
// must be accepted and texts that must not; refusals name the keyword and
// the JSON pointer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "mini_gbnf.h"

using ember::json_schema_to_gbnf;

namespace {

struct Lang {
  mini_gbnf::Grammar g;
  std::string text;
};

// The schema's grammar, read; fails the test when either step fails.
Lang lang(const std::string& schema, const ember::GrammarLimits& limits = {}) {
  Lang l;
  auto r = json_schema_to_gbnf(schema, limits);
  INFO("schema: " << schema);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  l.text = r.value();
  INFO("grammar:\n" << l.text);
  REQUIRE_MESSAGE(l.g.parse(l.text), l.g.error());
  return l;
}

void accepts(const std::string& schema, const std::vector<std::string>& yes, const std::vector<std::string>& no) {
  Lang l = lang(schema);
  INFO("schema: " << schema << "\ngrammar:\n" << l.text);
  for (const std::string& t : yes) CHECK_MESSAGE(l.g.accepts(t), "should accept: " << t);
  for (const std::string& t : no) CHECK_MESSAGE(!l.g.accepts(t), "should reject: " << t);
}

ember::Status refusal(const std::string& schema, const ember::GrammarLimits& limits = {}) {
  auto r = json_schema_to_gbnf(schema, limits);
  return r.status();
}

void refused(const std::string& schema, ember_status code, const std::string& message_part) {
  const ember::Status s = refusal(schema);
  INFO("schema: " << schema << "\nmessage: " << s.message());
  CHECK(s.code() == code);
  CHECK(s.message().find(message_part) != std::string::npos);
}

}  // namespace

TEST_CASE("json schema grammar: primitive types") {
  accepts(R"({"type":"string"})", {R"("")", R"("hello")", R"("a b\"c\\d\n\u00e9")", "\"\xc3\xa9t\xc3\xa9\""},
          {"hello", R"("a)", "\"a\x01\"", R"(5)"});
  accepts(R"({"type":"boolean"})", {"true", "false"}, {"True", "1", "null"});
  accepts(R"({"type":"null"})", {"null"}, {"nul", "false"});
  accepts(R"({"type":"integer"})", {"0", "-7", "1234567890123456"}, {"01", "1.5", "1e3", "12345678901234567", "-", "+1"});
  accepts(R"({"type":"number"})", {"0", "-0.25", "3.14159", "6.02e23", "1E-5", "10"},
          {".5", "1.", "00", "1e", "1.12345678901234567", "NaN", "1e1234"});
  accepts(R"({})", {"1", R"({"a":[1,"x",null]})", "true"}, {"", "{", "[1,]"});
  accepts("true", {"[]", R"("x")"}, {"x"});
}

TEST_CASE("json schema grammar: a false schema accepts nothing and is refused at the root") {
  refused("false", EMBER_ERR_INVALID_ARGUMENT, "accepts no JSON value");
  refused(R"({"type":"object","properties":{"a":false},"required":["a"]})", EMBER_ERR_INVALID_ARGUMENT,
          "accepts no JSON value");
  // An optional property that can never validate is left out.
  accepts(R"({"type":"object","properties":{"a":false,"b":{"type":"integer"}}})", {"{}", R"({"b":1})"},
          {R"({"a":1})", R"({"a":1,"b":1})"});
}

TEST_CASE("json schema grammar: strings allow only valid escapes") {
  const char* s = R"({"type":"string"})";
  accepts(s, {R"("\ud83d\ude00")", R"("\u20AC\/\b\f\r\t")"},
          {R"("\ud83d")", R"("\ude00")", R"("\ud83dx")", R"("\x41")", R"("\u12")", R"("\a")"});
}

TEST_CASE("json schema grammar: whitespace is bounded") {
  const char* s = R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}})";
  const std::string twenty(20, ' ');
  accepts(s, {R"({ "a" : [ 1 , 2 ] })", "{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{\n" + twenty + "\"a\":[]}"},
          {R"({  "a":[]})", "{\n" + twenty + " \"a\":[]}", "{\t\"a\":[]}", "{\n\n\"a\":[]}", R"( {"a":[]})"});
}

TEST_CASE("json schema grammar: minLength and maxLength count code points") {
  accepts(R"({"type":"string","minLength":2,"maxLength":3})",
          {R"("ab")", R"("abc")", "\"\xc3\xa9\xc3\xa9\"", R"("\u00e9\n")", R"("\ud83d\ude00x")"},
          {R"("a")", R"("abcd")", "\"\xc3\xa9\"", R"("")"});
  accepts(R"({"type":"string","minLength":1})", {R"("x")", R"("xyzxyz")"}, {R"("")"});
  // Past limits.max_repeat (1000) the count is written as nested repeats.
  Lang l = lang(R"({"type":"string","maxLength":2500,"minLength":1200})");
  CHECK(l.g.accepts("\"" + std::string(1200, 'a') + "\""));
  CHECK(l.g.accepts("\"" + std::string(1999, 'a') + "\""));
  CHECK(l.g.accepts("\"" + std::string(2500, 'a') + "\""));
  CHECK_FALSE(l.g.accepts("\"" + std::string(1199, 'a') + "\""));
  CHECK_FALSE(l.g.accepts("\"" + std::string(2501, 'a') + "\""));
  refused(R"({"type":"string","maxLength":2000000})", EMBER_ERR_INVALID_ARGUMENT, "limits.max_repeat");
}

TEST_CASE("json schema grammar: integer bounds are exact digit ranges") {
  struct Case {
    const char* schema;
    long long lo, hi;  // inclusive; checked over [lo - 300, hi + 300]
  };
  const Case cases[] = {
      {R"({"type":"integer","minimum":0,"maximum":255})", 0, 255},
      {R"({"type":"integer","minimum":-10,"maximum":10})", -10, 10},
      {R"({"type":"integer","minimum":17,"maximum":4321})", 17, 4321},
      {R"({"type":"integer","minimum":-999,"maximum":-100})", -999, -100},
      {R"({"type":"integer","exclusiveMinimum":-1,"exclusiveMaximum":100})", 0, 99},
      {R"({"type":"integer","minimum":1.5,"maximum":9.9})", 2, 9},
      {R"({"type":"integer","minimum":1000,"maximum":1000})", 1000, 1000},
      {R"({"type":"integer","minimum":0,"maximum":10000,"exclusiveMaximum":5001})", 0, 5000},
  };
  for (const Case& c : cases) {
    Lang l = lang(c.schema);
    INFO(c.schema << "\n" << l.text);
    for (long long v = c.lo - 300; v <= c.hi + 300; ++v) {
      const bool in = v >= c.lo && v <= c.hi;
      CHECK_MESSAGE(l.g.accepts(std::to_string(v)) == in, v);
    }
  }
  // Half-open ranges: >= 1 and <= -5.
  accepts(R"({"type":"integer","minimum":1})", {"1", "9", "10", "123456", "9999999999999999"}, {"0", "-1", "-10", "01"});
  accepts(R"({"type":"integer","maximum":-5})", {"-5", "-6", "-10", "-1000000"}, {"-4", "0", "5", "-0"});
  accepts(R"({"type":"integer","minimum":250})", {"250", "255", "999", "1000", "40000"}, {"249", "99", "0", "-250"});
  refused(R"({"type":"integer","minimum":10,"maximum":5})", EMBER_ERR_INVALID_ARGUMENT, "accepts no JSON value");
}

TEST_CASE("json schema grammar: number bounds with integer values") {
  accepts(R"({"type":"number","minimum":0,"maximum":1})",
          {"0", "0.5", "0.999", "1", "1.0", "1.000", "0.0"}, {"-0.1", "1.0001", "1.5", "2", "-1", "1e0"});
  accepts(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10})",
          {"0.001", "5", "9.99", "1"}, {"0", "0.0", "10", "10.0", "-3", "10.5"});
  accepts(R"({"type":"number","minimum":-90,"maximum":90})",
          {"-90", "-90.0", "-89.5", "0", "45.123456", "90"}, {"-90.5", "90.01", "-91", "100"});
  accepts(R"({"type":"number","maximum":-2,"exclusiveMinimum":-5})", {"-2", "-2.0", "-3.5", "-4.999"},
          {"-1.9", "-5", "-5.0", "-5.5", "0"});
  accepts(R"({"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":5})", {"0.5", "5"}, {"0", "5.5"});
  refused(R"({"type":"number","minimum":0.5})", EMBER_ERR_UNSUPPORTED, "schema keyword 'minimum' at /: 0.5 is not an integer");
  refused(R"({"properties":{"p":{"type":"number","exclusiveMaximum":99.5}}})", EMBER_ERR_UNSUPPORTED,
          "'exclusiveMaximum' at /properties/p");
}

TEST_CASE("json schema grammar: objects in declaration order, required always, optional optionally") {
  const char* s = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},
    "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})";
  accepts(s, {R"({"name":"x"})", R"({"id":1,"name":"x"})", R"({"name":"x","tags":[]})", R"({"id":1,"name":"x","tags":["a"]})"},
          {"{}", R"({"id":1})", R"({"name":"x","id":1})", R"({"name":"x","other":1})", R"({"name":1})",
           R"({"name":"x",})", R"({,"name":"x"})"});
  // No required: any subset in order, including none.
  accepts(R"({"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})", {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
          {R"({"b":2,"a":1})", R"({,})"});
  // An object that declares no keys is free-form.
  accepts(R"({"type":"object"})", {"{}", R"({"any":[1],"keys":null})"}, {"[]"});
  // Required names the schema does not declare take any value.
  accepts(R"({"type":"object","required":["x"]})", {R"({"x":[1,{}]})"}, {"{}"});
  refused(R"({"type":"object","required":["x"],"additionalProperties":false})", EMBER_ERR_INVALID_ARGUMENT,
          "accepts no JSON value");
}

TEST_CASE("json schema grammar: additionalProperties with a schema, patternProperties") {
  accepts(R"({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}})",
          {"{}", R"({"a":"s"})", R"({"a":"s","b":1})", R"({"b":1,"c":2})", R"({"ab":1})", R"({"":3})"},
          {R"({"a":1})", R"({"b":"s"})", R"({"a":"s","a":1})"});
  accepts(R"({"type":"object","additionalProperties":{"type":"boolean"}})", {"{}", R"({"x":true,"y":false})"},
          {R"({"x":1})"});
  accepts(R"({"type":"object","patternProperties":{"^x-[a-z]+$":{"type":"string"}},"additionalProperties":false})",
          {"{}", R"({"x-a":"1","x-bc":"2"})"}, {R"({"y-a":"1"})", R"({"x-a":1})", R"({"x-":"1"})"});
  accepts(R"({"type":"object","properties":{"v":{"type":"integer"}},"patternProperties":{"^[0-9]+$":{"type":"null"}}})",
          {R"({"v":1,"12":null})", R"({"7":null})"}, {R"({"v":null})", R"({"a":null})"});
  refused(R"({"type":"object","properties":{"x-a":{}},"patternProperties":{"^x-":{"type":"string"}}})",
          EMBER_ERR_UNSUPPORTED, "property 'x-a' also matches pattern");
  refused(R"({"type":"object","patternProperties":{"^a":{"type":"string"},"^b":{"type":"integer"}}})", EMBER_ERR_UNSUPPORTED,
          "patterns with different schemas");
}

TEST_CASE("json schema grammar: arrays: items, prefixItems, items false, minItems and maxItems") {
  accepts(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})", {"[1]", "[1,2]", "[1, 2, 3]"},
          {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"});
  accepts(R"({"type":"array","items":{"type":"integer"}})", {"[]", "[1,2,3,4,5,6,7,8,9,10]"}, {"[1 2]"});
  accepts(R"({"type":"array","prefixItems":[{"type":"number"},{"type":"string"}],"items":false})",
          {"[]", "[1]", R"([1,"a"])"}, {R"([1,"a",2])", R"(["a"])"});
  accepts(R"({"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"minItems":2,"items":{"type":"boolean"}})",
          {"[1,2]", "[1,2,true,false]"}, {"[1]", "[1,2,3]"});
  accepts(R"({"type":"array","items":[{"type":"string"}],"additionalItems":false,"minItems":1})", {R"(["a"])"},
          {"[]", R"(["a","b"])"});
  accepts(R"({"type":"array","prefixItems":[{"type":"integer"}]})", {"[]", "[1]", R"([1,"any",{}])"}, {R"(["a"])"});
  accepts(R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"});
  // Counts past limits.max_repeat nest.
  Lang l = lang(R"({"type":"array","items":{"type":"integer"},"minItems":1001})");
  std::string a = "[0";
  for (int i = 1; i < 1001; ++i) a += ",0";
  CHECK(l.g.accepts(a + "]"));
  CHECK_FALSE(l.g.accepts(a.substr(0, a.size() - 2) + "]"));
}

TEST_CASE("json schema grammar: enum and const, filtered by type") {
  accepts(R"({"enum":["red","green",3,null,{"a":[1]},1.5]})", {R"("red")", "3", "null", R"({"a":[1]})", "1.5"},
          {R"("blue")", "4", R"({"a": [1]})"});
  accepts(R"({"type":"string","enum":["a",1]})", {R"("a")"}, {"1"});
  accepts(R"({"const":"fixed"})", {R"("fixed")"}, {R"("other")"});
  accepts(R"({"type":"integer","enum":[1.0,2]})", {"1", "2"}, {"1.0"});
  accepts(R"({"type":"string","enum":["q\"uote","back\\slash","\u00e9"]})", {R"("q\"uote")", R"("back\\slash")", "\"\xc3\xa9\""},
          {R"("quote")"});
  refused(R"({"type":"string","enum":["a"],"maxLength":3})", EMBER_ERR_UNSUPPORTED, "'maxLength' at /: beside 'enum'");
}

TEST_CASE("json schema grammar: anyOf, oneOf (as anyOf), type arrays, nullable") {
  accepts(R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]})", {R"("a")", "5"}, {"-1", "true"});
  accepts(R"({"oneOf":[{"type":"boolean"},{"type":"null"}]})", {"true", "null"}, {"0"});
  accepts(R"({"type":["string","null"],"maxLength":2})", {R"("ab")", "null"}, {R"("abc")", "1"});
  accepts(R"({"type":"integer","nullable":true,"maximum":3})", {"3", "null"}, {"4", R"("x")"});
  // Siblings of anyOf apply to each branch.
  accepts(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
     "anyOf":[{"required":["a"]},{"required":["b"]}]})",
          {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"}, {"{}"});
  refused(R"({"anyOf":[{"type":"string"}],"oneOf":[{"type":"string"}]})", EMBER_ERR_UNSUPPORTED, "'oneOf' at /");
}

TEST_CASE("json schema grammar: allOf merges object schemas and refuses what it cannot merge") {
  accepts(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0}},"required":["a"]},
     {"properties":{"a":{"maximum":9},"b":{"type":"string"}},"required":["b"]}]})",
          {R"({"a":5,"b":"x"})"}, {R"({"a":10,"b":"x"})", R"({"a":5})", R"({"b":"x"})"});
  accepts(R"({"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},
     "allOf":[{"$ref":"#/$defs/base"},{"properties":{"name":{"type":"string"}}}]})",
          {R"({"id":1})", R"({"id":1,"name":"n"})"}, {R"({"name":"n"})"});
  accepts(R"({"allOf":[{"type":["integer","string"]},{"type":"number"}]})", {"1"}, {R"("a")", "1.5"});
  // A closed member drops the other members' extra properties.
  accepts(R"({"allOf":[{"properties":{"a":{}},"additionalProperties":false},{"properties":{"a":{},"b":{}}}]})",
          {"{}", R"({"a":1})"}, {R"({"b":1})"});
  refused(R"({"allOf":[{"type":"string","pattern":"^a"},{"pattern":"b$"}]})", EMBER_ERR_UNSUPPORTED,
          "schema keyword 'allOf' at /: cannot merge 'pattern'");
}

TEST_CASE("json schema grammar: local $ref, $defs, definitions, recursion through '#'") {
  accepts(R"({"$defs":{"pos":{"type":"integer","minimum":1}},"type":"array","items":{"$ref":"#/$defs/pos"}})", {"[1,2]"},
          {"[0]"});
  accepts(R"({"definitions":{"a b":{"type":"string"},"x/y":{"type":"null"}},
     "properties":{"p":{"$ref":"#/definitions/a%20b"},"q":{"$ref":"#/definitions/x~1y"}}})",
          {R"({"p":"s","q":null})"}, {R"({"p":1})"});
  // A tree: recursion through #/$defs and through the root.
  const char* tree = R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
     "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},"$ref":"#/$defs/node"})";
  accepts(tree, {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[{"value":3}]},{"value":4}]})"},
          {R"({"value":1,"children":[{}]})"});
  accepts(R"({"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}}})", {R"({"next":{"next":{"v":1}}})"},
          {R"({"next":1})"});
  // The same ref twice is one rule.
  Lang l = lang(R"({"$defs":{"s":{"type":"string","maxLength":4}},"properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}}})");
  const size_t first = l.text.find("char{0,4}");
  CHECK(first != std::string::npos);
  CHECK(l.text.find("char{0,4}", first + 1) == std::string::npos);
  refused(R"({"$ref":"https://example.com/schemas/address.json"})", EMBER_ERR_UNSUPPORTED,
          "schema keyword '$ref' at /: remote reference 'https://example.com/schemas/address.json'");
  refused(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})", EMBER_ERR_INVALID_ARGUMENT, "does not resolve");
}

TEST_CASE("json schema grammar: pattern, a regular expression subset") {
  accepts(R"({"type":"string","pattern":"^[A-Z]{2}-[0-9]{3,4}$"})", {R"("AB-123")", R"("XY-9876")"},
          {R"("ab-123")", R"("AB-12")", R"("AB-12345")", R"(" AB-123")"});
  // Unanchored: the match may be anywhere.
  accepts(R"({"type":"string","pattern":"abc"})", {R"("abc")", R"("xxabcyy")", R"("\nabc\"")"}, {R"("ab")", R"("acb")"});
  accepts(R"({"type":"string","pattern":"^(foo|ba[rz])+(\\.v\\d)?$"})", {R"("foo")", R"("barbazfoo")", R"("foo.v1")"},
          {R"("fo")", R"("foo.v")", R"("")"});
  accepts(R"({"type":"string","pattern":"^[^@\\s]+@[^@\\s]+$"})", {R"("a@b")", R"("a\"q@b")"}, {R"("a b@c")", R"("@b")"});
  accepts(R"({"type":"string","pattern":"^\\w+(?:-\\w+)*$"})", {R"("ab_c-d")"}, {R"("ab--c")", R"("-a")"});
  accepts(R"({"type":"string","pattern":"^.?$"})", {R"("")", R"("x")", R"("\\")"}, {R"("xy")", R"("\n")"});
  accepts(R"({"type":"string","pattern":"^[a-z]{2,8}$","maxLength":8,"minLength":2})", {R"("ab")"}, {R"("a")"});
  refused(R"({"type":"string","pattern":"^(?=.*[0-9]).{8,}$"})", EMBER_ERR_UNSUPPORTED, "lookaround");
  refused(R"({"type":"string","pattern":"^(a)\\1$"})", EMBER_ERR_UNSUPPORTED, "backreference");
  refused(R"({"type":"string","pattern":"\\bword\\b"})", EMBER_ERR_UNSUPPORTED, "word boundary");
  refused(R"({"type":"string","pattern":"a^b"})", EMBER_ERR_UNSUPPORTED, "anchor");
  refused(R"({"type":"string","pattern":"[a-z]+","maxLength":5})", EMBER_ERR_UNSUPPORTED, "'maxLength' at /");
  refused(R"({"type":"string","pattern":"(ab"})", EMBER_ERR_INVALID_ARGUMENT, "schema keyword 'pattern' at /");
}

TEST_CASE("json schema grammar: formats") {
  accepts(R"({"type":"string","format":"date"})", {R"("2024-02-28")", R"("1999-12-31")", R"("2023-04-30")"},
          {R"("2024-02-30")", R"("2023-04-31")", R"("2023-13-01")", R"("2023-1-01")", R"("0000-01-01")"});
  accepts(R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("08:30:00.123+02:00")"},
          {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")"});
  accepts(R"({"type":"string","format":"date-time"})", {R"("2024-06-01T12:00:00Z")", R"("2024-06-01T12:00:00.5-07:30")"},
          {R"("2024-06-01 12:00:00Z")", R"("2024-06-01T12:00Z")"});
  accepts(R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
          {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  accepts(R"({"type":"string","format":"email"})", {R"("ann.lee@example.co.uk")", R"("x+tag@mail.example.com")"},
          {R"("ann@")", R"("@example.com")", R"("ann@example")", R"("a b@example.com")"});
  accepts(R"({"type":"string","format":"uri"})", {R"("https://example.com/a?b=c#d")", R"("urn:isbn:0451450523")"},
          {R"("example.com")", R"("http://exa mple.com")", R"("https://x/%zz")"});
  accepts(R"({"type":"string","format":"ipv4"})", {R"("192.168.0.1")", R"("255.255.255.255")"},
          {R"("256.1.1.1")", R"("1.2.3")", R"("01.2.3.4")"});
  // Unknown formats are annotations.
  accepts(R"({"type":"string","format":"color-name"})", {R"("anything")"}, {"1"});
  accepts(R"({"type":"string","format":"date","maxLength":10})", {R"("2024-01-01")"}, {});
  refused(R"({"type":"string","format":"email","maxLength":50})", EMBER_ERR_UNSUPPORTED,
          "schema keyword 'maxLength' at /: beside format 'email'");
}

TEST_CASE("json schema grammar: annotations and unknown keys are ignored") {
  accepts(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x/y","title":"T","description":"D",
     "examples":[1],"default":2,"$comment":"c","x-internal":true,"readOnly":true,"deprecated":false,"somethingElse":{},
     "type":"integer","maximum":3})",
          {"2"}, {"4"});
}

TEST_CASE("json schema grammar: validation keywords it cannot honour are refused by name and pointer") {
  const char* keywords[] = {"uniqueItems\":true", "not\":{}", "dependencies\":{}", "dependentRequired\":{}",
                            "dependentSchemas\":{}", "if\":{}", "then\":{}", "else\":{}", "contains\":{}",
                            "multipleOf\":2", "propertyNames\":{}", "minProperties\":1", "maxProperties\":3",
                            "unevaluatedProperties\":false", "unevaluatedItems\":false"};
  for (const char* kw : keywords) {
    const std::string name(kw, std::string(kw).find('"'));
    const std::string schema = std::string(R"({"properties":{"tags":{"type":"array","items":{"type":"string"},")") + kw + "}}}";
    refused(schema, EMBER_ERR_UNSUPPORTED, "schema keyword '" + name + "' at /properties/tags");
  }
  refused(R"({"items":{"uniqueItems":true}})", EMBER_ERR_UNSUPPORTED, "schema keyword 'uniqueItems' at /items");
  refused(R"({"$defs":{"a~b/c":{"multipleOf":5}},"$ref":"#/$defs/a~0b~1c"})", EMBER_ERR_UNSUPPORTED,
          "schema keyword 'multipleOf' at /$defs/a~0b~1c");
  // Values that constrain nothing pass.
  accepts(R"({"type":"array","uniqueItems":false,"items":{"type":"object","minProperties":0}})", {"[{}]"}, {"{}"});
}

TEST_CASE("json schema grammar: malformed JSON and malformed schemas") {
  const ember::Status bad = refusal("{\n  \"type\": \"object\",\n  \"properties\": {,}\n}");
  CHECK(bad.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK_MESSAGE(bad.message().find("json schema:3:") == 0, bad.message());
  refused(R"({"type":"object","required":"name"})", EMBER_ERR_INVALID_ARGUMENT, "'required' at /: must be an array of strings");
  refused(R"({"properties":{"a":{"required":[1]}}})", EMBER_ERR_INVALID_ARGUMENT, "'required' at /properties/a");
  refused(R"({"type":"text"})", EMBER_ERR_INVALID_ARGUMENT, "'type' at /");
  refused(R"({"properties":[]})", EMBER_ERR_INVALID_ARGUMENT, "'properties' at /: must be an object");
  refused(R"({"items":{"minLength":-1}})", EMBER_ERR_INVALID_ARGUMENT, "'minLength' at /items");
  refused(R"({"anyOf":[]})", EMBER_ERR_INVALID_ARGUMENT, "'anyOf' at /");
  refused(R"({"properties":{"a":5}})", EMBER_ERR_INVALID_ARGUMENT, "schema at /properties/a: must be an object or a boolean");
  refused(R"({"type":"integer","minimum":"1"})", EMBER_ERR_INVALID_ARGUMENT, "'minimum' at /");
  refused("", EMBER_ERR_INVALID_ARGUMENT, "json schema:");
  refused("[1,2", EMBER_ERR_INVALID_ARGUMENT, "json schema:");
}

TEST_CASE("json schema grammar: limits are named") {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 70; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  refused(deep, EMBER_ERR_INVALID_ARGUMENT, "limits.max_nesting");
  std::string deep_json(100000, '[');
  refused(deep_json, EMBER_ERR_INVALID_ARGUMENT, "limits.max_nesting");
  ember::GrammarLimits small;
  small.max_text_bytes = 200;
  CHECK(refusal(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}})", small)
            .message()
            .find("limits.max_text_bytes") != std::string::npos);
  std::string big = R"({"type":"string","description":")" + std::string(300, 'x') + "\"}";
  CHECK(refusal(big, small).message().find("limits.max_text_bytes") != std::string::npos);
  ember::GrammarLimits few;
  few.max_rules = 5;
  const ember::Status s = refusal(
      R"({"properties":{"a":{"type":"string","maxLength":1},"b":{"type":"string","maxLength":2},"c":{"type":"string","maxLength":3},"d":{"type":"string","maxLength":4},"e":{"type":"string","maxLength":5}}})",
      few);
  CHECK_MESSAGE(s.message().find("limits.max_rules") != std::string::npos, s.message());
  refused(R"({"type":"string","pattern":"^a{1,5000}$"})", EMBER_ERR_INVALID_ARGUMENT, "limits.max_repeat");
  // Recursion through $ref is translated once per target, not followed.
  Lang l = lang(R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"}},"b":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})");
  CHECK(l.g.accepts("[[null,[]],null]"));
}

TEST_CASE("json schema grammar: any JSON value and any JSON object") {
  mini_gbnf::Grammar v, o;
  REQUIRE(v.parse(ember::json_value_gbnf()));
  REQUIRE(o.parse(ember::json_object_gbnf()));
  for (const char* t : {R"({"a":[1,2.5e-3,"x",true,null,{}]})", "[]", "-0", R"("s")", "false"}) CHECK(v.accepts(t));
  for (const char* t : {"{", "[1,]", "tru", "'a'", "01"}) CHECK_FALSE(v.accepts(t));
  CHECK(o.accepts(R"({ "k": { "n": [ ] } })"));
  CHECK_FALSE(o.accepts("[1]"));
  CHECK_FALSE(o.accepts("1"));
}
