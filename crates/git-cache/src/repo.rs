//! An opened repository: revisions, merge bases, the `base...head` diff, checkouts and logs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use gix::ObjectId;
use gix::attrs::StateRef;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::TreeRefIter;
use gix::prelude::ObjectIdExt;
use gix::worktree::stack::state::attributes::Source as AttributeSource;

use crate::diff::{Blobs, Driver, FilePair, Side, write_pair};
use crate::error::chain;
use crate::funcname;
use crate::limits::{Limits, Meter, TreeSize};
use crate::rename::detect_renames;
use crate::{GitError, Worktree};

/// An opened repository: a bare cache from [`crate::GitCache`] or any local repository (a
/// developer's working copy works too; only its committed history is used).
///
/// Opened isolated (`gix::open::Options::isolated()`): system, user and environment
/// configuration is ignored, so no credential helper, pager or hook ever runs. `Send + Sync`;
/// each call works on a thread-local handle of its own.
pub struct Repo {
    inner: gix::ThreadSafeRepository,
    path: PathBuf,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo").field("path", &self.path).finish()
    }
}

impl Repo {
    /// Opens the repository at `path` (a bare `.git` folder or a working copy).
    ///
    /// Errors: [`GitError::Open`] when `path` is not a readable git repository.
    pub fn open(path: &Path) -> Result<Repo, GitError> {
        let repo =
            gix::open_opts(path, gix::open::Options::isolated()).map_err(|e| GitError::Open {
                path: path.to_owned(),
                message: chain(&e),
            })?;
        Ok(Repo {
            inner: repo.into_sync(),
            path: path.to_owned(),
        })
    }

