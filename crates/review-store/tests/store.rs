#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The store against a real SQLite file.

use pretty_assertions::assert_eq;
use review_domain::{FindingKind, NewFinding, ReviewEvent, Severity, Trigger};
use review_store::{Completion, NewReview, Store};

async fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    (dir, store)
}

fn new_review(pr: i64) -> NewReview {
    NewReview {
        repo_full_name: "o/r".into(),
        pr_number: pr,
        title: Some("t".into()),
        trigger: Some(Trigger::Opened),
        attempt: 0,
    }
}

#[tokio::test]
async fn database_file_is_created_in_wal_mode_with_every_table() {
    let (dir, store) = store().await;
    assert!(dir.path().join("review.db").exists());
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    for table in ["repos", "reviews", "findings", "skills", "settings"] {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = ?")
            .bind(table)
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(n, 1, "{table}");
    }
}

#[tokio::test]
async fn registration_inserts_disabled_then_changes_only_installation_id() {
    let (_d, store) = store().await;
    let (row, changed) = store.register_repo("o/r", 7, 100).await.unwrap();
    assert!(changed);
    assert_eq!(
        (row.enabled, row.installation_id, row.created_at),
        (0, 7, 100)
    );
    store
        .update_repo("o/r", Some("p"), Some("anthropic/x"), Some(1))
        .await
        .unwrap();
    let (row, changed) = store.register_repo("o/r", 7, 200).await.unwrap();
    assert!(!changed, "same installation id is no change");
    let (row2, changed) = store.register_repo("o/r", 8, 300).await.unwrap();
    assert!(changed);
    assert_eq!(row2.installation_id, 8);
    assert_eq!(
        (row2.enabled, row2.prompt, row2.model, row2.created_at),
        (
            1,
            Some("p".into()),
            Some("anthropic/x".into()),
            row.created_at
        )
    );
}

#[tokio::test]
async fn lifecycle_pending_running_completed() {
    let (_d, store) = store().await;
    let r = store.insert_review(&new_review(3), 10).await.unwrap();
    assert_eq!(
        (r.status.as_str(), r.attempt, r.trigger.as_deref()),
        ("pending", 0, Some("opened"))
    );
    let r = store.start_review(r.id, "s-1").await.unwrap().unwrap();
    assert_eq!(
        (r.status.as_str(), r.session_id.as_deref()),
        ("running", Some("s-1"))
    );
    assert!(
        store.start_review(r.id, "again").await.unwrap().is_none(),
        "only pending starts"
    );
    let done = Completion {
        cost: 0.25,
        tokens: 1200,
        model: "anthropic/m".into(),
        patch_id: Some("abc".into()),
    };
    let r = store
        .complete_review(r.id, &done, 20)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, "completed");
    assert_eq!(
        (r.cost, r.tokens, r.completed_at),
        (Some(0.25), Some(1200), Some(20))
    );
    assert_eq!(
        store
            .last_completed_patch_id("o/r", 3)
            .await
            .unwrap()
            .as_deref(),
        Some("abc")
    );
    assert!(
        store
            .fail_review(r.id, "late", None, 30)
            .await
            .unwrap()
            .is_none(),
        "terminal stays"
    );
}

#[tokio::test]
async fn boot_fails_everything_left_pending_or_running() {
    let (_d, store) = store().await;
    let a = store.insert_review(&new_review(1), 1).await.unwrap();
    let b = store.insert_review(&new_review(2), 1).await.unwrap();
    store.start_review(b.id, "s").await.unwrap();
    let failed = store
        .fail_unfinished("interrupted by restart", 5)
        .await
        .unwrap();
    assert_eq!(failed.len(), 2);
    let a = store.review(a.id).await.unwrap().unwrap();
    assert_eq!(
        (a.status.as_str(), a.error.as_deref()),
        ("failed", Some("interrupted by restart"))
    );
}

#[tokio::test]
async fn findings_are_written_all_together_and_read_per_pr() {
    let (_d, store) = store().await;
    let r = store.insert_review(&new_review(4), 1).await.unwrap();
    let findings = vec![
        NewFinding {
            kind: FindingKind::Summary,
            body: "sum".into(),
            event: Some(ReviewEvent::Comment),
            path: None,
            line: None,
            severity: None,
            github_review_id: Some(9),
            github_comment_id: None,
        },
        NewFinding {
            kind: FindingKind::Inline,
            body: "x".into(),
            event: None,
            path: Some("a.rs".into()),
            line: Some(3),
            severity: Some(Severity::Blocking),
            github_review_id: Some(9),
            github_comment_id: Some(11),
        },
    ];
    let rows = store.insert_findings(&r, &findings, 2).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].severity.as_deref(), Some("blocking"));
    assert_eq!(store.findings_for_pr("o/r", 4).await.unwrap(), rows);
    assert_eq!(store.findings_for_review(r.id).await.unwrap(), rows);
    assert!(store.findings_for_review(999).await.unwrap().is_empty());
}

#[tokio::test]
async fn settings_put_and_delete() {
    let (_d, store) = store().await;
    store
        .put_setting("agent_model", Some("anthropic/a"))
        .await
        .unwrap();
    store
        .put_setting("agent_model", Some("anthropic/b"))
        .await
        .unwrap();
    assert_eq!(
        store.setting("agent_model").await.unwrap().as_deref(),
        Some("anthropic/b")
    );
    store.put_setting("agent_model", None).await.unwrap();
    assert!(store.settings().await.unwrap().is_empty());
}
