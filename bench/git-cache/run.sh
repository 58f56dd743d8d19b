#!/usr/bin/env bash
# Cached fetch vs fresh clone (and the review's diff/checkout) for git-cache; writes RESULTS.md.
# Usage: bench/git-cache/run.sh [commits] [files] [runs]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/git-cache/RESULTS.md
table=$(cargo run -q -p git-cache --example bench_sync -- "${1:-400}" "${2:-300}" "${3:-5}")
{
  echo "# git-cache: cached fetch vs fresh clone"
  echo
  echo "Produced by \`bench/git-cache/run.sh\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(git --version | cut -d' ' -f3) for fixtures only,"
  echo "debug build of git-cache with dependencies at opt-level 1 as the workspace profile sets)."
  echo
  echo "$table"
  echo
  echo "Notes: the upstream is generated with \`git fast-import\` and packed by \`git gc\`; every"
  echo "cached fetch adds a pack to the cache, so the later diff and checkout read from many small"
  echo "packs. Release-build numbers were not measured."
} > "$out"
cat "$out"
