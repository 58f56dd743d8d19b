//! Checkouts of a commit's tree into temporary directories that never outlive their guard.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use gix::ObjectId;

use crate::GitError;
use crate::error::chain;

/// A commit's tree checked out into a temporary directory (see [`crate::Repo::checkout`]).
///
/// The directory and everything in it is removed when this value drops: at the end of a
/// review, on an early `?` return, or while unwinding from a panic. `Send + Sync`.
#[derive(Debug)]
pub struct Worktree {
    dir: tempfile::TempDir,
    commit: String,
}

impl Worktree {
    /// The root of the checkout.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The 40-hex id of the checked-out commit.
    pub fn commit(&self) -> &str {
        &self.commit
    }
}

pub(crate) fn checkout(
    repo: &gix::Repository,
    commit: ObjectId,
    parent: Option<&Path>,
    cancel: &AtomicBool,
) -> Result<Worktree, GitError> {
    let fail = |message: String| GitError::Checkout {
        commit: commit.to_string(),
        message,
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix("git-cache-wt-");
    let dir = match parent {
        Some(parent) => builder.tempdir_in(parent),
        None => builder.tempdir(),
    }
    .map_err(|e| {
        fail(format!(
            "cannot create a temporary directory in {}: {e}",
            parent
                .map_or_else(std::env::temp_dir, Path::to_owned)
                .display()
        ))
    })?;
    // From here on, returning early drops `dir`, which removes it.
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree_id())
        .map_err(|e| fail(chain(&e)))?;
    let mut index = repo.index_from_tree(&tree).map_err(|e| fail(chain(&e)))?;
    let mut options = repo
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(|e| fail(chain(&e)))?;
    options.destination_is_initially_empty = true;
    let objects = repo
        .objects
        .clone()
        .into_arc()
        .map_err(|e| fail(chain(&e)))?;
    let outcome = gix::worktree::state::checkout(
        &mut index,
        dir.path(),
        objects,
        &gix::progress::Discard,
        &gix::progress::Discard,
        cancel,
        options,
    )
    .map_err(|e| fail(chain(&e)))?;
    // gix returns Ok when interrupted: what was written so far is removed with `dir`.
    if cancel.load(Ordering::Relaxed) {
        return Err(GitError::Interrupted {
            operation: format!("checkout of {commit}"),
        });
    }
    if let Some(first) = outcome.errors.first() {
        return Err(fail(format!(
            "{} file(s) could not be written, first {}: {}",
            outcome.errors.len(),
            first.path,
            chain(&first.error)
        )));
    }
    if let Some(first) = outcome.collisions.first() {
        return Err(fail(format!(
            "{} path collision(s), first {}",
            outcome.collisions.len(),
            first.path
        )));
    }
    Ok(Worktree {
        dir,
        commit: commit.to_string(),
    })
}
