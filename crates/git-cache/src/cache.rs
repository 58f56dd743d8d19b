//! The bare-clone cache: one bare repository per forge repository, cloned once, fetched after.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use gix::bstr::BStr;
use gix::remote::Direction;
use secrecy::{ExposeSecret, SecretString};

use crate::GitError;
use crate::error::chain;

/// The username GitHub expects with an installation access token.
const TOKEN_USERNAME: &str = "x-access-token";
/// What a fetch into an existing clone updates when the caller names no refspec.
const DEFAULT_FETCH_REFSPEC: &str = "+refs/heads/*:refs/heads/*";

/// Identifies a cached repository: forge host (e.g. `github.com`), owner and name, as they
/// appear in the repository's URL. The host and name are single path components; the owner is
/// one or more (a GitLab namespace of nested groups, `group/sub`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RepoKey {
    /// The forge's host name, e.g. `github.com` (docs/configuration.md: the host of FORGE_URL).
    pub host: String,
    /// The owner (user or organisation; on GitLab the namespace, `/`-separated).
    pub owner: String,
    /// The repository name, without `.git`.
    pub name: String,
}

/// The outcome of [`GitCache::sync`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synced {
    /// The bare repository, `<root>/<host>/<owner>/<name>.git`; open it with
    /// [`crate::Repo::open`].
    pub path: PathBuf,
    /// True when this call made a fresh clone, false when it fetched into an existing one.
    pub cloned: bool,
}

/// The cache of bare clones under one root folder (docs/architecture.md, Git: `$DATA_DIR/repos`).
///
/// `Send + Sync`: share it in an `Arc`. Syncs of one repository are serialized by a lock of
/// that repository; different repositories sync in parallel.
#[derive(Debug)]
pub struct GitCache {
    root: PathBuf,
    locks: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl GitCache {
    /// A cache rooted at `root`; folders are created on the first sync.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        GitCache {
            root: root.into(),
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// The cache's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<host>/<owner>/<name>.git`, the owner's `/`-separated parts as nested folders.
    /// Parts that are empty, `.`/`..` or contain a path separator are replaced by `_` so a key
    /// can never point outside the root.
    pub fn repo_path(&self, key: &RepoKey) -> PathBuf {
        fn component(part: &str) -> &str {
            let unsafe_part =
                part.is_empty() || part == "." || part == ".." || part.contains(['/', '\\', '\0']);
            if unsafe_part { "_" } else { part }
        }
        let mut path = self.root.join(component(&key.host));
        for part in key.owner.split('/') {
            path.push(component(part));
        }
        path.join(format!("{}.git", component(&key.name)))
    }

    fn lock_for(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(path.to_owned()).or_default().clone()
    }

    /// Clones `url` into the cache the first time (a bare clone of all branch heads and tags,
    /// plus `refspecs`), and fetches `refspecs` into the existing clone later (all branch heads
    /// when `refspecs` is empty). Refspecs look like `+refs/pull/7/head:refs/pull/7/head`.
    ///
    /// `url` is `https://...` or `file://...` and must not carry credentials: `token` (a GitHub
    /// installation token) is handed to the transport by a credentials callback as user
    /// `x-access-token`, never written into the URL or the config. No credential helper or
    /// user config is ever consulted. Raising `cancel` aborts the transfer.
    ///
    /// A clone is written into a temporary sibling folder and moved into place only when
    /// complete, so a failed or cancelled clone leaves no folder behind. Blocking: async
    /// callers use `spawn_blocking`.
    ///
    /// Errors: [`GitError::Clone`], [`GitError::Fetch`], [`GitError::Cancelled`],
    /// [`GitError::Io`].
    pub fn sync(
        &self,
        key: &RepoKey,
        url: &str,
        refspecs: &[String],
        token: Option<&SecretString>,
        cancel: &AtomicBool,
    ) -> Result<Synced, GitError> {
        let path = self.repo_path(key);
        let lock = self.lock_for(&path);
        let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);

        if path.exists() {
            if gix::open_opts(&path, gix::open::Options::isolated()).is_ok() {
                fetch(&path, url, refspecs, token, cancel)?;
                return Ok(Synced {
                    path,
                    cloned: false,
                });
            }
            // Not a repository (say, a crash in the middle of a rename): start over.
            tracing::warn!(path = %path.display(), "cached clone is unreadable, cloning again");
            std::fs::remove_dir_all(&path).map_err(|source| GitError::Io {
                operation: "remove unreadable clone",
                path: path.clone(),
                source,
            })?;
        }
        clone(&path, url, refspecs, token, cancel)?;
        Ok(Synced { path, cloned: true })
    }
}

