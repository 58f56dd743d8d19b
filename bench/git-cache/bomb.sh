#!/usr/bin/env bash
# Time and peak memory of refusing a git bomb (issue 16 item 5); writes BOMB.md.
# Usage: bench/git-cache/bomb.sh [levels...]   (default: 4 5 6 7 9 12)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/git-cache/BOMB.md
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(4 5 6 7 9 12)
cargo build -q -p git-cache --example bench_bomb
bin="${CARGO_TARGET_DIR:-target}/debug/examples/bench_bomb"
{
  echo "# git-cache: refusing a git bomb"
  echo
  echo "Produced by \`bench/git-cache/bomb.sh\` ($(date -u +%Y-%m-%d), $(nproc) cores, debug build of"
  echo "git-cache with dependencies at opt-level 1 as the workspace profile sets). Each row is one"
  echo "process: a repository whose head tree is \`levels\` levels of 10 entries pointing at the same"
  echo "subtree, then \`Repo::diff_bytes(main, bomb)\` with the default limits (1 000 000 entries,"
  echo "8 GiB). Peak RSS is the process's VmHWM before and after the call."
  echo
  echo "| levels | files | pack KiB | outcome | ms | peak RSS before MiB | peak RSS after MiB |"
  echo "|---:|---:|---:|---|---:|---:|---:|"
  for n in "${levels[@]}"; do "$bin" "$n"; done
  echo
  echo "The same limits check on a legitimate tree of distinct files (one distinct blob per file,"
  echo "100 files per directory), beside a checkout of it:"
  echo
  echo "| tree | check | checkout |"
  echo "|---|---:|---:|"
  "$bin" flat 100000
  echo
  echo "Rows within the limits (10^4, 10^5 files) print and diff every file: that is the cost a"
  echo "legitimate tree of that size has too. Over the limits, the cost no longer grows with the"
  echo "tree: each distinct tree object is read once and its size reused wherever it repeats."
} > "$out"
cat "$out"
