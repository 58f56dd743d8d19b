#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Architecture checks over the sources, so the shape of the code cannot quietly
//! drift back:
//!
//! 1. **One writer.** Only `src/records/mod.rs` (not the other files of `records/`) may call a
//!    store method that writes review, repo or finding rows, because only there does each write
//!    publish its event (docs/review-service.md §6 rules 1 and 2). The writing methods are not listed by hand:
//!    they are read from `crates/review-store/src`, as every function whose body holds an
//!    `INSERT INTO`, `UPDATE` or `DELETE FROM` of `reviews`, `repos` or `findings`, or calls a
//!    function of the store that does (so `start_review` counts through its private
//!    `transition`, and a function using SQL kept in a `const` counts too). A check that the
//!    derivation finds the known writers, and no reader, keeps the scan honest.
//!    Every other file of `apps/review-server/src` is then searched for a call `.name(` or
//!    `::name(` of one of them, or of `pool(` (raw SQL would bypass the writer too).
//! 2. **No import cycle.** For review-server and for the agent crate, each top-level module
//!    (`src/x.rs` or `src/x/`) gets an edge to every module it names as `crate::y` (also inside
//!    `use crate::{y, z::w}` groups, and as `super::y` at the top level of `src/x.rs`). A
//!    depth-first search reports the first circle as `a -> b -> a`.
//!
//! Both scans read code only: comments are dropped and string and character literals blanked
//! first (with their newlines kept, so line numbers stay right), so a doc sentence or an error
//! message naming a method is not a call. The last tests run each check on small fixture
//! sources that break the rule, so a check that cannot fail would be seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use test_doubles::module_graph::find_cycle;

/// The tables whose rows only [`ONE_WRITER`] writes.
const WRITTEN_TABLES: &[&str] = &["reviews", "repos", "findings"];
/// The one file allowed to write them, relative to `src/`: the writer itself, not the other
/// files of its module (the replicas' events, the repo cache, the store view).
const ONE_WRITER: &str = "records/mod.rs";

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, with its path relative to `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let rel = path.strip_prefix(root).unwrap();
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// `src` with comments removed and the contents of string and char literals replaced by
/// spaces; newlines are kept everywhere so offsets keep their line.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !b
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push_str("r\"");
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                out.push(blank(b[j]));
                j += 1;
            }
            out.push('"');
            i = j;
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
            } else if b.get(i + 2) == Some(&'\'') {
                out.push_str("' '");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// An item of the store's sources: a function, or a `const` or `static` (SQL text may sit in
/// one), with the text from its keyword up to the next item.
struct Item {
    name: String,
    public: bool,
    is_fn: bool,
    text: String,
}

/// The functions, consts and statics of a source file, in order.
fn items(src: &str) -> Vec<Item> {
    let mut starts = Vec::new();
    for keyword in ["fn ", "const ", "static "] {
        for (at, _) in src.match_indices(keyword) {
            // An item starts its line, after qualifiers only (so `&'static str` is none).
            let line_start = src[..at].rfind('\n').map_or(0, |n| n + 1);
            let qualifiers = src[line_start..at].split_whitespace().all(|w| {
                matches!(
                    w,
                    "pub" | "pub(crate)" | "pub(super)" | "async" | "const" | "unsafe"
                )
            });
            if !qualifiers {
                continue;
            }
            let rest = &src[at + keyword.len()..];
            if keyword != "fn " && rest.starts_with("fn ") {
                continue; // `const fn`: the `fn` match names it
            }
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if name.is_empty() {
                continue;
            }
            let public = src[line_start..at].contains("pub");
            starts.push((at, name, public, keyword == "fn "));
        }
    }
    starts.sort_by_key(|s| s.0);
    let mut out = Vec::new();
    for (k, (at, name, public, is_fn)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(src.len(), |s| s.0);
        out.push(Item {
            name: name.clone(),
            public: *public,
            is_fn: *is_fn,
            text: src[*at..end].to_owned(),
        });
    }
    out
}

