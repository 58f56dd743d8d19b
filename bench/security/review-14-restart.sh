#!/usr/bin/env bash
# Finding 14: kill -9 during a running review, restart on the same DATA_DIR: how long until the
# interrupted row leaves `running` (at most 45 s watched), its error, and what became of rows with
# no queue row.
# The scenario is the test security_bench::finding_14_* (apps/review-server/tests/security_bench.rs).
# Usage: BIN=path bench/security/review-14-restart.sh
source "$(dirname "$0")/review-e2e-lib.sh"
run_tests finding_14_
