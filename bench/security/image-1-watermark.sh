#!/usr/bin/env bash
# Finding 1: a tall, narrow stored image as `watermark` on a full-width output. Before: the
# mark was scaled to the output's width with its height unchecked (4032x2419200 for a 1x600
# mark), the allocation failed and the process aborted in 0.3 s; at the default
# watermark_scale, 3 GB and the OOM killer. After: the mark is fitted inside the output.
# Usage: BIN=path bench/security/image-1-watermark.sh (only 127.0.0.1 is contacted).
source "$(dirname "$0")/image-pipeline-lib.sh"
mkdir -p "$WORK/images/marks"
png "$WORK/images/photo.png" 4032 3024 90 120 150
png "$WORK/images/marks/thin.png" 1 600
png "$WORK/images/marks/tall.png" 100 20000
for q in "1x600 scale=1:watermark=marks/thin.png&watermark_scale=1" \
         "100x20000 scale=1:watermark=marks/tall.png&watermark_scale=1" \
         "100x20000 default scale:watermark=marks/tall.png"; do
  start_server || { row "1 (${q%%:*})" "server did not start" - - - -; continue; }
  request "1 (${q%%:*})" photo.png "width=4032&format=jpeg&${q#*:}"
  kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true
done
