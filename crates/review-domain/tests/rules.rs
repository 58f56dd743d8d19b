#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Rules of review-domain that `cargo mutants` found unguarded (bench/mutants/RESULTS.md): the
//! finding field rules, which statuses are terminal, the stats range names and the strict day
//! parser (docs/review-service.md §2, §3 and §4 Stats).

use pretty_assertions::assert_eq;
use review_domain::{
    FindingKind, NewFinding, ReviewEvent, ReviewStatus, Severity, StatsRange, parse_day,
};

fn finding(kind: FindingKind) -> NewFinding {
    NewFinding {
        kind,
        body: "text".into(),
        event: None,
        path: None,
        line: None,
        severity: None,
        github_review_id: None,
        github_comment_id: None,
        fingerprint: None,
    }
}

fn inline(line: i64) -> NewFinding {
    NewFinding {
        path: Some("src/lib.rs".into()),
        line: Some(line),
        severity: Some(Severity::Nit),
        ..finding(FindingKind::Inline)
    }
}

#[test]
fn only_summary_findings_carry_an_event() {
    let with_event = |kind| NewFinding {
        event: Some(ReviewEvent::Comment),
        ..finding(kind)
    };
    assert_eq!(with_event(FindingKind::Summary).validate(), Ok(()));
    assert_eq!(
        with_event(FindingKind::Comment).validate(),
        Err("findings[].event is only allowed on summary findings".to_owned())
    );
    assert_eq!(finding(FindingKind::Comment).validate(), Ok(()));
    assert_eq!(finding(FindingKind::Summary).validate(), Ok(()));
}

#[test]
fn severity_belongs_to_inline_findings_only() {
    for kind in [FindingKind::Summary, FindingKind::Comment] {
        let with_severity = NewFinding {
            severity: Some(Severity::Blocking),
            ..finding(kind)
        };
        assert_eq!(
            with_severity.validate(),
            Err("findings[].severity is only allowed on inline findings".to_owned()),
            "{kind:?}"
        );
    }
}

#[test]
fn an_inline_line_starts_at_one() {
    assert_eq!(inline(1).validate(), Ok(()));
    assert_eq!(inline(400).validate(), Ok(()));
    for line in [0, -1, i64::MIN] {
        assert_eq!(
            inline(line).validate(),
            Err("findings[].line must be 1 or more".to_owned()),
            "line {line}"
        );
    }
}

#[test]
fn completed_failed_and_skipped_are_terminal() {
    let terminal: Vec<(ReviewStatus, bool)> = [
        ReviewStatus::Pending,
        ReviewStatus::Running,
        ReviewStatus::Completed,
        ReviewStatus::Failed,
        ReviewStatus::Skipped,
    ]
    .into_iter()
    .map(|s| (s, s.is_terminal()))
    .collect();
    assert_eq!(
        terminal,
        vec![
            (ReviewStatus::Pending, false),
            (ReviewStatus::Running, false),
            (ReviewStatus::Completed, true),
            (ReviewStatus::Failed, true),
            (ReviewStatus::Skipped, true),
        ]
    );
}

#[test]
fn every_range_name_parses_to_its_window() {
    let parsed: Vec<_> = ["24h", "7d", "30d", "90d", "all", "1y", "", "30D"]
        .into_iter()
        .map(|s| (s, StatsRange::parse(s).map(StatsRange::seconds)))
        .collect();
    let day = 86_400;
    assert_eq!(
        parsed,
        vec![
            ("24h", Some(Some(day))),
            ("7d", Some(Some(7 * day))),
            ("30d", Some(Some(30 * day))),
            ("90d", Some(Some(90 * day))),
            ("all", Some(None)),
            ("1y", None),
            ("", None),
            ("30D", None),
        ]
    );
}

#[test]
fn a_day_is_exactly_ten_characters_with_dashes_in_place() {
    assert_eq!(parse_day("2024-02-29"), Some(1_709_164_800));
    for bad in [
        "2024-01-011",
        "2024-01-1",
        "2024",
        "",
        "2024/01/01",
        "2024-01/01",
        "2024_01-01",
        "2023-02-29",
        "2024-13-01",
        "2024-00-10",
        "+024-01-01",
    ] {
        assert_eq!(parse_day(bad), None, "{bad:?}");
    }
}
