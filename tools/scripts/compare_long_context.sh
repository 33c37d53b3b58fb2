#!/usr/bin/env bash
# Long contexts side by side (issue 44, item 2): prefill of L tokens and
# decode after L tokens of context, ember against llama.cpp and ik_llama.cpp
# on the same GGUF bytes, f16 KV on all three, flash attention on for the
# peers (-fa 1). The models are the ones tools/scripts/compare_llamacpp.sh
# makes (synth-SHAPE-PRESET.gguf / .ember in --models; run it with --prepare
# first). Runs are interleaved, the order rotating every round; the table
# shows medians.
#
#   ember:        ember bench -m M.ember --threads T -p L -n G -r 1 --kv-type f16 --json
#                 (prefill of L tokens, then G decoded after them: decode at depth L)
#   llama.cpp:    llama-bench -m M.gguf -t T -fa 1 -p L -n 0, and -p 0 -n G -d L
#   ik_llama.cpp: llama-bench -m M.gguf -t T -fa 1 -p L -n 0 -gp L,G (tg G after a
#                 prompt of L), as is and with -rtr 1; the better figure is the peer's
#
# usage: tools/scripts/compare_long_context.sh [options]
#   --llama-bench P  llama.cpp's llama-bench (default ../peer/llama.cpp/build/bin/llama-bench; 'none': left out)
#   --ik-bench P     ik_llama.cpp's (default ../peer/ik_llama.cpp/build/bin/llama-bench; 'none': left out)
#   --ember P        (default build/ember)
#   --models DIR     (default /tmp/ember-compare)
#   --set LIST       SHAPE:PRESET models (default "0.5b:q4_k_m 1.1b:q4_k_m")
#   --lengths LIST   context lengths (default 4096)
#   --gen G          decoded tokens (default 32)
#   --threads T      (default 2)
#   --rounds R       (default 2)
set -euo pipefail

die() { echo "EMBER_ERR_INVALID_ARGUMENT: $*" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=$(cd "$ROOT/.." && pwd)/peer
LLAMA_BENCH=$PEERS/llama.cpp/build/bin/llama-bench
IK_BENCH=$PEERS/ik_llama.cpp/build/bin/llama-bench
[[ -x $IK_BENCH ]] || IK_BENCH=none
EMBER=build/ember
MODELS=/tmp/ember-compare
SET="0.5b:q4_k_m 1.1b:q4_k_m"
LENGTHS=4096
GEN=32
THREADS=2
ROUNDS=2
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "option '$1' needs a value"
  case $1 in
    --llama-bench) LLAMA_BENCH=$2 ;;
    --ik-bench) IK_BENCH=$2 ;;
    --ember) EMBER=$2 ;;
    --models) MODELS=$2 ;;
    --set) SET=$2 ;;
    --lengths) LENGTHS=$2 ;;
    --gen) GEN=$2 ;;
    --threads) THREADS=$2 ;;
    --rounds) ROUNDS=$2 ;;
    *) die "unknown option '$1'" ;;
  esac
  shift 2
