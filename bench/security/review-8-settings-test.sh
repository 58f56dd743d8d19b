#!/usr/bin/env bash
# Finding 8: GET /api/settings/test spends a model call; a cross-site <img src> could trigger
# it. A stand-in model (python, loopback) counts the calls. Before: cross-site GET -> 200 and one
# model call. After: 403 cross_site and no call.
# Usage: BIN=path bench/security/review-8-settings-test.sh
source "$(dirname "$0")/review-http-lib.sh"
MPORT=$(free_port)
python3 - "$MPORT" "$WORK/calls" <<'PY' &
import http.server, sys
port, calls = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        open(calls, "a").write(self.path + "\n")
        body = b'{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}'
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
PIDS+=($!)
: >"$WORK/calls"
wait_port "$MPORT"
t0=$(now)
start_server 127.0.0.1 AGENT_API_KEY=sk-bench ANTHROPIC_BASE_URL="http://127.0.0.1:$MPORT" \
  AGENT_MODEL=anthropic/claude-bench AGENT_STREAM=false
status=$(curl -s -o "$WORK/b" -w '%{http_code}' -H 'Sec-Fetch-Site: cross-site' \
  -H 'Sec-Fetch-Dest: image' "$URL/api/settings/test")
calls=$(wc -l <"$WORK/calls")
row 8 "$([ "$calls" = 0 ] && echo fixed || echo vulnerable)" "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "cross-site GET /api/settings/test -> $status, model calls: $calls"
