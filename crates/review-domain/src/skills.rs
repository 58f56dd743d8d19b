//! The pure rules of reviewer skills (docs/review-service.md §4, Skills; §2, SkillMetaRow;
//! docs/architecture.md, Untrusted input): reading a skill's source URL, its name, the front
//! matter of its `SKILL.md`, which file paths are safe to write, the stored blob's format, and
//! the text a reviewing agent gets. No I/O: the forge fetch and the disk live in review-server's
//! `skills.rs`, the `skills` table in review-store.
//!
//! A source URL is a forge tree URL `<FORGE_URL>/<owner>/<repo>/tree/<ref>/<path>`. A ref may
//! contain `/`, so [`TreeUrl::candidates`] gives every (ref, path) reading, shortest ref first,
//! for the caller to resolve against the forge (as on GitHub's web UI).

use serde::{Deserialize, Serialize};

/// Most files in a skill folder; a bigger folder is refused at install (422, docs/review-service.md
/// §4, Skills).
pub const MAX_FILES: usize = 25;
/// Most bytes in a skill folder, all files together: 1 MiB; more is refused at install.
pub const MAX_BYTES: u64 = 1024 * 1024;
/// Budget in bytes of the files besides `SKILL.md` that are appended to the agent's text.
pub const EXTRA_TEXT_BUDGET: usize = 32 * 1024;
/// The instructions file of a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Why a source URL names no skill folder; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SkillUrlError(pub String);

/// A parsed tree URL: owner, repo and the segments after `tree/` (ref then path, split by
/// [`TreeUrl::candidates`]). There are at least two segments and none is empty, `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeUrl {
    pub owner: String,
    /// The repository name, without a trailing `.git`.
    pub repo: String,
    /// Percent-decoded.
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

/// Whether `name` matches `^[a-z0-9]+(-[a-z0-9]+)*$`: a skill's name is its folder's name, the
/// primary key of its row and a directory under `DATA_DIR/skills`.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// `%XX` sequences decoded; None when one is malformed or the result is not UTF-8.
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

/// Parse `<forge_url>/<owner>/<repo>/tree/<ref>/<path>` (query and fragment ignored, segments
/// percent-decoded, a trailing `.git` of the repo dropped).
///
/// Errors: not under `forge_url`, not a `tree` URL, fewer than one ref and one path segment, a
/// `.`, `..` or backslash in a segment, or a last segment that is not a skill name.
pub fn parse_tree_url(forge_url: &str, url: &str) -> Result<TreeUrl, SkillUrlError> {
    let base = forge_url.trim_end_matches('/');
    let expected = || {
        SkillUrlError(format!(
            "url: expected {base}/<owner>/<repo>/tree/<ref>/<path>, got {url:?}"
        ))
    };
    let segments = url_segments(base, url, expected)?;
    if segments.len() < 5 || segments[2] != "tree" {
        return Err(expected());
    }
    named(TreeUrl {
        owner: segments[0].clone(),
        repo: segments[1].trim_end_matches(".git").to_owned(),
        segments: segments[3..].to_vec(),
    })
}

/// Parse a GitLab tree URL, `<gitlab_url>/<namespace>/<project>/-/tree/<ref>/<path>`, the
/// namespace one or more groups (docs/review-service.md, "GitLab"). The owner is
/// `<gitlab_host>/<namespace>`, as GitLab projects are named here.
///
/// Errors: as [`parse_tree_url`], for GitLab's form.
pub fn parse_gitlab_tree_url(
    gitlab_url: &str,
    gitlab_host: &str,
    url: &str,
) -> Result<TreeUrl, SkillUrlError> {
    let base = gitlab_url.trim_end_matches('/');
    let expected = || {
        SkillUrlError(format!(
            "url: expected {base}/<namespace>/<project>/-/tree/<ref>/<path>, got {url:?}"
        ))
    };
    let segments = url_segments(base, url, expected)?;
    let at = segments
        .windows(2)
        .position(|w| w[0] == "-" && w[1] == "tree")
        .ok_or_else(expected)?;
    if at < 2 || segments.len() < at + 4 {
        return Err(expected());
    }
    named(TreeUrl {
        owner: format!("{gitlab_host}/{}", segments[..at - 1].join("/")),
        repo: segments[at - 1].trim_end_matches(".git").to_owned(),
        segments: segments[at + 2..].to_vec(),
    })
}