/// Whether `code` names `name` as a whole word (a use of a const or static).
fn mentions(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        !code[..at].chars().next_back().is_some_and(is_ident)
            && !code[at + name.len()..].chars().next().is_some_and(is_ident)
    })
}

/// Whether `body` (raw source, SQL strings included) writes one of [`WRITTEN_TABLES`].
fn writes_rows(body: &str) -> bool {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace("\\\"", "").replace('"', "").to_uppercase();
    WRITTEN_TABLES.iter().any(|table| {
        let table = table.to_uppercase();
        ["INSERT INTO ", "UPDATE ", "DELETE FROM "]
            .iter()
            .any(|verb| {
                let needle = format!("{verb}{table}");
                flat.match_indices(&needle).any(|(at, _)| {
                    !flat[at + needle.len()..]
                        .chars()
                        .next()
                        .is_some_and(is_ident)
                })
            })
    })
}

/// The public store methods that write review, repo or finding rows, directly, through SQL
/// kept in a const or static, or through another function of the store. `files` are the
/// store's sources.
fn writing_methods(files: &[(String, String)]) -> BTreeSet<String> {
    let items: Vec<Item> = files.iter().flat_map(|(_, s)| items(s)).collect();
    let mut writers: BTreeSet<&str> = items
        .iter()
        .filter(|i| writes_rows(&i.text))
        .map(|i| i.name.as_str())
        .collect();
    loop {
        let before = writers.len();
        for item in items.iter().filter(|i| i.is_fn) {
            let code = code_only(&item.text);
            let reaches = items.iter().any(|w| {
                w.name != item.name
                    && writers.contains(w.name.as_str())
                    && if w.is_fn {
                        calls(&code, &w.name).next().is_some()
                    } else {
                        mentions(&code, &w.name)
                    }
            });
            if reaches {
                writers.insert(&item.name);
            }
        }
        if writers.len() == before {
            break;
        }
    }
    items
        .iter()
        .filter(|i| i.is_fn && i.public && writers.contains(i.name.as_str()))
        .map(|i| i.name.clone())
        .collect()
}

/// Offsets in `code` of calls of a method or path function named `name`: `.name(` or
/// `::name(`, whitespace allowed before the parenthesis.
fn calls<'a>(code: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(name).filter_map(move |(at, _)| {
        let before = code[..at].trim_end();
        let is_path = before.ends_with('.') || before.ends_with("::");
        let after = code[at + name.len()..].trim_start();
        let word_end = !code[at + name.len()..].chars().next().is_some_and(is_ident);
        (is_path && word_end && after.starts_with('(')).then_some(at)
    })
}

/// Each call of a writing method (or of `pool`) outside [`ONE_WRITER`]: `file:line: message`.
fn writes_outside_records(
    app_files: &[(String, String)],
    writers: &BTreeSet<String>,
) -> Vec<String> {
    let mut found = Vec::new();
    for (path, src) in app_files {
        if path == ONE_WRITER {
            continue;
        }
        let code = code_only(src);
        for name in writers.iter().map(String::as_str).chain(["pool"]) {
            for at in calls(&code, name) {
                found.push(format!(
                    "src/{path}:{}: calls the store's `{name}`, which writes review, repo or \
                     finding rows (or reaches raw SQL); go through `Records` in src/{ONE_WRITER}",
                    line_of(&code, at)
                ));
            }
        }
    }
    found
}

/// The top-level module a source file belongs to (`None` for the crate roots).
fn module_of(path: &str) -> Option<String> {
    if path == "lib.rs" || path == "main.rs" {
        return None;
    }
    let first = path.split('/').next()?;
    Some(first.trim_end_matches(".rs").to_owned())
}

