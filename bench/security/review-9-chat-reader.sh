#!/usr/bin/env bash
# Finding 9: A chat question on PostgreSQL run as SQL (the scripted model's QuestionAsSql): (a)
# `SELECT pg_try_advisory_lock(<the inbox promoter's key>)`, then a pull_request delivery: does it
# become a review within 10 s, and is an advisory lock left? (b) `SELECT length(repeat('x',
# 1000000000))`: the answer and the peak RSS of the reader's PostgreSQL backend.
# The scenario is the test security_bench::finding_9_* (apps/review-server/tests/security_bench.rs).
# Usage: BIN=path bench/security/review-9-chat-reader.sh
source "$(dirname "$0")/review-e2e-lib.sh"
with_postgres
run_tests finding_9_
