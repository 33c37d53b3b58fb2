#!/usr/bin/env bash
# Developer check, not run in CI: ember's dequantization of every GGUF weight
# type it stores, compared with an independent decoder (llama.cpp's gguf-py,
# numpy), on
#   A. GGUFs that ember writes itself (`ember synth --dtype T --gguf`: ember's
#      reference quantizer and block packing), and
#   B. GGUFs that llama.cpp's llama-quantize makes from an f32 synthetic
#      model (the presets users download), when llama-quantize is built;
#   C. blocks made by gguf-py's own quantizers (q4_1, q5_0, q5_1), written
#      into a GGUF of the same shape.
# Each GGUF is converted (`ember convert`: bytes copied), every tensor
# dequantized by ember (`ember info --dump-tensors`) and by gguf-py, and the
# two compared: bit-exact, or within f32 rounding (|diff| <= 1e-6 x the
# tensor's largest magnitude; the two decoders may order a multiply-add
# differently).
#
# Usage: tools/scripts/check_quant_types.sh [WORKDIR]
# Environment: EMBER (default build/ember), LLAMA_CPP (default ../peer/llama.cpp
# beside the checkout's parent), GGUF_PY (default $LLAMA_CPP/gguf-py),
# LLAMA_QUANTIZE (default $LLAMA_CPP/build/bin/llama-quantize), PYTHON (a
# python3 with numpy), SHAPE (default 110m: widths 768/2048, whole 256-blocks),
# PARTS (default ABC). Takes ~15 minutes on 2 cores.
# Exit status 0 when every compared tensor agrees.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EMBER=${EMBER:-$ROOT/build/ember}
LLAMA_CPP=${LLAMA_CPP:-$(cd "$ROOT/.." && pwd)/peer/llama.cpp}
GGUF_PY=${GGUF_PY:-$LLAMA_CPP/gguf-py}
LLAMA_QUANTIZE=${LLAMA_QUANTIZE:-$LLAMA_CPP/build/bin/llama-quantize}
SHAPE=${SHAPE:-110m}
PARTS=${PARTS:-ABC}  # which of the parts above to run
WORK=${1:-$(mktemp -d /tmp/check-quant-types.XXXXXX)}
mkdir -p "$WORK"

if [[ -z "${PYTHON:-}" ]]; then
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then PYTHON=$p; break; fi
  done
fi
[[ -n "${PYTHON:-}" ]] || { echo "check_quant_types: no python3 with numpy (apt-get install python3-numpy)" >&2; exit 2; }
[[ -d "$GGUF_PY/gguf" ]] || { echo "check_quant_types: gguf-py not found at $GGUF_PY" >&2; exit 2; }
[[ -x "$EMBER" ]] || { echo "check_quant_types: $EMBER not built" >&2; exit 2; }

COMPARE=$WORK/compare.py
cat > "$COMPARE" <<'PY'
import sys, os
import numpy as np
import gguf
from gguf.quants import dequantize

path, dump_dir, label = sys.argv[1], sys.argv[2], sys.argv[3]
reader = gguf.GGUFReader(path)
by_type = {}
bad = 0
for t in reader.tensors:
    qt = gguf.GGMLQuantizationType(t.tensor_type)
    ref = np.asarray(dequantize(t.data, qt), dtype=np.float32).reshape(-1)
    got = np.fromfile(os.path.join(dump_dir, t.name + ".f32"), dtype="<f4")
    s = by_type.setdefault(qt.name.lower(), [0, 0, 0, 0.0])
    s[0] += 1
    if got.size != ref.size:
        print(f"  {label}: {t.name} ({qt.name}): ember has {got.size} values, gguf-py {ref.size}")
        bad += 1
        continue
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    worst = float(np.max(diff)) if diff.size else 0.0
    exact = bool(np.array_equal(got.view(np.uint32), ref.view(np.uint32)))
    s[1] += exact
    s[3] = max(s[3], worst / scale if scale > 0 else worst)
    if worst > 1e-6 * scale:
        print(f"  {label}: {t.name} ({qt.name}): max |diff| {worst:.3g} of max |x| {scale:.3g}")
        s[2] += 1
        bad += 1
for name, (n, exact, failed, rel) in sorted(by_type.items()):
    print(f"  {label}: {name:7s} {n:4d} tensors, {exact:4d} bit-exact, {failed} over tolerance, "
          f"worst |diff| / max|x| = {rel:.3g}")
sys.exit(1 if bad else 0)
PY

status=0
# check LABEL GGUF: convert, dump, compare; the dumps are removed afterwards.
check() {
  local label=$1 gguf=$2
  local ember=$WORK/$label.ember dump=$WORK/$label.dump
  "$EMBER" convert "$gguf" -o "$ember" > /dev/null
  rm -rf "$dump" && mkdir -p "$dump"
  "$EMBER" info "$ember" --dump-tensors "$dump" > "$WORK/$label.info"
  if ! PYTHONPATH=$GGUF_PY "$PYTHON" "$COMPARE" "$gguf" "$dump" "$label"; then status=1; fi
  grep -E '^  (type|overall)' "$WORK/$label.info" | sed "s/^/  $label: /"
  rm -rf "$dump" "$ember"
}