/// The credentials callback: the token for every `get`, nothing stored or erased.
fn credentials(
    token: Option<SecretString>,
) -> impl FnMut(
    gix::credentials::helper::Action,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>>
+ 'static {
    move |action| match (action, &token) {
        (gix::credentials::helper::Action::Get(ctx), Some(token)) => {
            Ok(Some(gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: TOKEN_USERNAME.to_owned(),
                    password: token.expose_secret().to_owned(),
                    oauth_refresh_token: None,
                },
                next: ctx.into(),
            }))
        }
        _ => Ok(None),
    }
}

/// `url` with any user info replaced, for error messages and logs.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***@{}", &url[..scheme_end + 3], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

fn parse_refspecs(refspecs: &[String]) -> Result<Vec<gix::refspec::RefSpec>, String> {
    refspecs
        .iter()
        .map(|spec| {
            let spec_bstr: &BStr = spec.as_str().into();
            gix::refspec::parse(spec_bstr, gix::refspec::parse::Operation::Fetch)
                .map(|s| s.to_owned())
                .map_err(|e| format!("invalid refspec '{spec}': {}", chain(&e)))
        })
        .collect()
}

/// The error of a failed clone or fetch: `Cancelled` when the cancel flag was raised (the
/// transfer was aborted on purpose), else what `otherwise` builds from the redacted URL.
fn transfer_error(
    cancel: &AtomicBool,
    operation: &'static str,
    url: &str,
    otherwise: impl FnOnce(String) -> GitError,
) -> GitError {
    if cancel.load(Ordering::Relaxed) {
        GitError::Cancelled {
            operation,
            url: redact(url),
        }
    } else {
        otherwise(redact(url))
    }
}

fn clone(
    path: &Path,
    url: &str,
    refspecs: &[String],
    token: Option<&SecretString>,
    cancel: &AtomicBool,
) -> Result<(), GitError> {
    let fail = |message: String| {
        transfer_error(cancel, "clone", url, |url| GitError::Clone {
            url,
            path: path.to_owned(),
            message,
        })
    };
    let parent = path
        .parent()
        .ok_or_else(|| fail("the cache path has no parent folder".into()))?;
    std::fs::create_dir_all(parent).map_err(|source| GitError::Io {
        operation: "create directory",
        path: parent.to_owned(),
        source,
    })?;
    // Clone next to the final place, then move it there: the final path only ever holds a
    // complete clone, and the temporary folder is removed on every failure.
    let staging = tempfile::Builder::new()
        .prefix(".clone-")
        .tempdir_in(parent)
        .map_err(|source| GitError::Io {
            operation: "create temporary directory in",
            path: parent.to_owned(),
            source,
        })?;
    let extra_refspecs = parse_refspecs(refspecs).map_err(fail)?;
    let token = token.map(|t| SecretString::from(t.expose_secret().to_owned()));
    let mut prepare = gix::clone::PrepareFetch::new(
        url,
        staging.path(),
        gix::create::Kind::Bare,
        gix::create::Options::default(),
        gix::open::Options::isolated(),
    )
    .map_err(|e| fail(chain(&e)))?
    .with_fetch_options(gix::remote::ref_map::Options {
        extra_refspecs,
        ..Default::default()
    })
    .configure_connection(move |connection| {
        connection.set_credentials(credentials(token.clone()));
        Ok(())
    });
    let (repo, _outcome) = prepare
        .fetch_only(gix::progress::Discard, cancel)
        .map_err(|e| fail(chain(&e)))?;
    drop(repo);
    drop(prepare);
    if cancel.load(Ordering::Relaxed) {
        return Err(fail(String::new()));
    }
    std::fs::rename(staging.path(), path).map_err(|source| GitError::Io {
        operation: "move finished clone to",
        path: path.to_owned(),
        source,
    })?;
    // The folder now lives at `path`; the guard has nothing left to remove.
    let _ = staging.keep();
    tracing::info!(url = %redact(url), path = %path.display(), "cloned");
    Ok(())
}

