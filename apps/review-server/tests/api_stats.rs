#![allow(clippy::unwrap_used, clippy::expect_used)]
//! GET /api/stats, GET /api/stats/charts and GET /api/reviews against the real binary
//! (docs/review-service.md §4, Stats and Reviews; §8). Rows are seeded straight
//! into the server's SQLite file after it has migrated it; every test is named after the rule
//! it proves and compares whole bodies.

mod common;

use common::Server;
use pretty_assertions::assert_eq;
use review_domain::EpochSeconds;
use review_domain::{FindingKind, NewFinding, Severity, Trigger};
use review_store::{Completion, NewReview, Store};
use serde_json::{Value, json};
use sqlx::AnyPool;

const DAY: i64 = 86_400;
/// 2024-03-01T00:00:00Z.
const MAR_1: i64 = 1_709_251_200;

struct Env {
    _dir: tempfile::TempDir,
    server: Server,
    store: Store,
}

impl Env {
    async fn start() -> Env {
        Self::start_with(&[]).await
    }

    async fn start_with(env: &[(&str, String)]) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let server = Server::start(&data, env).await;
        let store = Store::open(&format!("sqlite://{}", data.join("review.db").display()))
            .await
            .unwrap();
        Env {
            _dir: dir,
            server,
            store,
        }
    }

    fn pool(&self) -> &AnyPool {
        self.store.pool()
    }

    async fn get(&self, path: &str) -> Value {
        let r = self
            .server
            .http
            .get(format!("{}{path}", self.server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        r.json().await.unwrap()
    }

    async fn insert(&self, r: Rv) -> i64 {
        sqlx::query_scalar(
            "INSERT INTO reviews (repo_full_name, pr_number, status, \"trigger\", cost, tokens,
             model, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(r.repo)
        .bind(r.pr)
        .bind(r.status)
        .bind(r.trigger)
        .bind(r.cost)
        .bind(r.tokens)
        .bind(r.model)
        .bind(r.created_at)
        .bind(r.completed_at)
        .fetch_one(self.pool())
        .await
        .unwrap()
    }

    /// `n` completed reviews of acme/widgets created one second apart from `start`, durations
    /// 1, 2, ... seconds.
    async fn insert_many(&self, n: i64, start: i64) {
        sqlx::query(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
             INSERT INTO reviews (repo_full_name, pr_number, status, \"trigger\", created_at, completed_at)
             SELECT 'acme/widgets', i, 'completed', 'opened', ?2 + i, ?2 + i + i FROM k",
        )
        .bind(n)
        .bind(start)
        .execute(self.pool())
        .await
        .unwrap();
    }

    async fn finding(
        &self,
        review_id: i64,
        kind: &str,
        severity: Option<&str>,
        path: Option<&str>,
    ) {
        sqlx::query(
            "INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, path, body, created_at)
             SELECT id, repo_full_name, pr_number, ?, ?, ?, 'b', created_at FROM reviews WHERE id = ?",
        )
        .bind(kind)
        .bind(severity)
        .bind(path)
        .bind(review_id)
        .execute(self.pool())
        .await
        .unwrap();
    }
}

/// A review to seed; `..Rv::default()` is a completed review of acme/widgets.
#[derive(Clone)]
struct Rv {
    repo: &'static str,
    pr: i64,
    status: &'static str,
    trigger: Option<&'static str>,
    cost: Option<f64>,
    tokens: Option<i64>,
    model: Option<&'static str>,
    created_at: i64,
    completed_at: Option<i64>,
}

impl Default for Rv {
    fn default() -> Self {
        Rv {
            repo: "acme/widgets",
            pr: 1,
            status: "completed",
            trigger: Some("opened"),
            cost: None,
            tokens: None,
            model: None,
            created_at: MAR_1,
            completed_at: Some(MAR_1 + 60),
        }
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn limit_above_1000_is_clamped() {
    let env = Env::start().await;
    env.insert_many(1005, MAR_1).await;
    let rows = env.get("/api/reviews?limit=5000").await;
    assert_eq!(ids(&rows), (6..=1005).rev().collect::<Vec<_>>());
    let rows = env.get("/api/reviews?limit=3").await;
    assert_eq!(ids(&rows), vec![1005, 1004, 1003]);
}

#[tokio::test]
async fn junk_limit_falls_back_to_100() {
    let env = Env::start().await;
    env.insert_many(150, MAR_1).await;
    for q in [
        "",
        "?limit=",
        "?limit=abc",
        "?limit=0",
        "?limit=-5",
        "?limit=NaN",
    ] {
        let rows = env.get(&format!("/api/reviews{q}")).await;
        assert_eq!(ids(&rows), (51..=150).rev().collect::<Vec<_>>(), "{q}");
    }
}

#[tokio::test]
async fn review_list_filters_by_status_repo_model_and_dates_and_includes_skipped() {
    let env = Env::start().await;
    let a = env
        .insert(Rv {
            model: Some("x/a"),
            ..Rv::default()
        })
        .await;
    let b = env
        .insert(Rv {
            status: "skipped",
            created_at: MAR_1 + DAY,
            ..Rv::default()
        })
        .await;
    let c = env
        .insert(Rv {
            repo: "acme/other",
            created_at: MAR_1 + 2 * DAY,
            ..Rv::default()
        })
        .await;
    assert_eq!(ids(&env.get("/api/reviews").await), vec![c, b, a]);
    assert_eq!(ids(&env.get("/api/reviews?status=skipped").await), vec![b]);
    assert_eq!(ids(&env.get("/api/reviews?status=").await), vec![c, b, a]);
    assert_eq!(ids(&env.get("/api/reviews?repo=acme/other").await), vec![c]);
    assert_eq!(ids(&env.get("/api/reviews?model=x/a").await), vec![a]);
    assert_eq!(
        ids(&env.get("/api/reviews?from=2024-03-02&to=2024-03-02").await),
        vec![c, b],
        "from >= to drops the upper bound"
    );
    assert_eq!(
        ids(&env
            .get("/api/reviews?from=2024-03-01&to=2024-03-02&range=24h")
            .await),
        vec![b, a]
    );
}

#[tokio::test]
async fn skipped_reviews_are_listed_but_excluded_from_stats() {
    let env = Env::start().await;
    let kept = env
        .insert(Rv {
            cost: Some(0.5),
            tokens: Some(100),
            model: Some("x/a"),
            ..Rv::default()
        })
        .await;
    let skipped = env
        .insert(Rv {
            status: "skipped",
            trigger: Some("synchronize"),
            cost: Some(8.0),
            tokens: Some(9),
            model: Some("x/skip"),
            ..Rv::default()
        })
        .await;
    env.finding(kept, "inline", Some("nit"), Some("src/a.rs"))
        .await;
    env.finding(skipped, "inline", Some("blocking"), Some("src/b.rs"))
        .await;
    assert_eq!(ids(&env.get("/api/reviews").await), vec![skipped, kept]);
    for q in ["", "?repo=acme/widgets"] {
        assert_eq!(
            env.get(&format!("/api/stats{q}")).await,
            json!({
                "projects": [{"repo_full_name": "acme/widgets", "reviews": 1, "cost": 0.5, "tokens": 100, "avg_duration": 60.0}],
                "models": [{"model": "x/a", "reviews": 1, "cost": 0.5, "tokens": 100}],
                "daily": [{"day": "2024-03-01", "reviews": 1, "cost": 0.5, "tokens": 100}],
                "triggers": [{"trigger": "opened", "count": 1}],
                "latency": {"avg": 60.0, "count": 1, "p95": 60},
                "topCost": [{"id": kept, "repo_full_name": "acme/widgets", "pr_number": 1, "cost": 0.5, "tokens": 100, "model": "x/a"}],
                "severity": [{"severity": "nit", "count": 1}],
                "allModels": ["x/a", "x/skip"],
            }),
            "{q}"
        );
        assert_eq!(
            env.get(&format!("/api/stats/charts{q}")).await,
            json!({
                "reliability": [{"day": "2024-03-01", "completed": 1, "failed": 0, "in_flight": 0}],
                "latency": [{"day": "2024-03-01", "count": 1, "p50": 60, "p95": 60}],
                "latencyTruncated": false,
                "findingsDaily": [{"day": "2024-03-01", "severity": "nit", "count": 1}],
                "topFiles": [{"path": "src/a.rs", "count": 1}],
            }),
            "{q}"
        );
    }
}

#[tokio::test]
async fn cost_sums_are_zero_not_null() {
    let env = Env::start().await;
    env.insert(Rv {
        status: "failed",
        model: Some("x/a"),
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        status: "pending",
        completed_at: None,
        ..Rv::default()
    })
    .await;
    let stats = env.get("/api/stats").await;
    assert_eq!(
        stats["projects"],
        // avg_duration is over completed reviews only: a failed and a pending one have none.
        json!([{"repo_full_name": "acme/widgets", "reviews": 2, "cost": 0.0, "tokens": 0, "avg_duration": null}])
    );
    assert_eq!(
        stats["models"],
        json!([{"model": "x/a", "reviews": 1, "cost": 0.0, "tokens": 0}])
    );
    assert_eq!(
        stats["daily"],
        json!([{"day": "2024-03-01", "reviews": 2, "cost": 0.0, "tokens": 0}])
    );
    assert_eq!(stats["topCost"], json!([]));
}

#[tokio::test]
async fn latency_counts_completed_only() {
    let env = Env::start().await;
    for d in 1..=20 {
        env.insert(Rv {
            completed_at: Some(MAR_1 + d * 10),
            ..Rv::default()
        })
        .await;
    }
    env.insert(Rv {
        status: "failed",
        completed_at: Some(MAR_1 + 9999),
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        status: "skipped",
        completed_at: Some(MAR_1 + 9999),
        ..Rv::default()
    })
    .await;
    let stats = env.get("/api/stats").await;
    // Nearest rank: p95 of 20 values is the 19th.
    assert_eq!(
        stats["latency"],
        json!({"avg": 105.0, "count": 20, "p95": 190})
    );
    let charts = env.get("/api/stats/charts").await;
    assert_eq!(
        charts["latency"],
        json!([{"day": "2024-03-01", "count": 20, "p50": 100, "p95": 190}])
    );
    let empty = env.get("/api/stats?repo=nobody/none").await;
    assert_eq!(
        empty["latency"],
        json!({"avg": null, "count": 0, "p95": null})
    );
}

#[tokio::test]
async fn from_after_to_drops_the_upper_bound() {
    let env = Env::start().await;
    for d in 0..4 {
        env.insert(Rv {
            created_at: MAR_1 + d * DAY + 3600,
            completed_at: None,
            status: "failed",
            ..Rv::default()
        })
        .await;
    }
    let days = |v: &Value| -> Vec<String> {
        v["daily"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["day"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        days(&env.get("/api/stats?from=2024-03-03&to=2024-03-02").await),
        ["2024-03-03", "2024-03-04"]
    );
    // to is inclusive: compared as less than to plus one day.
    assert_eq!(
        days(&env.get("/api/stats?from=2024-03-02&to=2024-03-03").await),
        ["2024-03-02", "2024-03-03"]
    );
    // Rule 4: an invalid date is absent, so only the valid bound applies.
    assert_eq!(
        days(&env.get("/api/stats?from=2024-02-30&to=2024-03-02").await),
        ["2024-03-01", "2024-03-02"]
    );
}

#[tokio::test]
async fn invalid_range_falls_back_to_30d() {
    let env = Env::start().await;
    let t = now();
    let recent = env
        .insert(Rv {
            created_at: t - 10 * DAY,
            completed_at: None,
            status: "failed",
            ..Rv::default()
        })
        .await;
    let old = env
        .insert(Rv {
            created_at: t - 40 * DAY,
            completed_at: None,
            status: "failed",
            ..Rv::default()
        })
        .await;
    assert_eq!(ids(&env.get("/api/reviews?range=1y").await), vec![recent]);
    assert_eq!(ids(&env.get("/api/reviews?range=30d").await), vec![recent]);
    assert_eq!(
        ids(&env.get("/api/reviews?range=90d").await),
        vec![old, recent]
    );
    assert_eq!(
        ids(&env.get("/api/reviews?range=all").await),
        vec![old, recent]
    );
    assert_eq!(
        ids(&env.get("/api/reviews?range=").await),
        vec![old, recent]
    );
    assert_eq!(ids(&env.get("/api/reviews").await), vec![old, recent]);
    let stats = env.get("/api/stats?range=bogus").await;
    assert_eq!(stats["projects"][0]["reviews"], json!(1));
}

#[tokio::test]
async fn junk_query_values_never_yield_400() {
    let env = Env::start().await;
    for path in [
        "/api/stats?range=%FF&from=yesterday&to=2024-13-40&repo=&model=&limit=x",
        "/api/stats/charts?from=&to=&range=7D&range=all",
        "/api/reviews?limit=1e999&status=&from=2024-02-29&to=--",
    ] {
        env.get(path).await;
    }
}

#[tokio::test]
async fn all_models_ignores_filters() {
    let env = Env::start().await;
    env.insert(Rv {
        model: Some("x/a"),
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        model: Some("x/b"),
        repo: "acme/other",
        created_at: MAR_1 - 400 * DAY,
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        model: Some("x/c"),
        status: "skipped",
        ..Rv::default()
    })
    .await;
    let stats = env
        .get("/api/stats?repo=acme/widgets&model=x/a&range=24h")
        .await;
    assert_eq!(stats["allModels"], json!(["x/a", "x/b", "x/c"]));
    assert_eq!(stats["models"], json!([]));
}

#[tokio::test]
async fn latency_sample_cap_sets_latency_truncated() {
    let env = Env::start().await;
    env.insert_many(5000, MAR_1).await;
    let charts = env.get("/api/stats/charts").await;
    assert_eq!(charts["latencyTruncated"], json!(false));
    // One more, newer and slower than all: it enters the sample, the oldest leaves.
    env.insert(Rv {
        created_at: MAR_1 + 10_000,
        completed_at: Some(MAR_1 + 110_000),
        ..Rv::default()
    })
    .await;
    let charts = env.get("/api/stats/charts").await;
    assert_eq!(charts["latencyTruncated"], json!(true));
    let sampled: i64 = charts["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["count"].as_i64().unwrap())
        .sum();
    assert_eq!(sampled, 5000);
    // The sample is the newest 5000: the first review (duration 1 s) fell out of it.
    assert_eq!(charts["latency"][0]["p50"], json!(2501));
}

#[tokio::test]
async fn top_cost_is_top_5() {
    let env = Env::start().await;
    let mut want = Vec::new();
    for c in 1..=8 {
        let id = env
            .insert(Rv {
                cost: Some(c as f64 / 4.0),
                tokens: Some(c),
                model: Some("x/a"),
                pr: c,
                ..Rv::default()
            })
            .await;
        want.push(json!({"id": id, "repo_full_name": "acme/widgets", "pr_number": c, "cost": c as f64 / 4.0, "tokens": c, "model": "x/a"}));
    }
    env.insert(Rv {
        cost: Some(99.0),
        status: "skipped",
        ..Rv::default()
    })
    .await;
    want.reverse();
    want.truncate(5);
    assert_eq!(env.get("/api/stats").await["topCost"], Value::Array(want));
}

#[tokio::test]
async fn top_files_is_top_10() {
    let env = Env::start().await;
    let id = env.insert(Rv::default()).await;
    for f in 1..=12 {
        for _ in 0..f {
            env.finding(id, "inline", Some("nit"), Some(&format!("src/f{f:02}.rs")))
                .await;
        }
    }
    env.finding(id, "summary", None, Some("src/f01.rs")).await;
    let want: Vec<Value> = (3..=12)
        .rev()
        .map(|f| json!({"path": format!("src/f{f:02}.rs"), "count": f}))
        .collect();
    assert_eq!(
        env.get("/api/stats/charts").await["topFiles"],
        Value::Array(want)
    );
}

#[tokio::test]
async fn days_are_utc() {
    // The server's local zone is far from UTC; buckets must not move.
    let env = Env::start_with(&[("TZ", "Pacific/Kiritimati".to_owned())]).await;
    env.insert(Rv {
        created_at: MAR_1 - 60,
        completed_at: Some(MAR_1 - 30),
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        created_at: MAR_1 + 60,
        completed_at: Some(MAR_1 + 90),
        ..Rv::default()
    })
    .await;
    let stats = env.get("/api/stats").await;
    assert_eq!(
        stats["daily"],
        json!([
            {"day": "2024-02-29", "reviews": 1, "cost": 0.0, "tokens": 0},
            {"day": "2024-03-01", "reviews": 1, "cost": 0.0, "tokens": 0},
        ])
    );
    let rows = env.get("/api/reviews?from=2024-03-01&to=2024-03-01").await;
    assert_eq!(rows.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn null_trigger_counts_as_unknown() {
    let env = Env::start().await;
    env.insert(Rv {
        trigger: None,
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        trigger: None,
        ..Rv::default()
    })
    .await;
    env.insert(Rv::default()).await;
    assert_eq!(
        env.get("/api/stats").await["triggers"],
        json!([{"trigger": "unknown", "count": 2}, {"trigger": "opened", "count": 1}])
    );
}

#[tokio::test]
async fn reliability_counts_pending_and_running_as_in_flight() {
    let env = Env::start().await;
    for status in [
        "completed",
        "failed",
        "failed",
        "pending",
        "running",
        "skipped",
    ] {
        env.insert(Rv {
            status,
            ..Rv::default()
        })
        .await;
    }
    assert_eq!(
        env.get("/api/stats/charts").await["reliability"],
        json!([{"day": "2024-03-01", "completed": 1, "failed": 2, "in_flight": 2}])
    );
}

/// The whole-day rollups (read for unfiltered windows) and the raw rows (read when a repo is
/// given) must agree, through every write path of the store: inserts, status transitions,
/// findings, deletes.
#[tokio::test]
async fn rollups_agree_with_raw_rows() {
    let env = Env::start().await;
    let store = &env.store;
    let t = now();
    let mut n = 0;
    for day in [0, 1, 2, 5, 6, 8, 30] {
        for (k, trigger) in [Trigger::Opened, Trigger::Synchronize, Trigger::Command]
            .into_iter()
            .enumerate()
        {
            n += 1;
            let created = t - day * DAY - (k as i64) * 7000 - 100;
            let new = NewReview {
                repo_full_name: "acme/widgets".into(),
                pr_number: n,
                title: None,
                trigger: Some(trigger),
                attempt: 0,
                head_sha: None,
            };
            let r = store
                .insert_review(&new, EpochSeconds(created))
                .await
                .unwrap();
            if n % 5 == 4 {
                continue; // stays pending
            }
            store.start_review(r.id, "s").await.unwrap();
            let spent = Completion {
                cost: n as f64 / 8.0,
                tokens: n * 10,
                model: if n % 2 == 0 { "x/a" } else { "x/b" }.into(),
                patch_id: None,
            };
            match n % 5 {
                0 => {
                    store
                        .fail_review(r.id, "boom", Some(&spent), EpochSeconds(created + 50))
                        .await
                        .unwrap();
                }
                3 => {
                    store
                        .skip_review(r.id, Some("p"), EpochSeconds(created + 5))
                        .await
                        .unwrap();
                }
                _ => {
                    let done = store
                        .complete_review(r.id, &spent, EpochSeconds(created + 30 * n))
                        .await
                        .unwrap()
                        .unwrap();
                    let f = |severity, path: &str| NewFinding {
                        kind: FindingKind::Inline,
                        body: "b".into(),
                        event: None,
                        severity: Some(severity),
                        path: Some(path.into()),
                        line: Some(1),
                        github_review_id: None,
                        github_comment_id: None,
                        fingerprint: None,
                    };
                    store
                        .insert_findings(
                            &done,
                            &[
                                f(Severity::Nit, "a.rs"),
                                f(Severity::Blocking, &format!("f{}.rs", n % 3)),
                            ],
                            EpochSeconds(created + 30 * n),
                        )
                        .await
                        .unwrap();
                }
            }
        }
    }
    sqlx::query("DELETE FROM reviews WHERE pr_number = 2")
        .execute(env.pool())
        .await
        .unwrap();
    for q in [
        "range=all",
        "range=7d",
        "range=24h",
        "range=90d",
        "from=2020-01-01",
        "range=30d",
    ] {
        let rollup = env.get(&format!("/api/stats?{q}")).await;
        let raw = env.get(&format!("/api/stats?{q}&repo=acme/widgets")).await;
        assert_eq!(rollup, raw, "{q}");
        let rollup = env.get(&format!("/api/stats/charts?{q}")).await;
        let raw = env
            .get(&format!("/api/stats/charts?{q}&repo=acme/widgets"))
            .await;
        assert_eq!(rollup, raw, "{q}");
    }
    let all = env.get("/api/stats?range=all").await;
    assert_eq!(all["projects"][0]["reviews"], json!(16), "{all}");
}

/// docs/review-service.md, "Review list paging": `before` pages under an id and X-Total-Count
/// counts every matching row, so a list of 250 reviews is reachable page by page.
#[tokio::test]
async fn the_review_list_pages_with_before_and_counts_the_total() {
    let env = Env::start().await;
    let start = now() - 3600;
    env.insert_many(250, start).await;
    let page = |q: String| {
        let env = &env;
        async move {
            let r = env
                .server
                .http
                .get(format!("{}/api/reviews?{q}", env.server.url))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let total: i64 = r.headers()["x-total-count"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            (total, ids(&r.json::<Value>().await.unwrap()))
        }
    };
    let (total, first) = page("limit=200".into()).await;
    assert_eq!((total, first.len()), (250, 200));
    let last = *first.last().unwrap();
    let (total, second) = page(format!("limit=200&before={last}")).await;
    assert_eq!((total, second.len()), (250, 50));
    assert!(second.iter().all(|id| *id < last));
    let mut all = first;
    all.extend(second);
    all.dedup();
    assert_eq!(all.len(), 250);
    // Junk `before` is ignored like the other junk values; a filter changes the total.
    assert_eq!(page("limit=5&before=abc".into()).await.1.len(), 5);
    assert_eq!(page("status=failed".into()).await, (0, vec![]));
}

/// docs/review-service.md, "Failure classes": a failed row says why in `failure_class`; other
/// rows carry null.
#[tokio::test]
async fn failed_reviews_carry_their_failure_class() {
    let env = Env::start().await;
    let created_at = now() - 60;
    let mut ids_by_error = Vec::new();
    for error in [
        "model provider answered 529: Overloaded",
        "timeout: no model progress for 120 s",
        "Stopped by user",
        "budget exceeded: 120000 tokens over REVIEW_MAX_TOKENS 100000",
    ] {
        let id = env
            .insert(Rv {
                status: "failed",
                created_at,
                ..Rv::default()
            })
            .await;
        sqlx::query("UPDATE reviews SET error = ? WHERE id = ?")
            .bind(error)
            .bind(id)
            .execute(env.pool())
            .await
            .unwrap();
        ids_by_error.push(id);
    }
    let ok = env
        .insert(Rv {
            created_at,
            ..Rv::default()
        })
        .await;
    let classes: Vec<Value> = env
        .get("/api/reviews?range=24h")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["id"], r["failure_class"]]))
        .collect();
    let want: Vec<Value> = [
        (ok, Value::Null),
        (ids_by_error[3], json!("budget")),
        (ids_by_error[2], json!("cancelled")),
        (ids_by_error[1], json!("timeout")),
        (ids_by_error[0], json!("overloaded")),
    ]
    .into_iter()
    .map(|(id, c)| json!([id, c]))
    .collect();
    assert_eq!(classes, want);
    assert_eq!(
        env.get(&format!("/api/reviews/{}", ids_by_error[0])).await["failure_class"],
        "overloaded"
    );
}

/// docs/review-service.md, "Repository scores": per repository the counts, cost, mean duration
/// and findings of the window, improver runs and skipped reviews aside; files with their
/// repository, so two README.md files are two rows.
#[tokio::test]
async fn repository_scores_count_each_repository_and_name_the_files_repository() {
    let env = Env::start().await;
    let t = now() - 7200;
    let a1 = env
        .insert(Rv {
            cost: Some(0.5),
            created_at: t,
            completed_at: Some(t + 100),
            ..Rv::default()
        })
        .await;
    env.insert(Rv {
        status: "failed",
        cost: Some(0.25),
        created_at: t + 10,
        completed_at: Some(t + 20),
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        status: "skipped",
        created_at: t + 20,
        ..Rv::default()
    })
    .await;
    env.insert(Rv {
        pr: 0,
        trigger: None,
        created_at: t + 30,
        ..Rv::default()
    })
    .await;
    let b1 = env
        .insert(Rv {
            repo: "acme/gadgets",
            status: "running",
            created_at: t + 40,
            completed_at: None,
            ..Rv::default()
        })
        .await;
    env.finding(a1, "inline", Some("blocking"), Some("README.md"))
        .await;
    env.finding(a1, "inline", Some("nit"), Some("README.md"))
        .await;
    env.finding(a1, "inline", Some("nit"), Some("src/lib.rs"))
        .await;
    env.finding(a1, "summary", None, None).await;
    env.finding(b1, "inline", Some("question"), Some("README.md"))
        .await;
    let v = env.get("/api/stats/repos?range=30d").await;
    assert_eq!(
        v["repos"],
        json!([
            {"repo_full_name": "acme/widgets", "reviews": 2, "completed": 1, "failed": 1,
             "in_flight": 0, "cost": 0.75, "avg_duration": 100.0, "findings": 3, "blocking": 1,
             "nits": 2, "blocking_reviews": 1, "last_review_at": t + 10},
            {"repo_full_name": "acme/gadgets", "reviews": 1, "completed": 0, "failed": 0,
             "in_flight": 1, "cost": 0.0, "avg_duration": null, "findings": 1, "blocking": 0,
             "nits": 0, "blocking_reviews": 0, "last_review_at": t + 40},
        ])
    );
    assert_eq!(
        v["topFiles"],
        json!([
            {"repo_full_name": "acme/widgets", "path": "README.md", "count": 2},
            {"repo_full_name": "acme/gadgets", "path": "README.md", "count": 1},
            {"repo_full_name": "acme/widgets", "path": "src/lib.rs", "count": 1},
        ])
    );
    let one = env
        .get("/api/stats/repos?range=30d&repo=acme/gadgets")
        .await;
    assert_eq!(one["repos"].as_array().unwrap().len(), 1);
}
