#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The store against a real SQLite file and a real PostgreSQL database (tests/common).

mod common;

use pretty_assertions::assert_eq;
use review_domain::EpochSeconds;
use review_domain::{FindingKind, NewFinding, ReviewEvent, Severity, Trigger};
use review_store::{Backend, Completion, NewReview};

fn new_review(pr: i64) -> NewReview {
    NewReview {
        repo_full_name: "o/r".into(),
        pr_number: pr,
        title: Some("t".into()),
        trigger: Some(Trigger::Opened),
        attempt: 0,
        head_sha: None,
    }
}

/// Commits leave the write-ahead log alone (no fsync on the request path); the keeper's
/// checkpoint folds it into the database file, and the next writer starts the log over.
#[tokio::test]
async fn commits_do_not_checkpoint_and_the_keepers_checkpoint_does() {
    let store = common::sqlite().await;
    let wal = store.dir.as_ref().unwrap().path().join("review.db-wal");
    let autocheckpoint: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(autocheckpoint, 0);
    let new = review_store::NewReview {
        repo_full_name: "o/r".into(),
        pr_number: 1,
        title: Some("x".repeat(3000)),
        trigger: Some(review_domain::Trigger::Opened),
        attempt: 0,
        head_sha: None,
    };
    // Well past SQLite's default of a checkpoint every 1,000 pages (4 MB).
    for _ in 0..1500 {
        store.insert_review(&new, EpochSeconds(1)).await.unwrap();
    }
    let grown = std::fs::metadata(&wal).unwrap().len();
    assert!(
        grown > 4 << 20,
        "the log was checkpointed by a commit: {grown} bytes"
    );
    let (frames, checkpointed) = store.checkpoint().await.unwrap();
    assert!(frames > 1000, "{frames}");
    assert_eq!(checkpointed, frames, "every frame checkpointed");
    // The next writer starts the log over instead of growing it.
    store.insert_review(&new, EpochSeconds(2)).await.unwrap();
    let (frames, _) = store.checkpoint().await.unwrap();
    assert!(frames < 100, "the log went on growing: {frames} frames");
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        grown,
        "reused in place"
    );
}

#[tokio::test]
async fn database_file_is_created_in_wal_mode_with_every_table() {
    let store = common::sqlite().await;
    assert!(
        store
            .dir
            .as_ref()
            .unwrap()
            .path()
            .join("review.db")
            .exists()
    );
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    for table in ["repos", "reviews", "findings", "skills", "settings"] {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = $1")
            .bind(table)
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(n, 1, "{table}");
    }
}

on_both_backends! {
    async fn registration_inserts_disabled_then_changes_only_installation_id(store: TestStore) {
        let (row, changed) = store.register_repo("o/r", 7, EpochSeconds(100)).await.unwrap();
        assert!(changed);
        assert_eq!(
            (row.enabled, row.installation_id, row.created_at),
            (0, 7, 100)
        );
        store
            .update_repo("o/r", Some("p"), Some("anthropic/x"), Some(1), None, None)
            .await
            .unwrap();
        let (row, changed) = store.register_repo("o/r", 7, EpochSeconds(200)).await.unwrap();
        assert!(!changed, "same installation id is no change");
        let (row2, changed) = store.register_repo("o/r", 8, EpochSeconds(300)).await.unwrap();
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
}

on_both_backends! {
    async fn lifecycle_pending_running_completed(store: TestStore) {
        let r = store.insert_review(&new_review(3), EpochSeconds(10)).await.unwrap();
        assert_eq!(
            (r.status.as_str(), r.attempt, r.trigger.map(Trigger::as_str)),
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
            .complete_review(r.id, &done, EpochSeconds(20))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.status.as_str(), "completed");
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
                .fail_review(r.id, "late", None, EpochSeconds(30))
                .await
                .unwrap()
                .is_none(),
            "terminal stays"
        );
    }
}

on_both_backends! {
    async fn boot_fails_everything_left_pending_or_running(store: TestStore) {
        let a = store.insert_review(&new_review(1), EpochSeconds(1)).await.unwrap();
        let b = store.insert_review(&new_review(2), EpochSeconds(1)).await.unwrap();
        store.start_review(b.id, "s").await.unwrap();
        let failed = store
            .fail_unfinished("interrupted by restart", EpochSeconds(5))
            .await
            .unwrap();
        assert_eq!(failed.len(), 2);
        let a = store.review(a.id).await.unwrap().unwrap();
        assert_eq!(
            (a.status.as_str(), a.error.as_deref()),
            ("failed", Some("interrupted by restart"))
        );
    }
}

