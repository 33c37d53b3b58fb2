#!/usr/bin/env bash
# Developer check, not run in CI (issue 12, items 4 and 7): perplexity of
# llama.cpp-quantized GGUF files as ember and llama.cpp's llama-perplexity
# compute it, on the same file and the same tokens.
#   A. SOURCE (an f32/f16 GGUF) quantized by llama-quantize to each preset;
#      `ember perplexity -m FILE.gguf --llama-chunks --ctx C` (the GGUF runs
#      through ember's conversion cache) vs `llama-perplexity -m FILE.gguf
#      -c C`. Target: within 0.5%.
#   B. ember's own `ember quantize --type q4_k_m` of the same source vs
#      llama.cpp's Q4_K_M file, both scored by both programs. Target: ember's
#      q4_k_m within 1% of llama.cpp's Q4_K_M (each program on each file).
#
# Same tokens: llama-perplexity tokenizes BOS + text, cuts it into whole
# chunks of C tokens (a partial last chunk is dropped), puts BOS first in
# every chunk and scores the last C/2 - 1 tokens of each; `ember perplexity
# --llama-chunks` does exactly that (its default, BOS + C-1 tokens per window
# with every token scored, is a different average). The script checks that
# both counted the same number of tokens, and that the token ids are the
# same (llama-perplexity's --kl-divergence-base file holds them). Both use an
# f32 KV cache (ember's default; llama-perplexity gets -ctk f32 -ctv f32) and
# batch the whole chunk as they each like; llama.cpp quantizes activations to
# 8 bits in its quantized matmuls, ember's fallback for the new types does not
# (its Q8_0/Q4_0 kernels do), which is most of what differs.
#
# stories260K (dim 64, hidden 172) has no row that is a whole 256-block: the
# k-quant and iq4_xs presets fall back per tensor (llama-quantize picks
# q4_0/q5_0/q5_1/q8_0/iq4_nl for the 64-wide rows and f16 for the 172-wide
# ffn_down rows) -- part A exercises the fallback mixtures, not the k-quant
# blocks; the table's "types" column says what
# each file holds. The k-quant and iq4_xs blocks themselves are checked by
# tests/model/test_quant_accuracy.cpp (logits against f32 of the same
# weights) and check_quant_types.sh (dequantization against gguf-py): a
# perplexity on random synthetic weights says little (it sits near the
# vocabulary size whatever the kernels do).
#
# Usage: tools/scripts/check_perplexity.sh [WORKDIR]
# Environment: EMBER (default build/ember), LLAMA_CPP (default ../peer/llama.cpp
# beside the checkout's parent), LLAMA_QUANTIZE, LLAMA_PERPLEXITY (default in
# $LLAMA_CPP/build/bin), SOURCE (default $EMBER_TEST_DATA or ../shared:
# models/stories260K-f32.gguf), TEXT (default: made here: the golden story
# plus 40 stories sampled from SOURCE in f32 by ember, seeds 1..40), CTX
# (default 128, the model's context), THREADS (default 2), PRESETS (default
# "q8_0 q4_0 q4_1 q5_0 q5_1 q4_k_m q5_k_m q6_k q3_k_m q2_k iq4_nl iq4_xs").
# Prints a Markdown table; exit status 0 when every row is within target.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EMBER=${EMBER:-$ROOT/build/ember}
LLAMA_CPP=${LLAMA_CPP:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp}
LLAMA_QUANTIZE=${LLAMA_QUANTIZE:-$LLAMA_CPP/build/bin/llama-quantize}
LLAMA_PERPLEXITY=${LLAMA_PERPLEXITY:-$LLAMA_CPP/build/bin/llama-perplexity}
DATA=${EMBER_TEST_DATA:-$(cd "$ROOT/.." && pwd)/shared}
SOURCE=${SOURCE:-$DATA/models/stories260K-f32.gguf}
CTX=${CTX:-128}
THREADS=${THREADS:-2}
PRESETS=${PRESETS:-q8_0 q4_0 q4_1 q5_0 q5_1 q4_k_m q5_k_m q6_k q3_k_m q2_k iq4_nl iq4_xs}
WORK=${1:-$(mktemp -d /tmp/check-perplexity.XXXXXX)}
mkdir -p "$WORK"

