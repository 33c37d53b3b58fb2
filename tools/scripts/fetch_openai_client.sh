#!/usr/bin/env bash
# Fetches the official OpenAI Node.js client (the `openai` npm package) for
# the `ember serve` test (tests/serve/openai_client_test.mjs). Not committed;
# installed with npm (integrity-checked, install scripts not run) into a
# folder the test reads.
#
# Usage: tools/scripts/fetch_openai_client.sh [DEST]
#   DEST defaults to $EMBER_OPENAI_CLIENT_DIR, else build/_deps/openai-client
#   (where the test looks unless EMBER_OPENAI_CLIENT_DIR says otherwise).
# A DEST already filled by this version of the script is left as it is.
set -euo pipefail

# 4.x: its `httpAgent` option takes the test's own CA (the HTTPS case).
PACKAGE=openai@4.95.0

cd "$(dirname "$0")/../.."
dest=${1:-${EMBER_OPENAI_CLIENT_DIR:-build/_deps/openai-client}}
stamp="$dest/.fetched"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$PACKAGE" ]]; then
  echo "fetch_openai_client: $dest is up to date ($PACKAGE)"
  exit 0
fi
command -v npm > /dev/null || { echo "fetch_openai_client: npm is needed" >&2; exit 1; }
mkdir -p "$dest"
echo "fetch_openai_client: npm i $PACKAGE (no install scripts)"
(cd "$dest" && echo '{"private":true}' > package.json &&
  npm i -E "$PACKAGE" --ignore-scripts --no-audit --no-fund --loglevel=error > /dev/null)
[[ -f "$dest/node_modules/openai/package.json" ]] || { echo "fetch_openai_client: the install left no openai package" >&2; exit 1; }
echo "$PACKAGE" > "$stamp"
echo "fetch_openai_client: $PACKAGE in $dest"
