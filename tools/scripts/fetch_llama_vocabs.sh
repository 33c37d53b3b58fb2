#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test set (models/ggml-vocab-*.gguf with
# their .inp/.out vectors, about 75 MB) for tests/tokenizer/
# test_llama_vocabs.cpp, and its real model chat templates
# (models/templates/*.jinja, into DEST/templates/) for tests/chat/
# test_chat_templates.cpp. They are not in ../shared and are not committed.
#
# Source: the npm package node-llama-cpp@3.21.1 ships llama.cpp (commit
# 80fb11a, the one ember is compared with) as a git bundle; the package is
# fetched with npm (integrity-checked by npm, install scripts not run), the
# bundle cloned with a sparse checkout of models/ggml-vocab-* and
# models/templates/ only, and the commit checked.
#
# Usage: tools/scripts/fetch_llama_vocabs.sh [DEST]
#   DEST defaults to $EMBER_LLAMA_VOCAB_DIR, else build/_deps/llama-vocab
#   (where the tests look unless EMBER_LLAMA_VOCAB_DIR says otherwise).
#   EMBER_LLAMA_VOCAB_SRC=DIR copies from a local llama.cpp models/ folder
#   instead (no network), e.g. while developing; its templates/ subfolder
#   too when there is one.
# A DEST already filled by this version of the script is left as it is.
set -euo pipefail

PACKAGE=node-llama-cpp@3.21.1
COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed

cd "$(dirname "$0")/../.."
dest=${1:-${EMBER_LLAMA_VOCAB_DIR:-build/_deps/llama-vocab}}
stamp="$dest/.fetched"
want="$PACKAGE $COMMIT +templates"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "fetch_llama_vocabs: $dest is up to date ($want)"
  exit 0
fi

mkdir -p "$dest"
if [[ -n "${EMBER_LLAMA_VOCAB_SRC:-}" ]]; then
  echo "fetch_llama_vocabs: copying from $EMBER_LLAMA_VOCAB_SRC"
  cp "$EMBER_LLAMA_VOCAB_SRC"/ggml-vocab-* "$dest"/
  if [[ -d "$EMBER_LLAMA_VOCAB_SRC/templates" ]]; then
    mkdir -p "$dest/templates"
    cp "$EMBER_LLAMA_VOCAB_SRC"/templates/*.jinja "$dest/templates/"
  fi
  echo "local $EMBER_LLAMA_VOCAB_SRC" > "$stamp"
  exit 0
fi

for tool in npm git; do
  command -v "$tool" > /dev/null || { echo "fetch_llama_vocabs: $tool is needed" >&2; exit 1; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "fetch_llama_vocabs: npm i $PACKAGE (no install scripts)"
(cd "$scratch" && npm i -E "$PACKAGE" --ignore-scripts --no-audit --no-fund --loglevel=error > /dev/null)
bundle="$scratch/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "fetch_llama_vocabs: $bundle is missing" >&2; exit 1; }

git clone --quiet --no-checkout "$bundle" "$scratch/llama.cpp"
git -C "$scratch/llama.cpp" sparse-checkout set --no-cone '/models/ggml-vocab-*' '/models/templates/*.jinja'
git -C "$scratch/llama.cpp" checkout --quiet
got=$(git -C "$scratch/llama.cpp" rev-parse HEAD)
if [[ "$got" != "$COMMIT" ]]; then
  echo "fetch_llama_vocabs: the bundle holds llama.cpp $got, expected $COMMIT" >&2
  exit 1
fi

cp "$scratch"/llama.cpp/models/ggml-vocab-* "$dest"/
rm -rf "$dest/templates"
mkdir -p "$dest/templates"
if compgen -G "$scratch/llama.cpp/models/templates/*.jinja" > /dev/null; then
  cp "$scratch"/llama.cpp/models/templates/*.jinja "$dest/templates/"
fi
echo "$want" > "$stamp"
echo "fetch_llama_vocabs: $(ls "$dest" | grep -c '\.gguf$') vocabularies, $(ls "$dest/templates" | grep -c '\.jinja$') chat templates in $dest"
