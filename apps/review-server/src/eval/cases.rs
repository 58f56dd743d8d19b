//! The eval's cases (docs/review-service.md, "Measuring the reviewer"): JSON arrays in the
//! Martian code-review benchmark's golden format (`pr_title`, `url`, `comments: [{comment,
//! severity}]`), so its published golden files load as they are, each case optionally naming
//! its repository and commits (`id`, `repo`, `base`, `head`). Every case is resolved before the
//! first model call, so a missing repository or commit costs nothing.

use anyhow::Context;
use git_cache::Repo;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A comment a human reviewer made (or would make) on the change: what the reviewer should
/// find.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenComment {
    /// The issue, in words.
    pub comment: String,
    /// The benchmark's severity (`Critical`, `High`, `Medium`, `Low`); informative only.
    #[serde(default)]
    pub severity: Option<String>,
}

/// One entry of a case file as written; fields beyond these (`kind`, `license`, `source`) are
/// ignored.
#[derive(Debug, Clone, Deserialize)]
struct CaseEntry {
    #[serde(default)]
    id: Option<String>,
    pr_title: String,
    url: String,
    #[serde(default)]
    comments: Vec<GoldenComment>,
    /// A git repository (directory) or bundle (`*.bundle`), relative to the case file.
    #[serde(default)]
    repo: Option<String>,
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    head: Option<String>,
    #[serde(default)]
    language: Option<String>,
}

/// A case ready to run: its repository opened and both commits resolved to SHAs.
#[derive(Debug, Clone)]
pub struct Case {
    /// Unique within the run: the entry's `id`, else `<repository>-<pull request number>`
    /// from its url, else `case-<n>`.
    pub id: String,
    /// The pull request's title.
    pub title: String,
    /// Where the change comes from.
    pub url: String,
    /// The language, when the case says.
    pub language: Option<String>,
    /// What the reviewer should find; empty for a clean change.
    pub golden: Vec<GoldenComment>,
    /// A git directory holding both commits.
    pub repo: PathBuf,
    /// Base commit SHA.
    pub base: String,
    /// Head commit SHA.
    pub head: String,
}

/// Where cases without a repository of their own are looked up, and how their commits are
/// found.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// `--repo`: the repository of cases that name none.
    pub repo: Option<PathBuf>,
    /// `--base-ref`: for cases without `base`, the base is the merge base of the head and this.
    pub base_ref: String,
    /// `--case`: only these ids; empty: all.
    pub only: Vec<String>,
}

/// The loaded cases and the temporary clones of their bundles (removed when dropped).
pub struct Loaded {
    /// In file order.
    pub cases: Vec<Case>,
    /// Clones of bundles, kept for the run.
    _clones: Vec<tempfile::TempDir>,
}

/// Reads every case file and resolves every case. Errors: a file that cannot be read or is not
/// a JSON array of cases; then, all together, each case whose repository, bundle or commits
/// are missing, by case id and file; an id of `only` that no file has.
pub fn load(files: &[PathBuf], defaults: &Defaults) -> anyhow::Result<Loaded> {
    let mut entries = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let list: Vec<CaseEntry> = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a JSON array of cases (pr_title, url, comments)",
                file.display()
            )
        })?;
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        entries.extend(list.into_iter().map(|e| (file.clone(), dir.clone(), e)));
    }
    let mut seen = BTreeSet::new();
    let mut named = Vec::new();
    for (n, (file, dir, entry)) in entries.into_iter().enumerate() {
        let base_id = entry
            .id
            .clone()
            .or_else(|| id_from_url(&entry.url))
            .unwrap_or_else(|| format!("case-{}", n + 1));
        let mut id = base_id.clone();
        let mut k = 2;
        while !seen.insert(id.clone()) {
            id = format!("{base_id}-{k}");
            k += 1;
        }
        named.push((id, file, dir, entry));
    }
    let unknown: Vec<&String> = defaults
        .only
        .iter()
        .filter(|id| !named.iter().any(|(n, ..)| n == *id))
        .collect();
    if !unknown.is_empty() {
        anyhow::bail!("no case has the id(s) {unknown:?}");
    }
    if !defaults.only.is_empty() {
        named.retain(|(id, ..)| defaults.only.contains(id));
    }
    let mut clones: BTreeMap<PathBuf, Result<tempfile::TempDir, String>> = BTreeMap::new();
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for (id, file, dir, entry) in named {
        match resolve(&id, &dir, entry, defaults, &mut clones) {
            Ok(case) => cases.push(case),
            Err(e) => problems.push(format!("case `{id}` ({}): {e}", file.display())),
        }
    }
    if !problems.is_empty() {
        anyhow::bail!(
            "{} of the cases cannot run; nothing was sent to a model:\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    Ok(Loaded {
        cases,
        _clones: clones.into_values().filter_map(Result::ok).collect(),
    })
}

