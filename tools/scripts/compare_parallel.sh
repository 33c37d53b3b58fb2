#!/usr/bin/env bash
# Batched decoding side by side (issue 15): ember's `bench --parallel` and
# llama.cpp's llama-batched-bench on the same GGUF, same threads, N streams
# each prefilling a P-token prompt then decoding G tokens together. Rounds
# are interleaved (the order alternates) and the table shows medians.
#
# What each side measures, so the columns compare like with like:
#   aggregate tok/s  all streams' decoded tokens over the decode wall time
#                    (ember: aggregate_tokens_per_second; llama.cpp: speed_tg)
#   ITL              ember: per-stream inter-token latency p50 (every step
#                    gives each stream one token); llama.cpp: t_tg / ntg, the
#                    mean step time
#   prefill          all N prompts (N x P tokens) before the first token
#                    (ember: first_token_latency_ms; llama.cpp: t_pp)
#
# It never builds the peer: pass the llama-batched-bench you built, e.g.
#   cmake --build build --target llama-batched-bench
#
# usage: tools/scripts/compare_parallel.sh -m MODEL.gguf [options]
#   --batched-bench P   llama.cpp's llama-batched-bench (default
#                       ../peer/llama.cpp/build/bin/llama-batched-bench beside the checkout's parent)
#   --ember P           the ember binary (default build/ember)
#   --parallel LIST     streams (default 1,2,4,8,16)
#   --prompt N          prompt tokens per stream (default 64)
#   --gen N             decoded tokens per stream (default 64)
#   --threads T         threads for both (default 2)
#   --rounds R          interleaved rounds (default 3)
# Prints a Markdown table on stdout, progress on stderr; raw output stays in
# a folder beside the model (its path is printed).
set -euo pipefail

die() { echo "EMBER_ERR_INVALID_ARGUMENT: $*" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=$(cd "$ROOT/.." && pwd)/peer
BB=$PEERS/llama.cpp/build/bin/llama-batched-bench
EMBER=$ROOT/build/ember
MODEL=
PARALLEL=1,2,4,8,16
PROMPT=64
GEN=64
THREADS=2
ROUNDS=3
while [[ $# -gt 0 ]]; do
  case $1 in
    -m) MODEL=$2; shift 2 ;;
    --batched-bench) BB=$2; shift 2 ;;
    --ember) EMBER=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --prompt) PROMPT=$2; shift 2 ;;
    --gen) GEN=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n $MODEL ]] || die "-m MODEL.gguf is required"
[[ -f $MODEL ]] || die "-m '$MODEL': no such file"
[[ -x $BB ]] || die "--batched-bench '$BB' is not an executable (build llama.cpp's llama-batched-bench)"
[[ -x $EMBER ]] || die "--ember '$EMBER' is not an executable"
[[ $PARALLEL =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--parallel '$PARALLEL': expected 1,2,4,8"
for v in PROMPT GEN THREADS ROUNDS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v,,} '${!v}' is not a positive integer"; done

MAXPL=$(tr ',' '\n' <<< "$PARALLEL" | sort -n | tail -1)
CTX=$(( MAXPL * (PROMPT + GEN + 8) ))
RAW=$(dirname "$MODEL")/parallel-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RAW"
echo "compare_parallel: raw output in $RAW" >&2

# ember reads the GGUF through its conversion cache; convert once, untimed.
"$EMBER" bench -m "$MODEL" -p 8 -n 2 -r 1 --threads "$THREADS" --probe-mb 16 --json > /dev/null 2> "$RAW/warm.log" \
  || { cat "$RAW/warm.log" >&2; exit 1; }

run_ember() {
  "$EMBER" bench -m "$MODEL" --parallel "$PARALLEL" -p "$PROMPT" -n "$GEN" -r 1 --threads "$THREADS" --probe-mb 16 \
    --json > "$RAW/ember-$1.json" 2> "$RAW/ember-$1.log"
}
run_llama() {
  "$BB" -m "$MODEL" -c "$CTX" -b 2048 -ub 512 -npp "$PROMPT" -ntg "$GEN" -npl "$PARALLEL" -t "$THREADS" -tb "$THREADS" \
    --output-format jsonl > "$RAW/llama-$1.jsonl" 2> "$RAW/llama-$1.log"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "compare_parallel: round $r/$ROUNDS" >&2
  if (( r % 2 )); then run_ember "$r"; run_llama "$r"; else run_llama "$r"; run_ember "$r"; fi
done

python3 - "$RAW" "$ROUNDS" "$MODEL" "$THREADS" "$PROMPT" "$GEN" <<'EOF'
import json, statistics, sys, os
raw, rounds, model, threads, prompt, gen = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
ember, llama = {}, {}
for r in range(1, rounds + 1):
    doc = json.load(open(os.path.join(raw, f"ember-{r}.json")))
    for run in doc["runs"]:
        pl = run["workload"]["parallel_sessions"]
        m = run["metrics"]
        agg = m["aggregate_tokens_per_second"] if pl > 1 else m["tokens_per_second"]
        ember.setdefault(pl, []).append((agg, m["inter_token_latency_ms_p50"], m["inter_token_latency_ms_p95"],
                                         m["first_token_latency_ms"], run["workload"].get("batched", False)))
    for line in open(os.path.join(raw, f"llama-{r}.jsonl")):
        line = line.strip()
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        llama.setdefault(j["pl"], []).append((j["speed_tg"], 1e3 * j["t_tg"] / j["tg"], 1e3 * j["t_pp"]))
med = lambda xs: statistics.median(xs)
print(f"{os.path.basename(model)}, {threads} threads, prompt {prompt} + {gen} decoded per stream, "
      f"medians of {rounds} interleaved rounds\n")
print("| streams | ember tok/s (all) | llama.cpp tok/s (all) | ember / llama.cpp | ember ITL p50 / p95 ms | llama.cpp step ms | ember prefill-all ms | llama.cpp prefill-all ms |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
base = None
for pl in sorted(set(ember) | set(llama)):
    e, l = ember.get(pl), llama.get(pl)
    ea = med([x[0] for x in e]) if e else float("nan")
    la = med([x[0] for x in l]) if l else float("nan")
    if pl == 1:
        base = ea
    cells = [str(pl), f"{ea:.1f}" + (f" ({ea / base:.1f}x)" if base and pl > 1 else ""), f"{la:.1f}",
             f"{ea / la:.2f}x" if l and e else "-",
             f"{med([x[1] for x in e]):.1f} / {med([x[2] for x in e]):.1f}" if e else "-",
             f"{med([x[1] for x in l]):.1f}" if l else "-",
             f"{med([x[3] for x in e]):.0f}" if e else "-",
             f"{med([x[2] for x in l]):.0f}" if l else "-"]
    print("| " + " | ".join(cells) + " |")
EOF
