#!/usr/bin/env bash
# Finding 11: a skill URL whose ref segment decodes to ../../user/installations. A stand-in
# forge API (python, loopback) logs every path it is asked for. Before: GET /user/installations
# reaches it. After: the URL is refused (422) before any forge call.
# Usage: BIN=path bench/security/review-11-skill-path.sh
source "$(dirname "$0")/review-http-lib.sh"
FPORT=$(free_port)
python3 - "$FPORT" "$WORK/paths" <<'PY' &
import http.server, sys
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        open(log, "a").write(self.path + "\n")
        body = b'{"message":"Not Found"}'
        self.send_response(404); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
PIDS+=($!)
: >"$WORK/paths"
wait_port "$FPORT"
t0=$(now)
start_server 127.0.0.1 FORGE_API_URL="http://127.0.0.1:$FPORT"
status=$(curl -s -o "$WORK/b" -w '%{http_code}' -H 'content-type: application/json' \
  -d '{"url":"https://github.com/acme/pack/tree/..%2F..%2F..%2F..%2Fuser%2Finstallations/skills/x"}' "$URL/api/skills")
if grep -qv "^/repos/acme/pack/" "$WORK/paths"; then verdict=vulnerable; else verdict=fixed; fi
paths=$(tr '\n' ' ' <"$WORK/paths")
row 11 "$verdict" "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "POST /api/skills -> $status; forge saw: ${paths:-nothing}"
