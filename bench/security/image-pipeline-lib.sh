# Shared by bench/security/image-{1,3,4,5}-*.sh (issue 26, the image pipeline's cost model):
# start an image-server binary with its default settings (unsigned URLs) on a loopback port
# with a temp image directory, write hostile inputs into it, send one request, and print one
# markdown table row. Source it; not run alone.
# BIN=path picks the binary (default $CARGO_TARGET_DIR/release/image-server).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/image-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mkdir -p "$WORK/images"

# start_server [VAR=value...]: sets URL, SERVER_PID, SERVER_LOG; images live in $WORK/images.
start_server() {
  local port; port=$(free_port); URL="http://127.0.0.1:$port"
  mkdir -p "$WORK/data" "$WORK/images"; SERVER_LOG="$WORK/server.log"
  env -i PATH="$PATH" LISTEN="127.0.0.1:$port" DATA_DIR="$WORK/data" API_KEY=bench-key-0123456789 \
    STORAGE_URL="file://$WORK/images" RUST_LOG=warn "$@" "$BIN" >/dev/null 2>"$SERVER_LOG" &
  SERVER_PID=$!; PIDS+=("$SERVER_PID")
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$URL/admin/health" 2>/dev/null && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

alive() {
  if kill -0 "$SERVER_PID" 2>/dev/null && curl -fsS -m 5 -o /dev/null "$URL/admin/health"; then echo alive
  else echo "DEAD ($(grep -m1 -o 'memory allocation[^"]*' "$SERVER_LOG" || tail -c 120 "$SERVER_LOG" | tr -d '\n|'))"; fi
}

# request FINDING PATH QUERY [curl args...]: GETs the resize URL (120 s at most), then prints
# the row: HTTP status and the start of a JSON error, wall time, the server's CPU seconds
# (cumulative), peak RSS, and whether it still answers. Sets STATUS.
request() {
  local finding=$1 path=$2 query=$3; shift 3
  local t0 cpu0; t0=$(now); cpu0=$(cpu_secs "$SERVER_PID")
  STATUS=$(curl -s -m 120 -o "$WORK/out" -w '%{http_code}' "$@" "$URL/images/resize/$path?$query" || true)
  # A request the client gave up on may still be running: let the server finish its work
  # (up to 120 s) so the CPU and peak memory it took are counted.
  local wall; wall=$(elapsed "$t0")
  local what="$STATUS"
  if [ "$STATUS" != 200 ] && [ -s "$WORK/out" ]; then what="$STATUS $(head -c 90 "$WORK/out" | tr -d '\n|')"; fi
  local cpu1; cpu1=$(cpu_secs "$SERVER_PID")
  local cpu="-"; [ "$cpu1" != "-" ] && cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.2f", b-a}')
  row "$finding" "$what" "$wall" "$cpu" "$(peak_rss "$SERVER_PID")" "$(alive)"
}

# png FILE W H [R G B]: an opaque RGB PNG (rows of one colour, so it compresses at once).
png() {
  python3 - "$@" <<'PY'
import struct, sys, zlib
path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rgb = bytes(int(v) for v in (sys.argv[4:7] or (200, 30, 30)))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
c = zlib.compressobj(1)
raw = bytearray()
row = b"\0" + rgb * w
for y in range(h):
    raw += c.compress(row)
raw += c.flush()
with open(path, "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", bytes(raw)) + chunk(b"IEND", b""))
PY
}

# gif FILE FRAMES SIDE: an animated GIF of FRAMES frames on a SIDE x SIDE screen, each frame an
# 8x8 patch at its own place (the decoder composes every frame onto the whole screen), so the
# file is small and the pipeline works on FRAMES full SIDE x SIDE pictures.
gif() {
  python3 - "$@" <<'PY'
import struct, sys
path, frames, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = bytearray(b"GIF89a" + struct.pack("<HH", side, side) + bytes([0xF0, 0, 0]))
out += bytes([0, 0, 0, 255, 255, 255])  # a 2-colour global table
out += b"\x21\xFF\x0BNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
def lzw(pixels):
    # 3-bit codes, a clear code before every pair of pixels: the table never grows.
    codes = []
    for i in range(0, len(pixels), 2):
        codes += [4] + pixels[i:i + 2]
    codes.append(5)
    acc = nbits = 0
    data = bytearray()
    for c in codes:
        acc |= c << nbits; nbits += 3
        while nbits >= 8:
            data.append(acc & 255); acc >>= 8; nbits -= 8
    if nbits:
        data.append(acc)
    blocks = bytearray([2])
    for i in range(0, len(data), 255):
        part = data[i:i + 255]; blocks += bytes([len(part)]) + part
    return blocks + b"\0"
for n in range(frames):
    x, y = (n * 37) % (side - 8), (n * 53) % (side - 8)
    out += b"\x21\xF9\x04\x04" + struct.pack("<H", 4) + b"\x00\x00"  # 40 ms, do not dispose
    out += b"\x2C" + struct.pack("<HHHH", x, y, 8, 8) + b"\x00"
    out += lzw([(n + i) % 2 for i in range(64)])
out += b"\x3B"
open(path, "wb").write(out)
PY
}
