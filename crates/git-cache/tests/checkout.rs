//! `Repo::checkout`: files equal to `git archive`, and the directory never outlives its guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use common::{Fixture, NEVER};
use git_cache::Limits;

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File { data: Vec<u8>, executable: bool },
    Link(std::path::PathBuf),
}

/// Every file below `root` (relative path -> contents, executable bit, or symlink target).
fn snapshot(root: &Path) -> BTreeMap<String, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    rel,
                    Entry::File {
                        data: std::fs::read(&path).unwrap(),
                        executable: meta.permissions().mode() & 0o111 != 0,
                    },
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn fixture() -> (Fixture, String) {
    let f = Fixture::new();
    f.write("README.md", "# readme\n");
    f.write("src/main.rs", "fn main() {}\n");
    f.write("src/deep/nested/data.bin", b"\x00\x01\x02\xff");
    f.write("bin/run.sh", "#!/bin/sh\necho run\n");
    f.chmod("bin/run.sh", 0o755);
    f.write("ü/ä b.txt", "unicode\n");
    f.write("empty", "");
    std::os::unix::fs::symlink("README.md", f.repo.join("link")).unwrap();
    let commit = f.commit("tree");
    (f, commit)
}

fn git_archive(f: &Fixture, commit: &str, into: &Path) {
    let archive = f.git_bytes(&["archive", "--format=tar", commit]);
    let mut tar = std::process::Command::new("tar")
        .args(["-x", "-C"])
        .arg(into)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        tar.stdin.take().unwrap().write_all(&archive).unwrap();
    }
    assert!(tar.wait().unwrap().success());
}

#[test]
fn checkout_has_the_same_files_and_modes_as_git_archive() {
    let (f, commit) = fixture();
    let expected_dir = tempfile::tempdir().unwrap();
    git_archive(&f, &commit, expected_dir.path());

    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let wt = repo
        .checkout("main", None, Limits::default(), &NEVER)
        .unwrap();
    assert_eq!(wt.commit(), commit);
    pretty_assertions::assert_eq!(snapshot(wt.path()), snapshot(expected_dir.path()));
    assert!(!wt.path().join(".git").exists());
}

#[test]
fn checkout_from_a_bare_clone_works_under_the_given_parent() {
    let (f, commit) = fixture();
    let bare = f.dir.path().join("bare.git");
    f.git(&[
        "clone",
        "-q",
        "--bare",
        f.repo.to_str().unwrap(),
        bare.to_str().unwrap(),
    ]);
    let parent = tempfile::tempdir().unwrap();
    let repo = git_cache::Repo::open(&bare).unwrap();
    let wt = repo
        .checkout(&commit, Some(parent.path()), Limits::default(), &NEVER)
        .unwrap();
    assert_eq!(wt.path().parent().unwrap(), parent.path());
    assert_eq!(
        std::fs::read_to_string(wt.path().join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[test]
fn worktree_directory_is_removed_on_drop() {
    let (f, _) = fixture();
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let wt = repo
        .checkout("HEAD", None, Limits::default(), &NEVER)
        .unwrap();
    let path = wt.path().to_owned();
    assert!(path.join("README.md").exists());
    drop(wt);
    assert!(!path.exists());
}

#[test]
fn worktree_is_removed_when_a_later_step_fails_or_panics() {
    let (f, _) = fixture();
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let parent = tempfile::tempdir().unwrap();

    let review = || -> Result<(), git_cache::GitError> {
        let wt = repo.checkout("HEAD", Some(parent.path()), Limits::default(), &NEVER)?;
        assert!(wt.path().exists());
        repo.diff_bytes("HEAD", "no-such-revision", Limits::default(), &NEVER)?; // fails, `?` drops the worktree
        Ok(())
    };
    assert!(review().is_err());
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);

    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _wt = repo
            .checkout("HEAD", Some(parent.path()), Limits::default(), &NEVER)
            .unwrap();
        panic!("agent crashed");
    }));
    assert!(panicked.is_err());
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn failed_checkout_leaves_nothing_behind() {
    let (f, _) = fixture();
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let err = repo
        .checkout(
            "does-not-exist",
            Some(parent.path()),
            Limits::default(),
            &NEVER,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown revision 'does-not-exist'"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn worktree_and_repo_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<git_cache::Worktree>();
    assert_send_sync::<git_cache::Repo>();
    assert_send_sync::<git_cache::GitCache>();
    assert_send_sync::<git_cache::GitError>();
}
