#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every reference to `docs/` in the repository resolves in a clone: the file exists, a
//! `docs/review-service.md §N` or `docs/image-service.md §N` names a section heading
//! `## §N ...`, a `docs/architecture.md, <Section>` names one of its `##` headings, and a
//! quoted `docs/<file>.md, "<Section>"` names a heading of that file. Sources are read as text
//! (Rust, TOML, shell, YAML, Markdown, TypeScript), so a comment citing a section that was
//! renamed or never written fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Folders never read: build output, dependencies, fixtures and VCS data.
const SKIPPED_DIRS: [&str; 8] = [
    "target",
    "node_modules",
    "dist",
    ".git",
    "fixtures",
    "test-results",
    "corpus",
    "artifacts",
];

/// Extensions of the files read (SQL is left out: seed data names files of reviewed repos).
const READ_EXTENSIONS: [&str; 10] = [
    "rs",
    "toml",
    "md",
    "sh",
    "yaml",
    "yml",
    "mjs",
    "ts",
    "tsx",
    "Dockerfile",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let file_type = entry.file_type().unwrap();
        if file_type.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) {
                sources(&path, out);
            }
        } else if file_type.is_file()
            && READ_EXTENSIONS
                .iter()
                .any(|ext| name.ends_with(&format!(".{ext}")) || name == *ext)
        {
            out.push(path);
        }
    }
}

/// The `##` and `###` headings of a Markdown file, without the hashes.
fn headings(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("## ").or_else(|| l.strip_prefix("### ")))
        .map(|h| h.trim().to_owned())
        .collect()
}

/// One reference found in a source: the file under docs/ and what follows its name.
struct Reference {
    at: String,
    file: String,
    rest: String,
}

/// Every `docs/<name>.md` in `text`, with up to 60 characters after it (a `//!`, `///` or `#`
/// at a line break is joined to the line before, as comments wrap).
fn references(at: &Path, text: &str) -> Vec<Reference> {
    let joined: String = text
        .lines()
        .map(|l| {
            let t = l.trim_start();
            ["//!", "///", "//", "#"]
                .iter()
                .find_map(|p| t.strip_prefix(p))
                .unwrap_or(t)
                .trim()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = joined[from..].find("docs/") {
        let start = from + i + "docs/".len();
        from = start;
        // `apps/image-server/docs/...` or a URL path is not ours.
        if start > 5 && joined[..start - 5].ends_with(|c: char| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let name: String = joined[start..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        let after = &joined[start + name.len()..];
        if name.is_empty() || !after.starts_with(".md") {
            continue;
        }
        out.push(Reference {
            at: at.display().to_string(),
            file: format!("{name}.md"),
            rest: after[3..].chars().take(60).collect(),
        });
    }
    out
}

#[test]
fn every_docs_reference_resolves() {
    let root = root();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let shown = path.strip_prefix(&root).unwrap_or(path);
        for r in references(shown, &text) {
            checked += 1;
            let Ok(doc) = std::fs::read_to_string(root.join("docs").join(&r.file)) else {
                problems.push(format!("{}: docs/{} does not exist", r.at, r.file));
                continue;
            };
            let heads = headings(&doc);
            if let Some(n) = r.rest.strip_prefix(" §") {
                let n: String = n.chars().take_while(char::is_ascii_digit).collect();
                if !n.is_empty() && !heads.iter().any(|h| h.starts_with(&format!("§{n} "))) {
                    problems.push(format!("{}: docs/{} has no section §{n}", r.at, r.file));
                }
            } else if let Some(quoted) = r.rest.strip_prefix(", \"") {
                let section = quoted.split('"').next().unwrap_or_default();
                if !heads.contains(section) {
                    problems.push(format!(
                        "{}: docs/{} has no section \"{section}\"",
                        r.at, r.file
                    ));
                }
            } else if r.file == "architecture.md"
                && let Some(named) = r.rest.strip_prefix(", ")
                && named.starts_with(|c: char| c.is_ascii_uppercase())
                && !heads.iter().any(|h| named.starts_with(h.as_str()))
            {
                problems.push(format!(
                    "{}: docs/architecture.md has no section starting {named:?}",
                    r.at
                ));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} references found: is the walk broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_spec_numbered_sections_are_all_there() {
    for file in ["review-service.md", "image-service.md"] {
        let doc = std::fs::read_to_string(root().join("docs").join(file)).unwrap();
        let numbered: Vec<String> = headings(&doc)
            .into_iter()
            .filter(|h| h.starts_with('§'))
            .collect();
        let want = [
            "§1 What the service does",
            "§2 Resources and fields",
            "§3 States and transitions",
            "§4 Endpoints",
            "§5 Authentication",
            "§6 Events",
            "§7 Errors",
            "§8 Limits",
            "§9 Versioning",
        ];
        assert_eq!(numbered, want, "{file}");
    }
    let architecture = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let heads = headings(&architecture);
    for section in [
        "Layout",
        "Store",
        "Git",
        "Agent",
        "Findings",
        "Lifecycle extras",
        "Repos",
        "Dashboard",
        "Chat",
        "Image server decisions",
        "Test doubles and real parts",
        "Scale",
        "Untrusted input",
    ] {
        assert!(
            heads.contains(section),
            "docs/architecture.md lacks {section}"
        );
    }
}

#[test]
fn configuration_md_lists_every_environment_variable_of_both_servers() {
    let docs = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let mut seen = 0;
    for config in [
        "apps/review-server/src/config.rs",
        "apps/image-server/src/config.rs",
    ] {
        let source = std::fs::read_to_string(root().join(config)).unwrap();
        for piece in source.split("env = \"").skip(1) {
            let name = piece.split('"').next().unwrap_or_default();
            seen += 1;
            assert!(
                docs.contains(&format!("| {name} |")),
                "docs/configuration.md has no row for {name} ({config})"
            );
        }
    }
    assert!(
        seen > 40,
        "only {seen} variables found: is the scan broken?"
    );
}

/// Files outside the repository that code once cited: the team's specs, design notes and
/// checked facts live beside the repository, not in a clone, so a citation of them resolves
/// nowhere. The migrations are the exception: sqlx checksums every applied file, so their
/// comments stay as they were written. bench/ is not read: its comparison scripts take the
/// team's sample photos from beside the repository as data, and say so.
const OUTSIDE: [&str; 7] = [
    // Spelled in two halves, so that this list is not itself a citation.
    concat!("../", "shared"),
    concat!("DESIGN", ".md"),
    "FACTS.md",
    "STYLE.md",
    "spec/review-service.md",
    "spec/image-service.md",
    "spec section",
];

#[test]
fn no_source_cites_a_file_outside_the_repository() {
    let root = root();
    let mut files = Vec::new();
    for dir in [
        "apps",
        "crates",
        "tests",
        "scripts",
        "deploy",
        "dashboard/src",
        "dashboard/e2e",
    ] {
        sources(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            // This test names the patterns it looks for.
            if file.ends_with("docs_references.rs") {
                break;
            }
            if let Some(p) = OUTSIDE.iter().find(|p| line.contains(*p)) {
                found.push(format!("{}:{}: cites {p}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "citations that resolve nowhere in a clone:\n{}",
        found.join("\n")
    );
}
