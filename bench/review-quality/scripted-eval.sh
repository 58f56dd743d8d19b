#!/usr/bin/env bash
# `review-server eval` end to end with the scripted model as reviewer, verifier and judge
# (docs/review-service.md, "Measuring the reviewer"), on the scripted cases of the test suite
# and on the committed dataset (bench/review-quality/cases; build its bundles first with
# bench/review-quality/cases/fetch-upstreams.sh). The scripted model flags added lines
# with unwrap() or TODO and matches by quoted words, so these numbers measure the machinery
# (cases replayed, tokens, time), not a model's quality: score a real model with the commands in
# README.md. A debug build, like the test suite: wall times are the machinery's, not a release server's.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
cargo test -q -p review-server --test quality_bench -- --ignored --nocapture \
  --test-threads=1 scripted_eval_of_the_committed_cases 2>/dev/null | grep -v '^running\|^test \|test result'
