//! Installable reviewer skills (spec/review-service.md section 4, Skills; section 2,
//! SkillMetaRow; FACTS.md: skills are folders fetched through the contents API, at most 25
//! files and 1 MB, names matching `^[a-z0-9]+(-[a-z0-9]+)*$`).
//!
//! Install: a forge tree URL `<FORGE_URL>/<owner>/<repo>/tree/<ref>/<path>` is parsed, the ref
//! resolved to a commit SHA (a ref may contain `/`: the shortest prefix of the segments that
//! resolves wins, as on GitHub's web UI), and the folder fetched at that SHA, with the
//! installation token when the repo is registered here and anonymously otherwise. The files are
//! stored as one blob in the `skills` row (the source of truth, never returned by the API) and
//! materialised under `DATA_DIR/skills/<name>/` while the skill is enabled.
//!
//! What the reviewing agent gets ([`enabled_skills`]): the skill's `SKILL.md` without its front
//! matter, followed by the folder's other text files up to 32 KB (their names only past that),
//! because the agent's file tools are confined to the PR worktree and cannot open the skill's
//! folder. A folder without `SKILL.md` is refused: it would give the agent nothing to follow.

use crate::records::now;
use crate::state::App;
use forge::{ContentEntry, Contents, ForgeError, RepoRead};
use review_domain::SkillMetaRow;
use review_store::NewSkill;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Most files in a skill folder (FACTS.md).
pub const MAX_FILES: usize = 25;
/// Most bytes in a skill folder, all files together (FACTS.md).
pub const MAX_BYTES: u64 = 1024 * 1024;
/// Most folder listings one install makes (sub-folders included).
const MAX_LISTINGS: usize = 25;
/// Budget of the files besides SKILL.md that are appended to the agent's instructions.
const EXTRA_TEXT_BUDGET: usize = 32 * 1024;
/// The instructions file of a skill.
const SKILL_FILE: &str = "SKILL.md";

/// Why an install failed; every variant is answered 422 `{error}` (spec section 4, Skills).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
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

/// A parsed tree URL: owner, repo and the segments after `tree/` (ref then path, split later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeUrl {
    pub owner: String,
    pub repo: String,
    pub segments: Vec<String>,
}

impl TreeUrl {
    /// The (ref, path) readings of the segments, shortest ref first; the path is never empty.
    pub fn candidates(&self) -> Vec<(String, String)> {
        (1..self.segments.len())
            .map(|i| (self.segments[..i].join("/"), self.segments[i..].join("/")))
            .collect()
    }

    /// The skill name: the last path segment.
    pub fn name(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }
}

/// Whether `name` matches `^[a-z0-9]+(-[a-z0-9]+)*$`.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Parse `<forge_url>/<owner>/<repo>/tree/<ref>/<path>` (query and fragment ignored).
pub fn parse_tree_url(forge_url: &str, url: &str) -> Result<TreeUrl, InstallError> {
    let expected = || {
        InstallError::BadUrl(format!(
            "url: expected {}/<owner>/<repo>/tree/<ref>/<path>, got {url:?}",
            forge_url.trim_end_matches('/')
        ))
    };
    let base = forge_url.trim_end_matches('/');
    let url_trimmed = url.trim();
    let rest = url_trimmed
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(expected)?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect::<Option<_>>()
        .ok_or_else(expected)?;
    if segments.len() < 5 || segments[2] != "tree" {
        return Err(expected());
    }
    if segments
        .iter()
        .any(|s| s == "." || s == ".." || s.contains('\\'))
    {
        return Err(expected());
    }
    let tree = TreeUrl {
        owner: segments[0].clone(),
        repo: segments[1].trim_end_matches(".git").to_owned(),
        segments: segments[3..].to_vec(),
    };
    if !is_skill_name(tree.name()) {
        return Err(InstallError::BadUrl(format!(
            "skill name {:?} (the folder's name) must match ^[a-z0-9]+(-[a-z0-9]+)*$",
            tree.name()
        )));
    }
    Ok(tree)
}

