# Sourced by scripts/test.sh and the benchmarks: `start_throwaway_postgres` starts a PostgreSQL
# cluster (Debian's `postgresql` package: 15 on Debian 12; the newest installed version is used)
# on a free loopback port in a temporary folder and exports REVIEW_TEST_DATABASE_URL
# (postgres://postgres:<random password>@127.0.0.1:<port>/postgres); `stop_throwaway_postgres`
# stops it and deletes the folder. initdb refuses to run as root, so root runs it as `postgres`.
# The superuser logs in with a password (scram-sha-256 on 127.0.0.1), as the chat tool's reader
# role does in production. fsync is off: the cluster is thrown away. PG_SETTINGS (e.g.
# "shared_buffers=512MB work_mem=16MB") adds server settings. Returns 1 when PostgreSQL is not
# installed.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
pg_data=""
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
start_throwaway_postgres() {
  [ -x "$pg_bin/initdb" ] || return 1
  pg_data=$(mktemp -d)
  [ "$(id -u)" = 0 ] && chown postgres "$pg_data"
  local port password
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  echo "$password" >"$pg_data/pwfile"
  [ "$(id -u)" = 0 ] && chown postgres "$pg_data/pwfile"
  as_postgres "$pg_bin/initdb" -D "$pg_data/data" -U postgres --pwfile="$pg_data/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$pg_data/initdb.log"
  local opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pg_data -c fsync=off -c max_connections=400"
  local s
  for s in ${PG_SETTINGS:-}; do opts="$opts -c $s"; done
  as_postgres "$pg_bin/pg_ctl" -D "$pg_data/data" -l "$pg_data/server.log" -w -o "$opts" start >/dev/null
  export REVIEW_TEST_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/postgres"
  echo "PostgreSQL: a throwaway cluster on 127.0.0.1:$port" >&2
}
stop_throwaway_postgres() {
  if [ -n "$pg_data" ]; then
    as_postgres "$pg_bin/pg_ctl" -D "$pg_data/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$pg_data"
    pg_data=""
  fi
}
# A new empty database on the throwaway cluster; prints its URL.
fresh_database() {
  local name="bench_$(date +%s%N)"
  python3 - "$REVIEW_TEST_DATABASE_URL" "$name" <<'PY'
import sys, urllib.parse, subprocess
url, name = sys.argv[1], sys.argv[2]
u = urllib.parse.urlparse(url)
subprocess.run(["psql", "-q", "-h", u.hostname, "-p", str(u.port), "-U", u.username, "-d", "postgres",
                "-c", f"CREATE DATABASE {name}"], check=True, env={"PGPASSWORD": u.password, "PATH": "/usr/bin:/bin"})
print(url.rsplit("/", 1)[0] + "/" + name)
PY
}
