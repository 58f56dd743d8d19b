#!/usr/bin/env bash
# Finding 15: no API key for the model's provider, RETRY_DELAY_SECS=1: the row's status and
# error, and whether a retry and a "retry failed" comment followed within 6 s.
# The scenario is the test security_bench::finding_15_* (apps/review-server/tests/security_bench.rs).
# Usage: BIN=path bench/security/review-15-no-retry.sh
source "$(dirname "$0")/review-e2e-lib.sh"
run_tests finding_15_
