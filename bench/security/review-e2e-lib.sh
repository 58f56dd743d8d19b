# Shared by bench/security/review-{9,10,13,14,15}-*.sh: runs tests of
# apps/review-server/tests/security_bench.rs (the end-to-end harness: the fake forge, the
# scripted model, real git repositories) against the binary BIN (default
# $CARGO_TARGET_DIR/release/review-server) and prints the markdown rows they print. The test
# binary is a debug build; only the server under test is BIN. Source it; not run alone.
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/review-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BIN=$(realpath "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# with_postgres: a throwaway PostgreSQL cluster (scripts/postgres.sh) unless
# REVIEW_TEST_DATABASE_URL already names one; stopped on exit. Without PostgreSQL installed the
# PostgreSQL cases print a row saying they did not run.
with_postgres() {
  [ -n "${REVIEW_TEST_DATABASE_URL:-}" ] && return 0
  source "$ROOT/scripts/postgres.sh"
  if start_throwaway_postgres; then
    trap 'stop_throwaway_postgres; cleanup' EXIT
  else
    echo "PostgreSQL is not installed: the PostgreSQL cases will say so" >&2
  fi
}

# run_tests FILTER: the ignored tests of security_bench whose names contain FILTER, one at a
# time; prints their rows, or the end of cargo's output when they fail.
run_tests() {
  local log="$WORK/cargo-test.log"
  if ! (cd "$ROOT" && REVIEW_SERVER_BIN="$BIN" cargo test -p review-server --test security_bench \
      -- --ignored --nocapture --test-threads=1 "$1") >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    return 1
  fi
  # A row follows the test's name on its "test ... " line, or stands on its own line.
  sed -n 's/^test [a-z0-9_]* \.\.\. //; /^| /p' "$log"
}
