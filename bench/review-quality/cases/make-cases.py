#!/usr/bin/env python3
"""Build the review-quality cases' git bundles and base/head SHAs from upstream clones.

Usage:
    python3 make-cases.py MIRRORS [--write] [--only REPO_NAME ...]

MIRRORS holds one full upstream clone per repository, found as the first of
    MIRRORS/<owner>+<name>/repo, MIRRORS/<owner>+<name>, MIRRORS/<name>
that exists (bare or not; only its objects are read, nothing is written to it).

cases.json (next to this script) is the specification: for every case the script reads
`kind`, `pr_title` and `source.repository`/`source.commit`, builds the synthetic commits
and compares the result with `repo`, `base` and `head`. Without --write it only reports
differences (exit 1 if any); with --write it rewrites those three fields and the bundles.

Bug case, fix commit F with parent P:
    base = tree(F) with the files F changed under test paths and changelog/doc paths put
           back to their P version (removed if F added them), as a root commit;
    head = base's tree with the other (source) files F changed put back to their P version,
           as base's only child.
  So `git diff base head` is the reverse of the source part of the fix.
Clean case, commit C with parent P:
    base = tree(P), as a root commit;
    head = base's tree with the source files C changed set to their C version (C's test and
           changelog/doc changes are left out, as for a bug case), as base's only child.

Every commit has author and committer `eval-cases <eval-cases@example.invalid>`, date
2026-01-01T00:00:00Z and message = pr_title, so rerunning gives the same SHAs. The commits of
all cases of one upstream repository go into one bundle, bundles/<name>.bundle, with refs
refs/heads/<id>-base and refs/heads/<id>-head, built from a repository that holds only them.
Standard library only.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases.json")

ENV = {
    "GIT_AUTHOR_NAME": "eval-cases",
    "GIT_AUTHOR_EMAIL": "eval-cases@example.invalid",
    "GIT_COMMITTER_NAME": "eval-cases",
    "GIT_COMMITTER_EMAIL": "eval-cases@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

# Test files: kept at the parent's version in a bug case's base (the regression test would
# give the bug away) and left out of a clean case's head.
TEST_RE = re.compile(
    r"(^|/)(tests?|testing|testdata|test_data|spec|specs|__tests__|fixtures)/"
    r"|(^|/)src/test/"
    r"|_test\.go$"
    r"|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"
    r"|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|(^|/)test\.[cm]?[jt]sx?$"
    r"|(^|/)[^/]*Test\.java$"
    r"|(^|/)benches/"
)
# Changelog and documentation files: treated like tests.
DOC_RE = re.compile(
    r"(^|/)(CHANGELOG|CHANGES|NEWS|HISTORY|RELEASE[-_]?NOTES)[^/]*$"
    r"|(^|/)(docs?|changelog\.d|newsfragments)/"
    r"|\.(md|rst|txt|adoc)$",
    re.IGNORECASE,
)


def is_test_or_doc(path):
    return bool(TEST_RE.search(path) or DOC_RE.search(path))


def git(repo, *args, env=None, input=None):
    e = dict(os.environ)
    e.update(ENV)
    if env:
        e.update(env)
    r = subprocess.run(["git", "-C", repo] + list(args), env=e, input=input,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("git %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def find_mirror(mirrors, repository):
    owner, name = repository.rstrip("/").split("/")[-2:]
    for cand in (os.path.join(mirrors, owner + "+" + name, "repo"),
                 os.path.join(mirrors, owner + "+" + name),
                 os.path.join(mirrors, name)):
        if os.path.isdir(cand):
            return cand
    raise SystemExit("no clone of %s under %s" % (repository, mirrors))


def objects_dir(clone):
    out = git(clone, "rev-parse", "--git-common-dir").strip()
    if not os.path.isabs(out):
        out = os.path.join(clone, out)
    return os.path.join(out, "objects")


def changed_files(scratch, parent, commit):
    """[(path, old_mode, old_blob, new_mode, new_blob)] of commit against parent, no renames."""
    out = git(scratch, "diff-tree", "-r", "--no-renames", "-z", parent, commit)
    parts = out.split("\0")
    res = []
    i = 0
    while i < len(parts) - 1:
        meta, path = parts[i], parts[i + 1]
        i += 2
        m = meta.lstrip(":").split()
        res.append((path, m[0], m[2], m[1], m[3]))
    return res


def set_files(scratch, index, entries):
    """entries: [(path, mode, blob)]; mode '000000' removes the path."""
    if not entries:
        return
    lines = []
    for path, mode, blob in entries:
        if mode == "000000":
            lines.append("0 %s\t%s" % ("0" * 40, path))
        else:
            lines.append("%s %s\t%s" % (mode, blob, path))
    git(scratch, "update-index", "--index-info", env={"GIT_INDEX_FILE": index},
        input="\n".join(lines) + "\n")


def build_case(scratch, case):
    commit = case["source"]["commit"]
    parents = git(scratch, "rev-list", "--parents", "-n", "1", commit).split()[1:]
    if len(parents) != 1:
        raise SystemExit("%s: %s is not a single-parent commit" % (case["id"], commit))
    parent = parents[0]
    changes = changed_files(scratch, parent, commit)
    tests = [c for c in changes if is_test_or_doc(c[0])]
    source = [c for c in changes if not is_test_or_doc(c[0])]
    if not source:
        raise SystemExit("%s: %s changes no source file" % (case["id"], commit))
    index = os.path.join(scratch, "case-index")
    if os.path.exists(index):
        os.remove(index)
    ienv = {"GIT_INDEX_FILE": index}
    title = case["pr_title"]
    if case["kind"] == "bug":
        git(scratch, "read-tree", commit, env=ienv)
        set_files(scratch, index, [(p, om, ob) for p, om, ob, nm, nb in tests])
        base_tree = git(scratch, "write-tree", env=ienv).strip()
        set_files(scratch, index, [(p, om, ob) for p, om, ob, nm, nb in source])
        head_tree = git(scratch, "write-tree", env=ienv).strip()
    elif case["kind"] == "clean":
        git(scratch, "read-tree", parent, env=ienv)
        base_tree = git(scratch, "write-tree", env=ienv).strip()
        set_files(scratch, index, [(p, nm, nb) for p, om, ob, nm, nb in source])
        head_tree = git(scratch, "write-tree", env=ienv).strip()
    else:
        raise SystemExit("%s: unknown kind %r" % (case["id"], case["kind"]))
    os.remove(index)
    base = git(scratch, "commit-tree", base_tree, "-m", title).strip()
    head = git(scratch, "commit-tree", head_tree, "-p", base, "-m", title).strip()
    # The review diff must touch exactly the source files of the upstream commit.
    touched = git(scratch, "diff", "--name-only", base, head).split()
    if sorted(touched) != sorted(c[0] for c in source):
        raise SystemExit("%s: diff touches %s, expected %s" % (case["id"], touched,
                                                              [c[0] for c in source]))
    if any(is_test_or_doc(p) for p in touched):
        raise SystemExit("%s: diff touches a test or doc file" % case["id"])
    # ... and be the reverse of the fix's source hunks (bug) or the commit's source hunks (clean).
    paths = [c[0] for c in source]
    if case["kind"] == "bug":
        upstream = git(scratch, "diff", commit, parent, "--", *paths)
    else:
        upstream = git(scratch, "diff", parent, commit, "--", *paths)
    if not upstream or git(scratch, "diff", base, head) != upstream:
        raise SystemExit("%s: review diff differs from the upstream source hunks" % case["id"])
    return base, head


def check_bundle(bundle, group):
    """Clone the bundle as a user would and resolve every case's base and head in it."""
    tmp = tempfile.mkdtemp(prefix="check-bundle-")
    try:
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "-c", "init.defaultBranch=main", "clone", "-q", "--bare", bundle, clone], check=True)
        for case in group:
            base = git(clone, "rev-parse", "--verify", case["base"] + "^{commit}").strip()
            parents = git(clone, "rev-list", "--parents", "-n", "1", case["head"]).split()
            if parents[1:] != [base]:
                raise SystemExit("%s: head's parent is not base in %s" % (case["id"], bundle))
            if not git(clone, "diff", base + "..." + case["head"]).strip():
                raise SystemExit("%s: empty review diff in %s" % (case["id"], bundle))
        count = len(git(clone, "rev-list", "--all").split())
        if count != 2 * len(group):
            raise SystemExit("%s holds %d commits, expected %d" % (bundle, count, 2 * len(group)))
    finally:
        shutil.rmtree(tmp)


