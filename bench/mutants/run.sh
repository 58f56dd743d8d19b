#!/usr/bin/env bash
# cargo mutants over the code whose rules are easiest to get subtly wrong: review-domain (rows,
# filters, the model and focus cascades, skill parsing), forge's webhook signature and payload
# types, and image-pipeline's query parser. Each mutant is one small change to the source (an
# operator flipped, a function body replaced by a default); a test must fail for each. Prints a
# table per target and writes bench/mutants/RESULTS.md; the missed mutants are listed with it.
# Needs cargo-mutants (`cargo install cargo-mutants --locked`). Runs in place on a scratch copy
# of the repository (git worktree) so the working tree is never left mutated.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export CARGO_TARGET_DIR="${MUTANTS_TARGET_DIR:-$HOME/.cache/rust-services-mutants}"
WORK="$(mktemp -d)"
trap 'git -C "$ROOT" worktree remove --force "$WORK/tree" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
git -C "$ROOT" worktree add --detach "$WORK/tree" HEAD >/dev/null
# Uncommitted changes count too.
(cd "$ROOT" && git diff HEAD) | (cd "$WORK/tree" && git apply --allow-empty)
cd "$WORK/tree"

run() {
  local name="$1"; shift
  cargo mutants --in-place --no-shuffle -o "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 || true
  local out="$WORK/$name/mutants.out"
  local caught missed unviable timeout
  caught=$(wc -l <"$out/caught.txt"); missed=$(wc -l <"$out/missed.txt")
  unviable=$(wc -l <"$out/unviable.txt"); timeout=$(wc -l <"$out/timeout.txt")
  echo "| $name | $((caught + missed + unviable + timeout)) | $caught | $missed | $timeout | $unviable |"
  sed "s/^/    $name: /" "$out/missed.txt" >>"$WORK/missed"
}

touch "$WORK/missed"
{
  echo "# cargo mutants"
  echo
  echo "Produced by \`bench/mutants/run.sh\` on $(date -u +%Y-%m-%d) at $(git -C "$ROOT" rev-parse --short HEAD), cargo-mutants $(cargo mutants --version | cut -d' ' -f2)."
  echo
  echo "| target | mutants | caught | missed | timeout | unviable |"
  echo "|---|---:|---:|---:|---:|---:|"
  run review-domain -p review-domain
  run forge-signature-webhook -p forge -f crates/forge/src/signature.rs -f crates/forge/src/webhook.rs
  run image-pipeline-query -p image-pipeline -f crates/image-pipeline/src/spec.rs -- --lib
  echo
  echo "Missed mutants (each must be killed by a test or explained in bench/mutants/MISSED.md):"
  echo
  if [ -s "$WORK/missed" ]; then cat "$WORK/missed"; else echo "    none"; fi
} | tee "$ROOT/bench/mutants/RESULTS.md"
