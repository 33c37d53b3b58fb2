#!/usr/bin/env bash
# Embeddings, ember against llama.cpp's llama-embedding on the same GGUF and
# the same inputs (issue 46): for each pooling, each input's cosine
# similarity between the two programs' vectors (both L2-normalized), the
# lowest of them, and the largest element difference.
#
# usage: tools/scripts/compare_embed.sh MODEL.gguf INPUTS.txt [POOLINGS=mean,cls,last] [LLAMA_EMBEDDING]
#   INPUTS.txt: one input per line. LLAMA_EMBEDDING: default
#   ../peer/llama.cpp/build/bin/llama-embedding. EMBER=path/to/ember to pick the binary; CTX=N
#   llama-embedding's context (default 512: every input at once, within a bert's positions).
# Prints a Markdown table; exits 1 when a cosine is below 0.99999.
set -euo pipefail
MODEL=$(realpath "$1")
INPUTS=$(realpath "$2")
POOLINGS=${3:-mean,cls,last}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA=${4:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin/llama-embedding}
EMBER=${EMBER:-$ROOT/build/ember}
# llama-embedding's context and batch (all inputs at once; at most a bert model's learned positions).
CTX=${CTX:-512}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ember-embed.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

echo "| pooling | inputs | min cosine | max abs diff |"
echo "|---|---:|---:|---:|"
status=0
for pooling in ${POOLINGS//,/ }; do
  # One context for all of llama.cpp's inputs (it runs them as sequences of one batch).
  # llama-embedding (80fb11a) now and then exits 0 with its JSON cut short: tried again, up to 8 times.
  for try in 1 2 3 4 5 6 7 8; do
    # (Run from the scratch folder: from this checkout's root its output was cut short every time.)
    (cd "$OUT" && "$LLAMA" -m "$MODEL" -f "$INPUTS" --pooling "$pooling" --embd-output-format json -t 2 -c "$CTX" \
      -b "$CTX" -ub "$CTX" > "$OUT/llama.json" 2> "$OUT/llama.err") || { cat "$OUT/llama.err" >&2; exit 2; }
    /usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$OUT/llama.json" 2> /dev/null && break
    [ "$try" = 8 ] && { echo "llama-embedding's output is not JSON eight times" >&2; exit 2; }
  done
  "$EMBER" embed -m "$MODEL" -f "$INPUTS" --pooling "$pooling" --json --threads 2 > "$OUT/ember.json" 2> "$OUT/ember.err" \
    || { cat "$OUT/ember.err" >&2; exit 2; }
  /usr/bin/python3 - "$OUT/llama.json" "$OUT/ember.json" "$pooling" <<'PY' || status=1
import json, math, sys
llama = [d["embedding"] for d in json.load(open(sys.argv[1]))["data"]]
ember = [d["embedding"] for d in json.load(open(sys.argv[2]))["data"]]
if len(llama) != len(ember):
    sys.exit(f"{sys.argv[3]}: llama.cpp gave {len(llama)} vectors, ember {len(ember)}")
cos, diff = [], 0.0
for a, b in zip(llama, ember):
    ab = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    cos.append(ab / (na * nb) if na and nb else 0.0)
    diff = max(diff, max(abs(x - y) for x, y in zip(a, b)))
print(f"| {sys.argv[3]} | {len(cos)} | {min(cos):.7f} | {diff:.2e} |")
sys.exit(0 if min(cos) >= 0.99999 else 1)
PY
done
exit $status
