#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The arrows allowed between the workspace's crates (docs/architecture.md, Layout), checked
//! from every member's Cargo.toml: which of our crates each may depend on, that the image side
//! links no review crate and no database or git library, that review-domain links nothing that
//! does I/O, and that only review-store links the SQL libraries. Dev-dependencies are left out:
//! tests may pull in doubles and the server under test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every workspace member's name and its normal dependencies (`[dependencies]` and the
/// target-specific ones), read line by line from its Cargo.toml.
fn members() -> BTreeMap<String, BTreeSet<String>> {
    let root = root();
    let mut manifests = vec![root.join("tests/Cargo.toml")];
    for group in ["apps", "crates"] {
        for entry in std::fs::read_dir(root.join(group)).unwrap().flatten() {
            let manifest = entry.path().join("Cargo.toml");
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    let mut out = BTreeMap::new();
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).unwrap();
        let (mut name, mut deps, mut section) = (None, BTreeSet::new(), String::new());
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_owned();
                continue;
            }
            // Only `name = ...` and `name.workspace = true` lines; the continuation lines of a
            // multi-line table or array are not dependencies.
            if line.is_empty() || line.starts_with(['#', '"', ']']) || !line.contains('=') {
                continue;
            }
            let key = line
                .split(['=', '.'])
                .next()
                .unwrap_or_default()
                .trim()
                .trim_matches('"')
                .to_owned();
            if section == "[package]" && key == "name" {
                name = line
                    .split('=')
                    .nth(1)
                    .map(|v| v.trim().trim_matches('"').to_owned());
            } else if section == "[dependencies]"
                || (section.starts_with("[target.") && section.ends_with(".dependencies]"))
            {
                deps.insert(key);
            }
        }
        out.insert(name.unwrap(), deps);
    }
    out
}

/// Our crates, and the ones each may depend on (docs/architecture.md, "The arrows allowed
/// between crates").
const ARROWS: [(&str, &[&str]); 12] = [
    (
        "review-server",
        &[
            "review-domain",
            "review-store",
            "forge",
            "git-cache",
            "agent",
            "events",
        ],
    ),
    ("review-store", &["review-domain"]),
    ("forge", &["review-domain"]),
    ("agent", &["review-domain"]),
    ("git-cache", &[]),
    ("events", &[]),
    ("review-domain", &[]),
    ("image-server", &["image-pipeline", "image-params"]),
    ("image-pipeline", &["image-params"]),
    ("image-client", &["image-params"]),
    ("image-params", &[]),
    ("test-doubles", &[]),
];

#[test]
fn each_crate_depends_only_on_the_crates_its_arrows_allow() {
    let members = members();
    let ours: BTreeSet<&str> = ARROWS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        members.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        ours,
        "a crate was added or removed: give it its arrows here and in docs/architecture.md"
    );
    // The parser reads what is there (a walk that finds nothing would pass everything).
    assert!(members["review-server"].contains("agent"), "{members:?}");
    assert!(
        members["image-server"].contains("image-pipeline"),
        "{members:?}"
    );
    assert!(members["review-store"].contains("sqlx"), "{members:?}");
    for (name, allowed) in ARROWS {
        let used: BTreeSet<&str> = members[name]
            .iter()
            .map(String::as_str)
            .filter(|d| ours.contains(d))
            .collect();
        let allowed: BTreeSet<&str> = allowed.iter().copied().collect();
        assert!(
            used.is_subset(&allowed),
            "{name} depends on {:?}, outside its arrows {allowed:?}",
            used.difference(&allowed).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_image_side_links_no_review_crate_database_or_git() {
    let members = members();
    for name in [
        "image-server",
        "image-pipeline",
        "image-client",
        "image-params",
    ] {
        for dep in &members[name] {
            assert!(
                !(dep.starts_with("review-")
                    || [
                        "agent",
                        "forge",
                        "git-cache",
                        "events",
                        "sqlx",
                        "rusqlite",
                        "gix"
                    ]
                    .contains(&dep.as_str())),
                "{name} links {dep}"
            );
        }
    }
}

#[test]
fn the_domain_links_nothing_that_does_io() {
    let members = members();
    let io = [
        "tokio",
        "reqwest",
        "sqlx",
        "rusqlite",
        "gix",
        "object_store",
        "axum",
        "hyper",
        "tempfile",
    ];
    for dep in &members["review-domain"] {
        assert!(!io.contains(&dep.as_str()), "review-domain links {dep}");
    }
    // Nor does its code reach the file system, the network or a process on its own.
    let mut stack = vec![root().join("crates/review-domain/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for needle in ["std::fs", "std::net", "std::process", "std::env", "File::"] {
                assert!(!text.contains(needle), "{} uses {needle}", path.display());
            }
        }
    }
}

#[test]
fn only_review_store_links_the_sql_libraries() {
    for (name, deps) in members() {
        for sql in ["sqlx", "rusqlite"] {
            assert!(
                name == "review-store" || !deps.contains(sql),
                "{name} links {sql}: all SQL lives in review-store"
            );
        }
    }
}
