#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The dashboard aggregates on both backends (docs/review-service.md §4, Stats): the rules
//! that the rollups and the raw rows must agree on, and the same numbers from SQLite and
//! PostgreSQL for the same reviews.

mod common;

use pretty_assertions::assert_eq;
use review_domain::{FindingKind, NewFinding, Severity, StatsFilter, Trigger};
use review_store::{Completion, NewReview, Store};

const DAY: i64 = 86_400;
/// A UTC midnight, 2024-10-04.
const T0: i64 = 20_000 * DAY;

fn new_review(repo: &str, pr: i64) -> NewReview {
    NewReview {
        repo_full_name: repo.into(),
        pr_number: pr,
        title: Some("t".into()),
        trigger: Some(Trigger::Opened),
        attempt: 0,
    }
}

fn done(model: &str, cost: f64) -> Completion {
    Completion {
        cost,
        tokens: 100,
        model: model.into(),
        patch_id: None,
    }
}

/// A review of `repo` created at `at` that completes after `secs`.
async fn completed(store: &Store, repo: &str, pr: i64, at: i64, secs: i64) -> i64 {
    let r = store
        .insert_review(&new_review(repo, pr), at)
        .await
        .unwrap();
    store.start_review(r.id, "s").await.unwrap().unwrap();
    store
        .complete_review(r.id, &done("anthropic/m", 0.25), at + secs)
        .await
        .unwrap()
        .unwrap();
    r.id
}

/// Every way a window can be read: all time (totals), whole days (daily rollups), partial
/// days (rollups plus raw edges), and a repo or model filter (raw rows only).
fn windows(repo: &str) -> Vec<StatsFilter> {
    vec![
        StatsFilter::default(),
        StatsFilter {
            since: Some(T0),
            until: Some(T0 + 30 * DAY),
            ..Default::default()
        },
        StatsFilter {
            since: Some(T0 + 60),
            until: Some(T0 + 5 * DAY + 7200),
            ..Default::default()
        },
        StatsFilter {
            repo: Some(repo.into()),
            ..Default::default()
        },
        StatsFilter {
            model: Some("anthropic/m".into()),
            since: Some(T0 - DAY),
            ..Default::default()
        },
    ]
}

on_both_backends! {
    /// Issue 19: a row failed at boot after a long wait counted in avg_duration (294,703 s
    /// where the original service reports 329.5 s on the same data).
    async fn avg_duration_averages_completed_reviews_only(store: TestStore) {
        completed(&store, "o/r", 1, T0 + 100, 300).await;
        completed(&store, "o/r", 2, T0 + 200, 359).await;
        // Pending for 294,703 s, then failed by the boot sweep.
        let stuck = store.insert_review(&new_review("o/r", 3), T0 + 300).await.unwrap();
        let failed = store
            .fail_unfinished("interrupted by restart", T0 + 300 + 294_703)
            .await
            .unwrap();
        assert_eq!(failed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![stuck.id]);
        for filter in windows("o/r") {
            let stats = store.stats(&filter).await.unwrap();
            let project = stats
                .projects
                .iter()
                .find(|p| p.repo_full_name == "o/r")
                .unwrap_or_else(|| panic!("{filter:?}: {stats:?}"));
            // The failed row has no model: a model filter leaves it out.
            let reviews = if filter.model.is_some() { 2 } else { 3 };
            assert_eq!(project.reviews, reviews, "{filter:?}");
            assert_eq!(project.avg_duration, Some(329.5), "{filter:?}");
            assert_eq!(
                (stats.latency.count, stats.latency.avg),
                (2, Some(329.5)),
                "{filter:?}"
            );
        }
        // A repo whose only review failed has no average.
        let lone = store.insert_review(&new_review("o/lone", 1), T0 + 400).await.unwrap();
        store.fail_review(lone.id, "boom", None, T0 + 500).await.unwrap().unwrap();
        let stats = store.stats(&StatsFilter::default()).await.unwrap();
        let lone = stats.projects.iter().find(|p| p.repo_full_name == "o/lone").unwrap();
        assert_eq!((lone.reviews, lone.avg_duration), (1, None));
    }
}

