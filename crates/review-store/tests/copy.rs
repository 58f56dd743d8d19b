#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `Store::copy_into` (`review-server db copy`; README, "SQLite or PostgreSQL"): an install's
//! SQLite history moved into an empty PostgreSQL (or SQLite) database reads the same through
//! every endpoint's query, and the copy refuses a database that already holds data.

mod common;

use pretty_assertions::assert_eq;
use review_domain::{EpochMillis, EpochSeconds};
use review_domain::{FindingKind, NewFinding, Severity, StatsFilter, Trigger};
use review_store::{Completion, NewReview, NewSkill, Store};

const DAY: i64 = 86_400;
const T0: i64 = 20_000 * DAY;

fn new_review(repo: &str, pr: i64, trigger: Trigger) -> NewReview {
    NewReview {
        repo_full_name: repo.into(),
        pr_number: pr,
        title: Some(format!("PR {pr} of {repo}")),
        trigger: Some(trigger),
        attempt: 0,
        head_sha: None,
    }
}

/// Two repos, reviews in every end state over several days, findings, a setting, a skill with
/// its blob, a delivery id, a transcript and a delivery accepted into the webhook inbox.
async fn fill(store: &Store) {
    for repo in ["o/a", "p/b"] {
        store
            .register_repo(repo, 7, EpochSeconds(T0))
            .await
            .unwrap();
    }
    store
        .update_repo(
            "o/a",
            Some("be terse"),
            Some("openai/gpt-5"),
            Some(1),
            Some(Some("question")),
            Some(Some(12.5)),
        )
        .await
        .unwrap();
    for i in 0..30i64 {
        let repo = if i % 3 == 0 { "p/b" } else { "o/a" };
        let at = T0 + (i % 5) * DAY + i * 60;
        let trigger = if i % 4 == 0 {
            Trigger::Synchronize
        } else {
            Trigger::Opened
        };
        let r = store
            .insert_review(&new_review(repo, i, trigger), EpochSeconds(at))
            .await
            .unwrap();
        store
            .start_review(r.id, &format!("review-{i}"))
            .await
            .unwrap();
        let finding = NewFinding {
            kind: FindingKind::Inline,
            body: format!("finding {i}"),
            event: None,
            path: Some(format!("src/f{}.rs", i % 4)),
            line: Some(i + 1),
            severity: Some(
                [Severity::Blocking, Severity::Nit, Severity::Question][(i % 3) as usize],
            ),
            github_review_id: Some(1000 + i),
            github_comment_id: Some(2000 + i),
            fingerprint: None,
        };
        store
            .insert_findings(&r, &[finding], EpochSeconds(at + 5))
            .await
            .unwrap();
        match i % 4 {
            0 | 1 => {
                let done = Completion {
                    cost: 0.125 * i as f64,
                    tokens: 100 * i,
                    model: ["anthropic/m", "openai/n"][(i % 2) as usize].into(),
                    patch_id: Some(format!("patch-{i}")),
                };
                store
                    .complete_review(r.id, &done, EpochSeconds(at + 30 + i))
                    .await
                    .unwrap();
            }
            2 => {
                store
                    .fail_review(r.id, "model said no", None, EpochSeconds(at + 40))
                    .await
                    .unwrap();
            }
            _ => {
                store
                    .skip_review(r.id, None, EpochSeconds(at + 50))
                    .await
                    .unwrap();
            }
        }
    }
    store
        .put_setting("agent_model", Some("openai/gpt-5"))
        .await
        .unwrap();
    let skill = NewSkill {
        name: "tidy".into(),
        source_url: "https://github.com/o/skills/tree/main/tidy".into(),
        owner: "o".into(),
        repo: "skills".into(),
        path: "tidy".into(),
        git_ref: "abc".into(),
        description: Some("tidy code".into()),
        blob: vec![0, 1, 2, 255],
    };
    store.upsert_skill(&skill, EpochSeconds(T0)).await.unwrap();
    store.claim_delivery("d-1", EpochSeconds(T0)).await.unwrap();
    store
        .save_transcript("review-1", "{\"items\":[]}", EpochSeconds(T0))
        .await
        .unwrap();
    store
        .accept_delivery(
            Some("d-2"),
            &new_review("p/b", 5, Trigger::Synchronize),
            "job-5",
            EpochMillis(T0 * 1000),
        )
        .await
        .unwrap();
}