    /// The path this repository was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn local(&self) -> gix::Repository {
        let mut repo = self.inner.to_thread_local();
        repo.object_cache_size_if_unset(8 * 1024 * 1024);
        repo
    }

    fn object_error(&self, operation: String, err: &(dyn std::error::Error + 'static)) -> GitError {
        GitError::Object {
            operation,
            path: self.path.clone(),
            message: chain(err),
        }
    }

    fn resolve_in(&self, repo: &gix::Repository, rev: &str) -> Result<ObjectId, GitError> {
        let unknown = |e: &(dyn std::error::Error + 'static)| GitError::UnknownRevision {
            rev: rev.to_owned(),
            message: chain(e),
        };
        let id = repo.rev_parse_single(rev).map_err(|e| unknown(&e))?;
        let commit = id
            .object()
            .and_then(|o| o.peel_to_commit())
            .map_err(|e| unknown(&e))?;
        Ok(commit.id)
    }

    /// Resolves a revision (full or abbreviated sha, branch, tag, `HEAD~2`,
    /// `refs/pull/7/head`) to the 40-hex id of the commit it names (tags are peeled).
    ///
    /// Errors: [`GitError::UnknownRevision`] when it names nothing or no commit.
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        let repo = self.local();
        Ok(self.resolve_in(&repo, rev)?.to_string())
    }

    fn merge_base_in(
        &self,
        repo: &gix::Repository,
        a: &str,
        b: &str,
    ) -> Result<(ObjectId, ObjectId), GitError> {
        let (a_id, b_id) = (self.resolve_in(repo, a)?, self.resolve_in(repo, b)?);
        let base = repo
            .merge_base(a_id, b_id)
            .map_err(|e| self.object_error(format!("merge-base {a} {b}"), &e))?
            .ok_or_else(|| GitError::NoMergeBase {
                a: a.to_owned(),
                b: b.to_owned(),
            })?;
        Ok((base.detach(), b_id))
    }

    /// The best common ancestor of `a` and `b` as 40 hex (`git merge-base a b`; with several
    /// candidates one of them is returned).
    ///
    /// Errors: [`GitError::UnknownRevision`], [`GitError::NoMergeBase`] for unrelated histories.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<String, GitError> {
        let repo = self.local();
        Ok(self.merge_base_in(&repo, a, b)?.0.to_string())
    }

    /// The bytes of the file at `path` (slash-separated, from the root) in the tree of
    /// `commit` (any revision [`Repo::resolve`] accepts), as `git show <commit>:<path>` prints
    /// them; None when the path is missing, is not a regular file (a directory, a symlink, a
    /// submodule), or its blob is over `max_bytes` (the object header is read first, so an
    /// oversized blob is never inflated). Review instructions are read this way at the merge
    /// base, never from the PR head (docs/security.md, "The git phase").
    ///
    /// Errors: [`GitError::UnknownRevision`]; [`GitError::Object`] when an object cannot be
    /// read.
    pub fn file_at(
        &self,
        commit: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, GitError> {
        let repo = self.local();
        let id = self.resolve_in(&repo, commit)?;
        let fail = |e: &(dyn std::error::Error + 'static)| {
            self.object_error(format!("show {commit}:{path}"), e)
        };
        let tree = repo
            .find_commit(id)
            .and_then(|c| c.tree())
            .map_err(|e| fail(&e))?;
        let Some(entry) = tree.lookup_entry_by_path(path).map_err(|e| fail(&e))? else {
            return Ok(None);
        };
        if !entry.mode().is_blob() {
            return Ok(None);
        }
        let header = repo.find_header(entry.oid()).map_err(|e| fail(&e))?;
        if header.size() > max_bytes {
            return Ok(None);
        }
        let object = repo.find_object(entry.oid()).map_err(|e| fail(&e))?;
        Ok(Some(object.detach().data))
    }

    /// The bytes `git diff base...head` prints (from the merge base of `base` and `head` to
    /// `head`) with default options, in a working copy checked out at `head`: no color,
    /// renames detected (`diff.renames=true`, 50%), `a/` `b/` prefixes, 3 context lines,
    /// function-name context, git's `index` abbreviations and path quoting, and the `diff`
    /// attribute of the merge base's `.gitattributes` (`binary`, `-diff`, `diff`,
    /// `diff=<built-in driver>`): a pull request's own `.gitattributes` is code under review
    /// and cannot hide its hunks from the reviewer (docs/security.md, "The git
    /// phase"). Empty when nothing changed. Give the model
    /// [`crate::diff_text`] of it and compute [`crate::patch_id_bytes`] from it.
    ///
    /// Both trees are first held to `limits`, and `cancel` is polled throughout: a git bomb is
    /// refused before any diff work, and a stop ends the diff within one file's work.
    ///
    /// Errors: [`GitError::UnknownRevision`], [`GitError::NoMergeBase`],
    /// [`GitError::TooLarge`], [`GitError::Interrupted`], or [`GitError::Object`] when an
    /// object cannot be read.
    pub fn diff_bytes(
        &self,
        base: &str,
        head: &str,
        limits: Limits,
        cancel: &AtomicBool,
    ) -> Result<Vec<u8>, GitError> {
        let repo = self.local();
        let (merge_base, head_id) = self.merge_base_in(&repo, base, head)?;
        let mut meter = Meter::new(&repo, limits);
        meter.check_commit(merge_base, cancel)?;
        meter.check_commit(head_id, cancel)?;
        drop(meter);
        self.diff_commits(&repo, merge_base, head_id, cancel)
            .map_err(|e| match e {
                GitError::Object { message, path, .. } => GitError::Object {
                    operation: format!("diff {base}...{head}"),
                    path,
                    message,
                },
                other => other,
            })
    }

    /// `git diff old new` between two commits.
    fn diff_commits(
        &self,
        repo: &gix::Repository,
        old: ObjectId,
        new: ObjectId,
        cancel: &AtomicBool,
    ) -> Result<Vec<u8>, GitError> {
        let fail = |e: &(dyn std::error::Error + 'static)| self.object_error("diff".into(), e);
        let tree_of = |id: ObjectId| {
            repo.find_commit(id)
                .and_then(|c| c.tree())
                .map_err(|e| fail(&e))
        };
        let (old_tree, new_tree) = (tree_of(old)?, tree_of(new)?);
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            TreeRefIter::from_bytes(&old_tree.data, old_tree.id.kind()),
            TreeRefIter::from_bytes(&new_tree.data, new_tree.id.kind()),
            &mut gix::diff::tree::State::default(),
            &repo.objects,
            &mut recorder,
        )
        .map_err(|e| fail(&e))?;

        use gix::diff::tree::recorder::Change;
        let side = |path: &BStr, mode: gix::objs::tree::EntryMode, id: ObjectId| {
            (!mode.is_tree()).then(|| Side {
                path: path.to_owned(),
                kind: mode.kind(),
                id,
            })
        };
        let mut queue: Vec<FilePair> = Vec::new();
        for change in recorder.records {
            match change {
                Change::Addition {
                    entry_mode,
                    oid,
                    path,
                    ..
                } => queue.extend(side(path.as_ref(), entry_mode, oid).map(FilePair::Added)),
                Change::Deletion {
                    entry_mode,
                    oid,
                    path,
                    ..
                } => queue.extend(side(path.as_ref(), entry_mode, oid).map(FilePair::Deleted)),
                Change::Modification {
                    previous_entry_mode,
                    previous_oid,
                    entry_mode,
                    oid,
                    path,
                } => match (
                    side(path.as_ref(), previous_entry_mode, previous_oid),
                    side(path.as_ref(), entry_mode, oid),
                ) {
                    (Some(old), Some(new)) => queue.push(FilePair::Modified(old, new)),
                    (Some(old), None) => queue.push(FilePair::Deleted(old)),
                    (None, Some(new)) => queue.push(FilePair::Added(new)),
                    (None, None) => {}
                },
            }
        }
        // git's queue is in path order (gix walks trees breadth-first); a deletion sorts
        // before an addition at the same path.
        queue.sort_by(|a, b| {
            a.sort_path()
                .cmp(b.sort_path())
                .then_with(|| matches!(a, FilePair::Added(_)).cmp(&matches!(b, FilePair::Added(_))))
        });

        // git reads attributes from the working copy. Ours is the old side's tree (the merge
        // base): the head's .gitattributes belongs to the pull request's author, who could
        // otherwise mark every file `-diff` and hide the change from the reviewer.
        let index = repo.index_from_tree(&old_tree.id).map_err(|e| fail(&e))?;
        let attributes = repo
            .attributes_only(&index, AttributeSource::IdMapping)
            .map_err(|e| fail(&e))?;
        let matches = attributes.selected_attribute_matches(["diff"]);
        let mut blobs = RepoBlobs {
            repo,
            cache: HashMap::new(),
            hex_len: None,
            attributes,
            matches,
            cancel,
        };
        blobs.interrupted()?;
        let queue = detect_renames(queue, &mut blobs)?;
        let mut out = Vec::new();
        for pair in &queue {
            blobs.interrupted()?;
            write_pair(&mut out, pair, &mut blobs)?;
        }
        Ok(out)
    }

    /// Checks the tree of `commit` (any revision [`Repo::resolve`] accepts) out into a new
    /// temporary directory, under `parent` when given, else the system temp dir. The files
    /// are those `git archive <commit>` would produce (contents and executable bits, symlinks
    /// as symlinks). The directory is removed when the [`Worktree`] drops, and nothing is
    /// left behind when this call fails.
    ///
    /// The tree is first held to `limits` (nothing is written for a tree over them), and
    /// raising `cancel` stops the checkout after the file being written.
    ///
    /// Errors: [`GitError::UnknownRevision`], [`GitError::TooLarge`],
    /// [`GitError::Interrupted`], [`GitError::Checkout`].
    pub fn checkout(
        &self,
        commit: &str,
        parent: Option<&Path>,
        limits: Limits,
        cancel: &AtomicBool,
    ) -> Result<Worktree, GitError> {
        let repo = self.local();
        let id = self.resolve_in(&repo, commit)?;
        Meter::new(&repo, limits).check_commit(id, cancel)?;
        crate::worktree::checkout(&repo, id, parent, cancel)
    }

    /// The size of the tree of `rev` as [`Limits`] counts it (entries and bytes, recursively),
    /// measured only as far as the limits: a tree over them is an error, not a count.
    ///
    /// Errors: [`GitError::UnknownRevision`], [`GitError::TooLarge`],
    /// [`GitError::Interrupted`], [`GitError::Object`].
    pub fn tree_size(
        &self,
        rev: &str,
        limits: Limits,
        cancel: &AtomicBool,
    ) -> Result<TreeSize, GitError> {
        let repo = self.local();
        let id = self.resolve_in(&repo, rev)?;
        Meter::new(&repo, limits).check_commit(id, cancel)
    }

    /// Subjects (first lines) of the commits in `base..head`, oldest first: the `max` most
    /// recent ones when there are more. For the PR context given to the reviewer.
    ///
    /// Errors: [`GitError::UnknownRevision`], [`GitError::Object`].
    pub fn log(&self, base: &str, head: &str, max: usize) -> Result<Vec<String>, GitError> {
        let repo = self.local();
        let (base_id, head_id) = (self.resolve_in(&repo, base)?, self.resolve_in(&repo, head)?);
        let fail = |e: &(dyn std::error::Error + 'static)| {
            self.object_error(format!("log {base}..{head}"), e)
        };
        let walk = repo
            .rev_walk([head_id])
            .with_hidden([base_id])
            .all()
            .map_err(|e| fail(&e))?;
        let mut subjects = Vec::new();
        for info in walk.take(max) {
            let info = info.map_err(|e| fail(&e))?;
            let commit = info.object().map_err(|e| fail(&e))?;
            let message = commit.message().map_err(|e| fail(&e))?;
            subjects.push(message.title.trim().to_str_lossy().into_owned());
        }
        subjects.reverse();
        Ok(subjects)
    }
}

