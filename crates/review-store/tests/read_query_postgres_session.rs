#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A chat query on PostgreSQL leaves nothing behind on the reader's pooled connection (a
//! session-level advisory lock taken in a SELECT survives the rollback and would stop review
//! intake), the writers' waits for the promoter lock are bounded, and the reader
//! role reads an allow-list of tables with bounded memory settings. Against a real PostgreSQL
//! (REVIEW_TEST_DATABASE_URL; skipped without one, failed under CI).

mod common;

use review_domain::Trigger;
use review_domain::{EpochMillis, EpochSeconds};
use review_store::{NewReview, PROMOTE_LOCK, Store, StoreError};

fn opened(pr: i64) -> NewReview {
    NewReview {
        repo_full_name: "o/r".into(),
        pr_number: pr,
        title: Some(format!("PR {pr}")),
        trigger: Some(Trigger::Opened),
        attempt: 0,
        head_sha: Some(format!("{pr:040}")),
    }
}

/// Advisory locks held in this test's database (pg_locks is cluster-wide).
async fn advisory_locks(store: &Store) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn a_chat_query_taking_the_promoter_lock_leaves_no_lock_and_intake_goes_on() {
    let Some(store) = common::postgres().await else {
        return;
    };
    // The finding's query: the promoter's key, session-level, inside a read-only SELECT.
    for sql in [
        format!("SELECT pg_try_advisory_lock({PROMOTE_LOCK}) AS took"),
        format!(
            "SELECT pg_advisory_lock({PROMOTE_LOCK}), pg_try_advisory_lock(1), pg_try_advisory_lock(2, 3)"
        ),
    ] {
        let r = store.read_query(&sql).await.unwrap();
        assert_eq!(r.rows.len(), 1, "{sql}");
        assert_eq!(advisory_locks(&store).await, 0, "a lock survived {sql}");
    }
    // Every pooled reader connection has run one; the next delivery still becomes a review
    // at once (the promoter waits for nobody).
    let queries: Vec<_> = (0..8)
        .map(|_| store.read_query("SELECT pg_try_advisory_lock(7366771734207129649)"))
        .collect();
    for r in futures::future::join_all(queries).await {
        r.unwrap();
    }
    assert!(
        store
            .accept_delivery(Some("after-chat"), &opened(1), "job-1", EpochMillis(1_000))
            .await
            .unwrap()
    );
    let started = std::time::Instant::now();
    let promoted = store.promote_inbox(10, EpochSeconds(2)).await.unwrap();
    assert_eq!(promoted.len(), 1);
    assert_eq!(promoted[0].row.status.as_str(), "pending");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

#[tokio::test]
async fn a_promoter_lock_held_elsewhere_times_out_with_an_error_instead_of_waiting_for_ever() {
    let Some(store) = common::postgres().await else {
        return;
    };
    // A session that keeps the key (what the chat's reader did before the fix).
    use sqlx::Connection;
    let mut holder = sqlx::PgConnection::connect(&store.url).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(PROMOTE_LOCK)
        .execute(&mut holder)
        .await
        .unwrap();
    store
        .accept_delivery(Some("d-1"), &opened(2), "job-2", EpochMillis(1_000))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = store.promote_inbox(10, EpochSeconds(2)).await.unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
    assert!(err.to_string().contains("lock timeout"), "{err}");
    // Three attempts of 2 s each, then the error (the poll tries again later).
    assert!(waited >= std::time::Duration::from_secs(6), "{waited:?}");
    assert!(waited < std::time::Duration::from_secs(12), "{waited:?}");
    assert_eq!(store.inbox_len().await.unwrap(), 1, "nothing lost");
    drop(holder);
    assert_eq!(
        store
            .promote_inbox(10, EpochSeconds(3))
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_reader_reads_only_its_allow_list_with_bounded_memory() {
    let Some(store) = common::postgres().await else {
        return;
    };
    store.read_query("SELECT 1").await.unwrap();
    for table in ["repos", "reviews", "findings", "skills", "stats_total_repo"] {
        store
            .read_query(&format!("SELECT count(*) FROM {table}"))
            .await
            .unwrap_or_else(|e| panic!("{table}: {e}"));
    }
    // A table made later is not readable until it is named; neither are the queue, the inbox,
    // the retries, the deliveries or the transcripts.
    sqlx::query("CREATE TABLE later_table (x int)")
        .execute(store.pool())
        .await
        .unwrap();
    let reopened = Store::open(&store.url).await.unwrap(); // grants are renewed at start
    for table in [
        "later_table",
        "review_queue",
        "review_inbox",
        "review_retries",
        "deliveries",
        "transcripts",
        "settings",
    ] {
        match reopened
            .read_query(&format!("SELECT count(*) FROM {table}"))
            .await
        {
            Err(StoreError::QueryRefused(_)) => {}
            other => panic!("{table}: {other:?}"),
        }
    }
    let settings: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(setconfig) FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
         WHERE r.rolname LIKE 'review_chat_%' AND s.setdatabase = 0",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    for want in ["work_mem=4MB", "temp_file_limit=64MB"] {
        assert!(settings.iter().any(|s| s == want), "{want} in {settings:?}");
    }
    let r = store
        .read_query(
            "SELECT current_setting('work_mem') AS w, current_setting('temp_file_limit') AS t",
        )
        .await
        .unwrap();
    assert_eq!(
        r.rows[0],
        vec![serde_json::json!("4MB"), serde_json::json!("64MB")]
    );
}
