#!/usr/bin/env bash
# review-server stats benchmark: p50 of GET /api/stats and /api/stats/charts (range=all and
# range=30d; unfiltered, one repo, one model) at 100,000 and 1,000,000 reviews (3 findings
# each), on SQLite and on PostgreSQL, on the release binary (examples/bench_stats.rs). Targets:
# under 30 ms at 100k, under 150 ms at 1M. Writes bench/review-stats/RESULTS.md.
# SCALES="100000 1000000" overrides the sizes. PostgreSQL: a throwaway cluster on a free
# loopback port (scripts/postgres.sh, the newest installed PostgreSQL), or the
# server of BENCH_POSTGRES_URL (a superuser's URL) when set; without either only SQLite runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
cargo build --release -p review-server --bin review-server --example bench_stats
bin="$CARGO_TARGET_DIR/release/review-server"
out=bench/review-stats/RESULTS.md

# shellcheck source=scripts/postgres.sh
. scripts/postgres.sh
trap stop_throwaway_postgres EXIT
# Server settings of the throwaway cluster, named in RESULTS.md.
export PG_SETTINGS="shared_buffers=512MB effective_cache_size=4GB work_mem=16MB max_wal_size=4GB"
if [ -z "${BENCH_POSTGRES_URL:-}" ] && start_throwaway_postgres; then
  export BENCH_POSTGRES_URL="$REVIEW_TEST_DATABASE_URL"
  pg_note="PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'): a throwaway cluster (scripts/postgres.sh) with fsync=off, $PG_SETTINGS."
elif [ -n "${BENCH_POSTGRES_URL:-}" ]; then
  pg_note="PostgreSQL: the server of BENCH_POSTGRES_URL."
else
  pg_note="PostgreSQL not installed: SQLite only."
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# shellcheck disable=SC2086
table=$("$CARGO_TARGET_DIR/release/examples/bench_stats" "$bin" ${SCALES:-100000 1000000})
{
  echo "# review-server stats benchmark"
  echo
  echo "Produced by \`bench/review-stats/run.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); release build; client, server and database share the machine. p50 and max of 20 sequential requests after 3 warm-ups. Targets: under 30 ms at 100k reviews, under 150 ms at 1M. Filters: \`repo=\` one of 50 repos (2% of the reviews), \`model=\` one of 8 models (11%). $pg_note Load average (1, 5, 15 min) at the start: $load_before; at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "$table"
} | tee "$out"
