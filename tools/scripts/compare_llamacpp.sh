#!/usr/bin/env bash
# Side-by-side CPU benchmark of ember, llama.cpp and ik_llama.cpp on the same
# GGUF bytes (issues 7 and 12). Each model is a synthetic f32 GGUF (`ember
# synth --shape S --dtype f32 --gguf`) quantized by llama.cpp's
# llama-quantize to a preset (Q4_K_M, Q6_K, IQ4_XS, ... -- the files users
# download, fallback mixtures included), read by both llama-bench programs as
# is and by ember after `ember convert` (the bytes copied; the same
# conversion `ember bench -m FILE.gguf` does through its cache).
# ik_llama.cpp runs twice, as is and with its run-time repacking (-rtr 1);
# the table shows both and takes its better figure per test for the ratio.
# Runs are interleaved (the order rotates every round) so that a noisy
# neighbour hurts all; the table shows medians over the rounds. Before each
# run the file it reads leaves the page cache (dd iflag=nocache), so every
# program loads its weights cold, as after a reboot: how the kernel caches
# and maps a file (4 KiB or 2 MiB folios) otherwise depends on how it was
# last read, and it moved decode by up to a third (docs/decisions.md,
# "Comparing with llama.cpp and ik_llama.cpp"; docs/diary/session-21.md).
#
# It never fetches or builds the peers: pass the llama-bench programs you
# built, e.g.
#   cmake -S llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
#   cmake --build build --target llama-bench llama-quantize
# (the same for ik_llama.cpp).
#
# usage: tools/scripts/compare_llamacpp.sh [LLAMA_BENCH] [options]
#   LLAMA_BENCH, --llama-bench P  llama.cpp's llama-bench
#                    (default: ../peer/llama.cpp/build/bin/llama-bench beside the checkout's parent)
#   --ik-bench P     ik_llama.cpp's llama-bench (default ../peer/ik_llama.cpp/build/bin/llama-bench
#                    when it exists; 'none' leaves ik_llama.cpp out)
#   --quantize P     llama-quantize (default: beside LLAMA_BENCH)
#   --ember P        the ember binary (default: build/ember)
#   --models DIR     where the models live / are made (default: /tmp/ember-compare)
#   --set LIST       models as SHAPE:PRESET, space-separated (default issue 12's:
#                    "1.1b:q4_k_m 1.1b:q6_k 1.1b:iq4_xs 0.5b:q4_k_m"); PRESET is a
#                    llama-quantize type (q4_k_m q5_k_m q6_k q8_0 q4_0 iq4_xs ...)
#   --shape S --dtypes LIST   the same as --set "S:T1 S:T2 ..." (the issue-7 form)
#   --threads T      threads for all (default 2)
#   --prompts LIST   prefill lengths (default 64,512)
#   --gen N          decoded tokens (default 128)
#   --rounds R       interleaved rounds; each runs each program once per model (default 5)
#   --xnnpack        also run ember with EMBER_KERNELS=xnnpack (issue 17: ember's own kernels,
#                    ember with XNNPACK and llama.cpp side by side; use float presets, e.g.
#                    --set "0.5b:f32 0.5b:f16" --ik-bench none); a second table compares the three
#   --prepare        only make the models (synth, llama-quantize, convert) and stop: the slow,
#                    CPU-heavy part, done before a quiet window for the runs
# Needs python3 (to take the medians). Prints a Markdown table on stdout,
# progress on stderr; the raw JSON of every run stays in the models dir.
set -euo pipefail

