//! The one error enum of the crate; each message says what failed and where.

use std::path::PathBuf;

/// Everything that can go wrong in git-cache.
///
/// Messages name the operation and its subject (a path, a URL with any credentials removed, a
/// revision), followed by gix's own explanation, e.g. `clone of file:///x failed: ...` or
/// `unknown revision 'abc'`.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The path is not a git repository, or it could not be read.
    #[error("cannot open repository at {path}: {message}")]
    Open {
        /// The path that was opened.
        path: PathBuf,
        /// gix's explanation.
        message: String,
    },
    /// A revision (sha, branch, tag, `HEAD~2`, `refs/pull/7/head`) names no commit.
    #[error("unknown revision '{rev}': {message}")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// gix's explanation.
        message: String,
    },
    /// The two commits share no history, so `base...head` has no meaning.
    #[error("no merge base between '{a}' and '{b}'")]
    NoMergeBase {
        /// The first revision as given.
        a: String,
        /// The second revision as given.
        b: String,
    },
    /// A clone failed; the partly written folder was removed.
    #[error("clone of {url} into {path} failed: {message}")]
    Clone {
        /// The remote URL, without credentials.
        url: String,
        /// The folder the clone was written to.
        path: PathBuf,
        /// gix's explanation.
        message: String,
    },
    /// A fetch into an existing cached clone failed; the clone is left as it was.
    #[error("fetch of {url} into {path} failed: {message}")]
    Fetch {
        /// The remote URL, without credentials.
        url: String,
        /// The cached clone.
        path: PathBuf,
        /// gix's explanation.
        message: String,
    },
    /// The caller's cancel flag was raised during a transfer.
    #[error("{operation} of {url} was cancelled")]
    Cancelled {
        /// `clone` or `fetch`.
        operation: &'static str,
        /// The remote URL, without credentials.
        url: String,
    },
    /// The caller's cancel flag was raised during a diff, a checkout or the measuring of a
    /// tree; nothing is left behind (a partial checkout is removed).
    #[error("{operation} was cancelled")]
    Interrupted {
        /// What was being done, e.g. `checkout of 1f2e...`.
        operation: String,
    },
    /// A tree the review would diff or check out is over a [`crate::Limits`] cap (a git
    /// bomb, say); nothing was diffed or written.
    #[error(
        "the tree of commit {commit} has more than {limit} {what}; a tree this large is not \
         diffed or checked out"
    )]
    TooLarge {
        /// The commit whose tree is too large.
        commit: String,
        /// `entries` or `bytes`.
        what: &'static str,
        /// The cap it is over.
        limit: u64,
    },
    /// Reading objects or computing a diff, merge base or log failed.
    #[error("{operation} failed in {path}: {message}")]
    Object {
        /// What was being done, e.g. `diff main...feature`.
        operation: String,
        /// The repository.
        path: PathBuf,
        /// gix's explanation.
        message: String,
    },
    /// Checking a commit out into a temporary directory failed; nothing is left behind.
    #[error("checkout of {commit} failed: {message}")]
    Checkout {
        /// The commit id or revision.
        commit: String,
        /// gix's or the file system's explanation.
        message: String,
    },
    /// A file-system operation of the cache itself failed.
    #[error("{operation} {path} failed: {source}")]
    Io {
        /// What was being done, e.g. `create directory`.
        operation: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Renders an error with its whole `source()` chain, skipping repeated messages.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}
