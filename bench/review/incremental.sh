#!/usr/bin/env bash
# What incremental review saves (docs/review-service.md, "Incremental review"): a pull request
# pushed five times (each push appends ~60 small functions to src/lib.rs), every push reviewed from the
# last reviewed head and, for comparison, as a whole diff (`/review full`), against the fake
# forge and the scripted model. The scripted model counts a request's input tokens as its JSON
# size / 4 and answers each call with 25 output tokens, so the numbers scale with what the
# model is sent, as a provider's would.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
cargo test -q -p review-server --test memory_bench -- --ignored --nocapture --test-threads=1 \
  incremental_review_tokens_per_push 2>/dev/null | grep '^|'
