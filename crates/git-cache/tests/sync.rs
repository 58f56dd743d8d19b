//! `GitCache::sync`: clone once, fetch afterwards, one lock per repository.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use common::Fixture;
use git_cache::{GitCache, Limits, Repo, RepoKey};
use secrecy::SecretString;

fn key() -> RepoKey {
    RepoKey {
        host: "github.com".into(),
        owner: "acme".into(),
        name: "widgets".into(),
    }
}

fn upstream() -> (Fixture, String) {
    let f = Fixture::new();
    f.write("README.md", "hello\n");
    let first = f.commit("first");
    (f, first)
}

fn url(f: &Fixture) -> String {
    format!("file://{}", f.repo.display())
}

#[test]
fn first_sync_clones_bare_and_later_syncs_fetch_new_commits_and_pull_refs() {
    let (up, first) = upstream();
    let root = tempfile::tempdir().unwrap();
    let cache = GitCache::new(root.path());
    let never = AtomicBool::new(false);

    let synced = cache.sync(&key(), &url(&up), &[], None, &never).unwrap();
    assert!(synced.cloned);
    assert_eq!(synced.path, root.path().join("github.com/acme/widgets.git"));
    assert!(synced.path.join("HEAD").is_file());
    assert!(
        !synced.path.join(".git").exists(),
        "a bare clone has no .git folder"
    );
    let repo = Repo::open(&synced.path).unwrap();
    assert_eq!(repo.resolve("main").unwrap(), first);

    // Upstream moves on and gets a pull-request ref.
    up.write("README.md", "hello again\n");
    let second = up.commit("second");
    up.git(&["checkout", "-q", "-b", "pr"]);
    up.write("pr.txt", "pr\n");
    let pr_head = up.commit("pr work");
    up.git(&["checkout", "-q", "main"]);
    up.git(&["update-ref", "refs/pull/1/head", &pr_head]);

    let refspecs = vec![
        "+refs/pull/1/head:refs/pull/1/head".to_owned(),
        "+refs/heads/main:refs/heads/main".to_owned(),
    ];
    let again = cache
        .sync(&key(), &url(&up), &refspecs, None, &never)
        .unwrap();
    assert!(!again.cloned);
    assert_eq!(again.path, synced.path);
    let repo = Repo::open(&again.path).unwrap();
    assert_eq!(repo.resolve("main").unwrap(), second);
    assert_eq!(repo.resolve("refs/pull/1/head").unwrap(), pr_head);
    assert_eq!(repo.resolve(&second).unwrap(), second);
    // And the PR's diff is available from the cache.
    let diff = repo
        .diff_bytes("main", "refs/pull/1/head", Limits::default(), &never)
        .unwrap();
    let diff = git_cache::diff_text(&diff);
    assert!(diff.contains("+++ b/pr.txt"), "{diff}");
}

#[test]
fn clone_can_fetch_pull_refs_right_away() {
    let (up, first) = upstream();
    up.git(&["update-ref", "refs/pull/9/head", &first]);
    let root = tempfile::tempdir().unwrap();
    let cache = GitCache::new(root.path());
    let synced = cache
        .sync(
            &key(),
            &url(&up),
            &["+refs/pull/9/head:refs/pull/9/head".to_owned()],
            None,
            &AtomicBool::new(false),
        )
        .unwrap();
    assert!(synced.cloned);
    let repo = Repo::open(&synced.path).unwrap();
    assert_eq!(repo.resolve("refs/pull/9/head").unwrap(), first);
    assert_eq!(repo.resolve("main").unwrap(), first);
}

#[test]
fn clone_of_a_missing_url_fails_and_leaves_no_folder() {
    let root = tempfile::tempdir().unwrap();
    let cache = GitCache::new(root.path());
    let missing = root.path().join("nope/missing.git");
    let err = cache
        .sync(
            &key(),
            &format!("file://{}", missing.display()),
            &[],
            None,
            &AtomicBool::new(false),
        )
        .unwrap_err();
    assert!(err.to_string().starts_with("clone of file://"), "{err}");
    assert!(!cache.repo_path(&key()).exists());
    let owner_dir = root.path().join("github.com/acme");
    let leftovers: Vec<_> = std::fs::read_dir(&owner_dir).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn concurrent_syncs_of_one_repository_all_succeed() {
    let (up, first) = upstream();
    let root = tempfile::tempdir().unwrap();
    let cache = Arc::new(GitCache::new(root.path()));
    let url = url(&up);
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let cache = cache.clone();
            let url = url.clone();
            std::thread::spawn(move || {
                cache
                    .sync(&key(), &url, &[], None, &AtomicBool::new(false))
                    .unwrap()
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|s| s.cloned).count(), 1);
    let repo = Repo::open(&results[0].path).unwrap();
    assert_eq!(repo.resolve("main").unwrap(), first);
}

#[test]
fn token_is_never_written_to_the_clone() {
    let (up, _) = upstream();
    let root = tempfile::tempdir().unwrap();
    let cache = GitCache::new(root.path());
    let token = SecretString::from("ghs_supersecrettoken".to_owned());
    let synced = cache
        .sync(
            &key(),
            &url(&up),
            &[],
            Some(&token),
            &AtomicBool::new(false),
        )
        .unwrap();
    let config = std::fs::read_to_string(synced.path.join("config")).unwrap();
    assert!(!config.contains("ghs_supersecrettoken"), "{config}");
    assert!(config.contains(&url(&up)), "{config}");
}

#[test]
fn a_raised_cancel_flag_aborts_the_clone_without_leftovers() {
    let (up, _) = upstream();
    let root = tempfile::tempdir().unwrap();
    let cache = GitCache::new(root.path());
    let err = cache
        .sync(&key(), &url(&up), &[], None, &AtomicBool::new(true))
        .unwrap_err();
    assert!(
        matches!(err, git_cache::GitError::Cancelled { .. }),
        "{err}"
    );
    assert!(!cache.repo_path(&key()).exists());
}
