//! The parameter tables of docs/image-service.md §4 and of apps/image-server/README.md ("URL
//! API") and the TypeScript client (clients/typescript/src/index.ts) use the names of
//! [`image_params::PARAMS`], so a parameter added, renamed or dropped in one place and not the
//! others fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use image_params::{Name, PARAMS};

fn repo_file(path: &str) -> String {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The names in the first column of the `| Param |` tables of the "### Resize" section, in
/// order: `(spelling, alternatives)` for each name, the alternatives being the parenthesised
/// spellings after it (`watermark (or `watermarkImage`)`).
fn docs_names() -> Vec<(String, Vec<String>)> {
    let docs = repo_file("docs/image-service.md");
    let section = docs
        .split("\n### Resize\n")
        .nth(1)
        .unwrap()
        .split("\n### ")
        .next()
        .unwrap();
    let mut out = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        if line.starts_with("| Param |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let first = line.split('|').nth(1).unwrap();
        for part in first.split(',') {
            let (name, rest) = part.split_once('(').unwrap_or((part, ""));
            let alternatives = rest
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty() && *w != "or")
                .map(str::to_owned)
                .collect();
            out.push((name.trim().to_owned(), alternatives));
        }
    }
    out
}

#[test]
fn the_docs_table_lists_every_parameter_in_order_and_nothing_else() {
    let docs = docs_names();
    let listed: Vec<&str> = docs.iter().map(|(n, _)| n.as_str()).collect();
    let defined: Vec<&str> = PARAMS.iter().map(|p| p.spelling).collect();
    assert_eq!(listed, defined);
    for (name, alternatives) in &docs {
        for alt in alternatives {
            assert_eq!(
                Name::lookup(alt),
                Name::lookup(name),
                "docs: {alt} is given as another spelling of {name}"
            );
        }
    }
}

/// Parameters the TypeScript client does not send, and why.
const NOT_IN_TYPESCRIPT: &[(Name, &str)] = &[(
    Name::Progressive,
    "the original SDK had no progressive option, and the TypeScript client keeps its API",
)];

#[test]
fn the_typescript_client_sends_only_known_names_and_every_parameter() {
    let ts = repo_file("clients/typescript/src/index.ts");
    let mut sent = BTreeSet::new();
    for call in ["put(\"", "append(\""] {
        for (at, _) in ts.match_indices(call) {
            let name: String = ts[at + call.len()..]
                .chars()
                .take_while(|c| *c != '"')
                .collect();
            let known = Name::lookup(&name)
                .unwrap_or_else(|| panic!("index.ts sends {name:?}, which image-server ignores"));
            sent.insert(known);
        }
    }
    let missing: Vec<_> = PARAMS
        .iter()
        .map(|p| p.name)
        .filter(|n| !sent.contains(n) && !NOT_IN_TYPESCRIPT.iter().any(|(m, _)| m == n))
        .collect();
    assert!(missing.is_empty(), "index.ts never sends {missing:?}");
    for (name, why) in NOT_IN_TYPESCRIPT {
        assert!(!sent.contains(name), "index.ts sends {name:?} now ({why})");
    }
}

/// The parameters of image-server's README table ("URL API"): every name in its first column
/// (`` `format=blurhash` `` counting as `format`) with the rows it belongs to.
fn readme_names() -> Vec<String> {
    let readme = repo_file("apps/image-server/README.md");
    let section = readme
        .split("\n## URL API\n")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let first = l.split('|').nth(1).unwrap();
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|name| name.split('=').next().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Parameters the README's table leaves to a section of their own, and which.
const NOT_IN_README_TABLE: &[(Name, &str)] = &[(Name::Signature, "Signed URLs")];

#[test]
fn the_server_readme_table_names_every_parameter_and_nothing_else() {
    let mut listed = BTreeSet::new();
    for name in readme_names() {
        let known = Name::lookup(&name).unwrap_or_else(|| {
            panic!("apps/image-server/README.md lists {name:?}, which the server ignores")
        });
        listed.insert(known);
    }
    let missing: Vec<_> = PARAMS
        .iter()
        .map(|p| p.name)
        .filter(|n| !listed.contains(n) && !NOT_IN_README_TABLE.iter().any(|(m, _)| m == n))
        .collect();
    assert!(
        missing.is_empty(),
        "the README's URL API table lacks {missing:?}"
    );
    let readme = repo_file("apps/image-server/README.md");
    for (name, section) in NOT_IN_README_TABLE {
        assert!(
            readme.contains(&format!("\n## {section}"))
                || readme.contains(&format!("\n### {section}")),
            "{name:?} is said to be in the README's section {section:?}"
        );
    }
}