/// The percent-decoded segments of `url` after `base`, query and fragment dropped.
fn url_segments(
    base: &str,
    url: &str,
    expected: impl Fn() -> SkillUrlError,
) -> Result<Vec<String>, SkillUrlError> {
    let rest = url
        .trim()
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(&expected)?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect::<Option<_>>()
        .ok_or_else(&expected)?;
    if segments
        .iter()
        .any(|s| s == "." || s == ".." || s.contains('\\'))
    {
        return Err(expected());
    }
    // A segment is one path segment on the forge's API too: one that decodes to a separator or
    // an escape (`..%2F..%2Fuser`, `%252F`) would reach another API path with the token.
    if let Some(bad) = segments.iter().find(|s| s.contains(['/', '\\', '%'])) {
        return Err(SkillUrlError(format!(
            "url: the segment {bad:?} decodes to '/', '\\' or '%'; write a ref or path that \
             holds '/' as separate segments, unescaped"
        )));
    }
    Ok(segments)
}

/// `tree`, when its last segment is a skill name.
fn named(tree: TreeUrl) -> Result<TreeUrl, SkillUrlError> {
    if !is_skill_name(tree.name()) {
        return Err(SkillUrlError(format!(
            "skill name {:?} (the folder's name) must match ^[a-z0-9]+(-[a-z0-9]+)*$",
            tree.name()
        )));
    }
    Ok(tree)
}

/// The description in a SKILL.md front matter (`description:` between `---` lines; quoted,
/// plain or a `>`/`|` block), and the body after the front matter. A text without a closed
/// front matter has no description and is all body. A leading byte-order mark is dropped.
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
    let body = &after[body_start..];
    (description(&after[..yaml_end]), body)
}

/// The `description:` value of a front matter's lines, empty as None.
fn description(yaml: &str) -> Option<String> {
    let mut lines = yaml.lines().peekable();
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
        return Some(text).filter(|t| !t.is_empty());
    }
    None
}

/// A path inside a skill folder that is safe to join under it: relative, `/`-separated, no
/// empty, `.` or `..` component, no backslash (docs/architecture.md, Untrusted input).
pub fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// One file of a skill, relative to its folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// `/`-separated, relative to the skill's folder.
    pub path: String,
    /// The raw bytes; base64 in the blob.
    #[serde(with = "b64")]
    pub content: Vec<u8>,
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
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

/// The blob of `files` as the `skills` table stores it ([`decode_blob`] reads it back).
pub fn encode_blob(files: &[SkillFile]) -> Vec<u8> {
    serde_json::to_vec(&Blob {
        version: 1,
        files: files.to_vec(),
    })
    .unwrap_or_default()
}

/// The files of a stored blob. Errors: the bytes are not a blob of [`encode_blob`].
pub fn decode_blob(blob: &[u8]) -> Result<Vec<SkillFile>, serde_json::Error> {
    Ok(serde_json::from_slice::<Blob>(blob)?.files)
}

/// The skill's `SKILL.md`: the exact name first, else one that differs only in case.
pub fn skill_md(files: &[SkillFile]) -> Option<&SkillFile> {
    files.iter().find(|f| f.path == SKILL_FILE).or_else(|| {
        files
            .iter()
            .find(|f| f.path.eq_ignore_ascii_case(SKILL_FILE))
    })
}

/// What the reviewing agent reads of a skill: `SKILL.md` without its front matter, then the
/// folder's other UTF-8 files in order while they fit [`EXTRA_TEXT_BUDGET`] bytes, each under a
/// `#### File <path>` heading, then the names of the files left out. The agent's file tools are
/// confined to the PR worktree, so the text must carry what the skill says.
pub fn agent_text(files: &[SkillFile]) -> String {
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
    content
}

#[cfg(test)]
mod gitlab_tests {
    use super::*;