/// Blob contents and attributes for the diff printer, each blob read once per object id.
struct RepoBlobs<'r> {
    repo: &'r gix::Repository,
    cache: HashMap<ObjectId, Rc<[u8]>>,
    hex_len: Option<usize>,
    attributes: gix::AttributeStack<'r>,
    matches: gix::attrs::search::Outcome,
    cancel: &'r AtomicBool,
}

impl Blobs for RepoBlobs<'_> {
    fn driver(&mut self, path: &BString) -> Driver {
        let platform = match self.attributes.at_entry(path.as_bstr(), None) {
            Ok(platform) => platform,
            Err(e) => {
                // Only a .gitattributes blob that cannot be read gets here; git would fail
                // the diff. Diff as if the path had no attributes, and say so.
                tracing::warn!(path = %path, error = %chain(&e), "cannot read the attributes of a path");
                return Driver::default();
            }
        };
        platform.matching_attributes(&mut self.matches);
        let state = self
            .matches
            .iter_selected()
            .next()
            .map(|m| m.assignment.state);
        match state {
            Some(StateRef::Set) => Driver {
                binary: Some(false),
                funcname: None,
            },
            Some(StateRef::Unset) => Driver {
                binary: Some(true),
                funcname: None,
            },
            Some(StateRef::Value(name)) => Driver {
                binary: None,
                funcname: funcname::builtin(name.as_bstr()),
            },
            Some(StateRef::Unspecified) | None => Driver::default(),
        }
    }

    fn interrupted(&self) -> Result<(), GitError> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(GitError::Interrupted {
                operation: "diff".into(),
            });
        }
        Ok(())
    }

    fn get(&mut self, side: &Side) -> Result<Rc<[u8]>, GitError> {
        if side.kind == gix::objs::tree::EntryKind::Commit {
            return Ok(Rc::from(
                format!("Subproject commit {}\n", side.id).into_bytes(),
            ));
        }
        if let Some(data) = self.cache.get(&side.id) {
            return Ok(data.clone());
        }
        let object = self
            .repo
            .find_object(side.id)
            .map_err(|e| GitError::Object {
                operation: format!("read blob {} of {}", side.id, side.path),
                path: self.repo.git_dir().to_owned(),
                message: chain(&e),
            })?;
        let data: Rc<[u8]> = Rc::from(object.detach().data);
        self.cache.insert(side.id, data.clone());
        Ok(data)
    }

    fn abbrev(&mut self, id: &ObjectId) -> String {
        // git's auto abbreviation: 7, or more for repositories with many objects.
        let hex_len = *self.hex_len.get_or_insert_with(|| {
            let count = self.repo.objects.packed_object_count().unwrap_or(0);
            let bits = 64 - count.leading_zeros();
            (bits.div_ceil(2) as usize).max(7)
        });
        if id.is_null() {
            return "0".repeat(hex_len);
        }
        match id.attach(self.repo).shorten() {
            Ok(prefix) => prefix.to_string(),
            Err(_) => id.to_hex_with_len(hex_len).to_string(),
        }
    }
}
