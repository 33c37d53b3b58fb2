#!/usr/bin/env bash
# ember's logits against llama.cpp's for the same GGUF and the same token ids
# (issue 13: families within 1e-3 with f32 weights). Drives a llama.cpp build
# from outside: compiles tools/scripts/peer/llama_logits.cpp against its
# llama.h and libllama.so, runs it and `ember run -m FILE.gguf --tokens IDS
# -n 0 --dump-logits`, and prints the largest absolute difference and the
# rel-L2 distance.
# usage: tools/scripts/compare_logits.sh LLAMA_CPP_DIR EMBER_BIN MODEL.gguf [IDS]
#   LLAMA_CPP_DIR: a llama.cpp source tree built in LLAMA_CPP_DIR/build
#   IDS: comma-separated token ids (default 1,15,27,99,3,250,7,8,9,10,11,12)
#   CONTEXT=N (environment): both sides run a context of N (llama.cpp pads
#   it to a multiple of 256; LongRoPE chooses its factors by it)
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,13p "$0"; exit 2; }
peer=$1 ember=$2 model=$3 ids=${4:-1,15,27,99,3,250,7,8,9,10,11,12}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib=$peer/build/bin
g++ -O1 -std=c++17 -I"$peer/include" -I"$peer/ggml/include" "$here/peer/llama_logits.cpp" \
  -L"$lib" -lllama -Wl,-rpath,"$lib" -o "$work/llama_logits"
PEER_N_CTX=${CONTEXT:-} "$work/llama_logits" "$model" "$ids" "$work/peer.txt" 2>"$work/peer.log" || { tail -20 "$work/peer.log"; exit 1; }
EMBER_CACHE_DIR=$work/cache "$ember" run -m "$model" --tokens "$ids" -n 0 --dump-logits "$work/ember.txt" \
  --backend "${EMBER_BACKEND:-cpu}" ${CONTEXT:+--ctx "$CONTEXT"} >/dev/null 2>"$work/ember.log" || { tail -20 "$work/ember.log"; exit 1; }
python3 - "$work/ember.txt" "$work/peer.txt" "$model" <<'PY'
import math, sys
a = [float(x) for x in open(sys.argv[1])]
b = [float(x) for x in open(sys.argv[2])]
assert len(a) == len(b), (len(a), len(b))
mad = max(abs(x - y) for x, y in zip(a, b))
rel = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / sum(y * y for y in b))
top = lambda v: max(range(len(v)), key=v.__getitem__)
print(f"{sys.argv[3]}: {len(a)} logits, max |ember - llama.cpp| = {mad:.3g}, rel-L2 = {rel:.3g}, "
      f"argmax ember {top(a)} llama.cpp {top(b)}")
PY
