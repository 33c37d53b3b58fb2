#!/usr/bin/env bash
# KL divergence of a quantized model from its baseline, ember and llama.cpp
# side by side (issue 45): `ember perplexity --kl-base BASE --llama-chunks`
# against llama-perplexity --kl-divergence on the same GGUF files, text and
# context. Each runtime computes both models' logits with its own kernels.
#
# usage: tools/scripts/compare_kl.sh BASE.gguf MODEL.gguf TEXT [CTX=128] [LLAMA_PERPLEXITY]
#   LLAMA_PERPLEXITY: default ../peer/llama.cpp/build/bin/llama-perplexity
# Prints a Markdown table.
set -euo pipefail
BASE=$1
MODEL=$2
TEXT=$3
CTX=${4:-128}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA=${5:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin/llama-perplexity}
EMBER=${EMBER:-$ROOT/build/ember}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ember-kl.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

"$LLAMA" -m "$BASE" -f "$TEXT" -c "$CTX" -t 2 --kl-divergence-base "$OUT/base.kld" > /dev/null 2>&1
"$LLAMA" -m "$MODEL" -f "$TEXT" -c "$CTX" -t 2 --kl-divergence-base "$OUT/base.kld" --kl-divergence \
  > "$OUT/llama.txt" 2>&1
"$EMBER" perplexity -m "$MODEL" --kl-base "$BASE" -f "$TEXT" --ctx "$CTX" --llama-chunks --threads 2 \
  > "$OUT/ember.txt" 2> /dev/null

python3 - "$OUT/llama.txt" "$OUT/ember.txt" <<'PY'
import re, sys
llama, ember = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def l(pattern):
    m = re.search(pattern, llama)
    return float(m.group(1)) if m else float("nan")
e = dict(line.split() for line in ember.splitlines() if len(line.split()) == 2)
rows = [
    ("mean KL", l(r"Mean\s+KLD:\s+([0-9.]+)"), float(e["kl_divergence_mean"])),
    ("median KL", l(r"Median\s+KLD:\s+([0-9.]+)"), float(e["kl_divergence_median"])),
    ("99% KL", l(r"99\.0%\s+KLD:\s+([0-9.]+)"), float(e["kl_divergence_p99"])),
    ("same top-1 %", l(r"Same top p:\s+([0-9.]+)"), float(e["same_top1_pct"])),
    ("PPL(model)", l(r"Mean PPL\(Q\)\s+:\s+([0-9.]+)"), float(e["perplexity"])),
    ("PPL(base)", l(r"Mean PPL\(base\)\s+:\s+([0-9.]+)"), float(e["base_perplexity"])),
]
print("| figure | llama-perplexity | ember perplexity | ember / llama.cpp |")
print("|---|---:|---:|---:|")
for name, a, b in rows:
    print(f"| {name} | {a:.6g} | {b:.6g} | {b / a:.4f} |")
PY
