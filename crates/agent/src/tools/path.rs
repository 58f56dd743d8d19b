//! Path safety (after codex-rs `safety.rs`): every path a tool receives is resolved against the
//! worktree root before any I/O. Absolute paths, `..` that leaves the root, and symlinks whose
//! target lies outside the root are refused with a message the model reads.

use std::path::{Component, Path, PathBuf};

/// A worktree root, canonicalized once.
#[derive(Debug, Clone)]
pub struct Root {
    root: PathBuf,
}

impl Root {
    /// Canonicalizes `dir`. Errors when it does not exist.
    pub fn new(dir: &Path) -> std::io::Result<Root> {
        Ok(Root {
            root: dir.canonicalize()?,
        })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolves a model-supplied relative path to a canonical path inside the root.
    ///
    /// Refused: empty-after-trim is the root itself (allowed); absolute paths; paths whose
    /// lexical normalisation leaves the root; paths whose canonical form (symlinks followed)
    /// leaves the root; paths that do not exist.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, String> {
        let rel = rel.trim();
        let p = Path::new(rel);
        if p.is_absolute() || rel.starts_with('~') {
            return Err(format!(
                "path {rel:?} is absolute; give a path relative to the repository root"
            ));
        }
        let mut normal = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::Normal(s) => normal.push(s),
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(format!("path {rel:?} leaves the repository root"));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!("path {rel:?} is absolute; give a relative path"));
                }
            }
        }
        let joined = self.root.join(&normal);
        let canonical = joined.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("path {rel:?} does not exist"),
            _ => format!("path {rel:?}: {e}"),
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(format!(
                "path {rel:?} resolves outside the repository root (symlink); refused"
            ));
        }
        Ok(canonical)
    }

    /// The root-relative display form of a canonical path inside the root, with `/` separators.
    pub fn relative(&self, canonical: &Path) -> String {
        canonical
            .strip_prefix(&self.root)
            .unwrap_or(canonical)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Whether a path found while walking (not resolved) stays inside the root once symlinks are
    /// followed. Broken links count as outside.
    pub fn contains(&self, path: &Path) -> bool {
        path.canonicalize()
            .map(|c| c.starts_with(&self.root))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_and_inside_paths_resolve() {
        let outer = tempfile::tempdir().unwrap();
        let root_dir = outer.path().join("repo");
        std::fs::create_dir_all(root_dir.join("src")).unwrap();
        std::fs::write(root_dir.join("src/a.rs"), "x").unwrap();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outer.path().join("secret"), root_dir.join("link")).unwrap();
            std::os::unix::fs::symlink(root_dir.join("src/a.rs"), root_dir.join("inner")).unwrap();
        }
        let root = Root::new(&root_dir).unwrap();
        assert!(root.resolve("src/a.rs").is_ok());
        assert!(root.resolve("./src/../src/a.rs").is_ok());
        assert_eq!(root.resolve("").unwrap(), root.path());
        assert!(root.resolve("../secret").unwrap_err().contains("leaves"));
        assert!(
            root.resolve("src/../../secret")
                .unwrap_err()
                .contains("leaves")
        );
        let abs = outer.path().join("secret");
        assert!(
            root.resolve(abs.to_str().unwrap())
                .unwrap_err()
                .contains("absolute")
        );
        #[cfg(unix)]
        {
            assert!(root.resolve("link").unwrap_err().contains("outside"));
            assert!(root.resolve("inner").is_ok());
        }
        assert!(
            root.resolve("missing.rs")
                .unwrap_err()
                .contains("does not exist")
        );
    }
}
