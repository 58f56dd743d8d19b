#!/usr/bin/env bash
# Finding 4: SVG. Before: the entity pre-check searched the text for the first DOCTYPE and
# `]>`, so a comment holding `<!DOCTYPE x []>` before the real one, or `]>` inside an entity
# value, passed it (a 26 KB file of 300 references to 250 references to 20 KB here; the review's 31 KB file: 1.55 GB and 2.9 s at upload and at every resize); filters
# were unbounded (188 bytes of feMorphology radius=50 on a 2000 px canvas: 47 s). After: the
# prolog is read as the XML parser reads it, and filters, layers and shapes are costed before
# drawing: 422 in milliseconds.
# Usage: BIN=path bench/security/image-4-svg.sh (only 127.0.0.1 is contacted).
source "$(dirname "$0")/image-pipeline-lib.sh"
laughs() { # PREFIX EARLY_ENTITY: 300 references to an entity of 250 references to 20 KB
  python3 - "$1" "$2" <<'PY'
import sys
prefix, early = sys.argv[1], sys.argv[2]
dtd = early + '<!ENTITY l0 "' + "x" * 20000 + '"><!ENTITY l1 "' + "&l0;" * 250 + '">'
print(prefix + '<!DOCTYPE svg [' + dtd + ']><svg xmlns="http://www.w3.org/2000/svg" '
      'width="100" height="100"><text>' + "&l1;" * 300 + '</text></svg>')
PY
}
laughs '<!-- <!DOCTYPE x []> -->' '' > "$WORK/comment.svg"
laughs '' '<!ENTITY a "]><svg ">' > "$WORK/bracket.svg"
printf '%s' '<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="2000"><filter id="f"><feMorphology operator="dilate" radius="50"/></filter><rect width="2000" height="2000" filter="url(#f)"/></svg>' > "$WORK/morphology.svg"
for name in comment bracket morphology; do
  start_server || { row "4 ($name)" "server did not start" - - - -; continue; }
  cp "$WORK/$name.svg" "$WORK/images/$name.svg"
  request "4 ($name.svg, $(stat -c %s "$WORK/$name.svg") B)" "$name.svg" "width=2000&format=png"
  kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true
done