/// The description in a SKILL.md front matter (`description:` between `---` lines; quoted,
/// plain or a `>`/`|` block), and the body after the front matter.
pub fn front_matter(text: &str) -> (Option<String>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(after) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut end = None;
    let mut offset = 0;
    for line in after.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = end else {
        return (None, text);
    };
    let yaml = &after[..yaml_end];
    let body = &after[body_start..];
    let mut lines = yaml.lines().peekable();
    let mut description = None;
    while let Some(line) = lines.next() {
        let Some(value) = line.strip_prefix("description:") else {
            continue;
        };
        let value = value.trim();
        let text = if value.starts_with('>') || value.starts_with('|') {
            let mut parts = Vec::new();
            while let Some(next) = lines.peek() {
                if !next.is_empty() && !next.starts_with(' ') && !next.starts_with('\t') {
                    break;
                }
                parts.push(next.trim().to_owned());
                lines.next();
            }
            let sep = if value.starts_with('|') { "\n" } else { " " };
            parts.join(sep).trim().to_owned()
        } else if value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')))
        {
            value[1..value.len() - 1].to_owned()
        } else {
            value.to_owned()
        };
        description = Some(text).filter(|t| !t.is_empty());
        break;
    }
    (description, body)
}

/// One file of a skill, relative to its folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    pub path: String,
    #[serde(with = "b64")]
    pub content: Vec<u8>,
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// The stored blob: JSON `{"version": 1, "files": [{path, content (base64)}]}`.
#[derive(Debug, Serialize, Deserialize)]
struct Blob {
    version: u32,
    files: Vec<SkillFile>,
}

fn encode_blob(files: &[SkillFile]) -> Vec<u8> {
    serde_json::to_vec(&Blob {
        version: 1,
        files: files.to_vec(),
    })
    .unwrap_or_default()
}

fn decode_blob(blob: &[u8]) -> anyhow::Result<Vec<SkillFile>> {
    Ok(serde_json::from_slice::<Blob>(blob)?.files)
}

/// A path inside a skill folder that is safe to join under it: relative, no `.`/`..`.
fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

fn forge_message(e: &ForgeError) -> String {
    e.to_string()
}

/// Fetch the folder `path` of `repo` at `sha` through the contents API, within the limits.
async fn fetch_folder(
    app: &App,
    repo: &RepoRead,
    path: &str,
    sha: &str,
) -> Result<Vec<SkillFile>, InstallError> {
    let forge = &app.forge;
    let fetch_err =
        |e: ForgeError| InstallError::Fetch(format!("cannot fetch {path}: {}", forge_message(&e)));
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

fn skill_md(files: &[SkillFile]) -> Option<&SkillFile> {
    files.iter().find(|f| f.path == SKILL_FILE).or_else(|| {
        files
            .iter()
            .find(|f| f.path.eq_ignore_ascii_case(SKILL_FILE))
    })
}

/// Install (or re-install) the skill at a tree URL: resolve, fetch, store enabled, write to
/// disk (spec section 4, Skills: install). Errors other than [`InstallError::Store`] are 422.
pub async fn install(app: &App, url: &str) -> Result<SkillMetaRow, InstallError> {
    let tree = parse_tree_url(&app.config.forge_url, url)?;
    let full_name = format!("{}/{}", tree.owner, tree.repo);
    let installation_id = app
        .records
        .store
        .repo(&full_name)
        .await?
        .map(|r| r.installation_id);
    let repo = RepoRead {
        owner: tree.owner.clone(),
        name: tree.repo.clone(),
        installation_id,
    };
    let mut resolved = None;
    let mut last_error = None;
    for (git_ref, path) in tree.candidates() {
        match app.forge.resolve_commit(&repo, &git_ref).await {
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
                    "cannot resolve the ref of {url}: {}",
                    forge_message(&e)
                )));
            }
        }
    }
    let Some((sha, path)) = resolved else {
        return Err(InstallError::Fetch(format!(
            "no branch, tag or commit of {full_name} matches {url}{}",
            last_error
                .map(|e| format!(": {}", forge_message(&e)))
                .unwrap_or_default()
        )));
    };
    let files = fetch_folder(app, &repo, &path, &sha).await?;
    let Some(md) = skill_md(&files) else {
        return Err(InstallError::Fetch(format!(
            "{path} at {sha} has no {SKILL_FILE}; a skill folder needs one"
        )));
    };
    let description = front_matter(&String::from_utf8_lossy(&md.content)).0;
    let name = tree.name().to_owned();
    let row = app
        .records
        .store
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
    if let Err(e) = materialise(&app.config.data_dir, &name, files).await {
        tracing::warn!(skill = %name, error = format!("{e:#}"), "cannot write the skill to disk");
    }
    Ok(row)
}

