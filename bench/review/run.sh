#!/usr/bin/env bash
# review-server benchmark: builds the release binary, then measures webhook acknowledgement
# latency, wrk throughput at 64 connections, startup and idle RSS (examples/bench_webhook.rs),
# and a cached fetch against a fresh clone of this repository (git-cache's bench_sync).
# Writes bench/review/RESULTS.md. Needs wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
ulimit -n 8192 2>/dev/null || true
cargo build --release -p review-server --bin review-server --example bench_webhook --example bench_events
bin="$CARGO_TARGET_DIR/release/review-server"
out=bench/review/RESULTS.md
{
  echo "# review-server benchmark"
  echo
  echo "Produced by \`bench/review/run.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); release build; server, client and wrk share the machine. Load average (1, 5, 15 min) when it started: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  "$CARGO_TARGET_DIR/release/examples/bench_webhook" "$bin" "${REQUESTS:-1000}" "${WRK_SECONDS:-10}"
  echo
  "$CARGO_TARGET_DIR/release/examples/bench_events" "$bin" "${CLIENTS:-1000}" "${EVENTS:-20}"
  echo
  echo "Load average when it ended: $(cut -d' ' -f1-3 /proc/loadavg). The deliveries are GitHub's pull_request.synchronize example padded to 16 KiB, for a registered but disabled repository (answered from the envelope, as most deliveries of an org-wide install are). The GitLab rows send GitLab's Merge Request Hook example (tests/fixtures/webhooks/gitlab/merge_request.open.json, its description padded to 16 KiB) to /webhook/gitlab with X-Gitlab-Token and a new X-Gitlab-Event-UUID each, for a registered but disabled project (\`127.0.0.1:1/acme/platform/widgets\`, also answered from the envelope), 200 warm-up deliveries first as for GitHub; they are measured after the GitHub rows on a second server, on a database of its own, started with both forges configured (GitHub's settings and GITLAB_URL, GITLAB_TOKEN, GITLAB_WEBHOOK_SECRET); every sequential GitLab delivery was checked to be answered 200 \`{\"ok\":true}\`. A cached fetch against a fresh clone is measured by \`bench/git-cache/run.sh\`."
} | tee "$out"
