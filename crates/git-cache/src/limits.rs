//! Caps on the trees a review diffs and checks out, so a "git bomb" (a small pack whose trees
//! point at the same subtree again and again, e.g. 10 levels of 10 entries = 10^10 files from a
//! few KB) is refused before any diff or checkout work.
//!
//! A tree's size is computed once per distinct tree object and remembered, so measuring costs
//! one read per distinct tree and one header lookup per distinct blob, however many times a
//! subtree is repeated: a bomb is measured (and refused) in the time a handful of objects take.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use gix::ObjectId;
use gix::objs::TreeRefIter;
use gix::objs::tree::EntryKind;

use crate::GitError;
use crate::error::chain;

/// Bounds of the trees one review diffs and checks out.
///
/// `max_entries` counts every tree entry reached by walking the whole tree: files, symlinks,
/// submodules and directories, a repeated subtree counted at each place it appears (as a
/// checkout would write it). `max_bytes` sums the sizes of the files and symlink targets the
/// same way (what a checkout would write). The defaults leave room for large real
/// repositories (the Linux kernel's tree: about 90 000 files in 6 000 directories, 1.5 GB;
/// monorepos of several hundred thousand files) and refuse what only a bomb or a dump of
/// generated files reaches. Both are settings of the server (REVIEW_MAX_TREE_ENTRIES,
/// REVIEW_MAX_TREE_BYTES).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries a tree may have, counted recursively.
    pub max_entries: u64,
    /// Most bytes a tree's files may hold together, counted recursively.
    pub max_bytes: u64,
}

impl Limits {
    /// 1 000 000 entries.
    pub const DEFAULT_MAX_ENTRIES: u64 = 1_000_000;
    /// 8 GiB.
    pub const DEFAULT_MAX_BYTES: u64 = 8 << 30;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: Self::DEFAULT_MAX_ENTRIES,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }
}

/// How big a tree is, counted as [`Limits`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeSize {
    /// Entries, counted recursively.
    pub entries: u64,
    /// Bytes of files and symlink targets, counted recursively.
    pub bytes: u64,
}

impl TreeSize {
    fn add(&mut self, other: TreeSize) {
        self.entries = self.entries.saturating_add(other.entries);
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

/// One tree being measured: its child entries and what the finished ones add up to.
struct Frame {
    id: ObjectId,
    children: Vec<(EntryKind, ObjectId)>,
    next: usize,
    size: TreeSize,
}

/// Measures trees of one repository, remembering every distinct tree and blob it has seen, so
/// trees sharing subtrees (a merge base and a head) are cheap to measure together.
pub(crate) struct Meter<'r> {
    repo: &'r gix::Repository,
    limits: Limits,
    trees: HashMap<ObjectId, TreeSize>,
    blobs: HashMap<ObjectId, u64>,
}

impl<'r> Meter<'r> {
    pub(crate) fn new(repo: &'r gix::Repository, limits: Limits) -> Self {
        Meter {
            repo,
            limits,
            trees: HashMap::new(),
            blobs: HashMap::new(),
        }
    }

    /// Checks the tree of `commit` against the limits; its size when within them.
    ///
    /// Errors: [`GitError::TooLarge`] as soon as a lower bound of the size is over a limit,
    /// [`GitError::Interrupted`] when `cancel` is raised, [`GitError::Object`] when an object
    /// cannot be read.
    pub(crate) fn check_commit(
        &mut self,
        commit: ObjectId,
        cancel: &AtomicBool,
    ) -> Result<TreeSize, GitError> {
        let fail = |e: &(dyn std::error::Error + 'static)| GitError::Object {
            operation: format!("measure the tree of {commit}"),
            path: self.repo.git_dir().to_owned(),
            message: chain(e),
        };
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree_id())
            .map_err(|e| fail(&e))?
            .detach();
        self.check_tree(commit, tree, cancel)
    }

    fn check_tree(
        &mut self,
        commit: ObjectId,
        root: ObjectId,
        cancel: &AtomicBool,
    ) -> Result<TreeSize, GitError> {
        if let Some(size) = self.trees.get(&root) {
            return self.within_limits(commit, *size);
        }
        // A lower bound of the root's size: everything finished so far on the stack.
        let mut seen = TreeSize::default();
        let mut stack = vec![self.frame(root)?];
        let mut steps = 0u32;
        while let Some(top) = stack.last_mut() {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(1024) && cancel.load(Ordering::Relaxed) {
                return Err(GitError::Interrupted {
                    operation: format!("measuring the tree of {commit}"),
                });
            }
            let Some(&(kind, id)) = top.children.get(top.next) else {
                // All children done: remember the tree, hand its size to its parent.
                let done = stack.pop();
                if let Some(done) = done {
                    self.trees.insert(done.id, done.size);
                    if let Some(parent) = stack.last_mut() {
                        parent.size.add(done.size);
                    } else {
                        return self.within_limits(commit, done.size);
                    }
                }
                continue;
            };
            top.next += 1;
            let mut add = TreeSize {
                entries: 1,
                bytes: 0,
            };
            match kind {
                EntryKind::Tree => {
                    if let Some(sub) = self.trees.get(&id) {
                        add.add(*sub);
                    } else {
                        // Counted when the subtree is done; only the entry itself now.
                        top.size.add(add);
                        seen.add(add);
                        self.within_limits(commit, seen)?;
                        let frame = self.frame(id)?;
                        stack.push(frame);
                        continue;
                    }
                }
                EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                    add.bytes = self.blob_size(id)?;
                }
                EntryKind::Commit => {}
            }
            top.size.add(add);
            seen.add(add);
            self.within_limits(commit, seen)?;
        }
        Ok(TreeSize::default())
    }

    fn within_limits(&self, commit: ObjectId, size: TreeSize) -> Result<TreeSize, GitError> {
        let over = |what, limit| GitError::TooLarge {
            commit: commit.to_string(),
            what,
            limit,
        };
        if size.entries > self.limits.max_entries {
            return Err(over("entries", self.limits.max_entries));
        }
        if size.bytes > self.limits.max_bytes {
            return Err(over("bytes", self.limits.max_bytes));
        }
        Ok(size)
    }

    fn object_error(&self, id: ObjectId, err: &(dyn std::error::Error + 'static)) -> GitError {
        GitError::Object {
            operation: format!("measure object {id}"),
            path: self.repo.git_dir().to_owned(),
            message: chain(err),
        }
    }

    fn frame(&self, id: ObjectId) -> Result<Frame, GitError> {
        let tree = self
            .repo
            .find_tree(id)
            .map_err(|e| self.object_error(id, &e))?;
        let mut children = Vec::new();
        for entry in TreeRefIter::from_bytes(&tree.data, id.kind()) {
            let entry = entry.map_err(|e| self.object_error(id, &e))?;
            children.push((entry.mode.kind(), entry.oid.to_owned()));
        }
        Ok(Frame {
            id,
            children,
            next: 0,
            size: TreeSize::default(),
        })
    }

    fn blob_size(&mut self, id: ObjectId) -> Result<u64, GitError> {
        if let Some(size) = self.blobs.get(&id) {
            return Ok(*size);
        }
        let size = self
            .repo
            .find_header(id)
            .map_err(|e| self.object_error(id, &e))?
            .size();
        self.blobs.insert(id, size);
        Ok(size)
    }
}
