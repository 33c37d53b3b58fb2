#!/usr/bin/env bash
# Side-by-side CPU benchmark of ember and llama.cpp on the same weights
# (issue 7): one synthetic GGUF per quantization, read by llama-bench as is
# and by ember after `ember convert` (a byte copy of the same tensors).
# Runs are interleaved (ember, llama.cpp, llama.cpp, ember, ...) so that a
# noisy neighbour hurts both; the table shows medians over the rounds.
#
# It never fetches or builds llama.cpp: pass the path of an llama-bench you
# built yourself, e.g.
#   cmake -S llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
#   cmake --build build --target llama-bench
#
# usage: tools/scripts/compare_llamacpp.sh LLAMA_BENCH [options]
#   --ember PATH     the ember binary (default: build/ember)
#   --models DIR     where the synthetic models live / are made (default: /tmp/ember-compare)
#   --shape S        synthetic shape (default 0.5b)
#   --dtypes LIST    quantizations (default "q8_0 q4_0")
#   --threads T      threads for both (default 2)
#   --prompts LIST   prefill lengths (default 64,512)
#   --gen N          decoded tokens (default 128)
#   --rounds R       interleaved rounds; each runs each program once per dtype (default 5)
# Needs python3 (to take the medians). Prints a Markdown table on stdout,
# progress on stderr; the raw JSON of every run stays in the models dir.
set -euo pipefail

die() { echo "EMBER_ERR_INVALID_ARGUMENT: $*" >&2; exit 2; }

[[ $# -ge 1 ]] || die "usage: $0 LLAMA_BENCH [--ember PATH] [--models DIR] [--shape S] [--dtypes LIST] [--threads T] [--prompts LIST] [--gen N] [--rounds R]"
LLAMA_BENCH=$1; shift
EMBER=build/ember
MODELS=/tmp/ember-compare
SHAPE=0.5b
DTYPES="q8_0 q4_0"
THREADS=2
PROMPTS=64,512
GEN=128
ROUNDS=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --ember) EMBER=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --shape) SHAPE=$2; shift 2 ;;
    --dtypes) DTYPES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --prompts) PROMPTS=$2; shift 2 ;;
    --gen) GEN=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
[[ -x $LLAMA_BENCH ]] || die "LLAMA_BENCH '$LLAMA_BENCH' is not an executable (build llama.cpp's llama-bench first)"
[[ -x $EMBER ]] || die "--ember '$EMBER' is not an executable (build ember first, or pass --ember PATH)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds '$ROUNDS': expected a positive integer"
command -v python3 >/dev/null || die "python3 is needed to summarize the runs"
mkdir -p "$MODELS"
RAW=$MODELS/raw-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RAW"

# 1. The same weights for both: synth --gguf, then ember convert.
for d in $DTYPES; do
  g=$MODELS/synth-$SHAPE-$d.gguf
  e=$MODELS/synth-$SHAPE-$d.ember
  if [[ ! -s $g ]]; then
    echo "making $g" >&2
    "$EMBER" synth --shape "$SHAPE" --dtype "$d" --gguf -o "$g" >&2
  fi
  if [[ ! -s $e || $g -nt $e ]]; then
    echo "converting $g -> $e" >&2
    "$EMBER" convert "$g" -o "$e" >&2
  fi
done