/// `<repository>-<number>` from a pull request url (`.../owner/repo/pull/123`).
fn id_from_url(url: &str) -> Option<String> {
    let number = pull_number(url)?;
    let parts: Vec<&str> = url.trim_end_matches('/').split('/').collect();
    let at = parts.iter().position(|p| *p == "pull")?;
    let repo = parts.get(at.checked_sub(1)?)?;
    Some(format!("{repo}-{number}"))
}

/// The pull request number of a url `.../pull/<n>[/...]`.
fn pull_number(url: &str) -> Option<u64> {
    let mut parts = url.split('/');
    parts.find(|p| *p == "pull")?;
    parts.next()?.parse().ok()
}

fn resolve(
    id: &str,
    dir: &Path,
    entry: CaseEntry,
    defaults: &Defaults,
    clones: &mut BTreeMap<PathBuf, Result<tempfile::TempDir, String>>,
) -> Result<Case, String> {
    let repo_path = match (&entry.repo, &defaults.repo) {
        (Some(r), _) => dir.join(r),
        (None, Some(r)) => r.clone(),
        (None, None) => {
            return Err(
                "it names no repository; give one with --repo (a clone with the pull request's \
                 head fetched)"
                    .into(),
            );
        }
    };
    if !repo_path.exists() {
        let hint = if repo_path.extension().is_some_and(|e| e == "bundle") {
            " (the committed cases' bundles are built by \
             bench/review-quality/cases/fetch-upstreams.sh)"
        } else {
            ""
        };
        return Err(format!(
            "repository {} not found{hint}",
            repo_path.display()
        ));
    }
    let git_dir = if repo_path.is_file() {
        let clone = clones
            .entry(repo_path.clone())
            .or_insert_with(|| unbundle(&repo_path));
        match clone {
            Ok(dir) => dir.path().to_path_buf(),
            Err(e) => return Err(e.clone()),
        }
    } else {
        repo_path.clone()
    };
    let repo = Repo::open(&git_dir)
        .map_err(|e| format!("{} is not a git repository: {e}", repo_path.display()))?;
    let head_rev = match (&entry.head, pull_number(&entry.url)) {
        (Some(h), _) => h.clone(),
        (None, Some(n)) => format!("refs/pull/{n}/head"),
        (None, None) => {
            return Err("it has no `head` and its url names no pull request".into());
        }
    };
    let head = repo.resolve(&head_rev).map_err(|_| {
        if entry.head.is_none() {
            format!(
                "{head_rev} is not in {}; fetch it with `git fetch origin {}:{head_rev}`",
                repo_path.display(),
                head_rev.trim_start_matches("refs/")
            )
        } else {
            format!("head {head_rev} is not in {}", repo_path.display())
        }
    })?;
    let base = match &entry.base {
        Some(b) => repo
            .resolve(b)
            .map_err(|_| format!("base {b} is not in {}", repo_path.display()))?,
        None => {
            let other = repo.resolve(&defaults.base_ref).map_err(|_| {
                format!(
                    "--base-ref {} is not in {}",
                    defaults.base_ref,
                    repo_path.display()
                )
            })?;
            repo.merge_base(&head, &other).map_err(|e| {
                format!("no merge base of {head_rev} and {}: {e}", defaults.base_ref)
            })?
        }
    };
    if base == head {
        return Err(format!("base and head are the same commit {base}"));
    }
    Ok(Case {
        id: id.to_owned(),
        title: entry.pr_title,
        url: entry.url,
        language: entry.language,
        golden: entry.comments,
        repo: git_dir,
        base,
        head,
    })
}

/// A bare clone of a git bundle in a temporary directory, through the `git` command (gix reads
/// no bundles).
fn unbundle(bundle: &Path) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::Builder::new()
        .prefix("review-eval-")
        .tempdir()
        .map_err(|e| format!("creating a temporary directory: {e}"))?;
    let out = std::process::Command::new("git")
        .args(["clone", "--bare", "--quiet", "--"])
        .arg(bundle)
        .arg(dir.path())
        .output()
        .map_err(|e| format!("reading the bundle {} needs git: {e}", bundle.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} is not a readable git bundle: {}",
            bundle.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_pull_request_urls() {
        assert_eq!(
            id_from_url("https://github.com/grafana/grafana/pull/79265").as_deref(),
            Some("grafana-79265")
        );
        assert_eq!(
            id_from_url("https://github.com/o/r/commit/abc").as_deref(),
            None
        );
        assert_eq!(pull_number("https://github.com/o/r/pull/7/files"), Some(7));
    }

    #[test]
    fn martian_golden_entries_parse_as_they_are() {
        let text = r#"[{"pr_title": "T", "url": "https://github.com/o/r/pull/1",
            "comments": [{"comment": "Race condition", "severity": "High"}]}]"#;
        let list: Vec<CaseEntry> = serde_json::from_str(text).unwrap();
        assert_eq!(list[0].comments[0].severity.as_deref(), Some("High"));
        assert!(list[0].repo.is_none() && list[0].base.is_none());
    }
}
