//! The diff honours `.gitattributes` as git does (`binary`, `-diff`, `diff`,
//! `diff=<driver>` with git's built-in hunk-header patterns), and content that is not UTF-8
//! keeps its bytes; every case is compared with `git diff` and `git patch-id --stable` run in
//! a working copy checked out at the head.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, NEVER};
use git_cache::Limits;

/// `main` holding `files`, then `feature` checked out from it with `edits` committed.
fn diff_after(files: &[(&str, &[u8])], edits: &[(&str, &[u8])]) -> (Fixture, Vec<u8>) {
    let f = Fixture::new();
    for (path, content) in files {
        f.write(path, content);
    }
    f.commit("base");
    f.git(&["checkout", "-q", "-b", "feature"]);
    for (path, content) in edits {
        f.write(path, content);
    }
    f.commit("edit");
    let diff = f.assert_diff_matches("main", "feature");
    (f, diff)
}

fn text(diff: &[u8]) -> String {
    String::from_utf8_lossy(diff).into_owned()
}

/// 20 numbered body lines in a block that opens with `open`, so a change deep inside has a
/// function line above it only a driver's pattern finds (the lines are indented).
fn nested(open: &str, body: &str, close: &str) -> String {
    let mut s = String::from("// header comment\n");
    s += open;
    for i in 1..=20 {
        s += &format!("{body}{i}\n");
    }
    s += close;
    s
}

fn edited(source: &str, body: &str) -> String {
    source.replace(&format!("{body}15\n"), &format!("{body}fifteen\n"))
}

#[test]
fn binary_attribute_prints_binary_files_differ_for_text() {
    let (_, diff) = diff_after(
        &[
            (".gitattributes", b"*.lock binary\n"),
            ("Cargo.lock", b"a = 1\n"),
        ],
        &[("Cargo.lock", b"a = 2\n")],
    );
    assert!(
        text(&diff).contains("Binary files a/Cargo.lock and b/Cargo.lock differ"),
        "{}",
        text(&diff)
    );
}

#[test]
fn minus_diff_is_binary_and_diff_forces_text() {
    let (_, diff) = diff_after(
        &[
            (".gitattributes", b"*.gen -diff\n*.dat diff\n"),
            ("schema.gen", b"one\n"),
            ("blob.dat", b"x\x00y\n"),
        ],
        &[("schema.gen", b"two\n"), ("blob.dat", b"x\x00z\n")],
    );
    let t = text(&diff);
    assert!(
        t.contains("Binary files a/schema.gen and b/schema.gen differ"),
        "{t}"
    );
    assert!(t.contains("+x\0z"), "{t}");
}

#[test]
fn attributes_come_from_the_merge_base_and_subdirectories() {
    // The base's .gitattributes applies; one in a subdirectory overrides the root's.
    let (_, diff) = diff_after(
        &[
            (".gitattributes", b"*.txt -diff\n"),
            ("sub/.gitattributes", b"*.txt diff\n"),
            ("a.txt", b"a\n"),
            ("sub/b.txt", b"b\n"),
        ],
        &[("a.txt", b"aa\n"), ("sub/b.txt", b"bb\n")],
    );
    let t = text(&diff);
    assert!(t.contains("Binary files a/a.txt and b/a.txt differ"), "{t}");
    assert!(t.contains("+bb"), "{t}");
}

#[test]
fn a_pull_requests_own_gitattributes_cannot_hide_its_hunks() {
    // The PR adds `* -diff` (and `binary`) for every file; the reviewer still sees
    // every hunk, and the .gitattributes change itself as a change under review. The diff is
    // the one git prints in a working copy of the base.
    let f = Fixture::new();
    f.write("a.txt", b"a\n");
    f.write("src/lib.rs", b"fn a() {}\n");
    f.commit("base");
    f.git(&["checkout", "-q", "-b", "feature"]);
    f.write(".gitattributes", b"* -diff\n*.rs binary\n");
    f.write("a.txt", b"aa\n");
    f.write("src/lib.rs", b"fn a() { evil() }\n");
    f.commit("hide the change");
    f.git(&["checkout", "-q", "main"]);
    let diff = f.assert_diff_matches("main", "feature");
    let t = text(&diff);
    assert!(!t.contains("Binary files"), "{t}");
    assert!(t.contains("+aa"), "{t}");
    assert!(t.contains("+fn a() { evil() }"), "{t}");
    assert!(t.contains("+* -diff"), "{t}");
}

