//! Fixture repositories built with the real `git` CLI, isolated from the machine's config.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

/// A cancel flag nobody raises.
pub(crate) static NEVER: AtomicBool = AtomicBool::new(false);

/// A scratch folder with its own HOME and a repository at `repo`.
pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
}

impl Fixture {
    /// `git init -b main` in a fresh temp dir.
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let fixture = Fixture { dir, repo };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub(crate) fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(cwd)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home())
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
        cmd
    }

    /// Runs git in the repository and returns stdout; panics on failure.
    pub(crate) fn git_bytes(&self, args: &[&str]) -> Vec<u8> {
        self.git_in(&self.repo, args)
    }

    pub(crate) fn git_in(&self, cwd: &Path, args: &[&str]) -> Vec<u8> {
        let out = self.command(cwd, args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        String::from_utf8(self.git_bytes(args))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// `git diff a...b | git patch-id --stable`, first field.
    pub(crate) fn git_patch_id(&self, diff: &[u8]) -> Option<String> {
        let mut child = self
            .command(&self.repo, &["patch-id", "--stable"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(diff).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_whitespace().next().map(str::to_owned)
    }

    pub(crate) fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let full = self.repo.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    pub(crate) fn remove(&self, path: &str) {
        std::fs::remove_file(self.repo.join(path)).unwrap();
    }

    pub(crate) fn chmod(&self, path: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.repo.join(path), std::fs::Permissions::from_mode(mode))
            .unwrap();
    }

    /// `git add -A && git commit`, returning the new commit's id.
    pub(crate) fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Asserts that our diff and patch id of `base...head` equal git's, byte for byte.
    pub(crate) fn assert_diff_matches(&self, base: &str, head: &str) -> Vec<u8> {
        let range = format!("{base}...{head}");
        let expected = self.git_bytes(&["diff", &range]);
        let repo = git_cache::Repo::open(&self.repo).unwrap();
        let actual = repo
            .diff_bytes(base, head, git_cache::Limits::default(), &NEVER)
            .unwrap();
        pretty_assertions::assert_eq!(
            String::from_utf8_lossy(&actual),
            String::from_utf8_lossy(&expected),
            "diff {range}"
        );
        assert_eq!(actual, expected, "diff {range} (bytes)");
        assert_eq!(
            git_cache::patch_id_bytes(&actual),
            self.git_patch_id(&expected),
            "patch id of {range}"
        );
        actual
    }
}
