//! Several review passes (docs/review-service.md, "Several passes"): `review_passes` independent
//! passes over the same diff, each reading its files in a different order, and their candidate
//! findings merged before verification: two candidates are one when they are on the same file
//! and side, their lines overlap and they make the same claim (enough words in common).

use review_domain::InlineComment;

use crate::diff::ParsedDiff;
use crate::tools::post::{Draft, by_severity, with_verdict};

/// Most passes a review may make.
pub const MAX_PASSES: u32 = 5;

/// `parsed` with its files rotated for pass `pass` (0-based) of `passes`: pass 0 keeps the
/// diff's order, the others start further into it, so each pass meets the files in another
/// order.
pub(crate) fn rotated(parsed: &ParsedDiff, pass: u32, passes: u32) -> ParsedDiff {
    let mut out = parsed.clone();
    let n = out.files.len();
    if n > 1 && passes > 1 {
        let by = (pass as usize * n) / passes as usize;
        out.files.rotate_left(by % n);
    }
    out
}

/// Whether two candidates are one finding: same path and side, overlapping lines, and
/// bodies making the same claim ([`crate::fingerprint::same_claim`]).
pub(crate) fn same_claim(a: &InlineComment, b: &InlineComment) -> bool {
    let range = |c: &InlineComment| (c.start_line.unwrap_or(c.line), c.line);
    let ((a0, a1), (b0, b1)) = (range(a), range(b));
    if a.path != b.path || a.side != b.side || a0 > b1 || b0 > a1 {
        return false;
    }
    crate::fingerprint::same_claim(&a.body, &b.body)
}

/// One merged candidate and how many passes found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub path: String,
    pub line: i64,
    pub found_by: u32,
}

/// The drafts of several passes as one (the first pass's summary and event), with every
/// distinct candidate once and how many passes found each. The first pass's verdict line is
/// raised by the candidates only later passes found.
pub(crate) fn merge(mut drafts: Vec<Draft>) -> Option<(Draft, Vec<Merged>)> {
    if drafts.is_empty() {
        return None;
    }
    let mut base = drafts.remove(0);
    let mut found = vec![1u32; base.kept.len()];
    let mut found_folded = vec![1u32; base.folded.len()];
    let mut added = Vec::new();
    for draft in drafts {
        for c in draft.kept {
            match base.kept.iter().position(|k| same_claim(k, &c)) {
                Some(i) => found[i] += 1,
                None => {
                    added.push(c.clone());
                    base.kept.push(c);
                    found.push(1);
                }
            }
        }
        for (c, why) in draft.folded {
            match base.folded.iter().position(|(k, _)| same_claim(k, &c)) {
                Some(i) => found_folded[i] += 1,
                None => {
                    added.push(c.clone());
                    base.folded.push((c, why));
                    found_folded.push(1);
                }
            }
        }
        base.below_min = base.below_min.max(draft.below_min);
    }
    let (ab, an, aq) = by_severity(added.iter());
    base.summary = with_verdict(&base.summary, |(b, n, q)| (b + ab, n + an, q + aq));
    let merged = base
        .kept
        .iter()
        .zip(&found)
        .chain(base.folded.iter().map(|(c, _)| c).zip(&found_folded))
        .map(|(c, n)| Merged {
            path: c.path.clone(),
            line: c.line,
            found_by: *n,
        })
        .collect();
    Some((base, merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use review_domain::{Severity, Side};

    fn comment(path: &str, lines: (i64, i64), severity: Severity, body: &str) -> InlineComment {
        InlineComment {
            path: path.into(),
            line: lines.1,
            start_line: (lines.0 != lines.1).then_some(lines.0),
            side: Side::Right,
            severity,
            body: body.into(),
        }
    }

    fn draft(kept: Vec<InlineComment>, summary: &str) -> Draft {
        Draft {
            summary: summary.into(),
            event: review_domain::ReviewEvent::Comment,
            kept,
            folded: Vec::new(),
            below_min: 0,
            notes: Vec::new(),
            dropped: Vec::new(),
            verification_note: None,
            passes_note: None,
        }
    }

    #[test]
    fn the_same_claim_on_overlapping_lines_is_one_finding() {
        let a = comment(
            "a.rs",
            (5, 5),
            Severity::Blocking,
            "`unwrap()` panics on bad input; return the error",
        );
        let b = comment(
            "a.rs",
            (4, 6),
            Severity::Blocking,
            "This unwrap() panics when the input is bad.",
        );
        let elsewhere = comment(
            "a.rs",
            (20, 20),
            Severity::Blocking,
            "`unwrap()` panics on bad input",
        );
        let other_claim = comment(
            "a.rs",
            (5, 5),
            Severity::Nit,
            "Rename the variable for clarity.",
        );
        assert!(same_claim(&a, &b));
        assert!(!same_claim(&a, &elsewhere));
        assert!(!same_claim(&a, &other_claim));
    }

    #[test]
    fn passes_merge_into_one_draft_counting_who_found_what() {
        let unwrap = comment(
            "a.rs",
            (5, 5),
            Severity::Blocking,
            "`unwrap()` panics on bad input",
        );
        let todo = comment("a.rs", (9, 9), Severity::Nit, "A TODO in new code");
        let first = draft(
            vec![unwrap.clone()],
            "One thing.\n\nBlocking: 1 · Nits: 0 · Questions: 0",
        );
        let second = draft(
            vec![unwrap, todo],
            "Two things.\n\nBlocking: 1 · Nits: 1 · Questions: 0",
        );
        let (merged, found) = merge(vec![first, second]).unwrap();
        assert_eq!(merged.kept.len(), 2);
        assert_eq!(
            merged.summary,
            "One thing.\n\nBlocking: 1 · Nits: 1 · Questions: 0"
        );
        let counts: Vec<(i64, u32)> = found.iter().map(|m| (m.line, m.found_by)).collect();
        assert_eq!(counts, vec![(5, 2), (9, 1)]);
    }

    #[test]
    fn each_pass_meets_the_files_in_another_order() {
        let parsed = crate::diff::parse(
            "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+a\ndiff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -0,0 +1 @@\n+b\n",
        );
        let order = |p: &ParsedDiff| {
            p.files
                .iter()
                .map(|f| f.path().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&rotated(&parsed, 0, 2)), vec!["a", "b"]);
        assert_eq!(order(&rotated(&parsed, 1, 2)), vec!["b", "a"]);
    }
}
