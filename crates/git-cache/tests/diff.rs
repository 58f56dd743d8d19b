//! `Repo::diff` and `patch_id` against `git diff base...head` and `git patch-id --stable`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, NEVER};
use git_cache::Limits;

fn numbered(n: usize, prefix: &str) -> String {
    (1..=n).map(|i| format!("{prefix} line {i}\n")).collect()
}

/// A repository with `main` holding `files`, and `feature` checked out from it.
fn fixture_with(files: &[(&str, &str)]) -> Fixture {
    let f = Fixture::new();
    for (path, content) in files {
        f.write(path, content);
    }
    f.commit("base");
    f.git(&["checkout", "-q", "-b", "feature"]);
    f
}

#[test]
fn modification_with_several_hunks_and_function_context_matches_git() {
    let mut source = String::from("fn first() {\n");
    source += &numbered(30, "    a");
    source += "}\n\nstruct Second {\n";
    source += &numbered(30, "    b");
    source += "}\n";
    let f = fixture_with(&[("src/lib.rs", &source)]);
    let edited = source
        .replace("    a line 3\n", "    a line three\n")
        .replace("    a line 20\n", "")
        .replace("    b line 10\n", "    b line 10\n    inserted\n")
        .replace("    b line 29\n", "    b line 29 changed\n");
    f.write("src/lib.rs", edited);
    f.commit("edit");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn close_changes_share_a_hunk_and_distant_ones_do_not() {
    let base = numbered(40, "x");
    let f = fixture_with(&[("a.txt", &base)]);
    let edited = base
        .replace("x line 5\n", "five\n")
        .replace("x line 11\n", "eleven\n")
        .replace("x line 19\n", "nineteen\n")
        .replace("x line 40\n", "forty\n");
    f.write("a.txt", edited);
    f.commit("edit");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn added_deleted_and_empty_files_match_git() {
    let f = fixture_with(&[
        ("keep.txt", "keep\n"),
        ("gone.txt", &numbered(5, "gone")),
        ("empty-gone", ""),
    ]);
    f.write("new.txt", numbered(3, "new"));
    f.write("empty-new", "");
    f.write("dir/sub/deep.txt", "deep\n");
    f.remove("gone.txt");
    f.remove("empty-gone");
    f.commit("add and delete");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn file_becoming_empty_and_empty_file_gaining_content_match_git() {
    let f = fixture_with(&[("a", "content\n"), ("b", "")]);
    f.write("a", "");
    f.write("b", "now full\n");
    f.commit("swap");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn pure_rename_and_rename_with_edits_match_git() {
    let f = fixture_with(&[
        ("old/name.txt", &numbered(20, "same")),
        ("edited.txt", &numbered(20, "edit")),
        ("src/module.rs", &numbered(12, "mod")),
    ]);
    std::fs::create_dir_all(f.repo.join("new")).unwrap();
    std::fs::create_dir_all(f.repo.join("lib")).unwrap();
    f.git(&["mv", "old/name.txt", "new/name.txt"]);
    f.git(&["mv", "edited.txt", "renamed.txt"]);
    f.write(
        "renamed.txt",
        numbered(20, "edit").replace("edit line 7\n", "changed 7\n"),
    );
    // Same basename in another directory, edited: found by git's basename heuristic.
    f.git(&["mv", "src/module.rs", "lib/module.rs"]);
    f.write(
        "lib/module.rs",
        numbered(12, "mod").replace("mod line 2\n", "two\n"),
    );
    f.commit("renames");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn heavily_edited_rename_below_half_similarity_is_a_delete_and_add() {
    let f = fixture_with(&[("a.txt", &numbered(10, "a"))]);
    f.remove("a.txt");
    f.write("b.txt", format!("{}{}", numbered(4, "a"), numbered(8, "b")));
    f.commit("mostly new");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn mode_changes_match_git() {
    let f = fixture_with(&[
        ("script.sh", "#!/bin/sh\necho hi\n"),
        ("tool.sh", "#!/bin/sh\necho tool\n"),
        ("exec-gone", "x\n"),
    ]);
    f.chmod("exec-gone", 0o755);
    f.git(&["add", "exec-gone"]);
    f.git(&["commit", "-q", "--amend", "-m", "base"]);
    f.git(&["branch", "-f", "main", "HEAD"]);
    f.chmod("script.sh", 0o755);
    f.chmod("tool.sh", 0o755);
    f.write("tool.sh", "#!/bin/sh\necho tool changed\n");
    f.chmod("exec-gone", 0o644);
    f.commit("chmod");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn binary_files_match_git() {
    let f = fixture_with(&[("img.bin", "\u{0}\u{1}\u{2}old"), ("same.bin", "\u{0}same")]);
    f.write("img.bin", b"\x00\x01\x02new");
    f.write("added.bin", b"\x00\xffadded");
    f.chmod("same.bin", 0o755);
    f.commit("binary");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn text_becoming_binary_matches_git() {
    let f = fixture_with(&[("data", "text\n")]);
    f.write("data", b"bin\x00ary");
    f.commit("now binary");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn missing_final_newline_on_either_side_matches_git() {
    let f = fixture_with(&[
        ("adds-newline", "a\nb\nc"),
        ("drops-newline", "a\nb\nc\n"),
        ("neither", "a\nb\nc"),
        ("added-no-newline", "x\n"),
    ]);
    f.write("adds-newline", "a\nb\nc\n");
    f.write("drops-newline", "a\nb\nc");
    f.write("neither", "a\nB\nc");
    f.write("added-no-newline", "x\ny");
    f.write("brand-new", "no newline");
    f.commit("newlines");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn symlink_changes_and_type_changes_match_git() {
    let f = fixture_with(&[("target.txt", "t\n"), ("becomes-link", "file\n")]);
    std::os::unix::fs::symlink("target.txt", f.repo.join("link")).unwrap();
    f.remove("becomes-link");
    std::os::unix::fs::symlink("target.txt", f.repo.join("becomes-link")).unwrap();
    f.commit("links");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn merge_base_differs_from_base_when_main_moved_on() {
    let f = fixture_with(&[("shared.txt", &numbered(10, "s")), ("other.txt", "o\n")]);
    f.write(
        "shared.txt",
        numbered(10, "s").replace("s line 2\n", "feature\n"),
    );
    f.commit("feature edit");
    f.git(&["checkout", "-q", "main"]);
    f.write("other.txt", "main moved on\n");
    f.write("main-only.txt", "m\n");
    f.commit("main edit");
    let diff = f.assert_diff_matches("main", "feature");
    let text = String::from_utf8(diff).unwrap();
    assert!(!text.contains("main-only.txt"), "{text}");
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    assert_eq!(
        repo.merge_base("main", "feature").unwrap(),
        f.git(&["merge-base", "main", "feature"])
    );
}

#[test]
fn non_ascii_and_special_paths_are_quoted_like_git() {
    let f = fixture_with(&[("ü/ä.txt", "umlaut\n"), ("with space.txt", "s\n")]);
    f.write("ü/ä.txt", "umlaut changed\n");
    f.write("with space.txt", "s changed\n");
    f.write("quote\"d.txt", "q\n");
    f.write("tab\there.txt", "t\n");
    f.write("new space.txt", "n\n");
    f.commit("paths");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn renamed_path_with_space_and_unicode_matches_git() {
    let f = fixture_with(&[("a file.txt", &numbered(8, "a"))]);
    f.git(&["mv", "a file.txt", "é file.txt"]);
    f.commit("rename");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn crlf_and_long_function_lines_match_git() {
    let long = format!("function {}() {{\r\n", "x".repeat(100));
    let mut base = long.clone();
    for i in 0..10 {
        base += &format!("  body {i}\r\n");
    }
    let f = fixture_with(&[("crlf.txt", &base)]);
    f.write("crlf.txt", base.replace("  body 8\r\n", "  body eight\r\n"));
    f.commit("crlf");
    f.assert_diff_matches("main", "feature");
}

#[test]
fn identical_commits_have_an_empty_diff_and_no_patch_id() {
    let f = fixture_with(&[("a", "a\n")]);
    let diff = f.assert_diff_matches("main", "feature");
    assert!(diff.is_empty());
    assert_eq!(git_cache::patch_id(""), None);
}

#[test]
fn unknown_revisions_are_named_in_the_error() {
    let f = fixture_with(&[("a", "a\n")]);
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    let err = repo
        .diff_bytes("main", "no-such-branch", Limits::default(), &NEVER)
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown revision 'no-such-branch'"),
        "{err}"
    );
}

#[test]
fn resolve_understands_branches_abbreviations_and_ancestry() {
    let f = fixture_with(&[("a", "a\n")]);
    f.write("a", "b\n");
    let head = f.commit("second");
    let repo = git_cache::Repo::open(&f.repo).unwrap();
    assert_eq!(repo.resolve("feature").unwrap(), head);
    assert_eq!(repo.resolve(&head[..8]).unwrap(), head);
    assert_eq!(
        repo.resolve("HEAD~1").unwrap(),
        f.git(&["rev-parse", "main"])
    );
    f.git(&["tag", "-a", "v1", "-m", "annotated"]);
    assert_eq!(repo.resolve("v1").unwrap(), head);
    assert_eq!(repo.log("main", "feature", 10).unwrap(), vec!["second"]);
}

/// A tiny seeded generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const VOCABULARY: &[&str] = &[
    "fn alpha() {",
    "}",
    "",
    "    let x = 1;",
    "    return x;",
    "struct Beta {",
    "    field: u32,",
    "impl Beta {",
    "    // comment",
    "_private_helper();",
    "$var = 3;",
    "\tindented with tab",
    "    if cond {",
    "        nested();",
    "    }",
    "#include <stdio.h>",
];

fn random_line(rng: &mut Rng) -> String {
    if rng.chance(70) {
        VOCABULARY[rng.below(VOCABULARY.len())].to_owned()
    } else {
        format!("unique {} {}", rng.below(1000), "w".repeat(rng.below(90)))
    }
}

fn random_text(rng: &mut Rng, lines: usize) -> String {
    let mut text: String = (0..lines).map(|_| random_line(rng) + "\n").collect();
    if rng.chance(10) {
        text.pop();
    }
    text
}

fn edit_text(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(lines.len() + 1);
        match rng.below(3) {
            0 => {
                for _ in 0..1 + rng.below(4) {
                    lines.insert(at.min(lines.len()), random_line(rng));
                }
            }
            1 if !lines.is_empty() => {
                let end = (at + 1 + rng.below(4)).min(lines.len());
                lines.drain(at.min(lines.len() - 1)..end);
            }
            _ if !lines.is_empty() => {
                let i = at.min(lines.len() - 1);
                lines[i] = random_line(rng);
            }
            _ => lines.push(random_line(rng)),
        }
    }
    let mut out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if rng.chance(15) {
        out.pop();
    }
    out
}

/// 50 seeded random edit sets; `GIT_CACHE_RANDOM_SEED` and `GIT_CACHE_RANDOM_ROUNDS` explore
/// further.
#[test]
fn fifty_random_edit_sets_match_git_byte_for_byte() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seed = env("GIT_CACHE_RANDOM_SEED", 0x5eed_1234_abcd_0001);
    let rounds = env("GIT_CACHE_RANDOM_ROUNDS", 50);
    let mut rng = Rng(seed.max(1));
    let mut seen = String::new();
    let f = Fixture::new();
    let dirs = ["", "src/", "src/deep/", "docs/"];
    let mut files: Vec<String> = Vec::new();
    for i in 0..24 {
        let path = format!("{}file{i}.txt", dirs[rng.below(dirs.len())]);
        let lines = 5 + rng.below(60);
        f.write(&path, random_text(&mut rng, lines));
        files.push(path);
    }
    f.write("blob.bin", b"\x00\x01binary start");
    files.push("blob.bin".into());
    let base = f.commit("base");

    for round in 0..rounds {
        f.git(&["checkout", "-q", "-f", "-B", "feature", &base]);
        f.git(&["clean", "-q", "-fdx"]);
        let mut present = files.clone();
        for _ in 0..1 + rng.below(6) {
            if present.is_empty() {
                break;
            }
            let idx = rng.below(present.len());
            let path = present[idx].clone();
            let full = f.repo.join(&path);
            match rng.below(10) {
                0..=3 if path != "blob.bin" => {
                    let text = std::fs::read_to_string(&full).unwrap();
                    f.write(&path, edit_text(&mut rng, &text));
                }
                4 => {
                    f.remove(&path);
                    present.remove(idx);
                }
                5 | 6 => {
                    let new_path = format!("{}moved{round}_{idx}.txt", dirs[rng.below(dirs.len())]);
                    let data = std::fs::read(&full).unwrap();
                    f.remove(&path);
                    let data = if rng.chance(50) && path != "blob.bin" {
                        edit_text(&mut rng, &String::from_utf8(data).unwrap()).into_bytes()
                    } else {
                        data
                    };
                    f.write(&new_path, data);
                    present[idx] = new_path;
                }
                7 => {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(&full).unwrap().permissions().mode();
                    f.chmod(&path, if mode & 0o100 != 0 { 0o644 } else { 0o755 });
                }
                8 => {
                    let new_path = format!("added{round}_{idx}.txt");
                    let text = if rng.chance(20) {
                        String::new()
                    } else {
                        let lines = 1 + rng.below(20);
                        random_text(&mut rng, lines)
                    };
                    f.write(&new_path, text);
                    present.push(new_path);
                }
                _ => {
                    f.write("blob.bin", format!("\x00binary {round}").as_bytes());
                }
            }
        }
        let head = f.commit(&format!("round {round}"));
        let diff = f.assert_diff_matches(&base, &head);
        seen += &String::from_utf8_lossy(&diff);
    }
    // The generator reaches every kind of header.
    for needle in [
        "\nrename from ",
        "\nsimilarity index 100%",
        "\nold mode 100644\nnew mode 100755",
        "\nnew file mode ",
        "\ndeleted file mode ",
        "\nBinary files a/blob.bin and b/blob.bin differ",
        "\n\\ No newline at end of file",
        " @@ fn alpha() {",
    ] {
        assert!(seen.contains(needle), "no {needle:?} in {rounds} rounds");
    }
    assert!(
        seen.lines()
            .any(|l| l.starts_with("similarity index ") && !l.ends_with("100%")),
        "no inexact rename"
    );
}

#[test]
fn submodules_file_to_directory_and_identical_copies_match_git() {
    let f = fixture_with(&[
        ("a", "file that becomes a directory\n"),
        ("a.txt", "sorts between a and a/\n"),
        ("one/same.txt", "identical\ncontent\n"),
        ("two/same.txt", "identical\ncontent\n"),
        ("mode-and-move.sh", &numbered(10, "m")),
    ]);
    let sub_v1 = f.git(&["rev-parse", "HEAD"]);
    f.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{sub_v1},vendor/sub"),
    ]);
    f.git(&["commit", "-q", "-m", "submodule"]);
    f.git(&["branch", "-f", "main", "HEAD"]);

    f.remove("a");
    f.write("a/inner.txt", "now a directory\n");
    // Two identical sources moved: git pairs each with the same basename first.
    std::fs::create_dir_all(f.repo.join("three")).unwrap();
    std::fs::create_dir_all(f.repo.join("four")).unwrap();
    f.git(&["mv", "one/same.txt", "three/same.txt"]);
    f.git(&["mv", "two/same.txt", "four/other.txt"]);
    f.git(&["mv", "mode-and-move.sh", "moved.sh"]);
    f.chmod("moved.sh", 0o755);
    f.git(&["add", "-A"]);
    f.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{},vendor/sub", f.git(&["rev-parse", "HEAD~1"])),
    ]);
    f.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{sub_v1},vendor/new-sub"),
    ]);
    f.git(&["commit", "-q", "-m", "shapes"]);
    let diff = String::from_utf8(f.assert_diff_matches("main", "feature")).unwrap();
    for needle in [
        "+Subproject commit ",
        "new file mode 160000",
        "rename to three/same.txt",
        "rename to four/other.txt",
        "new mode 100755",
        "+++ b/a/inner.txt",
    ] {
        assert!(diff.contains(needle), "{needle:?} missing in\n{diff}");
    }
}