on_both_backends! {
    async fn findings_are_written_all_together_and_read_per_pr(store: TestStore) {
        let r = store.insert_review(&new_review(4), EpochSeconds(1)).await.unwrap();
        let findings = vec![
            NewFinding {
                kind: FindingKind::Summary,
                body: "sum".into(),
                event: Some(ReviewEvent::Comment),
                path: None,
                line: None,
                severity: None,
                github_review_id: Some(9),
                github_comment_id: None, fingerprint: None,
            },
            NewFinding {
                kind: FindingKind::Inline,
                body: "x".into(),
                event: None,
                path: Some("a.rs".into()),
                line: Some(3),
                severity: Some(Severity::Blocking),
                github_review_id: Some(9),
                github_comment_id: Some(11), fingerprint: None,
            },
        ];
        let rows = store.insert_findings(&r, &findings, EpochSeconds(2)).await.unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].severity.map(Severity::as_str), Some("blocking"));
        assert_eq!(store.findings_for_pr("o/r", 4).await.unwrap(), rows);
        assert_eq!(store.findings_for_review(r.id).await.unwrap(), rows);
        assert!(store.findings_for_review(999).await.unwrap().is_empty());
    }
}

on_both_backends! {
    async fn settings_put_and_delete(store: TestStore) {
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
}

// ---- read-only queries of the chat tool (docs/review-service.md §4, Chat rule 2) ----------------------

use review_store::{READ_QUERY_MAX_ROWS, StoreError};
use serde_json::json;

on_both_backends! {
    async fn read_query_answers_columns_and_rows_as_json(store: TestStore) {
        for pr in 1..=3 {
            store
                .insert_review(&new_review(pr), EpochSeconds(100 + pr))
                .await
                .unwrap();
        }
        let r = store
            .read_query("SELECT count(*) AS reviews, max(pr_number) AS top, 'x' AS s, NULL AS n, 1.5 AS f FROM reviews;")
            .await
            .unwrap();
        assert_eq!(r.columns, vec!["reviews", "top", "s", "n", "f"]);
        assert_eq!(
            r.rows,
            vec![vec![
                json!(3),
                json!(3),
                json!("x"),
                json!(null),
                json!(1.5)
            ]]
        );
        assert!(!r.truncated);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"columns": ["reviews", "top", "s", "n", "f"], "rows": [[3, 3, "x", null, 1.5]], "truncated": false})
        );
        let empty = store
            .read_query("SELECT id FROM reviews WHERE id < 0")
            .await
            .unwrap();
        assert_eq!(
            (empty.columns, empty.rows.len()),
            (vec!["id".to_owned()], 0)
        );
    }
}

on_both_backends! {
    async fn read_query_rows_above_the_cap_are_cut_and_say_so(store: TestStore) {
        let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) SELECT x FROM c";
        let r = store.read_query(sql).await.unwrap();
        assert_eq!(r.rows.len(), READ_QUERY_MAX_ROWS);
        assert!(r.truncated);
        assert!(r.note.unwrap().contains("first 200 rows"));
    }
}

