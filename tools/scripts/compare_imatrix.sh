#!/usr/bin/env bash
# Quantization quality with and without an importance matrix, ember's
# quantizer against llama.cpp's (issue 45): the same f32 GGUF, the same
# calibration text for both imatrix collectors, the same held-out text
# scored by one evaluator (`ember perplexity --kl-base F32 --llama-chunks`,
# whose figures match llama-perplexity's on the same logits:
# docs/benchmarks.md), so the quantizers are compared, not the kernels.
#
# usage: tools/scripts/compare_imatrix.sh F32.gguf CALIB.txt EVAL.txt "q4_0 q4_k_m ..." [CTX=128]
#   LLAMA_BIN: llama.cpp's build/bin (default ../peer/llama.cpp/build/bin)
#   OUT: where the files go (default a temporary directory, removed)
# Per preset, rows: no imatrix; each side's own imatrix; each side's
# quantizer with the other side's imatrix (the files are shared); ember with
# --awq from its imatrix, alone and with --imatrix. Prints a
# Markdown table: mean KL (± 95%), same top-1 %, file size.
set -euo pipefail
F32=$1
CALIB=$2
EVAL=$3
PRESETS=$4
CTX=${5:-128}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA_BIN=${LLAMA_BIN:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp/build/bin}
EMBER=${EMBER:-$ROOT/build/ember}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; else OUT=$(mktemp -d "${TMPDIR:-/tmp}/ember-imatrix.XXXXXX"); trap 'rm -rf "$OUT"' EXIT; fi

"$EMBER" convert "$F32" -o "$OUT/f32.ember" > /dev/null 2>&1
echo "imatrix: ember and llama-imatrix on $CALIB (context $CTX)" >&2
"$EMBER" imatrix -m "$OUT/f32.ember" -f "$CALIB" -o "$OUT/ember.imatrix.gguf" --ctx "$CTX" --threads 2 > /dev/null 2>&1
"$LLAMA_BIN/llama-imatrix" -m "$F32" -f "$CALIB" -o "$OUT/llama.imatrix.gguf" -c "$CTX" -t 2 --no-ppl > "$OUT/llama-imatrix.log" 2>&1

# ember perplexity's "key value" lines -> "KL ±CI top1 size"
score() {
  local model=$1 out
  out=$("$EMBER" perplexity -m "$model" --kl-base "$F32" -f "$EVAL" --ctx "$CTX" --llama-chunks --threads 2 2>/dev/null)
  awk -v size="$(stat -c %s "$model")" '
    $1 == "kl_divergence_mean" { kl = $2 }
    $1 == "kl_divergence_ci95" { ci = $2 }
    $1 == "same_top1_pct" { top = $2 }
    END { printf "%.6f | %s | %.2f | %.3f MB", kl, ci, top, size / 1e6 }' <<< "$out"
}

echo "| preset | quantizer | imatrix | mean KL | ± 95% | same top-1 % | size |"
echo "|---|---|---|---:|---:|---:|---:|"
for p in $PRESETS; do
  for im in none ember llama; do
    e_flags=() l_flags=()
    if [ "$im" != none ]; then
      e_flags=(--imatrix "$OUT/$im.imatrix.gguf")
      l_flags=(--imatrix "$OUT/$im.imatrix.gguf")
    fi
    "$EMBER" quantize "$OUT/f32.ember" -o "$OUT/e-$p-$im.gguf" --type "$p" --gguf "${e_flags[@]}" > /dev/null 2>&1
    "$LLAMA_BIN/llama-quantize" "${l_flags[@]}" "$F32" "$OUT/l-$p-$im.gguf" "${p^^}" 2 > "$OUT/l-$p-$im.log" 2>&1
    echo "| $p | ember | $im | $(score "$OUT/e-$p-$im.gguf") |"
    echo "| $p | llama.cpp | $im | $(score "$OUT/l-$p-$im.gguf") |"
  done
  # Activation-aware scaling (ember quantize --awq) from ember's statistics,
  # alone and with the same file weighting the searches.
  "$EMBER" quantize "$OUT/f32.ember" -o "$OUT/e-$p-awq.gguf" --type "$p" --gguf --awq "$OUT/ember.imatrix.gguf" \
    > "$OUT/e-$p-awq.log" 2>&1
  echo "| $p | ember | awq (ember's) | $(score "$OUT/e-$p-awq.gguf") |"
  "$EMBER" quantize "$OUT/f32.ember" -o "$OUT/e-$p-awq-im.gguf" --type "$p" --gguf --awq "$OUT/ember.imatrix.gguf" \
    --imatrix "$OUT/ember.imatrix.gguf" > "$OUT/e-$p-awq-im.log" 2>&1
  echo "| $p | ember | awq + ember | $(score "$OUT/e-$p-awq-im.gguf") |"
done
