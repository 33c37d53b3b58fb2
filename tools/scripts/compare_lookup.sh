#!/usr/bin/env bash
# Speculative decoding side by side (issue 42): ember (`ember run --lookup`
# or `--draft DRAFT`, and without) and llama.cpp (llama-lookup or
# llama-speculative -md DRAFT, and llama-completion without) on the same GGUF
# files and the same prompt, greedy, 2 threads, interleaved rounds (medians
# of decode tok/s). The prompt is one the model copies from: a start, the
# model's own greedy continuation of it, then the start again.
#
# usage: tools/scripts/compare_lookup.sh MODEL.gguf [ROUNDS]
#   env: N (tokens generated, default 128), K (most drafted tokens, default 4),
#        DRAFT (a draft model GGUF of the same vocabulary: draft-model
#        speculation instead of prompt lookup),
#        START (the prompt's start), THREADS (default 2),
#        CONT (instead: the prompt is the start and CONT tokens of the model's
#        own greedy continuation, whose next tokens are then decoded: a model
#        that loops copies from it),
#        LLAMA_BIN (llama.cpp's build/bin; default ../peer/llama.cpp/build/bin)
# Prints a Markdown table with acceptance, tokens per step and ember's
# predicted speed-up (ember bench --lookup); the raw outputs stay in
# $TMPDIR/ember-lookup.
set -euo pipefail
MODEL=$1
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA_BIN=${LLAMA_BIN:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin}
EMBER=${EMBER:-$ROOT/build/ember}
N=${N:-128}
K=${K:-4}
DRAFT=${DRAFT:-}
THREADS=${THREADS:-2}
WHAT=lookup
[[ -n $DRAFT ]] && WHAT=draft
OUT=${TMPDIR:-/tmp}/ember-lookup
mkdir -p "$OUT"

# The prompt: the start, its greedy continuation (ember's; llama.cpp's
# greedy text is the same where the logits agree), the start again.
START=${START:-"Once upon a time, in a small town by the sea, there lived"}
if [[ -n ${CONT:-} ]]; then
  "$EMBER" run -m "$MODEL" -p "$START" -n "$CONT" --ctx $((CONT + N + 256)) --threads "$THREADS" \
    > "$OUT/prompt.txt" 2> "$OUT/continuation.err"
  truncate -s -1 "$OUT/prompt.txt"  # the newline ember run ends its output with
else
  "$EMBER" run -m "$MODEL" -p "$START" -n "$N" --threads "$THREADS" > "$OUT/continuation.txt" 2> "$OUT/continuation.err"
  { cat "$OUT/continuation.txt"; printf '%s' "$START"; } > "$OUT/prompt.txt"
fi

ember_run() {  # $1: 0 plain / 1 lookup -> tok/s
  local extra=()
  if [[ $1 == 1 && -n $DRAFT ]]; then
    extra=(--draft "$DRAFT" --draft-max "$K")
  elif [[ $1 == 1 ]]; then
    extra=(--lookup --draft-max "$K")
  fi
  "$EMBER" run -m "$MODEL" -f "$OUT/prompt.txt" -n "$N" --threads "$THREADS" "${extra[@]}" \
    > "$OUT/ember-$1.out" 2> "$OUT/ember-$1.err" || true
  sed -n 's/.*decode \([0-9.]*\) tok\/s.*/\1/p' "$OUT/ember-$1.err" | tail -1 | grep . || echo 0
}

