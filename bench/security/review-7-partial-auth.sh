#!/usr/bin/env bash
# Finding 7: AUTH_SECRET without the OAuth client id and secret. Before: the gate is silently
# off and GET /api/settings gives the stored key to any client. After: the process refuses to
# start naming the missing variables; and without the gate a 0.0.0.0 LISTEN refuses /api.
# Usage: BIN=path bench/security/review-7-partial-auth.sh (only 127.0.0.1 is contacted).
source "$(dirname "$0")/review-http-lib.sh"
t0=$(now)
if start_server 127.0.0.1 AUTH_SECRET=only-the-secret; then
  curl -s -o /dev/null -X PUT -H 'content-type: application/json' \
    -d '{"agent_api_key":"sk-stolen-canary"}' "$URL/api/settings"
  body=$(curl -s "$URL/api/settings")
  cpu=$(cpu_secs "$SERVER_PID"); rss=$(peak_rss "$SERVER_PID")
  if grep -q sk-stolen-canary <<<"$body"; then
    row 7 vulnerable "$(elapsed "$t0")" "$cpu" "$rss" "partial config started; GET /api/settings served the stored key"
  else
    row 7 fixed "$(elapsed "$t0")" "$cpu" "$rss" "partial config started but the key was not served: $(head -c 80 <<<"$body")"
  fi
else
  wait "$SERVER_PID" && code=0 || code=$?
  msg=$(grep -o 'incomplete sign-in configuration[^;]*' "$SERVER_LOG" | head -1)
  row 7 fixed "$(elapsed "$t0")" "-" "-" "refused to start (exit $code): ${msg:-$(tail -1 "$SERVER_LOG")}"
fi
t0=$(now)
start_server 0.0.0.0 || { row 7b error - - - "server on 0.0.0.0 did not start"; exit 0; }
status=$(curl -s -o "$WORK/b" -w '%{http_code}' "$URL/api/settings")
row 7b "$([ "$status" = 403 ] && echo fixed || echo open)" "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "no gate, LISTEN 0.0.0.0: GET /api/settings -> $status $(head -c 60 "$WORK/b" | tr -d '\n|')"
