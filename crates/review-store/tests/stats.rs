#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The dashboard aggregates on both backends (docs/review-service.md §4, Stats): the rules
//! that the rollups and the raw rows must agree on, and the same numbers from SQLite and
//! PostgreSQL for the same reviews.

mod common;

use pretty_assertions::assert_eq;
use review_domain::EpochSeconds;
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
        head_sha: None,
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
        .insert_review(&new_review(repo, pr), EpochSeconds(at))
        .await
        .unwrap();
    store.start_review(r.id, "s").await.unwrap().unwrap();
    store
        .complete_review(r.id, &done("anthropic/m", 0.25), EpochSeconds(at + secs))
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
    /// A row failed at boot after a long wait does not count in avg_duration (it once did:
    /// 294,703 s where the original service reports 329.5 s on the same data).
    async fn avg_duration_averages_completed_reviews_only(store: TestStore) {
        completed(&store, "o/r", 1, T0 + 100, 300).await;
        completed(&store, "o/r", 2, T0 + 200, 359).await;
        // Pending for 294,703 s, then failed by the boot sweep.
        let stuck = store.insert_review(&new_review("o/r", 3), EpochSeconds(T0 + 300)).await.unwrap();
        let failed = store
            .fail_unfinished("interrupted by restart", EpochSeconds(T0 + 300 + 294_703))
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
        let lone = store.insert_review(&new_review("o/lone", 1), EpochSeconds(T0 + 400)).await.unwrap();
        store.fail_review(lone.id, "boom", None, EpochSeconds(T0 + 500)).await.unwrap().unwrap();
        let stats = store.stats(&StatsFilter::default()).await.unwrap();
        let lone = stats.projects.iter().find(|p| p.repo_full_name == "o/lone").unwrap();
        assert_eq!((lone.reviews, lone.avg_duration), (1, None));
    }
}

