//! The decode modules import each other in one direction only: a module that two others need
//! lives below both (`decode/header.rs` under `probe` and `svg`), so no two of them import each
//! other, directly or round a longer circle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use test_doubles::module_graph::find_cycle;

/// The `.rs` files of `dir` (not below it): file stem and text without `//` comments.
fn modules(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.find("//").map_or(l, |at| &l[..at]))
                .collect();
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                code.join("\n"),
            )
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first segment of every path after `prefix` in `code`: `a` of `prefix a::b`, and `a`,
/// `b` of `prefix {a, b::c, d as e}`.
fn named_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0, true);
            for (k, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && is_ident(c) => {
                        out.push(group[k..].chars().take_while(|c| is_ident(*c)).collect());
                        start = false;
                    }
                    c if !c.is_whitespace() => start = false,
                    _ => {}
                }
            }
        } else {
            out.push(rest.chars().take_while(|c| is_ident(*c)).collect());
        }
    }
    out
}

/// Which sibling each module of `dir` imports through `super::`, a name the parent `mod.rs`
/// re-exports (`pub use probe::probe`) counting as its module.
fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = modules(dir);
    let parent = files.remove("mod").unwrap();
    let names: BTreeSet<String> = files.keys().cloned().collect();
    let mut owner: BTreeMap<String, String> =
        names.iter().map(|m| (m.clone(), m.clone())).collect();
    for line in parent.lines().filter(|l| l.contains("use ")) {
        let path = line.split("use ").nth(1).unwrap_or("");
        let module: String = path.chars().take_while(|c| is_ident(*c)).collect();
        if names.contains(&module) {
            for item in named_after(path, &format!("{module}::")) {
                owner.insert(item, module.clone());
            }
            if let Some((_, alias)) = path.split_once(" as ") {
                let alias: String = alias.trim().chars().take_while(|c| is_ident(*c)).collect();
                owner.insert(alias, module.clone());
            }
        }
    }
    files
        .iter()
        .map(|(from, code)| {
            let to = named_after(code, "super::")
                .into_iter()
                .filter_map(|n| owner.get(&n).cloned())
                .filter(|m| m != from)
                .collect();
            (from.clone(), to)
        })
        .collect()
}

#[test]
fn decode_modules_import_no_circle() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/decode"));
    assert!(graph["probe"].contains("svg") && graph["svg"].contains("header"));
    assert_eq!(find_cycle(&graph), None, "module graph: {graph:#?}");
}

#[test]
fn a_circle_through_a_re_export_of_the_parent_is_found() {
    let dir = std::env::temp_dir().join(format!("decode-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in [
        (
            "mod.rs",
            "mod a;\nmod b;\npub use a::{run, Thing as Other};\n",
        ),
        ("a.rs", "use super::b; // super::nothing\n"),
        ("b.rs", "fn f() { super::run(); }\n"),
    ] {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let graph = graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(find_cycle(&graph).as_deref(), Some("a -> b -> a"));
}
