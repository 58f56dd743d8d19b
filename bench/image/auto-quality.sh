#!/usr/bin/env bash
# quality=auto against quality 80 per output format (JPEG, WebP, AVIF) on the photo corpus:
# bytes, SSIMULACRA2 scores, bytes saved and the CPU the search adds; then format=best's pick.
# Runs crates/image-pipeline/examples/auto_quality.rs on a release build. Needs: cargo.
# Usage: bench/image/auto-quality.sh [--write] [PHOTO...]; without photos: the shared corpus
# (CORPUS, default /work/shared/images) and the committed fixture photos. --write writes
# bench/image/AUTO_QUALITY.md with the date and the machine's load. TARGET and WIDTH as the
# example reads them (default 80 and 800).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$HERE/../.."
FIXTURES="$ROOT/crates/image-pipeline/tests/fixtures"
WRITE=""
if [ "${1:-}" = "--write" ]; then WRITE=1; shift; fi
if [ "$#" -gt 0 ]; then
  PHOTOS=("$@")
else
  PHOTOS=()
  CORPUS="${CORPUS:-/work/shared/images}"
  if [ -d "$CORPUS" ]; then
    while IFS= read -r f; do PHOTOS+=("$f"); done < <(find "$CORPUS" -maxdepth 1 -type f \( -name '*.jpg' -o -name '*.heic' \) | sort)
  fi
  for f in lake.jpg hopper.jpg parrots.jpg pug.heic xiaomi.heic; do
    [ -f "$FIXTURES/$f" ] && PHOTOS+=("$FIXTURES/$f")
  done
fi

cd "$ROOT"
cargo build --release -p image-pipeline --example auto_quality >&2
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/auto_quality"
BEFORE="$(uptime)"
OUT="$("$BIN" "${PHOTOS[@]}")"
AFTER="$(uptime)"
REPORT="$(cat <<MD
# quality=auto against quality 80

$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),
release build, one thread. Load before: \`$BEFORE\`; after: \`$AFTER\`.
Produced by \`bench/image/auto-quality.sh --write\` (crates/image-pipeline/examples/auto_quality.rs).

$OUT
MD
)"
echo "$REPORT"
if [ -n "$WRITE" ]; then echo "$REPORT" > "$HERE/AUTO_QUALITY.md"; fi