# 2. Interleaved rounds; the order alternates so neither always runs first.
run_ember() {
  "$EMBER" bench -m "$MODELS/synth-$SHAPE-$1.ember" --threads "$THREADS" -p "$PROMPTS" -n "$GEN" -r 1 --json \
    > "$RAW/ember-$1-$2.json"
}
run_llama() {
  "$LLAMA_BENCH" -m "$MODELS/synth-$SHAPE-$1.gguf" -t "$THREADS" -p "$PROMPTS" -n "$GEN" -r 1 -o json \
    > "$RAW/llama-$1-$2.json" 2> "$RAW/llama-$1-$2.log"
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
  for d in $DTYPES; do
    echo "round $r/$ROUNDS, $d" >&2
    if ((r % 2)); then run_ember "$d" "$r"; run_llama "$d" "$r"; else run_llama "$d" "$r"; run_ember "$d" "$r"; fi
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. Medians and ratios.
python3 - "$RAW" "$SHAPE" "$THREADS" "$PROMPTS" "$GEN" "$ROUNDS" "$LOAD_BEFORE" "$LOAD_AFTER" "$DTYPES" \
  "$EMBER" "$LLAMA_BENCH" <<'PY'
import glob, json, os, statistics, sys
raw, shape, threads, prompts, gen, rounds, load0, load1, dtypes, ember, llama = sys.argv[1:]
prompts = [int(p) for p in prompts.split(",")]
gen = int(gen)
med = statistics.median
def load(path):
    with open(path) as f:
        return json.load(f)
rows, info = [], {}
for d in dtypes.split():
    em = [load(p) for p in sorted(glob.glob(f"{raw}/ember-{d}-*.json"))]
    ll = [load(p) for p in sorted(glob.glob(f"{raw}/llama-{d}-*.json"))]
    if em:
        info["ember"] = em[0]["software"]
        info["hardware"] = em[0]["hardware"]
    if ll:
        info["llama"] = ll[0][0]
    probe = med([e["hardware"]["memory_bandwidth_gbs"] for e in em])
    def ember_metric(p, key):
        return med([next(r for r in e["runs"] if r["workload"]["input_length"] == p)["metrics"][key] for e in em])
    def llama_ts(n_prompt, n_gen):
        return med([next(t["avg_ts"] for t in l if t["n_prompt"] == n_prompt and t["n_gen"] == n_gen) for l in ll])
    for p in prompts:
        rows.append((d, f"pp{p}", ember_metric(p, "prefill_tokens_per_second"), llama_ts(p, 0), None))
    # ember decodes after the first prompt; llama-bench's tg starts from an empty context.
    tps = ember_metric(prompts[0], "tokens_per_second")
    bw = ember_metric(prompts[0], "effective_bandwidth_gbs")
    per_token = ember_metric(prompts[0], "weight_bytes_per_token")
    lts = llama_ts(0, gen)
    rows.append((d, f"tg{gen}", tps, lts, (100.0 * bw / probe, 100.0 * per_token * lts / 1e9 / probe) if probe else None))
    info.setdefault("probe", {})[d] = probe
hw, es, lc = info.get("hardware", {}), info.get("ember", {}), info.get("llama", {})
print(f"machine: {hw.get('cpu_model')}, {hw.get('physical_cores')} cores / {hw.get('logical_threads')} threads, "
      f"{hw.get('memory_capacity_gb')} GB; read probe (median, {threads} threads): "
      + ", ".join(f"{v:.1f} GB/s" for v in info.get("probe", {}).values()))
print(f"ember {es.get('version')} (git {es.get('git_hash')}), kernels: {es.get('kernels')}")
print(f"llama.cpp build {lc.get('build_number')} ({lc.get('build_commit')}), {lc.get('cpu_info')}, "
      f"backend {lc.get('backends')}, type_k {lc.get('type_k')}, flash_attn {lc.get('flash_attn')}")
print(f"shape {shape}, {threads} threads, {rounds} interleaved rounds (medians), load average {load0} -> {load1}")
print(f"commands: {ember} bench -m M.ember --threads {threads} -p {','.join(map(str, prompts))} -n {gen} -r 1 --json")
print(f"          {llama} -m M.gguf -t {threads} -p {','.join(map(str, prompts))} -n {gen} -r 1 -o json")
print()
print("| quant | test | ember tok/s | llama.cpp tok/s | ember / llama.cpp | % of read probe: ember / llama.cpp |")
print("|---|---|---:|---:|---:|---:|")
for d, test, e, l, pct in rows:
    ratio = f"{e / l:.2f}x" if l else "-"
    bw = f"{pct[0]:.0f}% / {pct[1]:.0f}%" if pct else ""
    print(f"| {d} | {test} | {e:.2f} | {l:.2f} | {ratio} | {bw} |")
print()
print(f"tg{gen}: ember decodes after a {prompts[0]}-token prompt, llama-bench from an empty context. % of read probe:")
print("weight bytes one decode step reads x tokens/s, over the probe's GB/s (both programs read the same bytes).")
print(f"raw runs: {raw}")
PY
