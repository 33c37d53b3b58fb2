#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang and
# -fsanitize=fuzzer,address,undefined in the sanitized build that
# tools/scripts/sanitize.sh asan also uses (build-asan/,
# tools/scripts/sanitized_build.sh: after it, nothing compiles here), generates
# seed corpora from the real files in ../shared, and runs each target for a
# bounded time.
#   tools/scripts/fuzz.sh [SECONDS_PER_TARGET=30] [TARGET...]
# Env: EMBER_TEST_DATA (default ../shared), BUILD (default build-asan),
#      JOBS (default 2), EMBER_CLI (the `ember` that writes the seed
#      files; default build/ember). Exit status 1 when a target crashes or leaks; the
#      reproducer is left in $BUILD/artifacts/. Prints executions per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tools/scripts/sanitized_build.sh
. tools/scripts/sanitized_build.sh
SECONDS_PER_TARGET=${1:-30}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(fuzz_model_open fuzz_model_semantic fuzz_gguf fuzz_tokenizer fuzz_c_api fuzz_serve_request fuzz_session_state fuzz_chat_template fuzz_grammar)
BUILD=${BUILD:-build-asan}
JOBS=${JOBS:-2}
DATA=${EMBER_TEST_DATA:-$(pwd)/../shared}

asan_configure "$BUILD"
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"
# The seed files are made by an `ember` already built — EMBER_CLI, else the
# native build's (CI builds it first) — so this build need not compile the
# whole CLI under the sanitizers; without one it builds its own.
EMBER=${EMBER_CLI:-build/ember}
if [ ! -x "$EMBER" ]; then
  cmake --build "$BUILD" -j"$JOBS" --target ember_cli
  EMBER=$BUILD/ember
fi

# Seed corpora, generated here (never committed).
SEEDS=$BUILD/seeds
rm -rf "$SEEDS"
mkdir -p "$SEEDS"/{fuzz_model_open,fuzz_model_semantic,fuzz_gguf,fuzz_tokenizer,fuzz_c_api,fuzz_serve_request,fuzz_session_state,fuzz_chat_template,fuzz_grammar} "$BUILD/artifacts"
if [ -f "$DATA/models/stories260K.bin" ]; then
  ASAN_OPTIONS=detect_leaks=0 "$EMBER" convert "$DATA/models/stories260K.bin" --tokenizer "$DATA/models/tok512.bin" \
    -o "$SEEDS/fuzz_model_open/stories260K.ember" >/dev/null
fi
ASAN_OPTIONS=detect_leaks=0 "$EMBER" synth --shape tiny --dtype q8_0 -o "$SEEDS/fuzz_model_open/tiny-q8_0.ember" >/dev/null 2>&1 || true
ASAN_OPTIONS=detect_leaks=0 "$EMBER" synth --shape tiny --dtype f32 -o "$SEEDS/fuzz_model_open/tiny-f32.ember" >/dev/null 2>&1 || true
if [ -f "$SEEDS/fuzz_model_open/tiny-f32.ember" ]; then  # a signed seed (exercises the trailer)
  cp "$SEEDS/fuzz_model_open/tiny-f32.ember" "$SEEDS/fuzz_model_open/tiny-signed.ember"
  rm -f "$BUILD/k.pem" "$BUILD/p.pem"
  ASAN_OPTIONS=detect_leaks=0 "$EMBER" keygen --private "$BUILD/k.pem" --public "$BUILD/p.pem" >/dev/null
  ASAN_OPTIONS=detect_leaks=0 "$EMBER" sign "$SEEDS/fuzz_model_open/tiny-signed.ember" --key "$BUILD/k.pem" >/dev/null
