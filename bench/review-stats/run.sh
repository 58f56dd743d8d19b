#!/usr/bin/env bash
# review-server stats benchmark: p50 of GET /api/stats and /api/stats/charts (range=all and
# range=30d) at 100,000 and 1,000,000 reviews (3 findings each), on the release binary
# (examples/bench_stats.rs). Targets: under 30 ms at 100k, under 150 ms at 1M.
# Writes bench/review-stats/RESULTS.md. SCALES="100000 1000000" overrides the sizes.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
cargo build --release -p review-server --bin review-server --example bench_stats
bin="$CARGO_TARGET_DIR/release/review-server"
out=bench/review-stats/RESULTS.md
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# shellcheck disable=SC2086
table=$("$CARGO_TARGET_DIR/release/examples/bench_stats" "$bin" ${SCALES:-100000 1000000})
{
  echo "# review-server stats benchmark"
  echo
  echo "Produced by \`bench/review-stats/run.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); release build; client and server share the machine. p50 and max of 20 sequential requests after 3 warm-ups. Targets: under 30 ms at 100k reviews, under 150 ms at 1M. Load average (1, 5, 15 min) at the start: $load_before; at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "$table"
} | tee "$out"