#[test]
fn built_in_drivers_name_the_function_in_hunk_headers() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        (
            "lib.cc",
            "cpp",
            "int Widget::size() const {\n",
            "    n += ",
            "}\n",
        ),
        (
            "lib.rs",
            "rust",
            "impl Widget {\n    pub fn size(&self) -> usize {\n",
            "        n += ",
            "    }\n}\n",
        ),
        (
            "app.py",
            "python",
            "class Widget:\n    def size(self):\n",
            "        n += ",
            "\n",
        ),
        (
            "App.java",
            "java",
            "public class App {\n    public int size() {\n",
            "        n += ",
            "    }\n}\n",
        ),
        (
            "main.go",
            "golang",
            "package main\n\nfunc size() int {\n",
            "\tn += ",
            "}\n",
        ),
        (
            "doc.md",
            "markdown",
            "# Title\n\n## Usage\n\n",
            "   step ",
            "\n",
        ),
        (
            "w.rb",
            "ruby",
            "module W\n  def size\n",
            "    n += ",
            "  end\nend\n",
        ),
        (
            "w.php",
            "php",
            "<?php\nclass W {\n  public function size() {\n",
            "    $n += ",
            "  }\n}\n",
        ),
        (
            "w.cs",
            "csharp",
            "namespace W {\n  class C {\n    public int Size(int x) {\n",
            "      n += ",
            "    }\n  }\n}\n",
        ),
        ("w.sh", "bash", "#!/bin/sh\nsize() {\n", "  n=", "}\n"),
    ];
    let mut attributes = String::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut edits: Vec<(String, Vec<u8>)> = Vec::new();
    for (path, driver, open, body, close) in cases {
        attributes += &format!("{path} diff={driver}\n");
        let source = nested(open, body, close);
        edits.push((path.to_string(), edited(&source, body).into_bytes()));
        files.push((path.to_string(), source.into_bytes()));
    }
    // An unknown driver name is git's default rule.
    attributes += "plain.txt diff=no-such-driver\n";
    let plain = nested("Top\n", "  n", "");
    edits.push(("plain.txt".into(), edited(&plain, "  n").into_bytes()));
    files.push(("plain.txt".into(), plain.into_bytes()));
    files.push((".gitattributes".into(), attributes.into_bytes()));

    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (p.as_str(), &c[..])).collect();
    let edits: Vec<(&str, &[u8])> = edits.iter().map(|(p, c)| (p.as_str(), &c[..])).collect();
    let (_, diff) = diff_after(&files, &edits);
    let t = text(&diff);
    for expected in [
        "@@ int Widget::size() const {",
        "@@ pub fn size(&self) -> usize {",
        "@@ def size(self):",
        "@@ public int size() {",
        "@@ func size() int {",
        "@@ ## Usage",
        "@@ def size",
        "@@ public function size() {",
        "@@ public int Size(int x) {",
        "@@ size()\n",
        "@@ Top",
    ] {
        assert!(t.contains(expected), "missing {expected:?} in\n{t}");
    }
}

#[test]
fn a_rename_takes_the_old_paths_driver_first() {
    let body = "        n += ";
    let source = nested("def outer():\n    def inner():\n", body, "");
    let f = Fixture::new();
    f.write(".gitattributes", "*.py diff=python\n");
    f.write("old.py", &source);
    f.commit("base");
    f.git(&["checkout", "-q", "-b", "feature"]);
    f.git(&["mv", "old.py", "new.txt"]);
    f.write("new.txt", edited(&source, body));
    f.commit("rename");
    let diff = text(&f.assert_diff_matches("main", "feature"));
    assert!(diff.contains("rename from old.py"), "{diff}");
    assert!(diff.contains("@@ def inner():"), "{diff}");
}

#[test]
fn latin1_and_euc_jp_content_keeps_its_bytes_and_is_marked_for_the_model() {
    // "café" in Latin-1 and "日本語" in EUC-JP.
    let latin1: &[u8] = b"menu\ncaf\xe9\n";
    let euc_jp: &[u8] = b"title\n\xc6\xfc\xcb\xdc\xb8\xec\n";
    let (f, diff) = diff_after(
        &[("menu.txt", latin1), ("title.txt", euc_jp)],
        &[
            ("menu.txt", b"menu\ncaf\xe9 cr\xe8me\n"),
            ("title.txt", b"title\n\xc6\xfc\xcb\xdc\xb8\xec!\n"),
        ],
    );
    let model_text = git_cache::diff_text(&diff);
    assert!(model_text.contains("+caf\\xE9 cr\\xE8me\n"), "{model_text}");
    assert!(
        model_text.contains("+\\xC6\\xFC\\xCB\\xDC\\xB8\\xEC!\n"),
        "{model_text}"
    );
    assert!(!model_text.contains('\u{fffd}'));
    // The patch id comes from the bytes, as git's does.
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let again = repo
        .diff_bytes("main", "feature", Limits::default(), &NEVER)
        .unwrap();
    assert_eq!(git_cache::patch_id_bytes(&again), f.git_patch_id(&diff));
}
