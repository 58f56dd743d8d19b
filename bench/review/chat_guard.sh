#!/usr/bin/env bash
# Peak memory of review-server while the chat tool is sent queries built to exhaust memory
# (issue 16: `printf('%.*c', N, 'x')` once took the server from 19 MB to 605 MB in a second).
# Runs the end-to-end test that drives the real binary with the scripted model and prints the
# server's VmHWM before and after, with the machine load. Usage: bench/review/chat_guard.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
echo "load before: $(uptime)"
out=$(cargo test -q -p review-server --test api_chat a_query_built_to_exhaust_memory_is_bounded -- --nocapture 2>&1)
line=$(grep "peak RSS of review-server" <<<"$out")
before=$(sed -E 's/.*: ([0-9]+) KiB before.*/\1/' <<<"$line")
after=$(sed -E 's/.*, ([0-9]+) KiB after.*/\1/' <<<"$line")
echo "| queries | peak RSS before (MiB) | peak RSS after (MiB) |"
echo "|---|---:|---:|"
awk -v b="$before" -v a="$after" 'BEGIN { printf "| printf x5e8, printf x6e8, randomblob(1e9), zeroblob(1e9), group_concat of 3e7 bytes | %.1f | %.1f |\n", b / 1024, a / 1024 }'
echo "load after: $(uptime)"