done
[[ $LLAMA_BENCH == none || -x $LLAMA_BENCH ]] || die "--llama-bench '$LLAMA_BENCH' is not an executable (or 'none')"
[[ $IK_BENCH == none || -x $IK_BENCH ]] || die "--ik-bench '$IK_BENCH' is not an executable (or 'none')"
[[ -x $EMBER ]] || die "--ember '$EMBER' is not an executable"
[[ $LENGTHS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--lengths '$LENGTHS': expected lengths like 4096,16384"
[[ $GEN =~ ^[1-9][0-9]*$ ]] || die "--gen '$GEN': expected a positive integer"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds '$ROUNDS': expected a positive integer"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || die "--threads '$THREADS': expected a positive integer"
for m in $SET; do
  t=${m/:/-}
  [[ -s $MODELS/synth-$t.gguf && -s $MODELS/synth-$t.ember ]] ||
    die "$MODELS/synth-$t.gguf/.ember missing: tools/scripts/compare_llamacpp.sh --set \"$m\" --prepare"
done
command -v python3 >/dev/null || die "python3 is needed to summarize the runs"

RAW=$MODELS/long-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RAW"
cold() { dd if="$1" iflag=nocache count=0 status=none 2>/dev/null || true; }
run_ember() {  # model-tag length round
  cold "$MODELS/synth-$1.ember"
  "$EMBER" bench -m "$MODELS/synth-$1.ember" --threads "$THREADS" -p "$2" -n "$GEN" -r 1 --kv-type f16 --json \
    > "$RAW/ember-$1-$2-$3.json"
}
run_llama() {
  cold "$MODELS/synth-$1.gguf"
  "$LLAMA_BENCH" -m "$MODELS/synth-$1.gguf" -t "$THREADS" -fa 1 -p "$2" -n 0 -r 1 -o json \
    > "$RAW/llama-pp-$1-$2-$3.json" 2>> "$RAW/llama.log"
  "$LLAMA_BENCH" -m "$MODELS/synth-$1.gguf" -t "$THREADS" -fa 1 -p 0 -n "$GEN" -d "$2" -r 1 -o json \
    > "$RAW/llama-tg-$1-$2-$3.json" 2>> "$RAW/llama.log"
}
run_ik() {
  cold "$MODELS/synth-$1.gguf"
  "$IK_BENCH" -m "$MODELS/synth-$1.gguf" -t "$THREADS" -fa 1 -p "$2" -n 0 -gp "$2,$GEN" -r 1 -o json \
    > "$RAW/ik-$1-$2-$3.json" 2>> "$RAW/ik.log"
}
run_ikrtr() {
  cold "$MODELS/synth-$1.gguf"
  "$IK_BENCH" -m "$MODELS/synth-$1.gguf" -t "$THREADS" -fa 1 -rtr 1 -p "$2" -n 0 -gp "$2,$GEN" -r 1 -o json \
    > "$RAW/ikrtr-$1-$2-$3.json" 2>> "$RAW/ik.log"
}
PROGRAMS=(ember)
[[ $LLAMA_BENCH != none ]] && PROGRAMS+=(llama)
[[ $IK_BENCH != none ]] && PROGRAMS+=(ik ikrtr)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
  for m in $SET; do
    for L in ${LENGTHS//,/ }; do
      echo "round $r/$ROUNDS, $m, $L tokens" >&2
      n=${#PROGRAMS[@]}
      for ((i = 0; i < n; i++)); do "run_${PROGRAMS[(i + r - 1) % n]}" "${m/:/-}" "$L" "$r"; done
    done
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$RAW" "$SET" "$LENGTHS" "$GEN" "$THREADS" "$ROUNDS" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import glob, json, statistics, sys
raw, models, lengths, gen, threads, rounds, load0, load1 = sys.argv[1:]
gen = int(gen)
med = statistics.median
def files(prefix):
    return [json.load(open(p)) for p in sorted(glob.glob(f"{raw}/{prefix}-*.json"))]
def ts(runs, pred):
    v = [t["avg_ts"] for r in runs for t in r if pred(t)]
    return med(v) if v else None
def fmt(v):
    return "-" if v is None else f"{v:.1f}"
def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}x"
print(f"{threads} threads, f16 KV, peers with -fa 1; {rounds} interleaved rounds (medians); load {load0} -> {load1}")
info = None
print()
print("| model | test | ember tok/s | llama.cpp | ik_llama.cpp | ik -rtr 1 | ember / llama.cpp | ember / ik (best) | ember % of limit |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for m in models.split():
    tag = m.replace(":", "-")
    for L in map(int, lengths.split(",")):
        em = files(f"ember-{tag}-{L}")
        if not em:
            continue
        info = em[0]
        runs = [r for e in em for r in e["runs"] if r["workload"]["input_length"] == L]
        pp = med([r["metrics"]["prefill_tokens_per_second"] for r in runs])
        tg = med([r["metrics"]["tokens_per_second"] for r in runs])
        probe = med([e["hardware"]["memory_bandwidth_gbs"] for e in em])
        weights = med([r["metrics"]["weight_bytes_per_token"] for r in runs])
        kv = med([r["metrics"].get("kv_bytes_per_token", 0) for r in runs])
        llp = ts(files(f"llama-pp-{tag}-{L}"), lambda t: t["n_prompt"] == L and t["n_gen"] == 0)
        llt = ts(files(f"llama-tg-{tag}-{L}"), lambda t: t["n_gen"] == gen)
        ikp = ts(files(f"ik-{tag}-{L}"), lambda t: t["n_prompt"] == L and t["n_gen"] == 0)
        ikt = ts(files(f"ik-{tag}-{L}"), lambda t: t["n_prompt"] == L and t["n_gen"] == gen)
        irp = ts(files(f"ikrtr-{tag}-{L}"), lambda t: t["n_prompt"] == L and t["n_gen"] == 0)
        irt = ts(files(f"ikrtr-{tag}-{L}"), lambda t: t["n_prompt"] == L and t["n_gen"] == gen)
        bp = max([v for v in (ikp, irp) if v is not None], default=None)
        bt = max([v for v in (ikt, irt) if v is not None], default=None)
        limit = probe * 1e9 / (weights + kv) if probe and weights else None
        print(f"| {m} | pp{L} | {pp:.1f} | {fmt(llp)} | {fmt(ikp)} | {fmt(irp)} | {ratio(pp, llp)} | {ratio(pp, bp)} | |")
        print(f"| {m} | tg{gen} @ depth {L} | {tg:.1f} | {fmt(llt)} | {fmt(ikt)} | {fmt(irt)} | {ratio(tg, llt)} | "
              f"{ratio(tg, bt)} | {100 * tg / limit:.0f}% of {limit:.0f} |" if limit else "| - |")
if info:
    print()
    print(f"ember {info['software'].get('version')} (git {info['software'].get('git_hash')}), {info['software'].get('kernels')}")
    hw = info["hardware"]
    print(f"machine: {hw.get('cpu_model')}, {hw.get('logical_threads')} threads; limit = ember's read probe / "
          "(weight + KV bytes a decode step reads at that depth)")
print(f"raw runs: {raw}")
PY
