//! Installing reviewer skills and keeping their folders on disk (docs/review-service.md §4,
//! Skills): the forge fetch of a skill folder, the `DATA_DIR/skills/<name>/` folders, and the
//! enabled skills handed to the reviewing agent. The pure rules (source URL, name, front
//! matter, safe paths, the stored blob, the agent's text) are [`review_domain::skills`]; the
//! `skills` table is review-store's. Everything this module touches comes in as an argument.
//!
//! Install: a forge tree URL `<FORGE_URL>/<owner>/<repo>/tree/<ref>/<path>` is parsed, the ref
//! resolved to a commit SHA (a ref may contain `/`: the shortest prefix of the segments that
//! resolves wins, as on GitHub's web UI), and the folder fetched at that SHA, with the
//! installation token when the repo is registered here and anonymously otherwise. The files are
//! stored as one blob in the `skills` row (the source of truth, never returned by the API) and
//! materialised under `DATA_DIR/skills/<name>/` while the skill is enabled.
//!
//! What the reviewing agent gets ([`enabled_skills`]): [`skills::agent_text`], because the
//! agent's file tools are confined to the PR worktree and cannot open the skill's folder. A
//! folder without `SKILL.md` is refused: it would give the agent nothing to follow.

use crate::records::StoreView;
use crate::records::now;
use forge::{ContentEntry, Contents, Forge, ForgeError, RepoRead};
use review_domain::SkillMetaRow;
use review_domain::skills::{
    self, MAX_BYTES, MAX_FILES, SKILL_FILE, SkillFile, SkillUrlError, decode_blob, encode_blob,
    front_matter, is_skill_name, parse_gitlab_tree_url, parse_tree_url, safe_relative, skill_md,
};
use review_store::NewSkill;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Most folder listings one install makes (sub-folders included).
const MAX_LISTINGS: usize = 25;

/// Why an install failed; every variant but `Store` is answered 422 `{error}`
/// (docs/review-service.md §4, Skills).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    /// The URL is not a tree URL of the configured forge, or names no valid skill folder.
    #[error("{0}")]
    BadUrl(String),
    /// The forge could not give the folder, or the folder breaks a limit.
    #[error("{0}")]
    Fetch(String),
    /// The store failed (answered 500, not 422).
    #[error(transparent)]
    Store(#[from] review_store::StoreError),
}

impl From<SkillUrlError> for InstallError {
    fn from(e: SkillUrlError) -> Self {
        Self::BadUrl(e.0)
    }
}