on_both_backends! {
    async fn read_query_refuses_writes_and_leaves_the_database_unchanged(store: TestStore) {
        store.insert_review(&new_review(1), EpochSeconds(100)).await.unwrap();
        // The last two are each engine's way out of read-only.
        let escapes = match store.backend() {
            Backend::Sqlite => ["PRAGMA query_only = OFF", "ATTACH DATABASE ':memory:' AS other"],
            Backend::Postgres => [
                "SET default_transaction_read_only = off",
                "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
            ],
        };
        for sql in [
            "DELETE FROM reviews",
            "SELECT 1; DELETE FROM reviews",
            "WITH x AS (SELECT 1) DELETE FROM reviews",
            "DROP TABLE reviews",
        ]
        .into_iter()
        .chain(escapes)
        {
            let err = store.read_query(sql).await.unwrap_err();
            assert!(matches!(err, StoreError::QueryRefused(_)), "{sql}: {err}");
        }
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM reviews")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
}

on_both_backends! {
    async fn read_query_cannot_read_the_settings_table_that_holds_api_keys(store: TestStore) {
        store
            .put_setting("agent_api_key", Some("sk-secret"))
            .await
            .unwrap();
        let (concat, schema) = match store.backend() {
            Backend::Sqlite => ("group_concat(value)", "main"),
            Backend::Postgres => ("string_agg(value, ',')", "public"),
        };
        for sql in [
            "SELECT * FROM settings".to_owned(),
            "SELECT value FROM settings WHERE key = 'agent_api_key'".to_owned(),
            format!("SELECT (SELECT {concat} FROM settings) AS v"),
            format!("WITH s AS (SELECT * FROM {schema}.settings) SELECT * FROM s"),
            "SELECT count(*) FROM settings".to_owned(),
        ] {
            let err = store.read_query(&sql).await.unwrap_err();
            assert!(
                matches!(&err, StoreError::QueryRefused(m) if m.contains("settings")),
                "{sql}: {err}"
            );
        }
    }
}

on_both_backends! {
    async fn read_query_is_interrupted_by_the_time_cap(store: TestStore) {
        let started = std::time::Instant::now();
        let err = store
            .read_query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
            .await
            .unwrap_err();
        // Stopped by the time cap, or on PostgreSQL by the reader role's temp_file_limit when
        // the recursion spills faster than the clock runs, whichever comes first.
        assert!(
            matches!(err, StoreError::QueryTimeout(_)) || err.to_string().contains("temp_file_limit"),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(8));
        // The store still works afterwards.
        assert_eq!(
            store.read_query("SELECT 1").await.unwrap().rows,
            vec![vec![json!(1)]]
        );
    }
}

on_both_backends! {
    async fn read_query_reports_database_errors_in_words(store: TestStore) {
        let err = store
            .read_query("SELECT nope FROM reviews")
            .await
            .unwrap_err();
        let words = match store.backend() {
            Backend::Sqlite => "no such column: nope",
            Backend::Postgres => "column \"nope\" does not exist",
        };
        assert!(err.to_string().contains(words), "{err}");
    }
}

on_both_backends! {
    async fn a_rejected_query_keeps_the_database_error_as_its_source(store: TestStore) {
        let err = store
            .read_query("SELECT nope FROM reviews")
            .await
            .unwrap_err();
        let source = std::error::Error::source(&err).expect("the database's error");
        let (message, driver) = match &err {
            StoreError::Query { message, .. } => (message.clone(), source.to_string()),
            other => panic!("{other:?}"),
        };
        assert_eq!(err.to_string(), format!("query failed: {message}"));
        match store.backend() {
            Backend::Sqlite => {
                assert!(source.is::<rusqlite::Error>(), "{source:?}");
                assert_eq!(message, driver);
            }
            Backend::Postgres => {
                assert!(source.is::<sqlx::Error>(), "{source:?}");
                assert!(driver.contains(&message), "{driver} / {message}");
            }
        }
    }
}

on_both_backends! {
    async fn unknown_trigger_or_status_text_is_an_error_not_a_default(store: TestStore) {
        let r = store.insert_review(&new_review(4), EpochSeconds(10)).await.unwrap();
        // The trigger column has no CHECK: another program may write anything there.
        sqlx::query("UPDATE reviews SET \"trigger\" = 'manual' WHERE id = $1")
            .bind(r.id)
            .execute(store.pool())
            .await
            .unwrap();
        let err = store.review(r.id).await.unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::UnknownValue { table: "reviews", column: "trigger", message }
                    if message.contains("\"manual\"") && message.contains("synchronize")
            ),
            "{err}"
        );
        // The status column has a CHECK; a database written with checks off (SQLite) or
        // without the constraint (PostgreSQL) still reads as an error.
        let mut conn = store.pool().acquire().await.unwrap();
        let (off, on) = match store.backend() {
            Backend::Sqlite => (
                "PRAGMA ignore_check_constraints = ON",
                "PRAGMA ignore_check_constraints = OFF",
            ),
            Backend::Postgres => ("ALTER TABLE reviews DROP CONSTRAINT reviews_status_check", "SELECT 1"),
        };
        sqlx::query(off).execute(&mut *conn).await.unwrap();
        sqlx::query("UPDATE reviews SET status = 'Done', \"trigger\" = NULL WHERE id = $1")
            .bind(r.id)
            .execute(&mut *conn)
            .await
            .unwrap();
        sqlx::query(on).execute(&mut *conn).await.unwrap();
        drop(conn);
        let err = store.reviews_for("o/r", None, 10).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown value in reviews.status: unknown ReviewStatus \"Done\"; expected one of: \
             pending, running, completed, failed, skipped"
        );
    }
}

on_both_backends! {
    /// docs/security.md, "Webhook deliveries": a delivery id is new once per 24 hours, also
    /// when many requests claim it at the same moment (replicas behind one database).
    async fn a_delivery_is_new_once_per_window(store: TestStore) {
        use review_store::DELIVERY_WINDOW_SECS;
        assert!(store.claim_delivery("d-1", EpochSeconds(1000)).await.unwrap());
        assert!(!store.claim_delivery("d-1", EpochSeconds(1001)).await.unwrap());
        assert!(store.claim_delivery("d-2", EpochSeconds(1001)).await.unwrap());
        assert!(!store.claim_delivery("d-1", EpochSeconds(1000 + DELIVERY_WINDOW_SECS)).await.unwrap());
        assert!(store.claim_delivery("d-1", EpochSeconds(1001 + DELIVERY_WINDOW_SECS)).await.unwrap());
        // Pruning forgets only the ids older than the window.
        assert_eq!(store.prune_deliveries(EpochSeconds(1001 + DELIVERY_WINDOW_SECS)).await.unwrap(), 0);
        assert_eq!(store.prune_deliveries(EpochSeconds(1002 + DELIVERY_WINDOW_SECS + 1)).await.unwrap(), 1, "d-2 seen at 1001");
        store.release_delivery("d-2").await.unwrap();
        assert!(store.claim_delivery("d-2", EpochSeconds(1002)).await.unwrap());
        let claims = futures::future::join_all(
            (0..16).map(|_| store.claim_delivery("d-race", EpochSeconds(5000))),
        )
        .await;
        let won = claims.into_iter().filter(|c| *c.as_ref().unwrap()).count();
        assert_eq!(won, 1);
    }
}

#[tokio::test]
async fn an_unknown_scheme_is_refused_without_the_password_in_the_message() {
    for url in [
        "mysql://u:hunter2@127.0.0.1/db",
        "postgres://u:hunter2@[::1/db",
    ] {
        let err = review_store::Store::open(url).await.err().unwrap();
        assert!(matches!(err, StoreError::Url { .. }), "{url}: {err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
