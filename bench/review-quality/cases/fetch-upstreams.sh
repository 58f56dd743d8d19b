#!/usr/bin/env bash
# Builds the review-quality cases' git bundles (bench/review-quality/cases/bundles/) from the
# upstream repositories named in cases.json, and checks that every case's base and head come out
# at the SHAs pinned in cases.json.
#
# The bundles hold third-party code, so this repository does not carry them: cases.json pins
# what they must contain (upstream repository, fix or feature commit, the synthetic base and
# head SHAs), and make-cases.py rebuilds them byte for byte in content from upstream history.
#
# Usage: bash bench/review-quality/cases/fetch-upstreams.sh [UPSTREAMS_DIR]
#   UPSTREAMS_DIR  where the upstream clones are kept (default: $HOME/.cache/review-eval-upstreams);
#                  a clone already there (named <owner>+<name>) is fetched, not cloned again.
# Needs git, python3 and access to github.com (about 60 MB of clones for the 11 repositories).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
upstreams="${1:-$HOME/.cache/review-eval-upstreams}"
mkdir -p "$upstreams"

repos=$(python3 -c 'import json,sys; print("\n".join(sorted({c["source"]["repository"] for c in json.load(open(sys.argv[1]))})))' "$here/cases.json")
for url in $repos; do
  slug="${url#https://github.com/}"
  dir="$upstreams/${slug/\//+}"
  if [ -d "$dir" ]; then
    echo "fetching $url"
    git -C "$dir" fetch -q --prune origin '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*'
  else
    echo "cloning $url"
    git clone -q --bare "$url" "$dir"
  fi
done

# make-cases.py --write rebuilds the bundles and rewrites the pinned SHAs in cases.json; the
# pinned ones must not change, else the bundles are not the dataset the scores were taken on.
before=$(sha256sum "$here/cases.json")
cp "$here/cases.json" "$here/cases.json.pinned"
trap 'rm -f "$here/cases.json.pinned"' EXIT
python3 "$here/make-cases.py" "$upstreams" --write >/dev/null
if [ "$(sha256sum "$here/cases.json")" != "$before" ]; then
  mv "$here/cases.json.pinned" "$here/cases.json"
  echo "the rebuilt cases differ from the SHAs pinned in cases.json (run make-cases.py \"$upstreams\" to see which)" >&2
  exit 1
fi
echo "built $(ls "$here"/bundles/*.bundle | wc -l) bundles in $here/bundles; every case at its pinned base and head"