/// Fetch the folder `path` of `repo` at `sha` through the contents API, within the limits.
async fn fetch_folder(
    forge: &dyn Forge,
    repo: &RepoRead,
    path: &str,
    sha: &str,
) -> Result<Vec<SkillFile>, InstallError> {
    let fetch_err = |e: ForgeError| InstallError::Fetch(format!("cannot fetch {path}: {e}"));
    let mut queue = VecDeque::from([path.to_owned()]);
    let mut listings = 0;
    let mut wanted: Vec<ContentEntry> = Vec::new();
    let mut total: u64 = 0;
    while let Some(dir) = queue.pop_front() {
        listings += 1;
        if listings > MAX_LISTINGS {
            return Err(InstallError::Fetch(format!(
                "{path} has more than {MAX_LISTINGS} folders"
            )));
        }
        let entries = match forge.contents(repo, &dir, sha).await.map_err(fetch_err)? {
            Contents::Dir(entries) => entries,
            Contents::File { .. } | Contents::Other(_) => {
                return Err(InstallError::Fetch(format!(
                    "{dir} is not a folder; the URL must name the skill's folder"
                )));
            }
        };
        for e in entries {
            match e.kind.as_str() {
                "dir" => queue.push_back(e.path.clone()),
                "file" => {
                    total += e.size;
                    wanted.push(e);
                }
                _ => {} // symlinks and submodules are not part of a skill
            }
            if wanted.len() > MAX_FILES {
                return Err(InstallError::Fetch(format!(
                    "{path} has more than {MAX_FILES} files"
                )));
            }
            if total > MAX_BYTES {
                return Err(InstallError::Fetch(format!(
                    "{path} is larger than {MAX_BYTES} bytes"
                )));
            }
        }
    }
    let prefix = format!("{}/", path.trim_matches('/'));
    let mut files = Vec::with_capacity(wanted.len());
    let mut fetched: u64 = 0;
    for e in wanted {
        let content = match forge
            .contents(repo, &e.path, sha)
            .await
            .map_err(fetch_err)?
        {
            Contents::File { content, .. } => content,
            _ => {
                return Err(InstallError::Fetch(format!(
                    "{} changed type while fetching",
                    e.path
                )));
            }
        };
        fetched += content.len() as u64;
        if fetched > MAX_BYTES {
            return Err(InstallError::Fetch(format!(
                "{path} is larger than {MAX_BYTES} bytes"
            )));
        }
        let rel = e.path.strip_prefix(&prefix).unwrap_or(&e.name).to_owned();
        if !safe_relative(&rel) {
            return Err(InstallError::Fetch(format!(
                "unsafe file path {:?}",
                e.path
            )));
        }
        files.push(SkillFile { path: rel, content });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Install (or re-install) the skill at a tree URL: resolve, fetch, store enabled, write to
/// disk under `data_dir` (docs/review-service.md §4, Skills: install). `forge_url` is the
/// prefix of GitHub source URLs; `gitlab` (GITLAB_URL and its host, when set) that of GitLab
/// tree URLs (`<gitlab>/<namespace>/<project>/-/tree/<ref>/<path>`, docs/review-service.md,
/// "GitLab"). Errors other than [`InstallError::Store`] are 422.
pub(crate) async fn install(
    forge: &dyn Forge,
    store: &StoreView,
    forge_url: &str,
    gitlab: Option<(&str, &str)>,
    data_dir: &Path,
    url: &str,
) -> Result<SkillMetaRow, InstallError> {
    let on_gitlab = gitlab.filter(|(gitlab_url, _)| {
        url.trim()
            .strip_prefix(gitlab_url.trim_end_matches('/'))
            .is_some_and(|rest| rest.starts_with('/'))
    });
    let tree = match on_gitlab {
        Some((gitlab_url, host)) => parse_gitlab_tree_url(gitlab_url, host, url)?,
        None => parse_tree_url(forge_url, url)?,
    };
    let full_name = format!("{}/{}", tree.owner, tree.repo);
    let installation_id = store.repo(&full_name).await?.map(|r| r.installation_id);
    let repo = RepoRead {
        owner: tree.owner.clone(),
        name: tree.repo.clone(),
        installation_id,
    };
    let mut resolved = None;
    let mut last_error = None;
    for (git_ref, path) in tree.candidates() {
        match forge.resolve_commit(&repo, &git_ref).await {
            Ok(sha) => {
                resolved = Some((sha, path));
                break;
            }
            Err(
                e @ ForgeError::Api {
                    status: 404 | 422, ..
                },
            ) => last_error = Some(e),
            Err(e) => {
                return Err(InstallError::Fetch(format!(
                    "cannot resolve the ref of {url}: {e}"
                )));
            }
        }
    }
    let Some((sha, path)) = resolved else {
        return Err(InstallError::Fetch(format!(
            "no branch, tag or commit of {full_name} matches {url}{}",
            last_error.map(|e| format!(": {e}")).unwrap_or_default()
        )));
    };
    let files = fetch_folder(forge, &repo, &path, &sha).await?;
    let Some(md) = skill_md(&files) else {
        return Err(InstallError::Fetch(format!(
            "{path} at {sha} has no {SKILL_FILE}; a skill folder needs one"
        )));
    };
    let description = front_matter(&String::from_utf8_lossy(&md.content)).0;
    let name = tree.name().to_owned();
    let row = store
        .upsert_skill(
            &NewSkill {
                name: name.clone(),
                source_url: url.trim().to_owned(),
                owner: tree.owner.clone(),
                repo: tree.repo.clone(),
                path,
                git_ref: sha,
                description,
                blob: encode_blob(&files),
            },
            now(),
        )
        .await?;
    if let Err(e) = materialise(data_dir, &name, files).await {
        tracing::warn!(skill = %name, error = format!("{e:#}"), "cannot write the skill to disk");
    }
    Ok(row)
}

/// `DATA_DIR/skills`: the agent's skill folders.
pub(crate) fn skills_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("skills")
}

/// Write `files` to `DATA_DIR/skills/<name>/`, replacing what was there (written beside it,
/// then renamed into place).
pub(crate) async fn materialise(
    data_dir: &Path,
    name: &str,
    files: Vec<SkillFile>,
) -> anyhow::Result<()> {
    anyhow::ensure!(is_skill_name(name), "bad skill name {name:?}");
    if let Some(f) = files.iter().find(|f| !safe_relative(&f.path)) {
        anyhow::bail!("unsafe path {:?}", f.path);
    }
    let root = skills_dir(data_dir);
    let name = name.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        std::fs::create_dir_all(&root)?;
        let tmp = root.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
        let written = write_files(&tmp, &files).and_then(|()| replace_dir(&tmp, &root.join(&name)));
        if written.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        written
    })
    .await?
}

