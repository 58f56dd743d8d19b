#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Monthly budgets in the store (docs/review-service.md, "Monthly budget"), on SQLite and
//! PostgreSQL (tests/common): the month-to-date spend of a repository and of the service, a
//! repository's own budget, a review skipped with its reason, and the notice recorded once per
//! repository and month.

mod common;

use pretty_assertions::assert_eq;
use review_domain::{EpochSeconds, ReviewStatus, Trigger};
use review_store::{Completion, NewReview, Store};

fn new_review(repo: &str, pr: i64) -> NewReview {
    NewReview {
        repo_full_name: repo.into(),
        pr_number: pr,
        title: None,
        trigger: Some(Trigger::Opened),
        attempt: 0,
        head_sha: None,
    }
}

/// A review of `repo` created at `at` that completed having spent `cost`.
async fn spent(store: &Store, repo: &str, at: i64, cost: f64) {
    let r = store
        .insert_review(&new_review(repo, 1), EpochSeconds(at))
        .await
        .unwrap();
    store.start_review(r.id, "s").await.unwrap().unwrap();
    let done = Completion {
        cost,
        tokens: 10,
        model: "anthropic/m".into(),
        patch_id: None,
    };
    store
        .complete_review(r.id, &done, EpochSeconds(at + 1))
        .await
        .unwrap()
        .unwrap();
}

on_both_backends! {
    async fn spend_counts_the_reviews_created_since_the_start(store: TestStore) {
        assert_eq!(store.spend_since(None, EpochSeconds(1000)).await.unwrap(), 0.0);
        spent(&store, "o/a", 999, 5.0).await; // last month
        spent(&store, "o/a", 1000, 1.25).await;
        spent(&store, "o/a", 2000, 0.5).await;
        spent(&store, "p/b", 1500, 2.0).await;
        // A review without a cost (pending) counts nothing.
        store.insert_review(&new_review("p/b", 2), EpochSeconds(3000)).await.unwrap();
        let since = EpochSeconds(1000);
        assert_eq!(store.spend_since(None, since).await.unwrap(), 3.75);
        assert_eq!(store.spend_since(Some("o/a"), since).await.unwrap(), 1.75);
        assert_eq!(store.spend_since(Some("x/y"), since).await.unwrap(), 0.0);
        assert_eq!(
            store.spend_by_repo_since(since).await.unwrap(),
            vec![("o/a".to_owned(), 1.75), ("p/b".to_owned(), 2.0)]
        );
    }

    async fn a_repositorys_own_budget_is_set_kept_and_cleared(store: TestStore) {
        store.register_repo("o/a", 7, EpochSeconds(1)).await.unwrap();
        let row = store
            .update_repo("o/a", None, None, None, None, Some(Some(12.5)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.monthly_budget, Some(12.5));
        let row = store
            .update_repo("o/a", None, None, Some(1), None, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.monthly_budget, Some(12.5), "omitted keeps it");
        let row = store
            .update_repo("o/a", None, None, None, None, Some(None))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.monthly_budget, None);
    }

    async fn a_review_skipped_for_the_budget_keeps_its_reason(store: TestStore) {
        let r = store.insert_review(&new_review("o/a", 1), EpochSeconds(10)).await.unwrap();
        store.start_review(r.id, "s").await.unwrap().unwrap();
        let row = store
            .skip_review_because(r.id, "monthly budget reached: ...", EpochSeconds(11))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (row.status, row.error.as_deref(), row.patch_id, row.completed_at),
            (ReviewStatus::Skipped, Some("monthly budget reached: ..."), None, Some(11))
        );
        assert!(
            store.skip_review_because(r.id, "again", EpochSeconds(12)).await.unwrap().is_none(),
            "a terminal review is not skipped again"
        );
    }

    async fn the_budget_notice_is_written_once_per_repository_and_month(store: TestStore) {
        let now = EpochSeconds(100);
        assert!(store.insert_budget_notice("o/a", "2026-11", 1, now).await.unwrap());
        assert!(!store.insert_budget_notice("o/a", "2026-11", 2, now).await.unwrap());
        assert!(store.insert_budget_notice("p/b", "2026-11", 1, now).await.unwrap());
        assert!(store.insert_budget_notice("o/a", "2026-12", 3, now).await.unwrap());
    }
}

/// Replicas racing for the same notice on one database: exactly one of them writes it.
#[tokio::test]
async fn of_racing_notices_exactly_one_is_written_on_postgres() {
    let Some(store) = common::postgres().await else {
        return;
    };
    let mut racers = Vec::new();
    for pr in 0..8 {
        let other = Store::open(&store.url).await.unwrap();
        racers.push(tokio::spawn(async move {
            other
                .insert_budget_notice("o/a", "2026-11", pr, EpochSeconds(1))
                .await
                .unwrap()
        }));
    }
    let mut written = 0;
    for r in racers {
        written += usize::from(r.await.unwrap());
    }
    assert_eq!(written, 1);
}
