// The chat-template language (runtime/chat): each construct, each error,
// the bounds. Expected strings are what Jinja2 3.1 renders with
// trim_blocks and lstrip_blocks on (Hugging Face's settings).
#include <doctest/doctest.h>

#include <string>

#include "chat/chat_template.h"
#include "chat/jinja_eval.h"

namespace ember::chat {
namespace {

Value messages3() {
  return Value::make_list({
      Value::make_dict({{"role", Value::string("system")}, {"content", Value::string("Be brief.")}}),
      Value::make_dict({{"role", Value::string("user")}, {"content", Value::string("Hi")}}),
      Value::make_dict({{"role", Value::string("assistant")}, {"content", Value::string(" Hello! ")}}),
  });
}

struct Rendered {
  Status status;
  std::string text;
};

Rendered run(const std::string& tmpl, const Limits& limits = Limits{}) {
  Rendered r;
  Program prog;
  r.status = parse_template(tmpl, limits, &prog);
  if (!r.status.is_ok()) return r;
  Value ctx = Value::make_dict({{"messages", messages3()},
                                {"n", Value::integer(7)},
                                {"xs", Value::make_list({Value::integer(3), Value::integer(1), Value::integer(2)})},
                                {"s", Value::string("  Hello World  ")},
                                {"d", Value::make_dict({{"b", Value::integer(2)}, {"a", Value::integer(1)}})},
                                {"none_value", Value::none()}});
  RenderEnv env;
  env.limits = limits;
  env.now_unix = 1700000000;  // 2023-11-14 22:13:20 UTC
  r.status = render_program(prog, ctx, env, &r.text);
  return r;
}

// The rendered text, or "ERROR <status>: <message>".
std::string R(const std::string& tmpl) {
  Rendered r = run(tmpl);
  if (!r.status.is_ok())
    return std::string("ERROR ") + ember_status_string(r.status.code()) + ": " + r.status.message();
  return r.text;
}

void check_error(const std::string& tmpl, ember_status code, const std::string& needle,
                 const Limits& limits = Limits{}) {
  Rendered r = run(tmpl, limits);
  CAPTURE(tmpl);
  CAPTURE(r.status.message());
  REQUIRE_FALSE(r.status.is_ok());
  CHECK(r.status.code() == code);
  CHECK(r.status.message().find(needle) != std::string::npos);
}

TEST_CASE("jinja: text, output and comments") {
  CHECK(R("plain text") == "plain text");
  CHECK(R("{{ 'a' }}{# a comment #}{{ \"b\" }}") == "ab");
  CHECK(R("{{ n }} {{ none_value }} {{ true }} {{ undefined_name }}|") == "7 None True |");
  CHECK(R("{{ [1, 'a', none, 1.5] }} {{ {'k': 'v'} }}") == "[1, 'a', None, 1.5] {'k': 'v'}");
  CHECK(R("{{ \"it's\" }} {{ ['it\\'s'] }}") == "it's [\"it's\"]");
  CHECK(R("{{ 'a\\nb\\tc' }}") == "a\nb\tc");
}

TEST_CASE("jinja: whitespace control, trim_blocks and lstrip_blocks") {
  CHECK(R("a  {{- 'b' -}}  c") == "abc");
  CHECK(R("a\n  {%- if true %}b{% endif -%}\n  c") == "abc");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the
  // indentation before one goes.
  CHECK(R("{% if true %}\n  x\n  {% endif %}\ny") == "  x\ny");
  CHECK(R("{% for i in xs %}\n    {{ i }}\n{% endfor %}\n") == "    3\n    1\n    2\n");
  // Not after output tags.
  CHECK(R("{{ 'a' }}\nb") == "a\nb");
  // `+` keeps the indentation.
  CHECK(R("  {%+ if true %}x{% endif %}") == "  x");
  // Comments take part in both.
  CHECK(R("a\n  {# c #}\nb") == "a\nb");
  CHECK(R("a {# c #} b") == "a  b");
}

TEST_CASE("jinja: for loops") {
  CHECK(R("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
          "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}") ==
        "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  CHECK(R("{% for x in xs %}{{ loop.previtem }}-{{ loop.nextitem }},{% endfor %}") == "-1,3-2,1-,");
  CHECK(R("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
  CHECK(R("{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}") == "3222");
  CHECK(R("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}") == "b=2;a=1;");
  CHECK(R("{% for k in d %}{{ k }}{% endfor %}") == "ba");
  CHECK(R("{% for c in 'héllo' %}{{ c }}.{% endfor %}") == "h.é.l.l.o.");
  CHECK(R("{% for x in xs %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "3");
  CHECK(R("{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}") == "32");
  CHECK(R("{% for x in missing %}a{% endfor %}ok") == "ok");
  // A loop body's assignments do not outlive the iteration (Jinja2 scoping).
  CHECK(R("{% set c = 0 %}{% for x in xs %}{{ c }}{% set c = x %}{% endfor %}{{ c }}") == "0000");
  CHECK(R("{% for a in [1, 2] %}{% for b in [3, 4] %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{% endfor %}") ==
        "131 142 231 242 ");
  check_error("{% for x in n %}{% endfor %}", EMBER_ERR_INVALID_ARGUMENT, "not iterable");
  check_error("{% break %}", EMBER_ERR_FORMAT, "outside a loop");
}

TEST_CASE("jinja: if, set, namespace") {
  CHECK(R("{% if n > 10 %}a{% elif n > 5 %}b{% else %}c{% endif %}") == "b");
  CHECK(R("{% if none_value %}a{% elif not none_value %}b{% endif %}") == "b");
  CHECK(R("{% set a = 'x' %}{% if true %}{% set a = 'y' %}{% endif %}{{ a }}") == "y");
  CHECK(R("{% set a, b = [1, 2] %}{{ a }}{{ b }}") == "12");
  CHECK(R("{% set t = 1, 2 %}{{ t }}") == "[1, 2]");
  CHECK(R("{% set block %}in {{ n }}{% endset %}[{{ block }}]") == "[in 7]");
  CHECK(R("{% set ns = namespace(count=0, seen=false) %}{% for x in xs %}{% set ns.count = ns.count + x %}"
          "{% endfor %}{{ ns.count }} {{ ns.seen }}") == "6 False");
  check_error("{% set d.x = 1 %}", EMBER_ERR_INVALID_ARGUMENT, "namespace");
}

TEST_CASE("jinja: macros") {
  CHECK(R("{% macro greet(who, punct='!') %}Hi {{ who }}{{ punct }}{% endmacro %}"
          "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', who='C') }}") == "Hi A! Hi B? Hi C.");
  // Macros see the template's top-level names, not the caller's loop variables.
  CHECK(R("{% set top = 'T' %}{% macro m() %}{{ top }}{{ x }}{% endmacro %}{% for x in [1] %}{{ m() }}{% endfor %}") ==
        "T");
  CHECK(R("{% macro rec(k) %}{% if k > 0 %}{{ k }}{{ rec(k - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}") == "321");
  check_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", EMBER_ERR_UNSUPPORTED, "varargs");
  check_error("{% call m() %}x{% endcall %}", EMBER_ERR_UNSUPPORTED, "statement 'call'");
}

TEST_CASE("jinja: literals and operators") {
  CHECK(R("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }}") ==
        "7 9 3 -4 2 3.5 2.0");
  CHECK(R("{{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 * 1.0 }} {{ 1e-5 * 1.0 }}") ==
        "1024 2.5 0.30000000000000004 1e+20 1e-05");
  CHECK(R("{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }}") == "ab a1None abab [1, 2]");
  CHECK(R("{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 2 < 3 }} {{ 'b' >= 'a' }} {{ [1, 2] == [1, 2] }}") ==
        "True True True True True");
  CHECK(R("{{ 'ell' in 'hello' }} {{ 2 in xs }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 in xs }}") ==
        "True True True True False");
  CHECK(R("{{ true and 'x' }} {{ false or 'y' }} {{ not 0 }} {{ none_value or 'z' }}") == "x y True z");
  CHECK(R("{{ 'yes' if n else 'no' }} {{ 'yes' if none_value else 'no' }}|{{ 'a' if false }}|") == "yes no||");
  CHECK(R("{{ 1_000 }} {{ 'con' 'cat' }}") == "1000 concat");
  check_error("{{ 'a' + 1 }}", EMBER_ERR_INVALID_ARGUMENT, "unsupported operand types for '+': str and int");
  check_error("{{ 1 // 0 }}", EMBER_ERR_INVALID_ARGUMENT, "division by zero");
  check_error("{{ 9223372036854775807 + 1 }}", EMBER_ERR_UNSUPPORTED, "integer overflow");
  check_error("{{ '%s' % n }}", EMBER_ERR_UNSUPPORTED, "printf-style");
  check_error("{{ undefined_name + 'x' }}", EMBER_ERR_INVALID_ARGUMENT, "'undefined_name' is undefined");
}

TEST_CASE("jinja: tests") {
  CHECK(R("{{ n is defined }} {{ nope is defined }} {{ nope is undefined }} {{ none_value is none }}") ==
        "True False True True");
  CHECK(R("{{ s is string }} {{ d is mapping }} {{ xs is iterable }} {{ xs is sequence }} {{ n is number }}") ==
        "True True True True True");
  CHECK(R("{{ n is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ true is true }} {{ 0 is false }}") ==
        "True True True True False");
  CHECK(R("{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ n is divisibleby(2) }}") ==
        "True False True False");
  CHECK(R("{{ n is equalto 7 }} {{ n is not eq 7 }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 2 is in xs }}") ==
        "True False True True True");
  CHECK(R("{{ not n is defined }} {{ messages[0] is not string }}") == "False True");
  check_error("{{ n is prime }}", EMBER_ERR_UNSUPPORTED, "test 'prime' is not supported");
}

TEST_CASE("jinja: subscripts, slices and attributes") {
  CHECK(R("{{ messages[0]['role'] }} {{ messages[0].role }} {{ messages[-1].content }}") ==
        "system system  Hello! ");
  CHECK(R("{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[5:] }}") ==
        "[1, 2] [3, 1] [2, 1, 3] [3, 2] []");
  CHECK(R("{{ 'héllo'[1] }} {{ 'hello'[1:3] }} {{ 'hello'[::-1] }}") == "é el olleh");
  CHECK(R("{{ messages[9] is defined }} {{ d.zzz is defined }} {{ xs.0 }}") == "False False 3");
  CHECK(R("{{ messages | length }} {{ messages[1:] | length }}") == "3 2");
  check_error("{{ nope.attr }}", EMBER_ERR_INVALID_ARGUMENT, "'nope' is undefined");
  check_error("{{ nope['k'] }}", EMBER_ERR_INVALID_ARGUMENT, "'nope' is undefined");
  check_error("{{ xs[::0] }}", EMBER_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
}

TEST_CASE("jinja: filters") {
  CHECK(R("[{{ s | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ s | length }} {{ 'héllo' | length }}") ==
        "[Hello World] [a] 15 5");
  CHECK(R("{{ 'ab' | upper }} {{ 'AB' | lower }} {{ 'hello wORLD' | capitalize }} {{ 'hello wORLD-x' | title }}") ==
        "AB ab Hello world Hello World-X");
  CHECK(R("{{ xs | first }} {{ xs | last }} {{ xs | join(', ') }} {{ xs | join }} {{ xs | sort }} {{ xs | sort(reverse=true) }}") ==
        "3 2 3, 1, 2 312 [1, 2, 3] [3, 2, 1]");
  CHECK(R("{{ nope | default('dflt') }} {{ '' | default('e', true) }} {{ n | d(0) }}") == "dflt e 7");
  CHECK(R("{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }}") == "a+b+c bba");
  CHECK(R("{{ 'abc' | list }} {{ d | list }} {{ d | items | list }} {{ d | dictsort }}") ==
        "['a', 'b', 'c'] ['b', 'a'] [['b', 2], ['a', 1]] [['a', 1], ['b', 2]]");
  CHECK(R("{{ messages | map(attribute='role') | join(',') }} {{ ['a', 'b'] | map('upper') | list }}") ==
        "system,user,assistant ['A', 'B']");
  CHECK(R("{{ messages | selectattr('role', 'equalto', 'user') | list | length }} "
          "{{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}") ==
        "1 ['system', 'assistant']");
  CHECK(R("{{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ [0, 1, ''] | select | list }}") ==
        "[3, 1] [2] [1]");
  CHECK(R("{{ n | string }}{{ '12' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }}") ==
        "713 0 2.5 3 2.57 2.0");
  CHECK(R("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}") == "a\n  b\n\n  c|  a\n  b");
  CHECK(R("{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ [3, 1, 3] | unique | list }} {{ xs | sum }} {{ xs | max }}") ==
        "['a', 'b'] [3, 1] 6 3");
  CHECK(R("{{ '<&>' | safe }} {{ '<&>' | e }} {{ '<&>' | e | e }} {{ xs | reverse | list }}") ==
        "<&> &lt;&amp;&gt; &lt;&amp;&gt; [2, 1, 3]");
  // Markup (safe) + str escapes the str, as markupsafe does; `~` joins plain strings.
  CHECK(R("{{ '<b>'|safe + '\"x\"' + 'y' }} {{ 'a<' + '<b>'|safe }} {{ '<b>'|safe ~ '<' }} {{ '<'|safe|trim + '>' }}") ==
        "<b>&#34;x&#34;y a&lt;<b> <b>< <&gt;");
  check_error("{{ xs | shuffle }}", EMBER_ERR_UNSUPPORTED, "filter 'shuffle' is not supported");
  check_error("{{ 'é' | upper }}", EMBER_ERR_UNSUPPORTED, "non-ASCII");
}

TEST_CASE("jinja: tojson as Hugging Face renders it (json.dumps, ensure_ascii=False)") {
  CHECK(R("{{ d | tojson }}") == "{\"b\": 2, \"a\": 1}");
  CHECK(R("{{ {'a': [1, 'é\"\\n', none, true, 1.5]} | tojson }}") == "{\"a\": [1, \"é\\\"\\n\", null, true, 1.5]}");
  CHECK(R("{{ d | tojson(indent=2) }}") == "{\n  \"b\": 2,\n  \"a\": 1\n}");
  CHECK(R("{{ {'a': [], 'b': {}, 'c': [1]} | tojson(indent=1) }}") == "{\n \"a\": [],\n \"b\": {},\n \"c\": [\n  1\n ]\n}");
  CHECK(R("{{ d | tojson(sort_keys=true) }} {{ '<tag>' | tojson }}") == "{\"a\": 1, \"b\": 2} \"<tag>\"");
  check_error("{{ nope | tojson }}", EMBER_ERR_INVALID_ARGUMENT, "undefined");
  check_error("{{ d | tojson(separators=[',', ':']) }}", EMBER_ERR_UNSUPPORTED, "separators");
}

TEST_CASE("jinja: string, dict and list methods") {
  CHECK(R("[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xax'.strip('x') }}]") ==
        "[Hello World][Hello World  ][  Hello World][a]");
  CHECK(R("{{ s.strip().startswith('Hell') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'a b  c'.split() }} "
          "{{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }}") ==
        "True True ['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c']");
  CHECK(R("{{ 'aXbX'.replace('X', '-') }} {{ 'ab'.upper() }} {{ 'hello world'.title() }} {{ 'abcb'.find('b') }} "
          "{{ 'abcb'.count('b') }} {{ 'abc'.find('z') }}") == "a-b- AB Hello World 1 2 -1");
  CHECK(R("{{ '<think{}>'.format('!') }} {{ '{0}-{1}'.format('a', 'b') }} {{ ', '.join(['a', 'b']) }}") ==
        "<think!> a-b a, b");
  CHECK(R("{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} {{ d.values() | list }}") ==
        "1 None 5 ['b', 'a'] [2, 1]");
  CHECK(R("{% set l = [1] %}{% set _ = l.append(2) %}{{ l }} {{ l.pop(0) }} {{ l }}") == "[1, 2] 1 [2]");
  check_error("{{ s.zfill(3) }}", EMBER_ERR_UNSUPPORTED, "method 'zfill' of a str is not supported");
  check_error("{{ '{:>4}'.format(1) }}", EMBER_ERR_UNSUPPORTED, "format");
}

TEST_CASE("jinja: functions: raise_exception, range, strftime_now, dict") {
  Rendered r = run("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}");
  CHECK(r.status.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(r.status.message().find("raise_exception: System role not supported") != std::string::npos);
  CHECK(R("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}") ==
        "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  CHECK(R("{{ strftime_now('%d %b %Y') }}") == "14 Nov 2023");
  CHECK(R("{{ dict(a=1) }}") == "{'a': 1}");
  check_error("{{ lipsum() }}", EMBER_ERR_UNSUPPORTED, "function 'lipsum'");
  check_error("{{ cycler(1, 2) }}", EMBER_ERR_UNSUPPORTED, "function 'cycler'");
}

TEST_CASE("jinja: filter blocks and generation blocks") {
  CHECK(R("{% filter upper %}a{{ 'b' }}{% endfilter %}") == "AB");
  CHECK(R("{% generation %}kept{% endgeneration %}") == "kept");
}

TEST_CASE("jinja: syntax errors name the construct and line:column") {
  check_error("line1\n{% if %}", EMBER_ERR_FORMAT, "template 2:");
  check_error("{% if true %}a", EMBER_ERR_FORMAT, "'elif' or 'else' or 'endif'");
  check_error("{{ 'a' ", EMBER_ERR_FORMAT, "'{{' is never closed");
  check_error("{# x", EMBER_ERR_FORMAT, "comment");
  check_error("{{ 'abc }}", EMBER_ERR_FORMAT, "string literal");
  check_error("{% frobnicate %}", EMBER_ERR_FORMAT, "unknown statement 'frobnicate'");
  check_error("{% include 'x' %}", EMBER_ERR_UNSUPPORTED, "statement 'include'");
  check_error("{% raw %}{{ x }}{% endraw %}", EMBER_ERR_UNSUPPORTED, "statement 'raw'");
  check_error("{% for x in xs recursive %}{% endfor %}", EMBER_ERR_UNSUPPORTED, "recursive");
  check_error("{{ 1 + }}", EMBER_ERR_FORMAT, "1:");
  check_error("{{ a ! b }}", EMBER_ERR_FORMAT, "unexpected character '!'");
  check_error("{{ '\\u00e9' }}", EMBER_ERR_UNSUPPORTED, "string escape");
}

TEST_CASE("jinja: hostile templates are bounded") {
  Limits small;
  small.max_iterations = 1000;
  check_error("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", EMBER_ERR_NO_MEMORY,
              "loop iterations", small);
  small = Limits{};
  small.max_output_bytes = 1000;
  check_error("{% for i in range(200) %}0123456789{% endfor %}", EMBER_ERR_NO_MEMORY, "output", small);
  check_error("{{ 'x' * 100000 }}", EMBER_ERR_NO_MEMORY, "output limit", small);
  check_error("{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
              EMBER_ERR_NO_MEMORY, "limit", small);
  // Unbounded recursion stops at the macro depth.
  check_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", EMBER_ERR_NO_MEMORY, "macro calls nest deeper");
  // Deep nesting stops at the parse depth, in expressions and in blocks.
  check_error("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}", EMBER_ERR_NO_MEMORY, "deeper");
  std::string ifs;
  for (int i = 0; i < 500; ++i) ifs += "{% if true %}";
  check_error(ifs, EMBER_ERR_NO_MEMORY, "deeper");
  small = Limits{};
  small.max_nodes = 100;
  std::string many;
  for (int i = 0; i < 200; ++i) many += "{{ 1 }}";
  check_error(many, EMBER_ERR_NO_MEMORY, "nodes", small);
  small = Limits{};
  small.max_template_bytes = 10;
  check_error("{{ 'this is longer than ten' }}", EMBER_ERR_NO_MEMORY, "template is", small);
  check_error("{{ range(100000000) | length }}", EMBER_ERR_NO_MEMORY, "range");
}

}  // namespace
}  // namespace ember::chat