/// Write `files` (paths checked by [`safe_relative`]) under the new folder `dir`.
fn write_files(dir: &Path, files: &[SkillFile]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for f in files {
        let dest = dir.join(&f.path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(dest, &f.content)?;
    }
    Ok(())
}

/// Move the folder `tmp` to `target`, replacing what is there (three tries: a concurrent
/// writer of the same skill may recreate `target` between the removal and the rename).
fn replace_dir(tmp: &Path, target: &Path) -> anyhow::Result<()> {
    for _ in 0..3 {
        if target.exists() {
            std::fs::remove_dir_all(target)?;
        }
        if std::fs::rename(tmp, target).is_ok() {
            return Ok(());
        }
    }
    anyhow::bail!("cannot move the skill into {}", target.display())
}

/// Remove `DATA_DIR/skills/<name>/` (nothing to do when absent).
pub(crate) async fn remove_from_disk(data_dir: &Path, name: &str) -> anyhow::Result<()> {
    if !is_skill_name(name) {
        return Ok(());
    }
    let dir = skills_dir(data_dir).join(name);
    match tokio::fs::remove_dir_all(&dir).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Enable or disable a skill and keep its folder under `data_dir` in step: None when there is
/// no such skill. A disk failure is logged, not returned: the row is the source of truth.
pub(crate) async fn set_enabled(
    store: &StoreView,
    data_dir: &Path,
    name: &str,
    enabled: bool,
) -> Result<Option<SkillMetaRow>, review_store::StoreError> {
    let row = store.set_skill_enabled(name, enabled).await?;
    if row.is_some() {
        let written = if enabled {
            match store.skill_blob(name).await? {
                Some(blob) => match decode_blob(&blob) {
                    Ok(files) => materialise(data_dir, name, files).await,
                    Err(e) => Err(e.into()),
                },
                None => Ok(()),
            }
        } else {
            remove_from_disk(data_dir, name).await
        };
        if let Err(e) = written {
            tracing::warn!(
                skill = name,
                error = format!("{e:#}"),
                "cannot update the skill on disk"
            );
        }
    }
    Ok(row)
}

/// Delete a skill and its folder under `data_dir`; deleting an unknown skill is not an error.
pub(crate) async fn delete(
    store: &StoreView,
    data_dir: &Path,
    name: &str,
) -> Result<(), review_store::StoreError> {
    store.delete_skill(name).await?;
    if let Err(e) = remove_from_disk(data_dir, name).await {
        tracing::warn!(
            skill = name,
            error = format!("{e:#}"),
            "cannot remove the skill from disk"
        );
    }
    Ok(())
}

/// The enabled skills, offered to the reviewing agent (docs/review-service.md §4, Skills: "used
/// by subsequent reviews"). Their folders are written under `data_dir` when missing. Never
/// fails: a skill that cannot be read is logged and left out, and a store error gives no skills.
pub(crate) async fn enabled_skills(store: &StoreView, data_dir: &Path) -> Vec<agent::Skill> {
    let rows = match store.enabled_skill_blobs().await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the enabled skills; reviewing without them");
            return Vec::new();
        }
    };
    let mut skills = Vec::with_capacity(rows.len());
    for (row, blob) in rows {
        let files = match decode_blob(&blob) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(skill = %row.name, error = %e, "unreadable skill blob; left out");
                continue;
            }
        };
        if !skills_dir(data_dir).join(&row.name).is_dir()
            && let Err(e) = materialise(data_dir, &row.name, files.clone()).await
        {
            tracing::warn!(skill = %row.name, error = format!("{e:#}"), "cannot write the skill to disk");
        }
        skills.push(agent::Skill {
            content: skills::agent_text(&files),
            name: row.name,
            description: row.description,
        });
    }
    skills
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn materialise_replaces_the_folder_and_remove_deletes_it() {
        let data = tempfile::tempdir().unwrap();
        let file = |path: &str, text: &str| SkillFile {
            path: path.into(),
            content: text.as_bytes().to_vec(),
        };
        let first = vec![file("SKILL.md", "one"), file("old.md", "x")];
        let second = vec![file("SKILL.md", "two"), file("refs/a.md", "a")];
        for files in [first, second] {
            materialise(data.path(), "s", files).await.unwrap();
        }
        let dir = skills_dir(data.path()).join("s");
        assert_eq!(
            std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
            "two"
        );
        assert_eq!(std::fs::read_to_string(dir.join("refs/a.md")).unwrap(), "a");
        assert!(
            !dir.join("old.md").exists(),
            "the old folder is replaced, not merged"
        );
        remove_from_disk(data.path(), "s").await.unwrap();
        assert!(!dir.exists());
        remove_from_disk(data.path(), "s").await.unwrap();
    }

    #[tokio::test]
    async fn hostile_names_and_paths_never_reach_the_disk() {
        let data = tempfile::tempdir().unwrap();
        let escape = SkillFile {
            path: "../escape.md".into(),
            content: b"x".to_vec(),
        };
        assert!(materialise(data.path(), "s", vec![escape]).await.is_err());
        assert!(!data.path().join("skills/escape.md").exists());
        assert!(materialise(data.path(), "../s", Vec::new()).await.is_err());
        // Refused before anything is written: no folder, nothing half-written beside it.
        assert!(!skills_dir(data.path()).exists());
        std::fs::write(data.path().join("keep"), b"k").unwrap();
        remove_from_disk(data.path(), "..").await.unwrap();
        assert!(data.path().join("keep").exists());
    }
}