    #[test]
    fn a_gitlab_tree_url_of_a_nested_project_names_its_host_and_namespace() {
        let t = parse_gitlab_tree_url(
            "https://gitlab.example.com/",
            "gitlab.example.com",
            "https://gitlab.example.com/platform/tools/skills/-/tree/v1.2/review/sql-safety?ref_type=tags",
        )
        .unwrap();
        assert_eq!(t.owner, "gitlab.example.com/platform/tools");
        assert_eq!(t.repo, "skills");
        assert_eq!(t.name(), "sql-safety");
        assert_eq!(
            t.candidates()[0],
            ("v1.2".into(), "review/sql-safety".into())
        );
        for bad in [
            "https://gitlab.example.com/skills/-/tree/main/x",
            "https://gitlab.example.com/g/skills/tree/main/x",
            "https://gitlab.example.com/g/skills/-/tree/main",
            "https://gitlab.example.com/g/skills/-/tree/main/..%2F..%2Fx",
            "https://github.com/g/skills/-/tree/main/x",
        ] {
            assert!(
                parse_gitlab_tree_url("https://gitlab.example.com", "gitlab.example.com", bad)
                    .is_err(),
                "{bad}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

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
            "https://github.com/o/r/tree/main/%2e%2e/s",
            "https://github.com/o/r/tree/main/a%5cb/s",
            "https://github.com/o/r/tree/main/%zz/s",
            "https://github.com/o/r/tree/main/%ff/s",
            "not a url",
        ] {
            assert!(parse_tree_url("https://github.com", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_urls_say_what_was_expected() {
        assert_eq!(
            parse_tree_url("https://github.com/", "https://x.test/o/r").unwrap_err(),
            SkillUrlError(
                "url: expected https://github.com/<owner>/<repo>/tree/<ref>/<path>, got \"https://x.test/o/r\""
                    .into()
            )
        );
        assert_eq!(
            parse_tree_url(
                "https://github.com",
                "https://github.com/o/r/tree/main/My_Skill"
            )
            .unwrap_err()
            .0,
            "skill name \"My_Skill\" (the folder's name) must match ^[a-z0-9]+(-[a-z0-9]+)*$"
        );
    }

    #[test]
    fn front_matter_description_forms() {
        let (d, body) = front_matter("---\nname: x\ndescription: \"Checks SQL\"\n---\n# Body\n");
        assert_eq!((d.as_deref(), body), (Some("Checks SQL"), "# Body\n"));
        let (d, _) = front_matter("---\ndescription: >\n  two\n  lines\nother: 1\n---\n");
        assert_eq!(d.as_deref(), Some("two lines"));
        let (d, _) = front_matter("---\ndescription: |\n  two\n  lines\n---\n");
        assert_eq!(d.as_deref(), Some("two\nlines"));
        let (d, body) = front_matter("\u{feff}---\r\ndescription: 'q'\r\n---\r\nB");
        assert_eq!((d.as_deref(), body), (Some("q"), "B"));
        let (d, body) = front_matter("# no front matter\n");
        assert_eq!((d, body), (None, "# no front matter\n"));
        let (d, body) = front_matter("---\ndescription: never closed\n");
        assert_eq!((d, body), (None, "---\ndescription: never closed\n"));
        let (d, _) = front_matter("---\ndescription:\n---\n");
        assert_eq!(d, None);
        // A quote that is not closed on the same side is part of the text.
        for text in ["\"open", "open\"", "'open", "open'", "\"mixed'"] {
            let (d, _) = front_matter(&format!("---\ndescription: {text}\n---\n"));
            assert_eq!(d.as_deref(), Some(text));
        }
    }

    #[test]
    fn the_limits_are_25_files_1_mib_and_32_kib_of_extra_text() {
        assert_eq!(
            (MAX_FILES, MAX_BYTES, EXTRA_TEXT_BUDGET),
            (25, 1_048_576, 32_768)
        );
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
        assert_eq!(
            agent_text(&files),
            "Do X.\n\n#### File refs/a.md\nMore.\n\n(Other files of this skill, not included: img.png)"
        );
        assert!(decode_blob(b"{\"version\":1}").is_err());
        assert!(
            decode_blob(b"{\"version\":1,\"files\":[{\"path\":\"a\",\"content\":\"!\"}]}").is_err()
        );
    }

    #[test]
    fn files_over_the_budget_are_named_not_included() {
        let big = "x".repeat(EXTRA_TEXT_BUDGET);
        let files = vec![
            SkillFile {
                path: "a.md".into(),
                content: big.clone().into_bytes(),
            },
            SkillFile {
                path: "b.md".into(),
                content: b"y".to_vec(),
            },
            SkillFile {
                path: "skill.md".into(),
                content: b"Body".to_vec(),
            },
        ];
        assert_eq!(
            agent_text(&files),
            format!(
                "Body\n\n#### File a.md\n{big}\n\n(Other files of this skill, not included: b.md)"
            )
        );
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for bad in ["", "/a", "../a", "a/../b", "a//b", "a\\b", "a/.", "a/"] {
            assert!(!safe_relative(bad), "{bad}");
        }
        assert!(safe_relative("refs/a.md"));
        assert!(safe_relative("..a/b.."));
    }

    /// A name segment of the pattern, and any text (the reference below decides).
    fn name_like() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,3}",
            "[a-zA-Z0-9_.\\- ]{1,12}"
        ]
    }

    /// A path segment: plain, or one that must never pass.
    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-zA-Z0-9_\\-]{1,8}",
            1 => Just(".".to_owned()),
            1 => Just("..".to_owned()),
            1 => "[a-z]{1,3}\\\\[a-z]{1,3}",
        ]
    }

    proptest! {
        #[test]
        fn skill_name_matches_the_regex(name in name_like()) {
            let reference = regex::Regex::new("^[a-z0-9]+(-[a-z0-9]+)*$").unwrap();
            prop_assert_eq!(is_skill_name(&name), reference.is_match(&name));
        }

        #[test]
        fn safe_relative_matches_a_component_check(parts in prop::collection::vec(segment(), 0..5), lead in any::<bool>()) {
            let path = format!("{}{}", if lead { "/" } else { "" }, parts.join("/"));
            let reference = !path.is_empty()
                && !lead
                && parts.iter().all(|p| p != "." && p != ".." && !p.contains('\\'));
            prop_assert_eq!(safe_relative(&path), reference, "{}", path);
        }

        #[test]
        fn any_text_decodes_from_its_percent_encoding(s in "\\PC{0,16}") {
            let encoded = utf8_percent_encode(&s, NON_ALPHANUMERIC).to_string();
            prop_assert_eq!(percent_decode(&encoded), Some(s));
        }

        #[test]
        fn built_tree_urls_parse_back(
            owner in "[A-Za-z0-9][A-Za-z0-9\\-]{0,8}",
            repo in "[A-Za-z0-9_\\-]{1,8}",
            git_ref in prop::collection::vec("[a-zA-Z0-9_\\-]{1,6}", 1..3),
            path in prop::collection::vec(segment(), 0..3),
            name in name_like(),
            query in prop_oneof![Just(String::new()), Just("?tab=1".to_owned()), Just("#top".to_owned())],
        ) {
            let mut segments: Vec<String> = git_ref.clone();
            segments.extend(path.iter().cloned());
            segments.push(name.clone());
            let encoded: Vec<String> = segments
                .iter()
                .map(|s| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string())
                .collect();
            let url = format!("https://forge.test/{owner}/{repo}/tree/{}{query}", encoded.join("/"));
            let parsed = parse_tree_url("https://forge.test/", &url);
            let valid = segments.iter().all(|s| s != "." && s != ".." && !s.contains('\\'))
                && !name.is_empty()
                && is_skill_name(&name);
            prop_assert_eq!(parsed.is_ok(), valid, "{}", url);
            if let Ok(tree) = parsed {
                prop_assert_eq!(&tree.owner, &owner);
                prop_assert_eq!(tree.repo.as_str(), repo.trim_end_matches(".git"));
                prop_assert_eq!(tree.name(), name.as_str());
                let split = (git_ref.join("/"), segments[git_ref.len()..].join("/"));
                prop_assert!(tree.candidates().contains(&split));
                prop_assert_eq!(tree.candidates().len(), segments.len() - 1);
            }
        }

        #[test]
        fn any_url_is_parsed_or_refused_without_panic(url in "\\PC{0,60}") {
            let _ = parse_tree_url("https://forge.test", &url);
        }

        #[test]
        fn front_matter_gives_back_what_was_written(
            desc in "[a-zA-Z0-9][a-zA-Z0-9 ,.]{0,30}[a-zA-Z0-9]",
            quote in prop_oneof![Just(""), Just("\""), Just("'")],
            other in "[a-z]{1,8}: [a-z0-9 ]{0,10}",
            body in "[^\\-][\\PC\n]{0,40}",
        ) {
            let text = format!("---\n{other}\ndescription: {quote}{desc}{quote}\n---\n{body}");
            let (d, b) = front_matter(&text);
            prop_assert_eq!(d.as_deref(), Some(desc.as_str()));
            prop_assert_eq!(b, body.as_str());
        }

        #[test]
        fn front_matter_body_is_a_suffix_of_any_text(text in "(---\n)?[\\PC\n]{0,80}") {
            let (_, body) = front_matter(&text);
            prop_assert!(text.ends_with(body));
        }

        #[test]
        fn blobs_round_trip(files in prop::collection::vec(("[a-z/]{1,10}", prop::collection::vec(any::<u8>(), 0..40)), 0..5)) {
            let files: Vec<SkillFile> = files
                .into_iter()
                .map(|(path, content)| SkillFile { path, content })
                .collect();
            prop_assert_eq!(decode_blob(&encode_blob(&files)).unwrap(), files);
        }
    }
}
