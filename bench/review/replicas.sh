#!/usr/bin/env bash
# review-server on one or two replicas (docs/architecture.md, "Many replicas"), release build:
# - the webhook acknowledgement of bench_webhook (1,000 sequential signed 16 KiB deliveries,
#   each with a new delivery id, for a disabled repository), wrk throughput, and the
#   acknowledgement of 300 deliveries that each queue a review, back to back and 50 a second,
#   on SQLite and on PostgreSQL (target on PostgreSQL: p99 under 2 ms);
# - reviews completed per second with an instant scripted model (tests/bench_replicas.rs), for
#   one replica on SQLite, one on PostgreSQL and two on one PostgreSQL database.
# Starts a throwaway PostgreSQL cluster (scripts/postgres.sh). Writes bench/review/REPLICAS.md.
# Needs wrk (apt-get install wrk) and postgresql.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
ulimit -n 8192 2>/dev/null || true
. scripts/postgres.sh
trap stop_throwaway_postgres EXIT
start_throwaway_postgres
cargo build --release -p review-server --bin review-server --example bench_webhook
cargo test --release -p review-server --test bench_replicas --no-run
bin="$CARGO_TARGET_DIR/release/review-server"
out=bench/review/REPLICAS.md
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
sqlite=$("$CARGO_TARGET_DIR/release/examples/bench_webhook" "$bin" "${REQUESTS:-1000}" "${WRK_SECONDS:-10}")
postgres=$(BENCH_DATABASE_URL=$(fresh_database) "$CARGO_TARGET_DIR/release/examples/bench_webhook" "$bin" "${REQUESTS:-1000}" "${WRK_SECONDS:-10}")
reviews=$(BENCH_PRS="${PRS:-200}" cargo test --release -p review-server --test bench_replicas -- --ignored --nocapture 2>/dev/null | grep '^|')
{
  echo "# review-server on one and two replicas"
  echo
  echo "Produced by \`bench/review/replicas.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); release build; servers, PostgreSQL (a throwaway cluster, fsync off), the fake forge, the scripted model and the clients share the machine. Load average (1, 5, 15 min) at the start: $load_before; at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "## Webhook acknowledgement on SQLite"
  echo
  echo "$sqlite"
  echo
  echo "## Webhook acknowledgement on PostgreSQL"
  echo
  echo "$postgres"
  echo
  echo "## Reviews completed per second"
  echo
  echo "Each run: a fresh database, MAX_CONCURRENT_REVIEWS=4 per replica, ${PRS:-200} pull requests delivered one after another (round robin over the replicas), each reviewed by the instant scripted model with the real git cache, worktree and agent loop; seconds from the first delivery until every review completed; the ack columns are the deliveries' acknowledgements while the replicas review."
  echo
  echo "$reviews"
} | tee "$out"