on_both_backends! {
    /// Many writers at once (several replicas on one database): every review's
    /// inserts, transitions and findings land in the rollups exactly, without a deadlock. The
    /// all-time totals (rollups) equal the sums over the raw rows (a repo filter reads those).
    async fn concurrent_writers_keep_the_rollups_exact(store: TestStore) {
        let writers = (0..8_i64).map(|w| {
            let store = store.store.clone();
            tokio::spawn(async move {
                for k in 0..12_i64 {
                    let repo = ["o/a", "o/b"][((w + k) % 2) as usize];
                    let at = T0 + (w * 12 + k) * 977;
                    let r = store.insert_review(&new_review(repo, 1 + k), EpochSeconds(at)).await.unwrap();
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
                            github_comment_id: None, fingerprint: None,
                        })
                        .collect();
                    store.insert_findings(&r, &findings, EpochSeconds(at + 1)).await.unwrap();
                    if k % 4 == 0 {
                        store.fail_review(r.id, "boom", None, EpochSeconds(at + 50)).await.unwrap().unwrap();
                    } else {
                        store
                            .complete_review(r.id, &done("anthropic/m", 0.25), EpochSeconds(at + 10 + k))
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

/// `n` findings of the `i`th review: a summary, then inline ones on `src/f<(i + k) % paths>.rs`,
/// with the severities taken in turn from `severities`.
fn findings_of(i: i64, n: i64, paths: i64, severities: &[Option<Severity>]) -> Vec<NewFinding> {
    (0..n)
        .map(|k| NewFinding {
            kind: if k == 0 {
                FindingKind::Summary
            } else {
                FindingKind::Inline
            },
            body: "b".into(),
            event: None,
            path: (k > 0).then(|| format!("src/f{}.rs", (i + k) % paths)),
            line: Some(k),
            severity: severities[((i + k) as usize) % severities.len()],
            github_review_id: None,
            github_comment_id: None,
            fingerprint: None,
        })
        .collect()
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
        let r = store.insert_review(&new, EpochSeconds(at)).await.unwrap();
        match i % 6 {
            0 => {} // stays pending
            1 => {
                store.start_review(r.id, "s").await.unwrap();
                store
                    .fail_review(
                        r.id,
                        "boom",
                        Some(&done(models[1], 0.5)),
                        EpochSeconds(at + 50 + i),
                    )
                    .await
                    .unwrap();
            }
            2 => {
                store
                    .skip_review(r.id, Some("p"), EpochSeconds(at + 5))
                    .await
                    .unwrap();
            }
            _ => {
                store.start_review(r.id, "s").await.unwrap();
                let findings = findings_of(i, i % 4, 5, &severities);
                store
                    .insert_findings(&r, &findings, EpochSeconds(at + 1))
                    .await
                    .unwrap();
                let cost = 0.25 * ((i % 8) as f64);
                store
                    .complete_review(
                        r.id,
                        &done(models[(i % 2) as usize], cost),
                        EpochSeconds(at + 30 + i * 13),
                    )
                    .await
                    .unwrap();
            }
        }
    }
    // A review that gets skipped after its findings were written moves them out of the counts.
    let r = store
        .insert_review(&new_review("o/a", 99), EpochSeconds(T0 + 3 * DAY + 10))
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
        fingerprint: None,
    };
    store
        .insert_findings(&r, &[finding], EpochSeconds(T0 + 3 * DAY + 11))
        .await
        .unwrap();
    store
        .skip_review(r.id, None, EpochSeconds(T0 + 3 * DAY + 12))
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
            let a = lite.list_reviews(filter, status, None, 50).await.unwrap();
            let b = pg.list_reviews(filter, status, None, 50).await.unwrap();
            assert_eq!(a, b, "list {filter:?} {status:?}");
            if let Some(last) = a.last() {
                let a = lite
                    .list_reviews(filter, status, Some(last.id), 50)
                    .await
                    .unwrap();
                let b = pg
                    .list_reviews(filter, status, Some(last.id), 50)
                    .await
                    .unwrap();
                assert_eq!(a, b, "next page {filter:?} {status:?}");
            }
            assert_eq!(
                lite.count_reviews(filter, status).await.unwrap(),
                pg.count_reviews(filter, status).await.unwrap(),
                "count {filter:?} {status:?}"
            );
        }
        let (a, b) = (
            lite.repo_scores(filter).await.unwrap(),
            pg.repo_scores(filter).await.unwrap(),
        );
        assert_eq!(a, b, "repo scores {filter:?}");
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

/// A SQLite database in a temporary folder (its URL, and a pool on it) migrated with the SQLite
/// migrations whose file names sort before `first_left_out`: a database of an older release.
async fn sqlite_migrated_before(
    first_left_out: &str,
) -> (tempfile::TempDir, String, sqlx::SqlitePool) {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("migrations");
    std::fs::create_dir(&old).unwrap();
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    for entry in std::fs::read_dir(&all).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.ends_with(".sql") && name.as_str() < first_left_out {
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
    (dir, url, pool)
}

/// SQLite databases made before migration 0011 counted failed rows in the repo durations; the
/// migration recomputes them, so an upgraded database reports completed reviews only.
/// (SQLite-only: PostgreSQL databases start with the completed-only rollups.)
#[tokio::test]
async fn upgrading_a_sqlite_database_recomputes_avg_duration() {
    let (_dir, url, pool) = sqlite_migrated_before("0011").await;
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
        .insert_review(&new_review("o/r", 4), EpochSeconds(T0 + 900))
        .await
        .unwrap();
    store
        .fail_review(late.id, "boom", None, EpochSeconds(T0 + 90_900))
        .await
        .unwrap();
    let stats = store.stats(&StatsFilter::default()).await.unwrap();
    assert_eq!(
        (stats.projects[0].reviews, stats.projects[0].avg_duration),
        (4, Some(329.5))
    );
}

/// The repo and model filters the rollups split by repo and by model must answer exactly.
const FACET_FILTERS: [(Option<&str>, Option<&str>); 6] = [
    (Some("o/a"), None),
    (Some("o/b"), None),
    (Some("p/c"), None),
    (None, Some("anthropic/m")),
    (None, Some("openai/n")),
    (None, Some("nobody/none")),
];

/// Reviews of three repos and two models inside the two UTC days from T0 (never within an
/// hour of their edges), in every status, with findings written before the review completes
/// (so its model arrives after them), as the review pipeline does.
async fn fill_two_days(store: &Store) {
    let repos = ["o/a", "o/b", "p/c"];
    let models = ["anthropic/m", "openai/n"];
    let severities = [
        Some(Severity::Blocking),
        Some(Severity::Nit),
        Some(Severity::Question),
        None,
    ];
    for i in 0..72_i64 {
        let at = T0 + 3600 + (i * 2711) % (2 * DAY - 7200);
        let mut new = new_review(repos[(i % 3) as usize], 1 + i % 7);
        new.trigger = [Some(Trigger::Opened), Some(Trigger::Synchronize), None][(i % 3) as usize];
        if i % 7 == 0 {
            new.trigger = Some(Trigger::Command);
        }
        let r = store.insert_review(&new, EpochSeconds(at)).await.unwrap();
        if i % 8 == 0 {
            continue; // stays pending
        }
        store.start_review(r.id, "s").await.unwrap().unwrap();
        let findings = findings_of(i, i % 5, 4, &severities);
        store
            .insert_findings(&r, &findings, EpochSeconds(at + 1))
            .await
            .unwrap();
        let spent = done(models[(i % 2) as usize], 0.25 * ((i % 5) as f64));
        match i % 8 {
            1 => {} // stays running, with findings
            2 => {
                store
                    .fail_review(r.id, "boom", Some(&spent), EpochSeconds(at + 40 + i))
                    .await
                    .unwrap()
                    .unwrap();
            }
            3 => {
                store
                    .skip_review(r.id, None, EpochSeconds(at + 5))
                    .await
                    .unwrap()
                    .unwrap();
            }
            _ => {
                store
                    .complete_review(r.id, &spent, EpochSeconds(at + 30 + i * 11))
                    .await
                    .unwrap()
                    .unwrap();
            }
        }
    }
}

/// For each repo and model filter, the numbers read from the rollups (whole days; all time,
/// with the all-time totals) equal those read from the raw rows (a window of partial days
/// only, which holds the same reviews).
async fn assert_rollups_give_the_raw_numbers(store: &Store, when: &str) {
    for (repo, model) in FACET_FILTERS {
        let filter = |since: Option<i64>, until: Option<i64>| StatsFilter {
            since,
            until,
            repo: repo.map(str::to_owned),
            model: model.map(str::to_owned),
        };
        let raw = filter(Some(T0 + 1), Some(T0 + 2 * DAY - 1));
        let (raw_stats, raw_charts) = (
            store.stats(&raw).await.unwrap(),
            store.charts(&raw).await.unwrap(),
        );
        if model != Some("nobody/none") {
            assert!(!raw_stats.projects.is_empty(), "{when} {raw:?}");
            assert!(!raw_stats.severity.is_empty(), "{when} {raw:?}");
            assert!(!raw_charts.top_files.is_empty(), "{when} {raw:?}");
        }
        for rolled in [filter(Some(T0), Some(T0 + 2 * DAY)), filter(None, None)] {
            assert_eq!(
                store.stats(&rolled).await.unwrap(),
                raw_stats,
                "{when}: stats {rolled:?}"
            );
            assert_eq!(
                store.charts(&rolled).await.unwrap(),
                raw_charts,
                "{when}: charts {rolled:?}"
            );
        }
    }
}

/// Runs `sql` on the store's database, as an operator's hand edit would.
async fn edit(store: &Store, sql: &str) {
    sqlx::query(sql).execute(store.pool()).await.unwrap();
}

on_both_backends! {
    /// A repo or model filter reads the rollups split by repo and by model, and
    /// gives the numbers of the raw rows, after inserts, status changes, skipped reviews,
    /// findings written before the model is known, and hand edits of rows and findings.
    async fn repo_and_model_filters_from_the_rollups_match_the_raw_rows(store: TestStore) {
        fill_two_days(&store).await;
        assert_rollups_give_the_raw_numbers(&store, "filled").await;

        // Status changes: the boot sweep fails what is pending or running.
        store.fail_unfinished("interrupted by restart", EpochSeconds(T0 + 2 * DAY - 10)).await.unwrap();
        assert_rollups_give_the_raw_numbers(&store, "after fail_unfinished").await;

        // Findings deleted and edited by hand.
        edit(&store, "DELETE FROM findings WHERE id = (SELECT min(id) FROM findings WHERE kind = 'inline')").await;
        edit(&store, "UPDATE findings SET severity = 'question', path = 'src/renamed.rs'
                       WHERE id = (SELECT max(id) FROM findings WHERE kind = 'inline')").await;
        edit(&store, "UPDATE findings SET kind = 'comment', path = NULL, severity = NULL
                       WHERE id = (SELECT min(id) FROM findings WHERE kind = 'inline')").await;
        assert_rollups_give_the_raw_numbers(&store, "after finding edits").await;

        // Reviews with findings moved to another repo, model and day, their trigger and cost
        // changed, one leaving skipped and one deleted.
        let with_findings = "(SELECT min(r.id) FROM reviews r JOIN findings f ON f.review_id = r.id
                              WHERE r.status = 'completed' AND r.repo_full_name = 'o/a')";
        edit(&store, &format!("UPDATE reviews SET repo_full_name = 'o/b' WHERE id = {with_findings}")).await;
        edit(&store, &format!("UPDATE reviews SET model = 'openai/n' WHERE id = {with_findings}")).await;
        edit(&store, &format!(
            "UPDATE reviews SET created_at = created_at + {DAY}, completed_at = completed_at + {DAY}
             WHERE id = {with_findings} AND created_at < {}", T0 + DAY - 3600
        )).await;
        edit(&store, &format!(
            "UPDATE reviews SET \"trigger\" = NULL, cost = 1.5, tokens = 7 WHERE id = {with_findings}"
        )).await;
        edit(&store, "UPDATE reviews SET status = 'failed' WHERE id = (SELECT min(r.id) FROM reviews r
                       JOIN findings f ON f.review_id = r.id WHERE r.status = 'skipped')").await;
        edit(&store, "DELETE FROM reviews WHERE id = (SELECT max(r.id) FROM reviews r
                       JOIN findings f ON f.review_id = r.id WHERE r.status = 'completed')").await;
        assert_rollups_give_the_raw_numbers(&store, "after review edits").await;

        // A review with findings that is then skipped takes them out of every filter.
        let r = store.insert_review(&new_review("p/c", 40), EpochSeconds(T0 + DAY + 10)).await.unwrap();
        let finding = NewFinding {
            kind: FindingKind::Inline,
            body: "b".into(),
            event: None,
            path: Some("src/skipped.rs".into()),
            line: Some(1),
            severity: Some(Severity::Blocking),
            github_review_id: None,
            github_comment_id: None, fingerprint: None,
        };
        store.insert_findings(&r, &[finding], EpochSeconds(T0 + DAY + 11)).await.unwrap();
        store.skip_review(r.id, None, EpochSeconds(T0 + DAY + 12)).await.unwrap().unwrap();
        assert_rollups_give_the_raw_numbers(&store, "after a late skip").await;
        let charts = store
            .charts(&StatsFilter { repo: Some("p/c".into()), ..Default::default() })
            .await
            .unwrap();
        assert!(charts.top_files.iter().all(|f| f.path != "src/skipped.rs"), "{charts:?}");

        // PostgreSQL's stats_rebuild() recomputes the same rollups from the rows.
        if store.backend() == review_store::Backend::Postgres {
            edit(&store, "SELECT stats_rebuild()").await;
            assert_rollups_give_the_raw_numbers(&store, "after stats_rebuild()").await;
        }
    }
}

/// SQLite databases made before migration 0013 get the repo and model rollups backfilled from
/// their rows: filtered numbers from the rollups equal those from the raw rows at once.
#[tokio::test]
async fn upgrading_a_sqlite_database_backfills_the_repo_and_model_rollups() {
    let (_dir, url, pool) = sqlite_migrated_before("0013").await;
    let statuses = [
        "completed",
        "failed",
        "skipped",
        "pending",
        "completed",
        "running",
    ];
    let models = [Some("anthropic/m"), Some("openai/n"), None];
    let repos = ["o/a", "o/b", "p/c"];
    for i in 0..48_i64 {
        let status = statuses[(i % 6) as usize];
        let at = T0 + 3600 + (i * 3571) % (2 * DAY - 7200);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO reviews (repo_full_name, pr_number, status, \"trigger\", cost, tokens,
                                  model, created_at, completed_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(repos[(i % 3) as usize])
        .bind(1 + i % 5)
        .bind(status)
        .bind((i % 4 != 0).then_some("opened"))
        .bind(0.25 * (i % 3) as f64)
        .bind(100 + i)
        .bind(models[(i % 3) as usize].or((i % 2 == 0).then_some("openai/n")))
        .bind(at)
        .bind(matches!(status, "completed" | "failed" | "skipped").then_some(at + 20 + i))
        .fetch_one(&pool)
        .await
        .unwrap();
        for k in 0..i % 4 {
            sqlx::query(
                "INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, path,
                                       body, created_at)
                 VALUES (?, ?, 1, ?, ?, ?, 'b', ?)",
            )
            .bind(id)
            .bind(repos[(i % 3) as usize])
            .bind(if k == 0 { "summary" } else { "inline" })
            .bind(["blocking", "nit", "question"][((i + k) % 3) as usize])
            .bind((k > 0).then(|| format!("src/f{}.rs", (i + k) % 4)))
            .bind(at + 1)
            .execute(&pool)
            .await
            .unwrap();
        }
    }
    pool.close().await;
    let store = Store::open(&url).await.unwrap();
    assert_rollups_give_the_raw_numbers(&store, "upgraded").await;
}
