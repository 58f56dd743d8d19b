#!/usr/bin/env bash
# What the security review's amplification URL costs (issue 16, item 8): a PNG of a few dozen
# bytes asked for `width=8192&height=8192&fit=fill&enlarge=true&blur=100&format=png`. One
# fresh server per row (result caches off), one request; prints the status, wall time, the
# server's CPU time for it (utime + stime from /proc) and its peak RSS (VmHWM), with the
# machine's load (`uptime`) before the rows.
#   - signed (URL_SIGNING_KEY set): the full range, what every URL got before the caps;
#   - unsigned, default caps: refused from the header;
#   - unsigned, the largest grown output the default caps allow (3840x2160 padding, blur=100).
# BEFORE_BIN=/path/to/image-server adds the same URL on an older build (the numbers before
# this change). Prints a markdown table (and writes bench/image/AMPLIFICATION.md with --write).
# Needs: cargo, curl, python3, openssl. Usage: bench/image/amplification.sh [--write]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
WRITE=""
if [ "${1:-}" = "--write" ]; then WRITE=1; shift; fi
PORT=3212
KEY=bench-signing-key
# shellcheck source=one-server.sh
source "$HERE/one-server.sh"
# An 8x8 grey RGB PNG, written byte by byte.
python3 - "$WORK/images/tiny.png" <<'EOF'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
rows = b"".join(b"\0" + b"\x80" * 24 for _ in range(8))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
EOF
SOURCE_BYTES=$(stat -c %s "$WORK/images/tiny.png")

cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
sign() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$KEY" -binary | basenc --base64url | tr -d =; }

AMPLIFY="width=8192&height=8192&fit=fill&enlarge=true&blur=100&format=png"
GROWN="width=3840&height=2160&fit=contain&blur=100&format=png"
TICK=$(getconf CLK_TCK)

row() { # label, query, signed (1/0), binary, env...
  local label=$1 query=$2 signed=$3 bin=$4; shift 4
  SERVER_BIN=$bin start "$@"
  local target="tiny.png?$query"
  [ "$signed" = 1 ] && target="$target&signature=$(sign "tiny.png?$query")"
  local before after out
  before=$(cpu_ticks)
  out=$(curl -s -o "$WORK/out" -w '%{http_code} %{time_total}' "http://127.0.0.1:$PORT/images/resize/$target")
  after=$(cpu_ticks)
  printf '| %s | `%s` | %s | %.2f s | %.2f s | %s | %d |\n' "$label" "$query" "${out% *}" "${out#* }" \
    "$(awk -v t="$((after - before))" -v hz="$TICK" 'BEGIN {print t / hz}')" "$(hwm)" "$(stat -c %s "$WORK/out")"
  stop
}

report() {
echo "# The amplification URL, before and after the caps for unsigned URLs"
echo
echo "Produced by \`bench/image/amplification.sh --write\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), release build, result caches off, one fresh server per row, one request each. Source: an 8x8 PNG of $SOURCE_BYTES bytes."
echo
echo "Machine load at measurement (\`uptime\`): \`$(uptime | sed 's/^ *//')\`"
echo
echo "| server | query | status | wall time | server CPU | peak RSS (MB) | response bytes |"
echo "|---|---|---:|---:|---:|---:|---:|"
if [ -n "${BEFORE_BIN:-}" ]; then
  row "before the caps (${BEFORE_LABEL:-older build}), unsigned" "$AMPLIFY" 0 "$BEFORE_BIN"
fi
row "signed (URL_SIGNING_KEY): full range" "$AMPLIFY" 1 "$BIN" URL_SIGNING_KEY="$KEY"
row "unsigned, default caps" "$AMPLIFY" 0 "$BIN"
row "unsigned, largest grown output allowed (8 MP)" "$GROWN" 0 "$BIN"
row "unsigned, enlarged 4x (the cap)" "width=32&height=32&fit=fill&enlarge=true&blur=100&format=png" 0 "$BIN"
echo
echo "Load after the rows: \`$(uptime | sed 's/^ *//')\`"
echo
echo "Server CPU is the server process's user + system time over the request (/proc/PID/stat);"
echo "wall time is above it when other work shares the cores (see the load). The security review"
echo "measured 24 s of CPU and 410 MB for the first URL elsewhere. The signed row is the same output"
echo "as before the caps (signed URLs keep the full range), made faster by the blur's column pass,"
echo "which now moves a row at a time instead of striding down each column; its memory is the"
echo "8192x8192 picture and the blur's second buffer. Unsigned, the URL is refused from the PNG"
echo "header, and the largest output the default caps let a tiny source grow to costs a fraction"
echo "of a second."
}

if [ -n "$WRITE" ]; then
  report | tee "$HERE/AMPLIFICATION.md"
else
  report
fi
