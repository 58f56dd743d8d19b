//! git-cache: the bare-clone cache of the review service (docs/review-service.md §1, steps
//! 4-7; docs/architecture.md, Git).
//!
//! Why it exists: every review needs the pull request's commits on disk, a checkout of the head
//! tree for the agent's file tools, the `base...head` diff it reviews, and a patch id that says
//! whether a push changed anything. All of it goes through [gix]; the library never shells out
//! to `git`. The tests compare every output with the real `git` CLI.
//!
//! - [`GitCache`] keeps one bare clone per repository under
//!   `<root>/<forge_host>/<owner>/<repo>.git`: the first sync clones, later syncs fetch, with one
//!   lock per repository.
//! - [`Repo`] opens any repository (isolated from user and system config) and resolves
//!   revisions, finds merge bases, prints `git diff base...head` byte for byte, and checks a
//!   commit out into a [`Worktree`] that is removed when dropped.
//! - [`patch_id`] computes `git patch-id --stable` from a diff's text.
//! - [`Limits`] caps the trees a diff or checkout may touch (git bombs), and every long
//!   operation takes a cancel flag.
//! - [`diff_text`] turns the diff's bytes into the text the model reads, marking bytes that
//!   are not UTF-8 instead of replacing them.
//!
//! Everything blocks: async callers run it in `spawn_blocking`.

#![warn(missing_docs)]

mod cache;
mod ctype;
mod diff;
mod error;
mod funcname;
mod limits;
mod patch_id;
mod quote;
mod rename;
mod repo;
mod text;
mod worktree;

pub use cache::{GitCache, RepoKey, Synced};
pub use error::GitError;
pub use limits::{Limits, TreeSize};
pub use patch_id::{patch_id, patch_id_bytes};
pub use repo::Repo;
pub use text::diff_text;
pub use worktree::Worktree;
