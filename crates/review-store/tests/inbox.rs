#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The webhook inbox (docs/architecture.md, "The webhook inbox") on a real SQLite file and a
//! real PostgreSQL database: a delivery is accepted once per window, an accepted delivery
//! becomes exactly one queued review even with promoters racing on two pools, and reviews
//! are created in the order their deliveries were accepted.

mod common;

use common::TestStore;
use review_domain::Trigger;
use review_domain::{EpochMillis, EpochSeconds};
use review_store::{DELIVERY_WINDOW_SECS, NewReview, Store};

fn new_review(pr: i64, trigger: Trigger) -> NewReview {
    NewReview {
        repo_full_name: "o/r".into(),
        pr_number: pr,
        title: Some(format!("PR {pr}")),
        trigger: Some(trigger),
        attempt: 0,
        head_sha: None,
    }
}

async fn count(store: &TestStore, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

on_both_backends! {
    async fn a_delivery_is_accepted_once_per_window_and_its_review_written_on_promotion(store: TestStore) {
        let now_ms = 1_700_000_000_000;
        let new = new_review(7, Trigger::Opened);
        assert!(store.accept_delivery(Some("d-1"), &new, "job-1", EpochMillis(now_ms)).await.unwrap());
        // A redelivery inside the window writes nothing.
        assert!(!store.accept_delivery(Some("d-1"), &new, "job-1", EpochMillis(now_ms + 1_000)).await.unwrap());
        assert_eq!(store.inbox_len().await.unwrap(), 1);
        assert_eq!(count(&store, "reviews").await, 0, "no review row before promotion");

        let promoted = store.promote_inbox(64, EpochSeconds(1_700_000_001)).await.unwrap();
        assert_eq!(promoted.len(), 1);
        let p = &promoted[0];
        assert_eq!(p.job, "job-1");
        assert_eq!(p.row.repo_full_name, "o/r");
        assert_eq!(p.row.pr_number, 7);
        assert_eq!(p.row.title.as_deref(), Some("PR 7"));
        assert_eq!(p.row.trigger, Some(Trigger::Opened));
        assert_eq!(p.row.status.as_str(), "pending");
        assert_eq!(p.row.created_at, 1_700_000_001);
        assert_eq!(store.inbox_len().await.unwrap(), 0);
        // The review waits in the work queue with its job.
        let claimed = store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        assert_eq!((claimed.review_id, claimed.job.as_str()), (p.row.id, "job-1"));
        assert!(store.promote_inbox(64, EpochSeconds(1_700_000_002)).await.unwrap().is_empty());

        // Past the window the same id is a new delivery again.
        let later = now_ms + (DELIVERY_WINDOW_SECS + 1) * 1000;
        assert!(store.accept_delivery(Some("d-1"), &new, "job-2", EpochMillis(later)).await.unwrap());
        // Without a delivery id every delivery is accepted.
        assert!(store.accept_delivery(None, &new, "job-3", EpochMillis(later)).await.unwrap());
        assert!(store.accept_delivery(Some(""), &new, "job-4", EpochMillis(later)).await.unwrap());
        assert_eq!(store.inbox_len().await.unwrap(), 3);
    }

    async fn the_direct_path_claims_the_delivery_and_queues_its_review_in_one_transaction(store: TestStore) {
        let new = new_review(3, Trigger::Synchronize);
        let row = store.insert_delivered_review(Some("d-9"), &new, "job-9", EpochSeconds(50)).await.unwrap().unwrap();
        assert_eq!((row.pr_number, row.status.as_str(), row.created_at), (3, "pending", 50));
        // A redelivery writes nothing; a delivery without an id is always new.
        assert_eq!(store.insert_delivered_review(Some("d-9"), &new, "job-9", EpochSeconds(51)).await.unwrap(), None);
        assert!(store.insert_delivered_review(None, &new, "job-10", EpochSeconds(52)).await.unwrap().is_some());
        assert_eq!(count(&store, "reviews").await, 2);
        let claimed = store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        assert_eq!((claimed.review_id, claimed.job.as_str()), (row.id, "job-9"));
        assert_eq!(store.inbox_len().await.unwrap(), 0, "the direct path skips the inbox");
    }

    async fn a_redelivery_racing_on_two_pools_is_accepted_once(store: TestStore) {
        let other = Store::open(&store.url).await.unwrap();
        let new = new_review(1, Trigger::Opened);
        let tries = (0..16).map(|i| {
            let s = if i % 2 == 0 { store.store.clone() } else { other.clone() };
            let new = new.clone();
            async move { s.accept_delivery(Some("same"), &new, "job", EpochMillis(1_000)).await.unwrap() }
        });
        let accepted = futures::future::join_all(tries).await;
        assert_eq!(accepted.iter().filter(|a| **a).count(), 1);
        assert_eq!(store.inbox_len().await.unwrap(), 1);
    }

    async fn promoters_racing_on_two_pools_promote_each_delivery_once_in_order(store: TestStore) {
        let other = Store::open(&store.url).await.unwrap();
        for pr in 0..60 {
            let trigger = if pr % 2 == 0 { Trigger::Opened } else { Trigger::Synchronize };
            store
                .accept_delivery(Some(&format!("d-{pr}")), &new_review(pr, trigger), &format!("job-{pr}"), EpochMillis(1_000))
                .await
                .unwrap();
        }
        // Six promoters, small batches, two pools, until the inbox is empty.
        let promote_all = |s: Store| async move {
            let mut got = Vec::new();
            loop {
                let batch = s.promote_inbox(4, EpochSeconds(1)).await.unwrap();
                if batch.is_empty() {
                    return got;
                }
                got.extend(batch);
            }
        };
        let runs = futures::future::join_all(
            (0..6).map(|i| promote_all(if i % 2 == 0 { store.store.clone() } else { other.clone() })),
        )
        .await;
        let mut all: Vec<_> = runs.into_iter().flatten().collect();
        assert_eq!(all.len(), 60, "every accepted delivery promoted once");
        assert_eq!(count(&store, "reviews").await, 60);
        assert_eq!(count(&store, "review_queue").await, 60);
        // Review ids follow the order the deliveries were accepted in.
        all.sort_by_key(|p| p.row.id);
        let prs: Vec<i64> = all.iter().map(|p| p.row.pr_number).collect();
        assert_eq!(prs, (0..60).collect::<Vec<_>>());
        for p in &all {
            assert_eq!(p.job, format!("job-{}", p.row.pr_number));
        }
    }

    async fn a_second_delivery_of_a_head_is_recorded_skipped_and_queues_nothing(store: TestStore) {
        let now_ms = 1_700_000_000_000;
        let head = |sha: &str, trigger| NewReview { head_sha: Some(sha.repeat(40)), ..new_review(5, trigger) };
        // Opened and reopened for the same head, through the inbox (two replicas' path).
        assert!(store.accept_delivery(Some("d-1"), &head("a", Trigger::Opened), "job-1", EpochMillis(now_ms)).await.unwrap());
        assert!(store.accept_delivery(Some("d-2"), &head("a", Trigger::Reopened), "job-2", EpochMillis(now_ms)).await.unwrap());
        let promoted = store.promote_inbox(10, EpochSeconds(100)).await.unwrap();
        let states: Vec<(&str, Option<&str>)> = promoted
            .iter()
            .map(|p| (p.row.status.as_str(), p.row.error.as_deref()))
            .collect();
        let first = promoted[0].row.id;
        let coalesced = format!("coalesced into the pending review #{first} of {}", "a".repeat(12));
        assert_eq!(states, vec![("pending", None), ("skipped", Some(coalesced.as_str()))]);
        assert_eq!(count(&store, "review_queue").await, 1, "only the first is queued");
        // Once it completed, the direct path (SQLite's webhook) skips the same head too...
        store.claim_review("r", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        store.start_review(first, "s").await.unwrap().unwrap();
        let done = review_store::Completion { cost: 0.0, tokens: 1, model: "m".into(), patch_id: None };
        store.complete_review(first, &done, EpochSeconds(120)).await.unwrap().unwrap();
        store.release_review(first).await.unwrap();
        let again = store
            .insert_delivered_review(Some("d-3"), &head("a", Trigger::Synchronize), "job-3", EpochSeconds(130))
            .await
            .unwrap()
            .unwrap();
        let reviewed = format!("already reviewed at {} (review #{first})", "a".repeat(12));
        assert_eq!((again.status.as_str(), again.error.as_deref()), ("skipped", Some(reviewed.as_str())));
        // ...while a new head, a /review command and a retry of the same head are reviewed.
        for (sha, trigger) in [("b", Trigger::Synchronize), ("a", Trigger::Command), ("a", Trigger::Retry)] {
            let row = store
                .insert_delivered_review(None, &head(sha, trigger), "job", EpochSeconds(140))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(row.status.as_str(), "pending", "{sha} {trigger:?}");
        }
        assert_eq!(count(&store, "review_queue").await, 3);
    }
}

/// A database restart leaves the pool's idle connections dead; the pool lends them without a
/// ping, so the webhook's write must go through on a live one and lose no delivery.
#[tokio::test]
async fn a_delivery_is_accepted_after_the_database_dropped_every_pooled_connection() {
    use sqlx::Connection;
    let Some(store) = common::postgres().await else {
        return;
    };
    // Fill the pool with idle connections.
    let busy = (0..8).map(|pr| {
        let new = new_review(pr, Trigger::Opened);
        let store = store.store.clone();
        async move {
            store
                .accept_delivery(Some(&format!("warm-{pr}")), &new, "job", EpochMillis(1_000))
                .await
                .unwrap()
        }
    });
    futures::future::join_all(busy).await;
    // Another session terminates every other session of the database, as a restart would.
    let mut admin = sqlx::AnyConnection::connect(&store.url).await.unwrap();
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .execute(&mut admin)
    .await
    .unwrap();
    let accepted = store
        .accept_delivery(
            Some("after-restart"),
            &new_review(99, Trigger::Opened),
            "job-99",
            EpochMillis(2_000),
        )
        .await
        .unwrap();
    assert!(accepted);
    let inbox: i64 = sqlx::query_scalar("SELECT count(*) FROM review_inbox WHERE job = 'job-99'")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(inbox, 1);
}

on_both_backends! {
    /// A pull request's review queued without a delivery id (a GitLab hook without
    /// `X-Gitlab-Event-UUID`) reads before it writes. With other writers committing in between,
    /// SQLite answered such a transaction `SQLITE_BUSY_SNAPSHOT` (517), which no busy timeout
    /// retries; write transactions now take the write lock first (`BEGIN IMMEDIATE`).
    async fn reviews_queued_without_a_delivery_id_are_written_while_others_write(store: TestStore) {
        let mut tasks = tokio::task::JoinSet::new();
        for pr in 1..=200 {
            let s: Store = (*store).clone();
            tasks.spawn(async move {
                let new = NewReview {
                    head_sha: Some(format!("{pr:040x}")),
                    ..new_review(pr, Trigger::Opened)
                };
                s.insert_delivered_review(None, &new, "job", EpochSeconds(1_700_000_000 + pr))
                    .await
                    .map(|row| row.is_some())
            });
            let s: Store = (*store).clone();
            tasks.spawn(async move {
                s.register_repo(&format!("o/r{pr}"), pr, EpochSeconds(1_700_000_000))
                    .await
                    .map(|_| true)
            });
        }
        while let Some(done) = tasks.join_next().await {
            assert!(done.unwrap().unwrap());
        }
        assert_eq!(count(&store, "reviews").await, 200);
    }
}