if [[ $PARTS == *A* ]]; then
echo "A. GGUFs written by ember (ember synth --shape $SHAPE --dtype T --gguf), decoded by gguf-py"
for t in q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs; do
  g=$WORK/ember-$t.gguf
  "$EMBER" synth --shape "$SHAPE" --vocab builtin --dtype "$t" --gguf -o "$g" > /dev/null 2>&1
  check "ember-$t" "$g"
  rm -f "$g"
done
fi

if [[ $PARTS == *B* ]]; then
echo "B. GGUFs quantized by llama.cpp (llama-quantize), decoded by ember and by gguf-py"
if [[ -x "$LLAMA_QUANTIZE" ]]; then
  src=$WORK/src-f32.gguf
  "$EMBER" synth --shape "$SHAPE" --vocab builtin --dtype f32 --gguf -o "$src" > /dev/null 2>&1
  # IQ4_XS/IQ4_NL need no importance matrix (the IQ2/IQ1 types do and are
  # not stored by ember anyway).
  for preset in q4_k_m q5_k_m q6_k q2_k q3_k_m iq4_xs iq4_nl q4_1 q5_0 q5_1; do
    g=$WORK/llama-$preset.gguf
    if ! "$LLAMA_QUANTIZE" "$src" "$g" "$preset" 2 > "$WORK/llama-$preset.log" 2>&1; then
      echo "  llama-$preset: llama-quantize failed (see $WORK/llama-$preset.log); skipped"
      continue
    fi
    check "llama-$preset" "$g"
    rm -f "$g"
  done
  rm -f "$src"
else
  echo "  skipped: $LLAMA_QUANTIZE is not built"
fi
fi

if [[ $PARTS == *C* ]]; then
echo "C. Blocks quantized by gguf-py (its ports of llama.cpp's reference quantizers: q4_1 q5_0 q5_1)"
# The same synthetic f32 weights (same seed); each matrix of ember's GGUF of
# that type is overwritten in place with gguf-py's quantization (the sizes
# are the same), then converted and compared as above. Also prints the
# relative rms error of both quantizers against the f32 weights.
REQUANT=$WORK/requant.py
cat > "$REQUANT" <<'PY'
import sys
import numpy as np
import gguf
from gguf.quants import quantize, dequantize

src = {t.name: t for t in gguf.GGUFReader(sys.argv[1]).tensors}
dst = gguf.GGUFReader(sys.argv[2], "r+")
label = sys.argv[3]
err = {"ember": [0.0, 0.0], "gguf-py": [0.0, 0.0]}
changed = total = 0
for t in dst.tensors:
    qt = gguf.GGMLQuantizationType(t.tensor_type)
    if qt == gguf.GGMLQuantizationType.F32:
        continue
    x = np.asarray(src[t.name].data, dtype=np.float32).reshape(t.data.shape[0], -1)
    ours = np.asarray(dequantize(np.array(t.data), qt), dtype=np.float64).reshape(x.shape)
    q = quantize(x, qt)
    theirs = np.asarray(dequantize(q, qt), dtype=np.float64).reshape(x.shape)
    changed += int(np.count_nonzero(np.array(t.data).reshape(-1) != q.reshape(-1)))
    total += q.size
    t.data[...] = q.reshape(t.data.shape)
    ref = float(np.sum(x.astype(np.float64) ** 2))
    err["ember"][0] += float(np.sum((ours - x) ** 2)); err["ember"][1] += ref
    err["gguf-py"][0] += float(np.sum((theirs - x) ** 2)); err["gguf-py"][1] += ref
print(f"  {label}: {changed} of {total} block bytes differ from ember's quantization")
for k, (e, r) in err.items():
    print(f"  {label}: relative rms error of {k}'s quantizer: {np.sqrt(e / r):.4f}")
PY
src=$WORK/src-f32.gguf
"$EMBER" synth --shape "$SHAPE" --vocab builtin --dtype f32 --gguf -o "$src" > /dev/null 2>&1
for t in q4_1 q5_0 q5_1; do
  g=$WORK/ggufpy-$t.gguf
  "$EMBER" synth --shape "$SHAPE" --vocab builtin --dtype "$t" --gguf -o "$g" > /dev/null 2>&1
  if ! PYTHONPATH=$GGUF_PY "$PYTHON" "$REQUANT" "$src" "$g" "ggufpy-$t"; then status=1; fi
  check "ggufpy-$t" "$g"
  rm -f "$g"
done
rm -f "$src"
fi

if [[ $status -eq 0 ]]; then echo "check_quant_types: OK"; else echo "check_quant_types: MISMATCH"; fi
exit $status