/// `DATA_DIR/skills`: the agent's skill folders.
pub fn skills_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("skills")
}

/// Write `files` to `DATA_DIR/skills/<name>/`, replacing what was there (written beside it,
/// then renamed into place).
pub async fn materialise(data_dir: &Path, name: &str, files: Vec<SkillFile>) -> anyhow::Result<()> {
    anyhow::ensure!(is_skill_name(name), "bad skill name {name:?}");
    let root = skills_dir(data_dir);
    let name = name.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        std::fs::create_dir_all(&root)?;
        let tmp = root.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
        for f in &files {
            anyhow::ensure!(safe_relative(&f.path), "unsafe path {:?}", f.path);
            let dest = tmp.join(&f.path);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(dest, &f.content)?;
        }
        let target = root.join(&name);
        for _ in 0..3 {
            if target.exists() {
                std::fs::remove_dir_all(&target)?;
            }
            if std::fs::rename(&tmp, &target).is_ok() {
                return Ok(());
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
        anyhow::bail!("cannot move the skill into {}", target.display())
    })
    .await?
}

/// Remove `DATA_DIR/skills/<name>/` (nothing to do when absent).
pub async fn remove_from_disk(data_dir: &Path, name: &str) -> anyhow::Result<()> {
    if !is_skill_name(name) {
        return Ok(());
    }
    let dir = skills_dir(data_dir).join(name);
    match tokio::fs::remove_dir_all(&dir).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Enable or disable a skill and keep the disk in step: None when there is no such skill.
pub async fn set_enabled(
    app: &App,
    name: &str,
    enabled: bool,
) -> Result<Option<SkillMetaRow>, review_store::StoreError> {
    let row = app.records.store.set_skill_enabled(name, enabled).await?;
    if row.is_some() {
        let written = if enabled {
            match app.records.store.skill_blob(name).await? {
                Some(blob) => match decode_blob(&blob) {
                    Ok(files) => materialise(&app.config.data_dir, name, files).await,
                    Err(e) => Err(e),
                },
                None => Ok(()),
            }
        } else {
            remove_from_disk(&app.config.data_dir, name).await
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

/// Delete a skill and its folder; deleting an unknown skill is not an error.
pub async fn delete(app: &App, name: &str) -> Result<(), review_store::StoreError> {
    app.records.store.delete_skill(name).await?;
    if let Err(e) = remove_from_disk(&app.config.data_dir, name).await {
        tracing::warn!(
            skill = name,
            error = format!("{e:#}"),
            "cannot remove the skill from disk"
        );
    }
    Ok(())
}

/// The agent's view of one skill: SKILL.md's body, then the other text files within budget.
fn agent_skill(row: &SkillMetaRow, files: &[SkillFile]) -> agent::Skill {
    let md = skill_md(files);
    let mut content = md
        .map(|f| {
            front_matter(&String::from_utf8_lossy(&f.content))
                .1
                .trim()
                .to_owned()
        })
        .unwrap_or_default();
    let mut budget = EXTRA_TEXT_BUDGET;
    let mut left_out = Vec::new();
    for f in files {
        if md.is_some_and(|m| m.path == f.path) {
            continue;
        }
        match std::str::from_utf8(&f.content) {
            Ok(text) if text.len() <= budget => {
                budget -= text.len();
                content.push_str(&format!("\n\n#### File {}\n{}", f.path, text.trim_end()));
            }
            _ => left_out.push(f.path.as_str()),
        }
    }
    if !left_out.is_empty() {
        content.push_str(&format!(
            "\n\n(Other files of this skill, not included: {})",
            left_out.join(", ")
        ));
    }
    agent::Skill {
        name: row.name.clone(),
        description: row.description.clone(),
        content,
    }
}

/// The enabled skills, offered to the reviewing agent (spec section 4, Skills: "used by
/// subsequent reviews"). Their folders are written to disk when missing. Never fails: a skill
/// that cannot be read is logged and left out, and a store error gives no skills.
pub async fn enabled_skills(app: &App) -> Vec<agent::Skill> {
    let rows = match app.records.store.enabled_skill_blobs().await {
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
        if !skills_dir(&app.config.data_dir).join(&row.name).is_dir()
            && let Err(e) = materialise(&app.config.data_dir, &row.name, files.clone()).await
        {
            tracing::warn!(skill = %row.name, error = format!("{e:#}"), "cannot write the skill to disk");
        }
        skills.push(agent_skill(&row, &files));
    }
    skills
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn skill_names_follow_the_pattern() {
        for ok in ["a", "review-rust", "x1-2y"] {
            assert!(is_skill_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", "a b"] {
            assert!(!is_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn tree_urls_give_every_ref_path_split() {
        let t = parse_tree_url(
            "https://github.com/",
            "https://github.com/o/r/tree/feature/x/skills/my-skill?tab=1",
        )
        .unwrap();
        assert_eq!(
            (t.owner.as_str(), t.repo.as_str(), t.name()),
            ("o", "r", "my-skill")
        );
        assert_eq!(
            t.candidates(),
            vec![
                ("feature".to_owned(), "x/skills/my-skill".to_owned()),
                ("feature/x".to_owned(), "skills/my-skill".to_owned()),
                ("feature/x/skills".to_owned(), "my-skill".to_owned()),
            ]
        );
        for bad in [
            "https://gitlab.com/o/r/tree/main/s",
            "https://github.com/o/r/blob/main/s",
            "https://github.com/o/r/tree/main",
            "https://github.com/o/r/tree/main/Bad_Name",
            "https://github.com/o/r/tree/main/../s",
            "not a url",
        ] {
            assert!(parse_tree_url("https://github.com", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn front_matter_description_forms() {
        let (d, body) = front_matter("---\nname: x\ndescription: \"Checks SQL\"\n---\n# Body\n");
        assert_eq!((d.as_deref(), body), (Some("Checks SQL"), "# Body\n"));
        let (d, _) = front_matter("---\ndescription: >\n  two\n  lines\nother: 1\n---\n");
        assert_eq!(d.as_deref(), Some("two lines"));
        let (d, body) = front_matter("# no front matter\n");
        assert_eq!((d, body), (None, "# no front matter\n"));
    }

    #[test]
    fn blob_round_trips_and_agent_text_includes_other_files() {
        let files = vec![
            SkillFile {
                path: "SKILL.md".into(),
                content: b"---\ndescription: d\n---\nDo X.\n".to_vec(),
            },
            SkillFile {
                path: "refs/a.md".into(),
                content: b"More.".to_vec(),
            },
            SkillFile {
                path: "img.png".into(),
                content: vec![0xff, 0x00],
            },
        ];
        let back = decode_blob(&encode_blob(&files)).unwrap();
        assert_eq!(back, files);
        let row = SkillMetaRow {
            name: "s".into(),
            source_url: String::new(),
            owner: String::new(),
            repo: String::new(),
            path: String::new(),
            git_ref: String::new(),
            description: Some("d".into()),
            enabled: 1,
            created_at: 0,
        };
        let skill = agent_skill(&row, &files);
        assert_eq!(
            skill.content,
            "Do X.\n\n#### File refs/a.md\nMore.\n\n(Other files of this skill, not included: img.png)"
        );
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for bad in ["", "/a", "../a", "a/../b", "a//b", "a\\b"] {
            assert!(!safe_relative(bad), "{bad}");
        }
        assert!(safe_relative("refs/a.md"));
    }
}
