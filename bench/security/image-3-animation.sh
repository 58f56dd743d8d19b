#!/usr/bin/env bash
# Finding 3: a 100-frame 700x700 animated GIF asked for width=2800&height=2800&fit=fill&
# enlarge=true (4 times a side, within the unsigned caps per frame). Before: 6.2 GB and 57 s
# (GIF), 6.4 GB and 51 s (WebP): every frame held at once, bounded per frame only. After:
# frames x output pixels are bounded (MAX_ANIMATION_OUTPUT_PIXELS) before decoding, and an
# animation within the bound is decoded, finished and encoded one frame at a time.
# Usage: BIN=path bench/security/image-3-animation.sh (only 127.0.0.1 is contacted).
source "$(dirname "$0")/image-pipeline-lib.sh"
gif "$WORK/images/anim.gif" 100 700
for q in "gif:width=2800&height=2800&fit=fill&enlarge=true&format=gif" \
         "webp:width=2800&height=2800&fit=fill&enlarge=true&format=webp" \
         "webp within the bound:width=700&height=700&fit=fill&format=webp"; do
  start_server || { row "3 (${q%%:*})" "server did not start" - - - -; continue; }
  request "3 (${q%%:*})" anim.gif "${q#*:}"
  kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true
done