def main():
    args = sys.argv[1:]
    write = "--write" in args
    only = []
    if "--only" in args:
        only = args[args.index("--only") + 1:]
        args = args[:args.index("--only")]
    args = [a for a in args if a != "--write"]
    if len(args) != 1:
        sys.exit(__doc__)
    mirrors = os.path.abspath(args[0])
    with open(CASES) as f:
        cases = json.load(f)
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        sys.exit("duplicate case ids")
    groups = {}
    for c in cases:
        if not re.fullmatch(r"[a-z0-9-]+", c["id"]):
            sys.exit("bad id %r" % c["id"])
        groups.setdefault(c["source"]["repository"], []).append(c)
    os.makedirs(os.path.join(HERE, "bundles"), exist_ok=True)
    differences = 0
    for repository, group in groups.items():
        name = repository.rstrip("/").split("/")[-1]
        if only and name not in only:
            continue
        mirror = find_mirror(mirrors, repository)
        tmp = tempfile.mkdtemp(prefix="make-cases-")
        try:
            scratch = os.path.join(tmp, "scratch")
            final = os.path.join(tmp, "final")
            subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", "--bare", scratch], check=True)
            subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", "--bare", final], check=True)
            with open(os.path.join(scratch, "objects", "info", "alternates"), "w") as f:
                f.write(objects_dir(mirror) + "\n")
            bundle_rel = "bundles/%s.bundle" % name
            for case in group:
                base, head = build_case(scratch, case)
                git(scratch, "update-ref", "refs/heads/%s-base" % case["id"], base)
                git(scratch, "update-ref", "refs/heads/%s-head" % case["id"], head)
                for field, value in (("repo", bundle_rel), ("base", base), ("head", head)):
                    if case.get(field) != value:
                        differences += 1
                        print("%s: %s is %r, built %r" % (case["id"], field, case.get(field), value))
                        case[field] = value
                stat = git(scratch, "diff", "--shortstat", base, head).strip()
                print("%-28s %s %s  %s" % (case["id"], base[:10], head[:10], stat))
            # Only the synthetic commits, none of upstream's history, go into the bundle.
            git(final, "fetch", "-q", scratch, "refs/heads/*:refs/heads/*")
            bundle = os.path.join(HERE, bundle_rel)
            if write:
                if os.path.exists(bundle):
                    os.remove(bundle)
                git(final, "bundle", "create", bundle, "--all")
                git(final, "bundle", "verify", bundle)
                check_bundle(bundle, group)
            elif os.path.exists(bundle):
                heads = git(final, "bundle", "list-heads", bundle)
                want = git(final, "for-each-ref", "--format=%(objectname) %(refname)")
                if sorted(heads.split("\n")) != sorted(want.split("\n")):
                    differences += 1
                    print("%s: refs differ from the built ones" % bundle_rel)
                else:
                    check_bundle(bundle, group)
            else:
                differences += 1
                print("%s: missing" % bundle_rel)
        finally:
            shutil.rmtree(tmp)
    if write:
        with open(CASES, "w") as f:
            json.dump(cases, f, indent=2, ensure_ascii=False)
            f.write("\n")
    elif differences:
        print("%d difference(s); rerun with --write to update" % differences)
        sys.exit(1)
    else:
        print("all cases match")


if __name__ == "__main__":
    main()
