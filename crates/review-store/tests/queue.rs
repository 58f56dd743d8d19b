#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The durable work queue (docs/architecture.md, "Many replicas") on a real SQLite file and a
//! real PostgreSQL database: one claim per review under concurrency, leases that lapse,
//! cancels for the owner, and retries that survive restarts and run once.

mod common;

use common::TestStore;
use review_domain::Trigger;
use review_domain::{EpochMillis, EpochSeconds};
use review_store::{NewReview, Store};

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

/// A second store on the same database: another replica.
async fn replica(store: &TestStore) -> Store {
    Store::open(&store.url).await.unwrap()
}

on_both_backends! {
    async fn a_push_supersedes_reviews_but_not_answers_and_an_answer_is_skipped_with_its_reason(store: TestStore) {
        let review = store.insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(10)).await.unwrap();
        let answer = NewReview { trigger: Some(Trigger::Reply), ..new_review(1) };
        let answer = store.insert_queued_review(&answer, "{}", None, None, EpochSeconds(10)).await.unwrap();
        let ask = NewReview { trigger: Some(Trigger::Ask), ..new_review(1) };
        let ask = store.insert_queued_review(&ask, "{}", None, None, EpochSeconds(10)).await.unwrap();
        assert_eq!(store.active_reviews_of_pr("o/r", 1, 0).await.unwrap(), vec![review.id]);
        // The automatic retry of another review does not wait for answers either.
        assert!(!store.pr_has_active_review("o/r", 1, review.id).await.unwrap());
        let skipped = store
            .skip_review_because(answer.id, "over thread_max_answers", EpochSeconds(12))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (skipped.status.as_str(), skipped.error.as_deref(), skipped.completed_at),
            ("skipped", Some("over thread_max_answers"), Some(12))
        );
        assert_eq!(store.skip_review_because(answer.id, "again", EpochSeconds(13)).await.unwrap(), None);
        assert_eq!(ask.trigger, Some(Trigger::Ask));
    }

    async fn every_queued_review_is_claimed_by_exactly_one_of_many_claimers(store: TestStore) {
        for pr in 0..40 {
            store
                .insert_queued_review(&new_review(pr), &format!("job-{pr}"), None, None, EpochSeconds(10))
                .await
                .unwrap();
        }
        let other = replica(&store).await;
        // Eight claimers on two connection pools race until the queue is empty.
        let claim_all = |s: Store, name: String| async move {
            let mut got = Vec::new();
            while let Some(c) = s.claim_review(&name, EpochMillis(i64::MAX)).await.unwrap() {
                got.push(c.review_id);
            }
            got
        };
        let runs = futures::future::join_all((0..8).map(|i| {
            let s = if i % 2 == 0 { store.store.clone() } else { other.clone() };
            claim_all(s, format!("replica-{i}"))
        }))
        .await;
        let mut all: Vec<i64> = runs.into_iter().flatten().collect();
        all.sort();
        let expected: Vec<i64> = (1..=40).collect();
        assert_eq!(all, expected, "each review claimed once, none lost");
    }

    async fn a_review_stopped_while_waiting_is_never_claimed(store: TestStore) {
        let row = store
            .insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        let failed = store.fail_waiting_review(row.id, "Stopped by user", EpochSeconds(11)).await.unwrap();
        assert_eq!(failed.unwrap().status.as_str(), "failed");
        assert_eq!(store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap(), None);
        // Its queue row is cleaned up on the next reap.
        store.reap_lapsed("x", EpochMillis(0)).await.unwrap();
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM review_queue")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(left, 0);
    }

    async fn a_claimed_review_is_not_failed_as_waiting(store: TestStore) {
        let row = store
            .insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        store.claim_review("a", EpochMillis(5_000)).await.unwrap().unwrap();
        assert_eq!(store.fail_waiting_review(row.id, "Stopped by user", EpochSeconds(11)).await.unwrap(), None);
    }

    async fn a_lapsed_lease_fails_the_review_once_and_a_renewed_one_does_not(store: TestStore) {
        let a = store
            .insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        let b = store
            .insert_queued_review(&new_review(2), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        store.claim_review("dead", EpochMillis(1_000)).await.unwrap().unwrap();
        store.claim_review("alive", EpochMillis(1_000)).await.unwrap().unwrap();
        store.start_review(a.id, "s-a").await.unwrap();
        store.start_review(b.id, "s-b").await.unwrap();
        let held = store.renew_leases("alive", EpochMillis(10_000)).await.unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].review_id, b.id);
        let other = replica(&store).await;
        let (x, y) = tokio::join!(
            store.reap_lapsed("interrupted", EpochMillis(5_000)),
            other.reap_lapsed("interrupted", EpochMillis(5_000))
        );
        let mut failed: Vec<i64> = x.unwrap().into_iter().chain(y.unwrap()).map(|r| r.id).collect();
        failed.sort();
        assert_eq!(failed, vec![a.id], "the lapsed one, failed by exactly one reaper");
        let row = store.review(a.id).await.unwrap().unwrap();
        assert_eq!(
            (row.status.as_str(), row.error.as_deref(), row.completed_at),
            ("failed", Some("interrupted"), Some(5))
        );
        assert_eq!(store.review(b.id).await.unwrap().unwrap().status.as_str(), "running");
        assert!(store.renew_leases("dead", EpochMillis(20_000)).await.unwrap().is_empty(), "the dead replica lost it");
    }

    async fn a_cancel_reaches_only_a_live_lease_and_the_owner_reads_it_at_renewal(store: TestStore) {
        let row = store
            .insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        assert_eq!(store.request_cancel(row.id, "stopped", EpochMillis(100)).await.unwrap(), None, "nobody runs it yet");
        store.claim_review("b", EpochMillis(1_000)).await.unwrap().unwrap();
        assert_eq!(store.request_cancel(row.id, "stopped", EpochMillis(100)).await.unwrap().as_deref(), Some("b"));
        // A second ask keeps the first reason.
        store.request_cancel(row.id, "superseded", EpochMillis(100)).await.unwrap();
        let held = store.renew_leases("b", EpochMillis(2_000)).await.unwrap();
        assert_eq!(held[0].cancel.as_deref(), Some("stopped"));
        assert_eq!(store.request_cancel(row.id, "stopped", EpochMillis(2_001)).await.unwrap(), None, "lapsed");
    }

    async fn an_unfinished_review_without_a_queue_row_is_failed_as_orphaned(store: TestStore) {
        let legacy = store.insert_review(&new_review(1), EpochSeconds(10)).await.unwrap();
        let queued = store
            .insert_queued_review(&new_review(2), "{}", None, None, EpochSeconds(10))
            .await
            .unwrap();
        // A row written a moment before the restart is orphaned too: none stays for ever.
        let fresh = store.insert_review(&new_review(3), EpochSeconds(199)).await.unwrap();
        let failed = store.fail_orphaned("interrupted by restart", EpochSeconds(200)).await.unwrap();
        assert_eq!(failed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![legacy.id, fresh.id]);
        assert_eq!(store.review(queued.id).await.unwrap().unwrap().status.as_str(), "pending");
    }

    async fn a_restarted_replica_fails_its_own_claimed_reviews_at_boot_and_no_others(store: TestStore) {
        let mut ids = Vec::new();
        for pr in 1..=4 {
            let row = store
                .insert_queued_review(&new_review(pr), "{}", None, None, EpochSeconds(10))
                .await
                .unwrap();
            ids.push(row.id);
        }
        // a runs two reviews, b one, and one waits; a also holds a due retry.
        let first = store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        store.start_review(first.review_id, "s1").await.unwrap().unwrap();
        let second = store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        let other = store.claim_review("b", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        let done = store.insert_review(&new_review(9), EpochSeconds(10)).await.unwrap();
        store.schedule_retry(done.id, "job", EpochMillis(5)).await.unwrap();
        store.claim_due_retry("a", EpochMillis(i64::MAX), EpochMillis(10)).await.unwrap().unwrap();
        // a comes back under the same id: its two runs fail at once, b's and the waiting one
        // are untouched, and its retry is free for any replica.
        let failed = store
            .fail_claimed_at_boot(Some("a"), "interrupted by restart", EpochSeconds(300))
            .await
            .unwrap();
        let mut got: Vec<i64> = failed.iter().map(|r| r.id).collect();
        got.sort();
        assert_eq!(got, vec![first.review_id, second.review_id]);
        assert!(failed.iter().all(|r| r.status.as_str() == "failed"
            && r.error.as_deref() == Some("interrupted by restart")));
        assert_eq!(store.review(other.review_id).await.unwrap().unwrap().status.as_str(), "pending");
        assert_eq!(store.review(ids[3]).await.unwrap().unwrap().status.as_str(), "pending");
        assert!(store.claim_due_retry("c", EpochMillis(i64::MAX), EpochMillis(11)).await.unwrap().is_some(), "retry given back");
        let next = store.claim_review("a", EpochMillis(i64::MAX)).await.unwrap().unwrap();
        assert_eq!(next.review_id, ids[3], "the waiting review still runs");
        // SQLite's single process (owner None) fails every claimed review.
        let all = store.fail_claimed_at_boot(None, "interrupted by restart", EpochSeconds(400)).await.unwrap();
        let mut got: Vec<i64> = all.iter().map(|r| r.id).collect();
        got.sort();
        assert_eq!(got, vec![other.review_id, ids[3]]);
    }

    async fn a_retry_survives_a_restart_and_runs_once(store: TestStore) {
        let failed = store.insert_review(&new_review(1), EpochSeconds(10)).await.unwrap();
        store.schedule_retry(failed.id, "job", EpochMillis(5_000)).await.unwrap();
        assert_eq!(store.claim_due_retry("a", EpochMillis(10_000), EpochMillis(4_999)).await.unwrap(), None, "not due yet");
        // Every replica restarted: the row is still there, in a new connection pool.
        let after = replica(&store).await;
        let claimed = after.claim_due_retry("a", EpochMillis(10_000), EpochMillis(5_000)).await.unwrap().unwrap();
        assert_eq!((claimed.review_id, claimed.job.as_str()), (failed.id, "job"));
        assert_eq!(store.claim_due_retry("b", EpochMillis(10_000), EpochMillis(6_000)).await.unwrap(), None, "held by a");
        let mut retry = new_review(1);
        retry.trigger = Some(Trigger::Retry);
        retry.attempt = 1;
        // b takes it over only once a's lease lapsed; a's late insert then writes nothing.
        let taken = store.claim_due_retry("b", EpochMillis(30_000), EpochMillis(10_001)).await.unwrap().unwrap();
        assert_eq!(taken.id, claimed.id);
        assert_eq!(after.insert_retry_review(claimed.id, "a", &retry, "job", EpochSeconds(11)).await.unwrap(), None);
        let row = store.insert_retry_review(taken.id, "b", &retry, "job", EpochSeconds(11)).await.unwrap().unwrap();
        assert_eq!((row.status.as_str(), row.attempt), ("pending", 1));
        assert_eq!(store.waiting_retries().await.unwrap(), 0);
        assert_eq!(store.claim_review("c", EpochMillis(1)).await.unwrap().unwrap().review_id, row.id, "queued");
    }

    async fn a_transcript_is_stored_and_replaced(store: TestStore) {
        assert_eq!(store.transcript("s-1").await.unwrap(), None);
        store.save_transcript("s-1", "{\"items\":[]}", EpochSeconds(1)).await.unwrap();
        store.save_transcript("s-1", "{\"items\":[1]}", EpochSeconds(2)).await.unwrap();
        assert_eq!(store.transcript("s-1").await.unwrap().as_deref(), Some("{\"items\":[1]}"));
    }
}

