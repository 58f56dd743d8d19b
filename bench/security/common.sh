# Shared by every script in bench/security: a temp folder and the processes to stop on exit,
# a free loopback port, the clock, a process's CPU seconds and peak RSS, and the table row every
# script prints. Source it after setting BIN (the binary under test); not run alone.
set -euo pipefail
[ -x "$BIN" ] || { echo "no binary at $BIN (set BIN=path)" >&2; exit 2; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

# free_port: a free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
# elapsed START: seconds since START (a `now` value), one decimal.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b-a}'; }
# cpu_secs PID: user + system CPU seconds of a live process.
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo "-"; }
# peak_rss PID: VmHWM in MB.
peak_rss() { awk '/VmHWM/ {printf "%.0f MB", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "-"; }
# row FINDING STATUS WALL_SECS CPU RSS OUTCOME: one markdown table row.
row() { printf '| %s | %s | %s s | %s | %s | %s |\n' "$@"; }
