# Sourced by burst.sh, amplification.sh and timing.sh after they set PORT: a work folder removed
# on exit, the release build of image-server (BIN; IMAGE_SERVER_BIN names a binary built
# already, and skips the build), and one server at a time on 127.0.0.1:$PORT over
# $WORK/images with the result caches off.
#   start [VAR=value ...]   starts $SERVER_BIN (default $BIN) with those settings, waits for health
#   stop                    stops it
#   hwm                     its peak RSS (VmHWM) so far, in MB
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
WORK="$(mktemp -d)"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

if [ -n "${IMAGE_SERVER_BIN:-}" ]; then
  BIN="$IMAGE_SERVER_BIN"
else
  echo "building image-server (release)..." >&2
  (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && cargo build --release -p image-server) >"$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log"; exit 1; }
  BIN="$CARGO_TARGET_DIR/release/image-server"
fi
mkdir -p "$WORK/images"

start() {
  env STORAGE_URL="file://$WORK/images" CACHE_MAX_BYTES=0 STORAGE_CACHE=false API_KEY=bench \
    DATA_DIR="$WORK/data" LISTEN="127.0.0.1:$PORT" RUST_LOG=error "$@" "${SERVER_BIN:-$BIN}" &
  SERVER=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/admin/health" -o /dev/null && break; sleep 0.1; done
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""; }
hwm() { awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$SERVER/status"; }