die() { echo "check_perplexity: $*" >&2; exit 2; }
[[ -x $EMBER ]] || die "$EMBER is not built"
[[ -x $LLAMA_QUANTIZE ]] || die "$LLAMA_QUANTIZE is not built (llama.cpp's llama-quantize)"
[[ -x $LLAMA_PERPLEXITY ]] || die "$LLAMA_PERPLEXITY is not built (llama.cpp's llama-perplexity)"
[[ -f $SOURCE ]] || die "SOURCE '$SOURCE' does not exist"
command -v python3 > /dev/null || die "python3 is needed for the table"
# llama.cpp's shared libraries sit beside its binaries.
export LD_LIBRARY_PATH=$(dirname "$LLAMA_PERPLEXITY")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A private conversion cache, so that the check neither uses nor fills the user's.
export EMBER_CACHE_DIR=$WORK/cache

# The text: long enough for several chunks (llama-perplexity wants at least
# two). stories260K was trained on TinyStories; its own samples are text it
# models well, so quantization error shows.
make_text() {
  local src=$1 out=$2 n=$3
  cat "$DATA/golden/once-upon-a-time.txt" > "$out"
  for ((s = 1; s <= n; s++)); do
    printf '\n' >> "$out"
    "$EMBER" run -m "$src" -p "Once upon a time" -n 200 --temp 1 --seed "$s" --threads "$THREADS" \
      2> /dev/null >> "$out"
  done
}

RESULTS=$WORK/results.tsv
: > "$RESULTS"