#[tokio::test]
async fn a_notification_reaches_every_listener_of_the_database() {
    let Some(store) = common::postgres().await else {
        return;
    };
    let other = replica(&store).await;
    let mut listener = other.listener(&["review_events"]).await.unwrap().unwrap();
    store.notify("review_events", "hello").await.unwrap();
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((n.channel(), n.payload()), ("review_events", "hello"));
    // A batch arrives whole and in order, one notification per payload.
    let batch: Vec<String> = (0..64).map(|i| format!("event-{i}")).collect();
    store.notify_many("review_events", &batch).await.unwrap();
    for expected in &batch {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n.payload(), expected);
    }
    // Queuing a review notifies `review_queue` (migration postgres/0003).
    let mut queue = other.listener(&["review_queue"]).await.unwrap().unwrap();
    let row = store
        .insert_queued_review(&new_review(1), "{}", None, None, EpochSeconds(1))
        .await
        .unwrap();
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), queue.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.payload(), row.id.to_string());
}

#[tokio::test]
async fn sqlite_has_no_listener_and_notify_is_a_no_op() {
    let store = common::sqlite().await;
    assert!(store.listener(&["review_events"]).await.unwrap().is_none());
    store.notify("review_events", "x").await.unwrap();
    store
        .notify_many("review_events", &["x".to_owned()])
        .await
        .unwrap();
}