/// Edges between top-level modules: which modules each one names through `crate::`.
fn module_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| module_of(p)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (path, src) in files {
        let Some(from) = module_of(path) else {
            continue;
        };
        let code = code_only(src);
        let mut named = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            if code[..at].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `crate::{a, b::c, d as e}`: the first segment of each top-level item.
                let mut depth = 0;
                let mut item_start = true;
                for (k, ch) in group.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && is_ident(c) => {
                            named.push(
                                group[k..]
                                    .chars()
                                    .take_while(|c| is_ident(*c))
                                    .collect::<String>(),
                            );
                            item_start = false;
                        }
                        c if !c.is_whitespace() => item_start = false,
                        _ => {}
                    }
                }
            } else {
                named.push(rest.chars().take_while(|c| is_ident(*c)).collect());
            }
        }
        if !path.contains('/') {
            // `super::x` at the top level of `src/m.rs` names the crate root's module x.
            let mut depth = 0i32;
            for (k, ch) in code.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    's' if depth == 0
                        && code[k..].starts_with("super::")
                        && !code[..k].chars().next_back().is_some_and(is_ident) =>
                    {
                        named.push(
                            code[k + "super::".len()..]
                                .chars()
                                .take_while(|c| is_ident(*c))
                                .collect(),
                        );
                    }
                    _ => {}
                }
            }
        }
        for to in named {
            if to != from && modules.contains(&to) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

fn store_sources() -> Vec<(String, String)> {
    rust_files(&manifest().join("../../crates/review-store/src"))
}

#[test]
fn only_records_writes_review_repo_and_finding_rows() {
    let writers = writing_methods(&store_sources());
    for known in [
        "register_repo",
        "update_repo",
        "delete_repo",
        "insert_review",
        "start_review",
        "complete_review",
        "fail_review",
        "skip_review",
        "insert_findings",
    ] {
        assert!(
            writers.contains(known),
            "the scan of review-store no longer finds `{known}` among the writers ({writers:?}): \
             fix `writing_methods` before trusting this test"
        );
    }
    for reader in [
        "review",
        "repos",
        "findings_for_pr",
        "settings",
        "put_setting",
    ] {
        assert!(!writers.contains(reader), "`{reader}` is not a writer");
    }
    let found = writes_outside_records(&rust_files(&manifest().join("src")), &writers);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn review_server_modules_import_no_circle() {
    let graph = module_graph(&rust_files(&manifest().join("src")));
    assert!(graph.contains_key("state") && graph.contains_key("records"));
    assert_eq!(find_cycle(&graph), None, "module graph: {graph:#?}");
}

#[test]
fn agent_modules_import_no_circle() {
    let graph = module_graph(&rust_files(&manifest().join("../../crates/agent/src")));
    assert!(graph.contains_key("review") && graph.contains_key("prompt"));
    assert_eq!(find_cycle(&graph), None, "module graph: {graph:#?}");
}

#[test]
fn git_cache_modules_import_no_circle() {
    let graph = module_graph(&rust_files(&manifest().join("../../crates/git-cache/src")));
    assert!(graph.contains_key("diff") && graph.contains_key("funcname"));
    assert_eq!(find_cycle(&graph), None, "module graph: {graph:#?}");
}

// ---- the checks themselves, on sources that break the rules ----------------------------------

fn fixture(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
        .collect()
}

const FIXTURE_STORE: &str = r##"
impl Store {
    /// Reads.
    pub async fn review(&self, id: i64) -> Result<Option<ReviewRow>> {
        sqlx::query("SELECT * FROM reviews WHERE id = ?").fetch_optional(&self.pool).await
    }
    pub async fn fail_review(&self, id: i64) -> Result<()> {
        sqlx::query(
            "UPDATE reviews SET status = 'failed'
             WHERE id = ?",
        )
    }
    pub async fn start_review(&self, id: i64) -> Result<()> {
        self.transition(id).await
    }
    async fn transition(&self, id: i64) -> Result<()> {
        sqlx::query(&format!("UPDATE reviews SET {set} WHERE id = ?2"))
    }
    pub async fn add(&self) -> Result<()> {
        sqlx::query(r#"INSERT INTO "findings" (body) VALUES (?)"#)
    }
    pub async fn put_setting(&self) -> Result<()> {
        sqlx::query("DELETE FROM settings WHERE key = ?")
    }
    pub async fn touch_reviews_log(&self) -> Result<()> {
        sqlx::query("UPDATE reviews_log SET n = 1")
    }
    pub(crate) const fn columns() -> &'static str {
        "id, status"
    }
}

const DELETE_REPO: &str = "DELETE FROM repos WHERE full_name = ?";

impl Store {
    pub async fn remove(&self, name: &str) -> Result<()> {
        sqlx::query(DELETE_REPO).bind(name)
    }
    pub async fn repos(&self) -> Result<Vec<RepoRow>> {
        sqlx::query("SELECT * FROM repos")
    }
}
"##;

#[test]
fn the_writer_scan_derives_writers_through_private_helpers() {
    let writers = writing_methods(&fixture(&[("lib.rs", FIXTURE_STORE)]));
    let want: BTreeSet<String> = ["add", "fail_review", "remove", "start_review"]
        .map(String::from)
        .into();
    assert_eq!(writers, want);
}

#[test]
fn the_writer_check_fails_on_a_write_outside_records() {
    let writers: BTreeSet<String> = ["fail_review", "start_review"].map(String::from).into();
    let app = fixture(&[
        (
            "records/mod.rs",
            "fn f(&self) { self.db.fail_review(1).await; }",
        ),
        (
            "records/replicas.rs",
            "fn g(&self) { self.db.start_review(2).await; }",
        ),
        (
            "routes/reviews.rs",
            "async fn stop(app: &App) {\n    // a comment may say app.records.store.fail_review(1)\n    let m = \"fail_review(\";\n    app.records\n        .store\n        .fail_review(id, m)\n        .await;\n}",
        ),
        (
            "pipeline.rs",
            "fn x() { Store::start_review (&s, 1); s.pool(); }",
        ),
        (
            "improver.rs",
            "fn y() { records.fail(1); my_fail_review(2); }",
        ),
    ]);
    let found = writes_outside_records(&app, &writers);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].starts_with("src/records/replicas.rs:1: calls the store's `start_review`"));
    assert!(found[1].starts_with("src/routes/reviews.rs:6: calls the store's `fail_review`"));
    assert!(found[2].starts_with("src/pipeline.rs:1: calls the store's `start_review`"));
    assert!(found[3].starts_with("src/pipeline.rs:1: calls the store's `pool`"));
}