die() { echo "EMBER_ERR_INVALID_ARGUMENT: $*" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=$(cd "$ROOT/.." && pwd)/peer
LLAMA_BENCH=$PEERS/llama.cpp/build/bin/llama-bench
IK_BENCH=$PEERS/ik_llama.cpp/build/bin/llama-bench
[[ -x $IK_BENCH ]] || IK_BENCH=none
QUANTIZE=
EMBER=build/ember
MODELS=/tmp/ember-compare
SET="1.1b:q4_k_m 1.1b:q6_k 1.1b:iq4_xs 0.5b:q4_k_m"
SHAPE=
DTYPES=
THREADS=2
PROMPTS=64,512
GEN=128
ROUNDS=5
PREPARE=0
XNNPACK=0
if [[ $# -gt 0 && $1 != -* ]]; then LLAMA_BENCH=$1; shift; fi
while [[ $# -gt 0 ]]; do
  if [[ $1 == --prepare ]]; then PREPARE=1; shift; continue; fi
  if [[ $1 == --xnnpack ]]; then XNNPACK=1; shift; continue; fi
  [[ $# -ge 2 ]] || die "option '$1' needs a value"
  case $1 in
    --llama-bench) LLAMA_BENCH=$2 ;;
    --ik-bench) IK_BENCH=$2 ;;
    --quantize) QUANTIZE=$2 ;;
    --ember) EMBER=$2 ;;
    --models) MODELS=$2 ;;
    --set) SET=$2 ;;
    --shape) SHAPE=$2 ;;
    --dtypes) DTYPES=$2 ;;
    --threads) THREADS=$2 ;;
    --prompts) PROMPTS=$2 ;;
    --gen) GEN=$2 ;;
    --rounds) ROUNDS=$2 ;;
    *) die "unknown option '$1'" ;;
  esac
  shift 2
done
if [[ -n $SHAPE || -n $DTYPES ]]; then
  SET=
  for d in ${DTYPES:-q8_0 q4_0}; do SET+="${SHAPE:-0.5b}:$d "; done