on_both_backends! {
    /// Many writers at once (the replicas of issue 19 on one database): every review's
    /// inserts, transitions and findings land in the rollups exactly, without a deadlock. The
    /// all-time totals (rollups) equal the sums over the raw rows (a repo filter reads those).
    async fn concurrent_writers_keep_the_rollups_exact(store: TestStore) {
        let writers = (0..8_i64).map(|w| {
            let store = store.store.clone();
            tokio::spawn(async move {
                for k in 0..12_i64 {
                    let repo = ["o/a", "o/b"][((w + k) % 2) as usize];
                    let at = T0 + (w * 12 + k) * 977;
                    let r = store.insert_review(&new_review(repo, 1 + k), at).await.unwrap();
                    store.start_review(r.id, "s").await.unwrap().unwrap();
                    let findings: Vec<NewFinding> = [Severity::Blocking, Severity::Nit, Severity::Question]
                        .into_iter()
                        .cycle()
                        .skip(((w + k) % 3) as usize)
                        .take(3)
                        .map(|severity| NewFinding {
                            kind: FindingKind::Inline,
                            body: "b".into(),
                            event: None,
                            path: Some(format!("src/{}.rs", severity.as_str())),
                            line: Some(1),
                            severity: Some(severity),
                            github_review_id: None,
                            github_comment_id: None,
                        })
                        .collect();
                    store.insert_findings(&r, &findings, at + 1).await.unwrap();
                    if k % 4 == 0 {
                        store.fail_review(r.id, "boom", None, at + 50).await.unwrap().unwrap();
                    } else {
                        store
                            .complete_review(r.id, &done("anthropic/m", 0.25), at + 10 + k)
                            .await
                            .unwrap()
                            .unwrap();
                    }
                }
            })
        });
        for writer in futures::future::join_all(writers).await {
            writer.unwrap();
        }
        let all = store.stats(&StatsFilter::default()).await.unwrap();
        assert_eq!(all.projects.iter().map(|p| p.reviews).sum::<i64>(), 96);
        assert_eq!(all.severity.iter().map(|s| s.count).sum::<i64>(), 96 * 3);
        for project in &all.projects {
            let raw = store
                .stats(&StatsFilter {
                    repo: Some(project.repo_full_name.clone()),
                    ..Default::default()
                })
                .await
                .unwrap();
            assert_eq!(&raw.projects[0], project);
        }
        let charts = store.charts(&StatsFilter::default()).await.unwrap();
        assert_eq!(charts.top_files.iter().map(|f| f.count).sum::<i64>(), 96 * 3);
    }
}

/// The same reviews, findings and updates on both backends.
async fn fill(store: &Store) {
    let repos = ["o/a", "o/b", "p/c"];
    let models = ["anthropic/m", "openai/n"];
    let severities = [Some(Severity::Blocking), Some(Severity::Nit), None];
    for i in 0..120_i64 {
        let repo = repos[(i % 3) as usize];
        let at = T0 + (i * 7919) % (9 * DAY) - 2 * DAY;
        let mut new = new_review(repo, 1 + i % 17);
        if i % 5 == 0 {
            new.trigger = Some(Trigger::Synchronize);
        }
        if i % 11 == 0 {
            new.trigger = None;
        }
        let r = store.insert_review(&new, at).await.unwrap();
        match i % 6 {
            0 => {} // stays pending
            1 => {
                store.start_review(r.id, "s").await.unwrap();
                store
                    .fail_review(r.id, "boom", Some(&done(models[1], 0.5)), at + 50 + i)
                    .await
                    .unwrap();
            }
            2 => {
                store.skip_review(r.id, Some("p"), at + 5).await.unwrap();
            }
            _ => {
                store.start_review(r.id, "s").await.unwrap();
                let findings: Vec<NewFinding> = (0..i % 4)
                    .map(|k| NewFinding {
                        kind: if k == 0 {
                            FindingKind::Summary
                        } else {
                            FindingKind::Inline
                        },
                        body: "b".into(),
                        event: None,
                        path: (k > 0).then(|| format!("src/f{}.rs", (i + k) % 5)),
                        line: Some(k),
                        severity: severities[((i + k) % 3) as usize],
                        github_review_id: None,
                        github_comment_id: None,
                    })
                    .collect();
                store.insert_findings(&r, &findings, at + 1).await.unwrap();
                let cost = 0.25 * ((i % 8) as f64);
                store
                    .complete_review(
                        r.id,
                        &done(models[(i % 2) as usize], cost),
                        at + 30 + i * 13,
                    )
                    .await
                    .unwrap();
            }
        }
    }
    // A review that gets skipped after its findings were written moves them out of the counts.
    let r = store
        .insert_review(&new_review("o/a", 99), T0 + 3 * DAY + 10)
        .await
        .unwrap();
    let finding = NewFinding {
        kind: FindingKind::Inline,
        body: "b".into(),
        event: None,
        path: Some("src/moved.rs".into()),
        line: Some(1),
        severity: Some(Severity::Nit),
        github_review_id: None,
        github_comment_id: None,
    };
    store
        .insert_findings(&r, &[finding], T0 + 3 * DAY + 11)
        .await
        .unwrap();
    store
        .skip_review(r.id, None, T0 + 3 * DAY + 12)
        .await
        .unwrap();
}

