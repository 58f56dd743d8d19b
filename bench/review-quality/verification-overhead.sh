#!/usr/bin/env bash
# What verification before posting costs, in tokens per candidate finding, with the scripted
# model (docs/review-service.md, "Verification before posting"): the same review of the test
# repository's PR with 3 to 32 candidate findings, once with review_verify=false and once with
# it on. The scripted model counts a request's input tokens as its JSON size / 4, as a provider
# would roughly, so the numbers scale like a real model's; they are not a real model's.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
cargo test -q -p review-server --test quality_bench -- --ignored --nocapture --test-threads=1 \
  verification_overhead_in_tokens_per_candidate 2>/dev/null | grep '^|'