# ember_ppl MODEL TEXT CTX -> "ppl count"
ember_ppl() {
  "$EMBER" perplexity -m "$1" -f "$2" --ctx "$3" --threads "$THREADS" --llama-chunks 2> /dev/null |
    awk '/^perplexity /{p=$2} /^tokens_scored /{n=$2} END{print p, n}'
}
# llama_ppl MODEL TEXT CTX LOGITS_FILE -> "ppl count"; its final estimate and
# the number of tokens (chunks x (C - C/2 - 1)). llama.cpp logs from a
# thread of its own, and now and then the tail of the log (the final
# estimate) is lost at exit: then it runs again (three tries).
llama_ppl() {
  local log=$4.log try
  for try in 1 2 3; do
    "$LLAMA_PERPLEXITY" -m "$1" -f "$2" -c "$3" -t "$THREADS" -ctk f32 -ctv f32 --kl-divergence-base "$4" \
      > "$log" 2>&1 || { echo "nan 0"; return; }
    grep -q "Final estimate" "$log" && break
  done
  python3 - "$log" "$3" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
ctx = int(sys.argv[2])
m = re.search(r"Final estimate: PPL = ([0-9.eE+-]+)", text)
chunks = re.search(r"calculating perplexity over (\d+) chunks", text)
print(m.group(1) if m else "nan", int(chunks.group(1)) * (ctx - ctx // 2 - 1) if chunks else 0)
PY
}
# same_tokens LOGITS_FILE MODEL TEXT: llama-perplexity's tokens == BOS + ember's.
same_tokens() {
  "$EMBER" tokenize "$2" --file "$3" > "$WORK/ember.ids" 2> /dev/null
  python3 - "$1" "$WORK/ember.ids" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    assert f.read(8) == b"_logits_"
    n_ctx, n_vocab, n_chunk = struct.unpack("<iii", f.read(12))
    theirs = list(struct.unpack(f"<{n_ctx * n_chunk}i", f.read(4 * n_ctx * n_chunk)))
ours = [int(t) for t in open(sys.argv[2]).read().split()]
# ember's tokenize prints the text's ids; llama.cpp's start with BOS (1).
ours = [1] + ours
ok = ours[:len(theirs)] == theirs
print("same" if ok else f"DIFFERENT (first at {next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)})")
PY
}

# compare_file PART LABEL GGUF TEXT CTX: one row of the table.
compare_file() {
  local part=$1 label=$2 gguf=$3 text=$4 ctx=$5
  local lf=$WORK/$label.kld
  read -r lp ln < <(llama_ppl "$gguf" "$text" "$ctx" "$lf")
  read -r ep en < <(ember_ppl "$gguf" "$text" "$ctx")
  local tok="-"
  [[ -s $lf ]] && tok=$(same_tokens "$lf" "$gguf" "$text")
  rm -f "$lf"
  local types
  "$EMBER" convert "$gguf" -o "$WORK/info.ember" > /dev/null 2>&1
  types=$("$EMBER" info "$WORK/info.ember" 2>/dev/null | awk '/^  type /{printf "%s%s x%s", sep, $2, $3; sep=", "}')
  rm -f "$WORK/info.ember"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$label" "${types:--}" "$ep" "$en" "$lp" "$ln" "$tok" >> "$RESULTS"
  echo "  $label: ember $ep ($en tokens), llama.cpp $lp ($ln tokens), tokens $tok" >&2
}

run_part_a() {
  local part=$1 src=$2 text=$3 ctx=$4
  for p in $PRESETS; do
    local g=$WORK/$part-$p.gguf
    if ! "$LLAMA_QUANTIZE" "$src" "$g" "${p^^}" "$THREADS" > "$WORK/$part-$p.quantize.log" 2>&1; then
      echo "  $p: llama-quantize failed (see $WORK/$part-$p.quantize.log); skipped" >&2
      continue
    fi
    compare_file "$part" "llama.cpp $p" "$g" "$text" "$ctx"
  done
  compare_file "$part" "f32 (source)" "$src" "$text" "$ctx"
}

# B: ember's q4_k_m of the same source, scored by both programs (llama.cpp
# reads ember's GGUF output: the same weight bytes as the .ember).
run_part_b() {
  local part=$1 src=$2 text=$3 ctx=$4
  local e=$WORK/$part-src.ember
  "$EMBER" convert "$src" -o "$e" > /dev/null 2>&1
  "$EMBER" quantize "$e" -o "$WORK/$part-ember-q4_k_m.gguf" --type q4_k_m --gguf > "$WORK/$part-ember-q4_k_m.log" 2>&1
  compare_file "$part" "ember q4_k_m" "$WORK/$part-ember-q4_k_m.gguf" "$text" "$ctx"
  rm -f "$e"
}

TEXT_A=${TEXT:-}
if [[ -z $TEXT_A ]]; then
  TEXT_A=$WORK/stories.txt
  echo "making the text ($TEXT_A): the golden story + 40 sampled stories" >&2
  make_text "$SOURCE" "$TEXT_A" 40
fi
echo "A/B. $SOURCE, ctx $CTX, text $TEXT_A" >&2
run_part_a A "$SOURCE" "$TEXT_A" "$CTX"
run_part_b B "$SOURCE" "$TEXT_A" "$CTX"

python3 - "$RESULTS" "$CTX" <<'PY'
import math, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
ok = True
print("| part | file | tensor types | ember PPL | llama.cpp PPL | ember / llama.cpp | tokens scored (ember / llama.cpp) | token ids |")
print("|---|---|---|---:|---:|---:|---|---|")
by = {}
for part, label, types, ep, en, lp, ln, tok in rows:
    ep, lp = float(ep or "nan"), float(lp or "nan")
    d = ep / lp - 1 if lp == lp and lp > 0 else float("nan")
    good = abs(d) <= 0.005 and en == ln and tok == "same"
    ok &= good
    by[(part, label)] = (ep, lp)
    print(f"| {part} | {label} | {types} | {ep:.4f} | {lp:.4f} | {d:+.3%} {'' if good else '(!)'} | {en} / {ln} | {tok} |")
print()
for qpart, epart in (("A", "B"),):
    q, e = by.get((qpart, "llama.cpp q4_k_m")), by.get((epart, "ember q4_k_m"))
    if not q or not e:
        continue
    de, dl = e[0] / q[0] - 1, e[1] / q[1] - 1
    good = abs(de) <= 0.01 and abs(dl) <= 0.01
    ok &= good
    print(f"quantizers ({qpart}/{epart}): ember's q4_k_m vs llama.cpp's Q4_K_M, same source: "
          f"{de:+.3%} scored by ember, {dl:+.3%} scored by llama.cpp (target within 1%){'' if good else ' (!)'}")
print("check_perplexity: " + ("OK" if ok else "OUT OF TARGET (marked (!))"))
sys.exit(0 if ok else 1)
PY