fi
QUANTIZE=${QUANTIZE:-$(dirname "$LLAMA_BENCH")/llama-quantize}
[[ -x $LLAMA_BENCH ]] || die "LLAMA_BENCH '$LLAMA_BENCH' is not an executable (build llama.cpp's llama-bench first)"
[[ $IK_BENCH == none || -x $IK_BENCH ]] || die "--ik-bench '$IK_BENCH' is not an executable (or 'none')"
[[ -x $QUANTIZE ]] || die "--quantize '$QUANTIZE' is not an executable (build llama.cpp's llama-quantize)"
[[ -x $EMBER ]] || die "--ember '$EMBER' is not an executable (build ember first, or pass --ember PATH)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds '$ROUNDS': expected a positive integer"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || die "--threads '$THREADS': expected a positive integer"
[[ $PROMPTS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--prompts '$PROMPTS': expected lengths like 64,512"
[[ $GEN =~ ^[1-9][0-9]*$ ]] || die "--gen '$GEN': expected a positive integer"
for m in $SET; do [[ $m =~ ^[a-z0-9.]+:[a-z0-9_]+$ ]] || die "--set: '$m' is not SHAPE:PRESET"; done
command -v python3 >/dev/null || die "python3 is needed to summarize the runs"
# The peers' shared libraries sit beside their binaries.
lib_path() { echo "$(dirname "$1")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }
mkdir -p "$MODELS"

# 1. The same bytes for all: f32 synth -> llama-quantize -> ember convert.
for m in $SET; do
  shape=${m%%:*} preset=${m#*:}
  src=$MODELS/synth-$shape-f32.gguf
  g=$MODELS/synth-$shape-$preset.gguf
  e=$MODELS/synth-$shape-$preset.ember
  # Each file is written under a temporary name and renamed when complete,
  # so an interrupted run never leaves a truncated model that looks made.
  if [[ ! -s $src ]]; then
    echo "making $src" >&2
    "$EMBER" synth --shape "$shape" --dtype f32 --gguf -o "$src.part" >&2
    mv "$src.part" "$src"
  fi
  if [[ $preset == f32 ]]; then
    # The f32 source is the f32 file.
    g=$src
  elif [[ ! -s $g || $src -nt $g ]]; then
    echo "quantizing $src -> $g (${preset^^})" >&2
    LD_LIBRARY_PATH=$(lib_path "$QUANTIZE") "$QUANTIZE" "$src" "$g.part" "${preset^^}" "$THREADS" \
      > "$MODELS/synth-$shape-$preset.quantize.log" 2>&1 ||
      die "llama-quantize failed for $m (see $MODELS/synth-$shape-$preset.quantize.log)"
    mv "$g.part" "$g"
  fi
  if [[ ! -s $e || $g -nt $e ]]; then
    echo "converting $g -> $e" >&2
    "$EMBER" convert "$g" -o "$e.part" >&2
    mv "$e.part" "$e"
  fi
done

if ((PREPARE)); then
  echo "models ready in $MODELS: $SET" >&2
  exit 0
fi

# 2. Interleaved rounds; the starting program rotates so none always runs first.
RAW=$MODELS/raw-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RAW"
tag() { echo "${1/:/-}"; }
# Drops FILE from the page cache (best effort: a file system without it
# keeps it cached).
cold() { dd if="$1" iflag=nocache count=0 status=none 2>/dev/null || true; }
run_ember() {
  cold "$MODELS/synth-$(tag "$1").ember"
  "$EMBER" bench -m "$MODELS/synth-$(tag "$1").ember" --threads "$THREADS" -p "$PROMPTS" -n "$GEN" -r 1 --json \
    > "$RAW/ember-$(tag "$1")-$2.json"
}
run_emberx() {
  cold "$MODELS/synth-$(tag "$1").ember"
  EMBER_KERNELS=xnnpack "$EMBER" bench -m "$MODELS/synth-$(tag "$1").ember" --threads "$THREADS" -p "$PROMPTS" \
    -n "$GEN" -r 1 --json > "$RAW/emberx-$(tag "$1")-$2.json"
}
run_llama() {
  cold "$MODELS/synth-$(tag "$1").gguf"
  LD_LIBRARY_PATH=$(lib_path "$LLAMA_BENCH") "$LLAMA_BENCH" -m "$MODELS/synth-$(tag "$1").gguf" -t "$THREADS" \
    -p "$PROMPTS" -n "$GEN" -r 1 -o json > "$RAW/llama-$(tag "$1")-$2.json" 2> "$RAW/llama-$(tag "$1")-$2.log"
}
run_ik() {
  cold "$MODELS/synth-$(tag "$1").gguf"
  LD_LIBRARY_PATH=$(lib_path "$IK_BENCH") "$IK_BENCH" -m "$MODELS/synth-$(tag "$1").gguf" -t "$THREADS" \
    -p "$PROMPTS" -n "$GEN" -r 1 -o json > "$RAW/ik-$(tag "$1")-$2.json" 2> "$RAW/ik-$(tag "$1")-$2.log"
}
run_ikrtr() {
  cold "$MODELS/synth-$(tag "$1").gguf"
  LD_LIBRARY_PATH=$(lib_path "$IK_BENCH") "$IK_BENCH" -m "$MODELS/synth-$(tag "$1").gguf" -t "$THREADS" -rtr 1 \
    -p "$PROMPTS" -n "$GEN" -r 1 -o json > "$RAW/ikrtr-$(tag "$1")-$2.json" 2> "$RAW/ikrtr-$(tag "$1")-$2.log"
}
PROGRAMS=(ember llama)
((XNNPACK)) && PROGRAMS+=(emberx)
[[ $IK_BENCH != none ]] && PROGRAMS+=(ik ikrtr)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
  for m in $SET; do
    echo "round $r/$ROUNDS, $m" >&2
    n=${#PROGRAMS[@]}
    for ((i = 0; i < n; i++)); do "run_${PROGRAMS[(i + r - 1) % n]}" "$m" "$r"; done
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. Medians and ratios.
python3 - "$RAW" "$THREADS" "$PROMPTS" "$GEN" "$ROUNDS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SET" \
  "$EMBER" "$LLAMA_BENCH" "$IK_BENCH" "$QUANTIZE" <<'PY'
import glob, json, statistics, sys
raw, threads, prompts, gen, rounds, load0, load1, models, ember, llama, ik, quantize = sys.argv[1:]
xrows = []
prompts = [int(p) for p in prompts.split(",")]
gen = int(gen)
med = statistics.median
def load(path):
    with open(path) as f:
        return json.load(f)
def runs(prog, tag):
    return [load(p) for p in sorted(glob.glob(f"{raw}/{prog}-{tag}-*.json"))]
# Issue 12's targets: ember / llama.cpp and ember / ik_llama.cpp (its better
# figure) per test; decode of q4_k_m also >= 80% of the read probe.
def targets(test):
    return (1.5, 1.3) if test.startswith("tg") else (1.5, 1.2)
rows, info, probes = [], {}, {}
for m in models.split():
    tag = m.replace(":", "-")
    em, ll, ik0, ik1 = runs("ember", tag), runs("llama", tag), runs("ik", tag), runs("ikrtr", tag)
    if em:
        info["ember"], info["hardware"] = em[0]["software"], em[0]["hardware"]
    if ll:
        info["llama"] = ll[0][0]
    if ik0:
        info["ik"] = ik0[0][0]
    probe = med([e["hardware"]["memory_bandwidth_gbs"] for e in em])
    probes[m] = probe
    def ember_metric(p, key):
        return med([next(r for r in e["runs"] if r["workload"]["input_length"] == p)["metrics"][key] for e in em])
    def bench_ts(lst, n_prompt, n_gen):
        if not lst:
            return None
        return med([next(t["avg_ts"] for t in l if t["n_prompt"] == n_prompt and t["n_gen"] == n_gen) for l in lst])
    per_token = ember_metric(prompts[0], "weight_bytes_per_token")
    tests = [(f"pp{p}", ember_metric(p, "prefill_tokens_per_second"), p, 0) for p in prompts]
    # ember decodes after the first prompt; llama-bench's tg starts from an empty context.
    tests.append((f"tg{gen}", ember_metric(prompts[0], "tokens_per_second"), 0, gen))
    ex = runs("emberx", tag)
    if ex:
        info["emberx"] = ex[0]["software"]
        for p in prompts:
            xrows.append((m, f"pp{p}", p, 0, ember_metric(p, "prefill_tokens_per_second"),
                          med([next(r for r in e["runs"] if r["workload"]["input_length"] == p)["metrics"]["prefill_tokens_per_second"] for e in ex])))
        xrows.append((m, f"tg{gen}", 0, gen, ember_metric(prompts[0], "tokens_per_second"),
                      med([next(r for r in e["runs"] if r["workload"]["input_length"] == prompts[0])["metrics"]["tokens_per_second"] for e in ex])))
        xrows[-len(prompts) - 1:] = [r + (bench_ts(ll, r[2], r[3]),) for r in xrows[-len(prompts) - 1:]]
    for test, e, n_prompt, n_gen in tests:
        l, i0, i1 = bench_ts(ll, n_prompt, n_gen), bench_ts(ik0, n_prompt, n_gen), bench_ts(ik1, n_prompt, n_gen)
        ib = max(v for v in (i0, i1) if v is not None) if (i0 or i1) else None
        pct = None
        if n_gen and probe:
            pct = [100.0 * per_token * v / 1e9 / probe if v else None for v in (e, l, ib)]
        rows.append((m, test, e, l, i0, i1, ib, pct))
def fmt(v, spec=".2f", none="-"):
    return none if v is None else format(v, spec)
hw, es, lc, kc = info.get("hardware", {}), info.get("ember", {}), info.get("llama", {}), info.get("ik", {})
print(f"machine: {hw.get('cpu_model')}, {hw.get('physical_cores')} cores / {hw.get('logical_threads')} threads, "
      f"{hw.get('memory_capacity_gb')} GB; ember's read probe (median, {threads} threads): "
      + ", ".join(f"{m} {v:.1f} GB/s" for m, v in probes.items()))
print(f"ember {es.get('version')} (git {es.get('git_hash')}), kernels: {es.get('kernels')}")
print(f"llama.cpp build {lc.get('build_number')} ({lc.get('build_commit')}), {lc.get('cpu_info')}, "
      f"type_k {lc.get('type_k')}, flash_attn {lc.get('flash_attn')}")
if kc:
    print(f"ik_llama.cpp build {kc.get('build_number')} ({kc.get('build_commit')}), {kc.get('cpu_info')}, "
          f"type_k {kc.get('type_k')}, flash_attn {kc.get('flash_attn')}")
print(f"models {models} (ember synth f32 GGUF -> {quantize}), {threads} threads, "
      f"{rounds} interleaved rounds (medians), load average {load0} -> {load1}")
plist = ",".join(map(str, prompts))
print(f"commands: {ember} bench -m M.ember --threads {threads} -p {plist} -n {gen} -r 1 --json")
print(f"          {llama} -m M.gguf -t {threads} -p {plist} -n {gen} -r 1 -o json")
if kc:
    print(f"          {ik} -m M.gguf -t {threads} -p {plist} -n {gen} -r 1 -o json   (and again with -rtr 1)")
print()
print("| model | test | ember tok/s | llama.cpp tok/s | ik_llama.cpp tok/s | ik -rtr 1 tok/s "
      "| ember / llama.cpp | ember / ik (best) | % of read probe: ember / llama.cpp / ik (best) | targets |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for m, test, e, l, i0, i1, ib, pct in rows:
    rl = e / l if l else None
    ri = e / ib if ib else None
    tl, ti = targets(test)
    miss = []
    if rl is not None and rl < tl:
        miss.append(f"< {tl}x llama.cpp")
    if ri is not None and ri < ti:
        miss.append(f"< {ti}x ik")
    if pct and m.endswith(":q4_k_m") and pct[0] is not None and pct[0] < 80:
        miss.append("< 80% of probe")
    bw = " / ".join(f"{v:.0f}%" if v is not None else "-" for v in pct) if pct else ""
    print(f"| {m} | {test} | {e:.2f} | {fmt(l)} | {fmt(i0)} | {fmt(i1)} | {fmt(rl, '.2f') + 'x' if rl else '-'} | {fmt(ri, '.2f') + 'x' if ri else '-'} "
          f"| {bw} | {'met' if not miss else 'missed: ' + ', '.join(miss)} |")
print()
print(f"tg{gen}: ember decodes after a {prompts[0]}-token prompt, llama-bench from an empty context. % of read probe:")
print("weight bytes one decode step reads (ember's count, the same GGUF bytes for all; ik's -rtr repacks them)")
print("x tokens/s, over ember's probe GB/s. Targets (issue 12): prefill >= 1.5x llama.cpp and >= 1.2x ik_llama.cpp,")
print("decode >= 1.5x llama.cpp and >= 1.3x ik_llama.cpp (its better figure), q4_k_m decode >= 80% of the probe.")
if xrows:
    print()
    print(f"Issue 17: ember's own kernels, ember with XNNPACK (EMBER_KERNELS=xnnpack; kernels: "
          f"{info['emberx'].get('kernels')}) and llama.cpp, the same runs")
    print()
    print("| model | test | ember own tok/s | ember + XNNPACK tok/s | llama.cpp tok/s | XNNPACK / own "
          "| own / llama.cpp | XNNPACK / llama.cpp | faster in ember |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for m, test, _, _, e, x, l in xrows:
        print(f"| {m} | {test} | {e:.2f} | {x:.2f} | {fmt(l)} | {x / e:.2f}x | "
              f"{fmt(e / l if l else None, '.2f')}x | {fmt(x / l if l else None, '.2f')}x | "
              f"{'XNNPACK' if x > e else 'own'} |")
print(f"raw runs: {raw}")
PY
