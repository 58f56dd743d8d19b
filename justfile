# The everyday commands. `just --list` shows them.

export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", env_var("HOME") + "/.cache/rust-services-target")

# Format every crate.
fmt:
    cargo fmt --all

# Lint as CI does: formatting and clippy with warnings as errors.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Every test (Rust, S3 variant, TypeScript client).
test:
    bash scripts/test.sh

# Benchmarks (release builds); each prints a table and writes it under bench/.
bench:
    bash bench/review/run.sh
    bash bench/git-cache/run.sh
    bash bench/git-cache/bomb.sh
    bash bench/image/run.sh
    bash bench/image/burst.sh

# review-server on SQLite in ./data.
run-review *ARGS:
    cargo run --release -p review-server -- {{ARGS}}

# image-server on ./data/images.
run-image *ARGS:
    cargo run --release -p image-server -- {{ARGS}}
