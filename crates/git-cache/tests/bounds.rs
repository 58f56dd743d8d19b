//! Trees over the limits are refused before any diff or checkout work, and a
//! raised cancel flag stops a diff or a checkout in progress, leaving nothing behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::{Fixture, NEVER};
use git_cache::{GitError, Limits, Repo, TreeSize};

/// A git bomb of 10^`levels` files on top of `main`, at branch `bomb`; its commit id.
fn bomb(f: &Fixture, levels: u32) -> String {
    test_doubles::git_bomb::git_bomb(&f.repo, "main", levels, "bomb").unwrap()
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("README.md", "# fixture\n");
    f.commit("base");
    f
}

#[test]
fn a_git_bomb_is_refused_before_diff_or_checkout() {
    let f = fixture();
    // 10^9 files, about 2 KB of objects.
    let commit = bomb(&f, 9);
    let repo = Repo::open(&f.repo).unwrap();

    let err = repo
        .diff_bytes("main", "bomb", Limits::default(), &NEVER)
        .unwrap_err();
    assert!(
        matches!(
            err,
            GitError::TooLarge {
                what: "entries",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the tree of commit {commit} has more than 1000000 entries; a tree this large is \
             not diffed or checked out"
        )
    );

    let parent = tempfile::tempdir().unwrap();
    let err = repo
        .checkout("bomb", Some(parent.path()), Limits::default(), &NEVER)
        .unwrap_err();
    assert!(matches!(err, GitError::TooLarge { .. }), "{err:?}");
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn tree_size_counts_every_entry_and_byte_as_a_checkout_would() {
    let f = fixture();
    bomb(&f, 3);
    let repo = Repo::open(&f.repo).unwrap();
    // 1000 files of 5 bytes, 100 + 10 directories, README.md (10 bytes) is not in the bomb.
    assert_eq!(
        repo.tree_size("bomb", Limits::default(), &NEVER).unwrap(),
        TreeSize {
            entries: 1110,
            bytes: 5000
        }
    );
    let listed = f.git(&["ls-tree", "-r", "-t", "bomb"]).lines().count() as u64;
    assert_eq!(listed, 1110);
}

#[test]
fn the_byte_limit_refuses_a_tree_of_large_files() {
    let f = fixture();
    f.write("big.bin", vec![7u8; 100_000]);
    f.commit("big");
    let repo = Repo::open(&f.repo).unwrap();
    let limits = Limits {
        max_entries: 1_000_000,
        max_bytes: 50_000,
    };
    let err = repo
        .diff_bytes("HEAD~1", "HEAD", limits, &NEVER)
        .unwrap_err();
    assert!(
        matches!(
            err,
            GitError::TooLarge {
                what: "bytes",
                limit: 50_000,
                ..
            }
        ),
        "{err:?}"
    );
    // The same tree within the limits diffs as git does.
    f.assert_diff_matches("HEAD~1", "HEAD");
}

#[test]
fn a_raised_cancel_flag_stops_the_diff() {
    let f = fixture();
    f.write("a.txt", "a\n");
    f.commit("a");
    let repo = Repo::open(&f.repo).unwrap();
    let cancel = AtomicBool::new(true);
    let err = repo
        .diff_bytes("HEAD~1", "HEAD", Limits::default(), &cancel)
        .unwrap_err();
    assert!(matches!(err, GitError::Interrupted { .. }), "{err:?}");
}

#[test]
fn a_stop_interrupts_a_long_checkout_and_nothing_is_left() {
    let f = fixture();
    // 100 000 files: within the limits, and long to write.
    bomb(&f, 5);
    let repo = Repo::open(&f.repo).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let cancel = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        // Raise the flag once the checkout has started writing files.
        s.spawn(|| {
            loop {
                let started = std::fs::read_dir(parent.path())
                    .unwrap()
                    .flatten()
                    .any(|wt| std::fs::read_dir(wt.path()).is_ok_and(|mut d| d.next().is_some()));
                if started {
                    cancel.store(true, Ordering::Relaxed);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        repo.checkout("bomb", Some(parent.path()), Limits::default(), &cancel)
    });
    let err = result.unwrap_err();
    assert!(
        matches!(&err, GitError::Interrupted { operation } if operation.starts_with("checkout of")),
        "{err:?}"
    );
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}