#[test]
fn the_cycle_check_fails_on_modules_that_import_each_other() {
    let files = fixture(&[
        (
            "lib.rs",
            "pub mod a; pub mod b; pub mod c; use crate::a::X;",
        ),
        ("a.rs", "use crate::b::Y;\n// use crate::c::Z;\n"),
        ("b/mod.rs", "mod inner;"),
        (
            "b/inner.rs",
            "use crate::{\n    c::{self, W},\n    a as alias,\n};",
        ),
        ("c.rs", "fn f() -> &'static str { \"crate::a\" }"),
    ]);
    let graph = module_graph(&files);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_owned()]));
    assert_eq!(graph["b"], BTreeSet::from(["a".to_owned(), "c".to_owned()]));
    assert!(graph["c"].is_empty());
    assert_eq!(find_cycle(&graph).as_deref(), Some("a -> b -> a"));

    let top_level_super = fixture(&[
        ("x.rs", "use super::y::T;\nmod tests { use super::*; }"),
        ("y.rs", "use crate::x;"),
    ]);
    assert_eq!(
        find_cycle(&module_graph(&top_level_super)).as_deref(),
        Some("x -> y -> x")
    );

    let acyclic = fixture(&[("x.rs", "use crate::y;"), ("y.rs", "")]);
    assert_eq!(find_cycle(&module_graph(&acyclic)), None);
}

#[test]
fn code_only_drops_comments_and_blanks_literals_but_keeps_lines() {
    let src = "let a = \"x // y\"; // gone\nlet b = '\"'; /* gone\n */ let c: &'a str = r#\"q\"#;";
    let code = code_only(src);
    assert_eq!(code.lines().count(), src.lines().count());
    assert!(!code.contains("gone") && !code.contains('y') && !code.contains('q'));
    assert!(code.contains("let c: &'a str"));
}
