#!/usr/bin/env bash
# Runs schemathesis (PyPI) against review-server's /api/openapi.json on a seeded data dir
# (scripts/schemathesis/seed.py: 200 reviews, 600 findings, repos, a skill, transcripts), with
# every webhook case signed, or carrying GitLab's token (hooks.py) and every check on: no 5xx, responses that match their
# precise schemas, statuses and content types, schema-valid requests accepted and schema-invalid
# ones rejected. Configuration: scripts/schemathesis/schemathesis.toml.
# Usage: scripts/schemathesis.sh [review-server binary] (default: the debug build).
# The generator's seed is fixed so that a failure in CI is the same failure on a rerun;
# SCHEMATHESIS_SEED=random (or any number) explores other cases.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
bin="${1:-$CARGO_TARGET_DIR/debug/review-server}"
[ -x "$bin" ] || cargo build -p review-server
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Closed loopback ports for the forge, the catalog and the model providers: fuzzed calls that
# reach out fail at once instead of waiting on the network.
start() {
  LISTEN="127.0.0.1:$port" DATA_DIR="$data" FORGE_WEBHOOK_SECRET=st \
    GITLAB_URL=http://127.0.0.1:9 GITLAB_TOKEN=st-fuzz GITLAB_WEBHOOK_SECRET=st-gitlab \
    FORGE_API_URL=http://127.0.0.1:9 MODELS_CATALOG_URL=http://127.0.0.1:9/api.json \
    ANTHROPIC_BASE_URL=http://127.0.0.1:9 OPENAI_BASE_URL=http://127.0.0.1:9/v1 \
    AGENT_API_KEY=st-fuzz RUST_LOG=warn "$bin" >>"$data/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "review-server did not start:"; cat "$data/server.log"; exit 1
}
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
# First start migrates the database; the seed goes in while the server is down, and the
# second start reads it through the real store (and fails the seeded pending/running rows).
start
kill "$pid"; wait "$pid" 2>/dev/null || true
python3 scripts/schemathesis/seed.py "$data"
start
seed="${SCHEMATHESIS_SEED:-20261127}"
seed_args=()
[ "$seed" = random ] || seed_args=(--seed "$seed")
# /api/events is an endless stream: its shape is tested in e2e_lifecycle instead.
FORGE_WEBHOOK_SECRET=st GITLAB_WEBHOOK_SECRET=st-gitlab SCHEMATHESIS_HOOKS=hooks PYTHONPATH=scripts/schemathesis \
schemathesis --config-file scripts/schemathesis/schemathesis.toml run "http://127.0.0.1:$port/api/openapi.json" \
  --exclude-path /api/events \
  --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" \
  "${seed_args[@]}" \
  --request-timeout 10
if grep -q "panicked" "$data/server.log"; then
  echo "review-server panicked during schemathesis:"; grep -A5 panicked "$data/server.log"; exit 1
fi
