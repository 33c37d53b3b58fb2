#!/usr/bin/env bash
# Embedding throughput, ember against llama.cpp's llama-embedding on the
# same GGUF and the same inputs (issue 46): INPUTS lines of about WORDS
# words each (cut from docs/decisions.md), 2 threads, ROUNDS interleaved
# rounds. llama.cpp's figure is its wall time after its first decode's log
# line (the model's load not counted); ember's is `ember bench --embed -f` (one warm-up, then one
# timed run per round). Prints the medians and ember / llama.cpp.
#
# usage: tools/scripts/compare_embed_speed.sh MODEL.gguf [INPUTS=64] [WORDS=50] [ROUNDS=3] [POOLING=mean]
#   LLAMA_EMBEDDING=path, EMBER=path pick the binaries.
set -euo pipefail
MODEL=$1
INPUTS=${2:-64}
WORDS=${3:-50}
ROUNDS=${4:-3}
POOLING=${5:-mean}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA=${LLAMA_EMBEDDING:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin/llama-embedding}
EMBER=${EMBER:-$ROOT/build/ember}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ember-embed-speed.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# The inputs: consecutive runs of WORDS words of prose.
PROSE=$ROOT/docs/decisions.md
tr -s '[:space:]' ' ' < "$PROSE" | tr -cd '[:alnum:] .,;:()-' |
  awk -v n="$INPUTS" -v w="$WORDS" '{ for (i = 1; i <= NF && lines < n; ++i) { line = line (c ? " " : "") $i; \
    if (++c == w) { print line; line = ""; c = 0; ++lines } } }' > "$OUT/inputs.txt"
# llama-embedding's context and batch: LLAMA_CTX (default 512: its fastest of 512, 1024, 2048 and all
# inputs in one batch on 16 such inputs, 0.5b Q8_0; a larger batch attends over every input in it), at
# least the longest input, a multiple of 256.
CTX=${LLAMA_CTX:-512}
LONGEST=$("$EMBER" bench --embed -m "$MODEL" -f "$OUT/inputs.txt" -r 1 --threads 2 --json 2>/dev/null |
  /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["workload"]["context"])')
CTX=$(( (CTX > LONGEST + 1 ? CTX : LONGEST + 1 + 255) / 256 * 256 ))

for round in $(seq "$ROUNDS"); do
  # llama-embedding (80fb11a) prints no timings: its time is the process's wall time after its first
  # batch_decode log line (whose timestamp counts from its start), the model's load not counted.
  start=$(date +%s.%N)
  "$LLAMA" -m "$MODEL" -f "$OUT/inputs.txt" --pooling "$POOLING" -t 2 -c "$CTX" -b "$CTX" -ub 512 \
    --embd-output-format array --log-timestamps > /dev/null 2> "$OUT/llama.err" || { cat "$OUT/llama.err" >&2; exit 2; }
  end=$(date +%s.%N)
  first=$(grep -m1 "batch_decode: n_tokens" "$OUT/llama.err" | awk '{ split($1, t, "."); print t[1] * 60 + t[2] + t[3] / 1000 + t[4] / 1e6 }')
  tokens=$(grep "batch_decode: n_tokens" "$OUT/llama.err" | sed -E 's/.*n_tokens = ([0-9]+).*/\1/' | paste -sd+ | bc)
  echo "$(echo "($end - $start - $first) * 1000" | bc -l) $tokens" >> "$OUT/llama.txt"
  "$EMBER" bench --embed -m "$MODEL" -f "$OUT/inputs.txt" --pooling "$POOLING" -r 1 --threads 2 --json \
    2>/dev/null >> "$OUT/ember.jsonl"
done

/usr/bin/python3 - "$OUT/llama.txt" "$OUT/ember.jsonl" "$INPUTS" "$MODEL" <<'PY'
import json, statistics, sys
llama = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
text, ember, at, dec = open(sys.argv[2]).read(), [], 0, json.JSONDecoder()
while text[at:].strip():
    obj, at = dec.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
    ember.append(obj)
n = int(sys.argv[3])
l_eps = statistics.median(n / (ms / 1000) for ms, _ in llama)
l_tps = statistics.median(t / (ms / 1000) for ms, t in llama)
e_eps = statistics.median(e["metrics"]["embeddings_per_second"] for e in ember)
e_tps = statistics.median(e["metrics"]["tokens_per_second"] for e in ember)
tok = ember[0]["workload"]["tokens"]
print(f"{sys.argv[4]}: {n} inputs, {tok} tokens (ember's count; llama.cpp's {int(llama[0][1])}), {len(ember)} rounds")
print("| | embeddings/s | tokens/s |")
print("|---|---:|---:|")
print(f"| llama-embedding | {l_eps:.2f} | {l_tps:.1f} |")
print(f"| ember | {e_eps:.2f} | {e_tps:.1f} |")
print(f"| ember / llama.cpp | {e_eps / l_eps:.2f}x | {e_tps / l_tps:.2f}x |")
PY
