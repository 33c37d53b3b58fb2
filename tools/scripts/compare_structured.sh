#!/usr/bin/env bash
# Constrained decoding side by side (issue 41): ember and llama.cpp on the same
# GGUF file and the same JSON Schema, each also unconstrained, interleaved
# rounds (the order rotates), medians of decode tok/s. Sampling: temperature
# alone (top-k 0, top-p 1, min-p 0) for both, 2 threads, the same seeds.
#
# usage: tools/scripts/compare_structured.sh MODEL.gguf SCHEMA.json [LLAMA_COMPLETION] [ROUNDS]
#   (docs/benchmarks.md used tests/grammar/bench/order.schema.json)
#   LLAMA_COMPLETION: llama.cpp's llama-completion (default ../peer/llama.cpp/build/bin/llama-completion)
# Prints a Markdown table and ember's schema compile time; the raw outputs
# stay in $TMPDIR/ember-structured.
set -euo pipefail
MODEL=$1
SCHEMA=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA=${3:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin/llama-completion}
ROUNDS=${4:-5}
EMBER=${EMBER:-$ROOT/build/ember}
N=${N:-256}
OUT=${TMPDIR:-/tmp}/ember-structured
mkdir -p "$OUT"

ember_run() {  # $1: seed, $2: constrained 0/1 -> tok/s
  local extra=()
  [[ $2 == 1 ]] && extra=(--json-schema "$SCHEMA")
  "$EMBER" run -m "$MODEL" -p "Order:" -n "$N" --temp 1 --seed "$1" --threads 2 "${extra[@]}" \
    > "$OUT/ember-$2-$1.out" 2> "$OUT/ember-$2-$1.err"
  sed -n 's/.*decode \([0-9.]*\) tok\/s.*/\1/p' "$OUT/ember-$2-$1.err" | tail -1
}

llama_run() {
  local extra=()
  [[ $2 == 1 ]] && extra=(-jf "$SCHEMA")
  "$LLAMA" -m "$MODEL" -p "Order:" -n "$N" --temp 1 --top-k 0 --top-p 1 --min-p 0 -s "$1" -t 2 \
    -no-cnv --no-warmup "${extra[@]}" < /dev/null > "$OUT/llama-$2-$1.out" 2> "$OUT/llama-$2-$1.err"
  # "eval time = X ms / N runs ( ... ms per token, Y tokens per second)"
  grep -E "(common_perf_print|llama_perf_context_print): +eval time" "$OUT/llama-$2-$1.err" | tail -1 |
    sed -n 's/.*, *\([0-9.]*\) tokens per second.*/\1/p'
}

# The GGUF file is converted into ember's cache once, before the timed runs.
"$EMBER" run -m "$MODEL" -p "Order:" -n 1 > /dev/null 2>&1
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
  order=("ember 0" "ember 1" "llama 0" "llama 1")
  for ((k = 0; k < r % 4; k++)); do order=("${order[@]:1}" "${order[0]}"); done
  for o in "${order[@]}"; do
    set -- $o
    v=$(${1}_run "$r" "$2")
    R[$1-$2]+="$v "
    echo "round $r $1 constrained=$2: $v tok/s" >&2
  done
done
med() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.1f}')" $1; }
e0=$(med "${R[ember-0]}"); e1=$(med "${R[ember-1]}"); l0=$(med "${R[llama-0]}"); l1=$(med "${R[llama-1]}")
echo "| runtime | unconstrained tok/s | constrained tok/s | constrained / unconstrained |"
echo "|---|---:|---:|---:|"
python3 - "$e0" "$e1" "$l0" "$l1" <<'PY'
import sys
e0, e1, l0, l1 = map(float, sys.argv[1:])
print(f"| ember | {e0:.1f} | {e1:.1f} | {e1/e0:.3f} |")
print(f"| llama.cpp | {l0:.1f} | {l1:.1f} | {l1/l0:.3f} |")
print(f"| ember / llama.cpp | {e0/l0:.2f}x | {e1/l1:.2f}x | |")
PY
# ember's one-time schema compile (translation, parse, the vocabulary's
# index), from each constrained run's "grammar: ... compiled in X ms" line.
compile_ms=$(cat "$OUT"/ember-1-*.err | sed -n 's/^grammar: .* compiled in \([0-9.]*\) ms$/\1/p' | tr '\n' ' ')
[ -n "$compile_ms" ] && echo "ember schema compile: $(med "$compile_ms") ms (median of $(echo $compile_ms | wc -w) runs)"
