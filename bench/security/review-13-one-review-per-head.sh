#!/usr/bin/env bash
# Finding 13: opened and reopened (two delivery ids) for one head: how many reviews the fake
# forge got and what the rows say; then 10 PRs delivered to two replicas on PostgreSQL (a throwaway
# cluster unless REVIEW_TEST_DATABASE_URL is set).
# The scenario is the test security_bench::finding_13_* (apps/review-server/tests/security_bench.rs).
# Usage: BIN=path bench/security/review-13-one-review-per-head.sh
source "$(dirname "$0")/review-e2e-lib.sh"
with_postgres
run_tests finding_13_