llama_run() {  # $1: 0 plain / 1 lookup -> tok/s
  if [[ $1 == 1 && -n $DRAFT ]]; then
    "$LLAMA_BIN/llama-speculative" -m "$MODEL" -md "$DRAFT" -f "$OUT/prompt.txt" -n "$N" -t "$THREADS" -td "$THREADS" \
      --temp 0 --top-k 1 --spec-draft-n-max "$K" < /dev/null > "$OUT/llama-1.out" 2> "$OUT/llama-1.err" || true
    sed -n 's/.*decoded .* speed: *\([0-9.]*\) t\/s.*/\1/p' "$OUT/llama-1.err" | tail -1 | grep . || echo 0
  elif [[ $1 == 1 ]]; then
    "$LLAMA_BIN/llama-lookup" -m "$MODEL" -f "$OUT/prompt.txt" -n "$N" -t "$THREADS" --temp 0 --top-k 1 \
      --spec-draft-n-max "$K" < /dev/null > "$OUT/llama-1.out" 2> "$OUT/llama-1.err" || true
    # "decoded N tokens in X seconds, speed: Y t/s"
    sed -n 's/.*decoded .* speed: *\([0-9.]*\) t\/s.*/\1/p' "$OUT/llama-1.err" | tail -1 | grep . || echo 0
  else
    "$LLAMA_BIN/llama-completion" -m "$MODEL" -f "$OUT/prompt.txt" -n "$N" -t "$THREADS" --temp 0 --top-k 1 \
      -no-cnv --no-warmup < /dev/null > "$OUT/llama-0.out" 2> "$OUT/llama-0.err" || true
    { grep -E "(common_perf_print|llama_perf_context_print): +eval time" "$OUT/llama-0.err" || true; } | tail -1 |
      sed -n 's/.*, *\([0-9.]*\) tokens per second.*/\1/p' | grep . || echo 0
  fi
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: > "$OUT/e0"; : > "$OUT/e1"; : > "$OUT/l0"; : > "$OUT/l1"
ember_run 0 > /dev/null  # warm-up (the GGUF's conversion cache)
for r in $(seq 1 "$ROUNDS"); do
  ember_run 1 >> "$OUT/e1"
  llama_run 1 >> "$OUT/l1"
  ember_run 0 >> "$OUT/e0"
  llama_run 0 >> "$OUT/l0"
  echo "round $r: ember $WHAT $(tail -1 "$OUT/e1"), plain $(tail -1 "$OUT/e0"); llama.cpp $WHAT $(tail -1 "$OUT/l1"), plain $(tail -1 "$OUT/l0")" >&2
done
e0=$(median < "$OUT/e0"); e1=$(median < "$OUT/e1"); l0=$(median < "$OUT/l0"); l1=$(median < "$OUT/l1")
acc_e=$(sed -n 's/^\(lookup\|draft\): .* (\([0-9]*\)%).*/\2/p' "$OUT/ember-1.err")
tps_e=$(sed -n 's/.*, \([0-9.]*\) tokens per step.*/\1/p' "$OUT/ember-1.err")
acc_l=$(sed -n 's/.*accept *= *\([0-9.]*\)%.*/\1/p' "$OUT/llama-1.err" | tail -1)
same=$(cmp -s "$OUT/ember-0.out" "$OUT/ember-1.out" && echo yes || echo NO)
spec=(--lookup)
[[ -n $DRAFT ]] && spec=(--draft "$DRAFT")
"$EMBER" bench -m "$MODEL" "${spec[@]}" -f "$OUT/prompt.txt" -n "$N" -r 1 --draft-max "$K" --threads "$THREADS" --json \
  > "$OUT/bench.json" 2> /dev/null || true
pred=$(sed -n 's/.*"predicted_speedup": *\([0-9.]*\).*/\1/p' "$OUT/bench.json")
echo
echo "| $(basename "$MODEL")${DRAFT:+ + draft $(basename "$DRAFT")}, $N tokens, draft max $K | plain tok/s | $WHAT tok/s | speed-up | acceptance |"
echo "|---|---:|---:|---:|---:|"
echo "| ember | $e0 | $e1 | $(awk -v a="$e1" -v b="$e0" 'BEGIN{printf "%.2fx", a/b}') (predicted ${pred:-?}x; $tps_e tokens/step) | $acc_e% |"
echo "| llama.cpp | $l0 | $l1 | $(awk -v a="$l1" -v b="$l0" 'BEGIN{printf "%.2fx", a/b}') | $acc_l% |"
echo "| ember / llama.cpp | $(awk -v a="$e0" -v b="$l0" 'BEGIN{printf "%.2fx", a/b}') | $(awk -v a="$e1" -v b="$l1" 'BEGIN{printf "%.2fx", a/b}') | | |"
echo
echo "ember's text with $WHAT is the same as without: $same"
