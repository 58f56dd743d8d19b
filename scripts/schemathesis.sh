#!/usr/bin/env bash
# Runs schemathesis (PyPI) against review-server's /api/openapi.json: generated requests for
# every documented operation must never get a 5xx nor a response that breaks the document.
# Usage: scripts/schemathesis.sh [review-server binary] (default: the debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
bin="${1:-$CARGO_TARGET_DIR/debug/review-server}"
[ -x "$bin" ] || cargo build -p review-server
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Closed loopback ports for the forge, the catalog and the model providers: fuzzed calls that
# reach out fail at once instead of waiting on the network.
LISTEN="127.0.0.1:$port" DATA_DIR="$data" FORGE_WEBHOOK_SECRET=st \
  FORGE_API_URL=http://127.0.0.1:9 MODELS_CATALOG_URL=http://127.0.0.1:9/api.json \
  ANTHROPIC_BASE_URL=http://127.0.0.1:9 OPENAI_BASE_URL=http://127.0.0.1:9/v1 \
  RUST_LOG=warn "$bin" >"$data/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.05
done
# /api/events is an endless stream: its shape is tested in e2e_lifecycle instead.
schemathesis run "http://127.0.0.1:$port/api/openapi.json" \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance \
  --exclude-path /api/events \
  --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" \
  --request-timeout 10
if grep -q "panicked" "$data/server.log"; then
  echo "review-server panicked during schemathesis:"; grep -A5 panicked "$data/server.log"; exit 1
fi