async fn assert_same(a: &Store, b: &Store) {
    let filters = [
        StatsFilter::default(),
        StatsFilter {
            since: Some(T0 + DAY),
            until: Some(T0 + 3 * DAY + 100),
            ..Default::default()
        },
        StatsFilter {
            repo: Some("o/a".into()),
            ..Default::default()
        },
        StatsFilter {
            model: Some("openai/n".into()),
            ..Default::default()
        },
    ];
    for f in &filters {
        assert_eq!(
            a.stats(f).await.unwrap(),
            b.stats(f).await.unwrap(),
            "{f:?}"
        );
        assert_eq!(
            a.charts(f).await.unwrap(),
            b.charts(f).await.unwrap(),
            "{f:?}"
        );
        assert_eq!(
            a.list_reviews(f, None, None, 100).await.unwrap(),
            b.list_reviews(f, None, None, 100).await.unwrap()
        );
    }
    assert_eq!(a.repos().await.unwrap(), b.repos().await.unwrap());
    for pr in 0..30 {
        assert_eq!(
            a.findings_for_pr("o/a", pr).await.unwrap(),
            b.findings_for_pr("o/a", pr).await.unwrap()
        );
    }
    assert_eq!(a.settings().await.unwrap(), b.settings().await.unwrap());
    assert_eq!(a.skills().await.unwrap(), b.skills().await.unwrap());
    assert_eq!(
        a.skill_blob("tidy").await.unwrap(),
        b.skill_blob("tidy").await.unwrap()
    );
    assert_eq!(
        a.transcript("review-1").await.unwrap(),
        b.transcript("review-1").await.unwrap()
    );
    assert!(
        !b.claim_delivery("d-1", EpochSeconds(T0 + 1)).await.unwrap(),
        "delivery ids came along"
    );
}

async fn copy_and_check(target: &Store) {
    let source = common::sqlite().await;
    fill(&source).await;
    let report = source.copy_into(target).await.unwrap();
    let reviews = report.iter().find(|(t, _)| *t == "reviews").unwrap().1;
    assert_eq!(reviews, 30);
    assert_same(&source, target).await;
    // The accepted delivery came along and becomes its review on the target; new rows
    // continue after the copied ids.
    let promoted = target
        .promote_inbox(64, EpochSeconds(T0 + 9 * DAY))
        .await
        .unwrap();
    assert_eq!(promoted.len(), 1);
    assert_eq!(
        (promoted[0].row.pr_number, promoted[0].job.as_str()),
        (5, "job-5")
    );
    assert_eq!(promoted[0].row.id, 31);
    let next = target
        .insert_review(
            &new_review("o/a", 99, Trigger::Opened),
            EpochSeconds(T0 + 9 * DAY),
        )
        .await
        .unwrap();
    assert_eq!(next.id, 32);
    // A second copy into the now occupied target is refused and writes nothing.
    let err = source.copy_into(target).await.unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    assert_eq!(target.review(32).await.unwrap().unwrap().pr_number, 99);
}

#[tokio::test]
async fn a_sqlite_database_copied_into_postgres_reads_the_same() {
    let Some(pg) = common::postgres().await else {
        return;
    };
    copy_and_check(&pg).await;
}

#[tokio::test]
async fn a_sqlite_database_copied_into_another_sqlite_reads_the_same() {
    let target = common::sqlite().await;
    copy_and_check(&target).await;
}