fi
for f in "$DATA"/models/*.gguf "$DATA"/vocab/*.gguf; do [ -f "$f" ] && cp "$f" "$SEEDS/fuzz_gguf/"; done
# Tokenizer seeds: each test input, prefixed by a mode byte per vocabulary and
# operation (fuzz_tokenizer.cpp: the vocabulary is mode % 4, decoding when
# (mode / 4) % 2, BOS when (mode / 8) % 2).
python3 - "$DATA" "$SEEDS/fuzz_tokenizer" <<'PY'
import os, sys, struct
data, out = sys.argv[1], sys.argv[2]
n = 0
for name in ("ggml-vocab-llama-spm.gguf.inp", "ggml-vocab-gpt-2.gguf.inp"):
    p = os.path.join(data, "vocab", name)
    if not os.path.exists(p):
        continue
    for text in open(p, "rb").read().split(b"\n__ggml_vocab_test__\n"):
        for mode in (0, 1, 2, 3, 8):
            open(os.path.join(out, "t%04d" % n), "wb").write(bytes([mode]) + text)
            n += 1
for mode in (4, 5, 6, 7):  # decode: a few ids, one out of range
    open(os.path.join(out, "ids%d" % mode), "wb").write(bytes([mode]) + struct.pack("<5i", 1, 2, 100, 300, 70000))
PY
head -c 512 /dev/zero > "$SEEDS/fuzz_c_api/zeros"
# Serve seeds: a split byte, then requests of every route and field kind.
python3 - "$SEEDS/fuzz_serve_request" <<'PY'
import json, os, sys
out = sys.argv[1]
bodies = [
    {"model": "m", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
     "min_p": 0.05, "seed": 1, "stop": ["\n", "."], "stream": True, "stream_options": {"include_usage": True}},
    {"prompt": [1, 2, 3], "echo": True},
    {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
     "max_completion_tokens": 8, "stop": "END"},
    {"messages": [{"role": "user", "content": "w?"},
                  {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"}],
     "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                "parameters": {"type": "object", "properties": {"city": {"enum": ["Oslo", "Lima"]},
                               "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}],
     "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": False},
    # Replies in each family's call form (read back by tool_syntax.h's readers).
    {"messages": [{"role": "assistant", "content": c} for c in [
        "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}]",
        "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{\"city\": \"Oslo\"}now{}",
        "<|tool_call|>[{\"name\": \"now\", \"arguments\": {\"tz\": \"UTC\"}}]<|/tool_call|>",
        "x<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>,days:[1,{n:None}]}<tool_call|><|tool_response>",
        "{\"name\": \"now\", \"parameters\": {}}"]],
     "tools": [{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {
         "tz": {"type": "string"}, "Days": {"type": "array", "items": {"type": "integer"}}}, "required": ["tz"]}}}],
     "tool_choice": "required"},
]
reqs = [b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n"]
for b in bodies:
    body = json.dumps(b).encode()
    reqs.append(b"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer k\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    reqs.append(b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
for i, r in enumerate(reqs):
    for split in (0, 7, 40):
        open(os.path.join(out, "r%d_%d" % (i, split)), "wb").write(bytes([split]) + r)
# Nested and huge JSON (issue 43): recipes (first byte 0x80; the second: a
# shape in its low 3 bits, a count above) that the target expands, so small
# inputs reach 100,000-deep and megabyte bodies.
frags = [b"", b"[]", b'{"role":"user"}', b"1", b'"a"', b'{"a":[{}]}', b'{"role":"user","content":[{"type":"text","text":"x"}]}']
for shape in range(8):
    for k, f in enumerate(frags):
        for count in (0, 1, 31):
            open(os.path.join(out, "n%d_%d_%d" % (shape, k, count)), "wb").write(bytes([0x80, (count << 3) | shape]) + f)
PY
head -c 512 /dev/urandom > "$SEEDS/fuzz_c_api/random" 2>/dev/null || true
echo 'seed' > "$SEEDS/fuzz_model_semantic/seed"
# Session-state seeds: one per mode (raw bytes, a mutated valid state, a cut one).
printf '\000EMBRSESS\001\000\000\000\140\000\000\000' > "$SEEDS/fuzz_session_state/raw"
printf '\001\000\000\000\000\030\000\000\000\007' > "$SEEDS/fuzz_session_state/mutated"
printf '\002\000\000\000\000\000\000\001\000' > "$SEEDS/fuzz_session_state/cut"
# Chat-template seeds: the built-ins' kind of text, and llama.cpp's model
# templates when tools/scripts/fetch_llama_vocabs.sh has fetched them.
printf '%s' "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] | trim + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}" \
  > "$SEEDS/fuzz_chat_template/chatml"
printf '%s' "{%- set ns = namespace(x=0) -%}{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{% for k, v in {'a': [1, 2]}.items() if v %}{{ f(k) }}{{ v | tojson(indent=2) }}{{ loop.index }}{% set ns.x = ns.x + 1 %}{% endfor %}{{ messages[1:][::-1] | map(attribute='role') | join(', ') }}{{ ns.x is defined and 'a b'.split()[0].upper() }}" \
  > "$SEEDS/fuzz_chat_template/constructs"
for f in "${EMBER_LLAMA_VOCAB_DIR:-build/_deps/llama-vocab}"/templates/*.jinja; do [ -f "$f" ] && cp "$f" "$SEEDS/fuzz_chat_template/"; done
# Grammar seeds: GBNF of every construct (comments, continuation lines,
# escapes, classes, groups, each repetition, UTF-8 literals), and one of
# errors.
G=$SEEDS/fuzz_grammar
cat > "$G/json" <<'GBNF'
root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n]*
GBNF
cat > "$G/arith" <<'GBNF'
root ::= expr
expr ::= term ( [-+] term )*
term ::= factor ( [*/] factor )*
factor ::= [0-9]+ | "(" expr ")" # parenthesised
GBNF
cat > "$G/lines" <<'GBNF'
# a list
root ::= item{1,5}
  | "none" | 
item ::= (
  "- " [^\n]+
) "\n" .?
GBNF
cat > "$G/utf8" <<'GBNF'
root ::= ("こんにちは" | "😀" | [\u3040-\u309F\U0001F300-\U0001F5FF])+ "\xe9\u00e9\U000000e9"{2,} [a-z]{0,3}
GBNF
cat > "$G/errors" <<'GBNF'
root ::= a
a ::= "x" |
root ::= [z-a] "\q" (( "
GBNF

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export EMBER_TEST_DATA=$DATA
# The targets run JOBS at a time (each is one process on one core): CI's
# two cores fuzz two targets at once instead of one after the other.
run_target() {
  local t=$1 corpus=$BUILD/corpus/$1 log=$BUILD/$1.log rc=0
  mkdir -p "$corpus"
  "$BUILD/tests/fuzz/$t" "$corpus" "$SEEDS/$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 \
    -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$BUILD/$t.rc"
}
mkdir -p "$BUILD/artifacts"
running=0
for t in "${TARGETS[@]}"; do
  rm -f "$BUILD/$t.rc"
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
status=0
printf '%-22s %8s %12s %8s %s\n' target seconds executions exec/s result
for t in "${TARGETS[@]}"; do
  log=$BUILD/$t.log
  rc=$(cat "$BUILD/$t.rc" 2>/dev/null || echo 'missing')
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (rc $rc, see $log and $BUILD/artifacts/)"
    status=1
    grep -m5 -E 'ERROR|runtime error|SUMMARY' "$log" || true
  fi
  printf '%-22s %8s %12s %8s %s\n' "$t" "$SECONDS_PER_TARGET" "$execs" "$rate" "$result"
done
exit $status
