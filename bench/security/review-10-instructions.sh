#!/usr/bin/env bash
# Finding 10: (a) A PR that rewrites REVIEW.md and adds `* -diff` to .gitattributes: which
# REVIEW.md reached the model's system prompt, whether it saw the hunks. (b) The model sends
# APPROVE on a PR this App never asked to change: the event posted.
# The scenario is the test security_bench::finding_10_* (apps/review-server/tests/security_bench.rs).
# Usage: BIN=path bench/security/review-10-instructions.sh
source "$(dirname "$0")/review-e2e-lib.sh"
run_tests finding_10_