/// SQLite and PostgreSQL answer /api/stats, /api/stats/charts and the review list with the
/// same numbers for the same data, through every kind of window.
#[tokio::test]
async fn both_backends_give_the_same_stats_and_charts() {
    let Some(pg) = common::postgres().await else {
        return;
    };
    let lite = common::sqlite().await;
    fill(&lite).await;
    fill(&pg).await;
    let mut windows = windows("o/a");
    windows.push(StatsFilter {
        repo: Some("p/c".into()),
        model: Some("openai/n".into()),
        ..Default::default()
    });
    for filter in &windows {
        let (a, b) = (
            lite.stats(filter).await.unwrap(),
            pg.stats(filter).await.unwrap(),
        );
        assert!(!a.projects.is_empty(), "{filter:?}");
        assert_eq!(a, b, "stats {filter:?}");
        let (a, b) = (
            lite.charts(filter).await.unwrap(),
            pg.charts(filter).await.unwrap(),
        );
        assert!(!a.reliability.is_empty(), "{filter:?}");
        assert_eq!(a, b, "charts {filter:?}");
        for status in [None, Some("completed"), Some("skipped")] {
            let a = lite.list_reviews(filter, status, 50).await.unwrap();
            let b = pg.list_reviews(filter, status, 50).await.unwrap();
            assert_eq!(a, b, "list {filter:?} {status:?}");
        }
    }
    // PostgreSQL's stats_rebuild() (for bulk loads without the triggers) gives the numbers
    // the triggers kept.
    sqlx::query("SELECT stats_rebuild()")
        .execute(pg.pool())
        .await
        .unwrap();
    for filter in &windows {
        assert_eq!(
            lite.stats(filter).await.unwrap(),
            pg.stats(filter).await.unwrap(),
            "rebuilt {filter:?}"
        );
        assert_eq!(
            lite.charts(filter).await.unwrap(),
            pg.charts(filter).await.unwrap(),
            "rebuilt {filter:?}"
        );
    }
    // A window with a partial first day (raw rows plus rollups) agrees with the all-time
    // totals when it holds every review.
    let raw = lite
        .stats(&StatsFilter {
            model: None,
            repo: None,
            since: Some(T0 - 3 * DAY + 1),
            until: None,
        })
        .await
        .unwrap();
    let rolled = lite.stats(&StatsFilter::default()).await.unwrap();
    assert_eq!(raw.projects, rolled.projects);
}

/// SQLite databases made before migration 0011 counted failed rows in the repo durations; the
/// migration recomputes them, so an upgraded database reports completed reviews only.
/// (SQLite-only: PostgreSQL databases start with the completed-only rollups.)
#[tokio::test]
async fn upgrading_a_sqlite_database_recomputes_avg_duration() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("migrations");
    std::fs::create_dir(&old).unwrap();
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    for entry in std::fs::read_dir(&all).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.ends_with(".sql") && name.as_str() < "0011" {
            std::fs::copy(entry.path(), old.join(&name)).unwrap();
        }
    }
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let options: sqlx::sqlite::SqliteConnectOptions = url.parse().unwrap();
    let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true))
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(old.as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for (pr, status, created, completed) in [
        (1, "completed", T0 + 100, T0 + 400),
        (2, "completed", T0 + 200, T0 + 559),
        (3, "failed", T0 + 300, T0 + 300 + 294_703),
    ] {
        sqlx::query(
            "INSERT INTO reviews (repo_full_name, pr_number, status, created_at, completed_at)
             VALUES ('o/r', ?, ?, ?, ?)",
        )
        .bind(pr)
        .bind(status)
        .bind(created)
        .bind(completed)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;
    let store = Store::open(&url).await.unwrap();
    for filter in windows("o/r").into_iter().take(2) {
        let stats = store.stats(&filter).await.unwrap();
        assert_eq!(stats.projects[0].avg_duration, Some(329.5), "{filter:?}");
    }
    // And the recreated triggers keep it so.
    let late = store
        .insert_review(&new_review("o/r", 4), T0 + 900)
        .await
        .unwrap();
    store
        .fail_review(late.id, "boom", None, T0 + 90_900)
        .await
        .unwrap();
    let stats = store.stats(&StatsFilter::default()).await.unwrap();
    assert_eq!(
        (stats.projects[0].reviews, stats.projects[0].avg_duration),
        (4, Some(329.5))
    );
}