fn fetch(
    path: &Path,
    url: &str,
    refspecs: &[String],
    token: Option<&SecretString>,
    cancel: &AtomicBool,
) -> Result<(), GitError> {
    let fail = |message: String| {
        transfer_error(cancel, "fetch", url, |url| GitError::Fetch {
            url,
            path: path.to_owned(),
            message,
        })
    };
    let repo = gix::open_opts(path, gix::open::Options::isolated()).map_err(|e| fail(chain(&e)))?;
    let specs: Vec<&str> = if refspecs.is_empty() {
        vec![DEFAULT_FETCH_REFSPEC]
    } else {
        refspecs.iter().map(String::as_str).collect()
    };
    parse_refspecs(&specs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).map_err(fail)?;
    let remote = repo
        .remote_at(url)
        .and_then(|r| r.with_refspecs(specs.iter().copied(), Direction::Fetch))
        .map_err(|e| fail(chain(&e)))?
        .with_fetch_tags(gix::remote::fetch::Tags::None);
    let mut connection = remote
        .connect(Direction::Fetch)
        .map_err(|e| fail(chain(&e)))?;
    let token = token.map(|t| SecretString::from(t.expose_secret().to_owned()));
    connection.set_credentials(credentials(token));
    let outcome = connection
        .prepare_fetch(gix::progress::Discard, Default::default())
        .map_err(|e| fail(chain(&e)))?
        .receive(gix::progress::Discard, cancel)
        .map_err(|e| fail(chain(&e)))?;
    if cancel.load(Ordering::Relaxed) {
        return Err(fail(String::new()));
    }
    tracing::debug!(url = %redact(url), path = %path.display(), status = ?std::mem::discriminant(&outcome.status), "fetched");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_path_is_host_owner_name_dot_git() {
        let cache = GitCache::new("/data/repos");
        let key = RepoKey {
            host: "github.com".into(),
            owner: "acme".into(),
            name: "widgets".into(),
        };
        assert_eq!(
            cache.repo_path(&key),
            PathBuf::from("/data/repos/github.com/acme/widgets.git")
        );
    }

    #[test]
    fn key_parts_cannot_escape_the_root() {
        let cache = GitCache::new("/r");
        let key = RepoKey {
            host: "..".into(),
            owner: "a/../b\\c".into(),
            name: "".into(),
        };
        assert_eq!(cache.repo_path(&key), PathBuf::from("/r/_/a/_/_/_.git"));
    }

    #[test]
    fn a_gitlab_namespace_is_nested_folders() {
        let cache = GitCache::new("/data/repos");
        let key = RepoKey {
            host: "gitlab.example.com".into(),
            owner: "platform/backend".into(),
            name: "api".into(),
        };
        assert_eq!(
            cache.repo_path(&key),
            PathBuf::from("/data/repos/gitlab.example.com/platform/backend/api.git")
        );
    }

    #[test]
    fn user_info_is_redacted_from_urls() {
        assert_eq!(
            redact("https://x-access-token:abc@github.com/o/r.git"),
            "https://***@github.com/o/r.git"
        );
        assert_eq!(redact("file:///tmp/r.git"), "file:///tmp/r.git");
    }
}
