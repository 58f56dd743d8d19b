//! The dashboard aggregates (docs/review-service.md §2, Aggregate rows; §4,
//! Stats and the GET /api/reviews list; §8, limits), all computed in SQL.
//!
//! A window is split into whole UTC days, read from the per-day rollups that the triggers of
//! `migrations/0007_stats_rollups.sql` (PostgreSQL: `migrations/postgres/0002_stats_rollups.sql`)
//! keep exact, and the partial days at its edges, read from
//! the raw rows; both halves are summed in one `GROUP BY`. A filter on one repo or one model
//! reads the rollups split by repo and by model (`migrations/0013_stats_filter_rollups.sql`;
//! PostgreSQL: `migrations/postgres/0004_stats_filter_rollups.sql`) the same way; a filter on
//! both reads the raw rows only, through the indexes of `migrations/0009_stats_filter_indexes.sql`.
//! An all-time window reads per-repo and per-file totals
//! (`migrations/0008_stats_totals.sql`) instead of summing days. Percentiles walk an index and
//! stop at the rank.

use crate::reviews::REVIEW_COLUMNS;
use crate::rows::review_from_row;
use crate::{Backend, Result, Store};
use review_domain::{ReviewRow, StatsFilter};
use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::{Any, AnyPool, FromRow};

const DAY: i64 = 86_400;

/// A value bound to a statement of this module.
#[derive(Debug, Clone, PartialEq)]
enum Bind {
    Int(i64),
    Text(String),
}

/// A statement being built: SQL with `$N` placeholders (both backends read them; sqlx's
/// `QueryBuilder` writes `?` for the `Any` driver, which PostgreSQL refuses) and its values.
#[derive(Debug, Clone, Default)]
struct Sql {
    text: String,
    binds: Vec<Bind>,
}

impl Sql {
    fn new(text: impl Into<String>) -> Self {
        Sql {
            text: text.into(),
            binds: Vec::new(),
        }
    }

    fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    fn push_bind(&mut self, value: impl Into<Bind>) -> &mut Self {
        self.binds.push(value.into());
        self.text.push_str(&format!("${}", self.binds.len()));
        self
    }
}

impl From<i64> for Bind {
    fn from(v: i64) -> Self {
        Bind::Int(v)
    }
}

impl From<String> for Bind {
    fn from(v: String) -> Self {
        Bind::Text(v)
    }
}

/// Binds the values of `$sql` to `$query` (a `query`, `query_as` or `query_scalar`).
macro_rules! bound {
    ($query:expr, $sql:expr) => {{
        let mut q = $query;
        for b in &$sql.binds {
            q = match b {
                Bind::Int(v) => q.bind(*v),
                Bind::Text(v) => q.bind(v.as_str()),
            };
        }
        q
    }};
}

/// Every row of a built query, as `T`.
async fn all<T>(pool: &AnyPool, q: &Sql) -> Result<Vec<T>>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    Ok(bound!(sqlx::query_as::<Any, T>(&q.text), q)
        .fetch_all(pool)
        .await?)
}

/// The one row of a built query (an aggregate), as `T`.
async fn one<T>(pool: &AnyPool, q: &Sql) -> Result<T>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    Ok(bound!(sqlx::query_as::<Any, T>(&q.text), q)
        .fetch_one(pool)
        .await?)
}

/// The one value of a built query (an aggregate), if there is a row.
async fn scalar(pool: &AnyPool, q: &Sql) -> Result<Option<i64>> {
    Ok(bound!(sqlx::query_scalar::<Any, i64>(&q.text), q)
        .fetch_optional(pool)
        .await?)
}

/// The few SQL spellings that differ between SQLite and PostgreSQL in these queries
/// (docs/architecture.md, "Two database backends"). Everything else is written once.
impl Backend {
    /// `YYYY-MM-DD` of the UTC day number `day` (days since the epoch).
    fn day_text(self, day: &str) -> String {
        match self {
            Backend::Sqlite => format!("date({day} * 86400, 'unixepoch')"),
            Backend::Postgres => {
                format!("to_char(DATE '1970-01-01' + CAST({day} AS INTEGER), 'YYYY-MM-DD')")
            }
        }
    }

    /// The sum of a REAL column, 0.0 over no rows or only nulls.
    fn total(self, column: &str) -> String {
        match self {
            Backend::Sqlite => format!("total({column})"),
            Backend::Postgres => format!("coalesce(sum({column}), 0)"),
        }
    }

    /// SQLite's hint to read `reviews` through `index` (its planner picks a worse one at 1M
    /// rows, bench/review-stats); PostgreSQL's planner needs none.
    fn indexed_by(self, index: &str) -> String {
        match self {
            Backend::Sqlite => format!(" INDEXED BY {index}"),
            Backend::Postgres => String::new(),
        }
    }

    /// An aggregate of `value` over a group into one list sorted ascending.
    fn sorted_list(self, value: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_group_array({value} ORDER BY {value})"),
            Backend::Postgres => format!("array_agg({value} ORDER BY {value})"),
        }
    }

    /// Element `rank` (1-based) of a [`Backend::sorted_list`].
    fn nth(self, list: &str, rank: &str) -> String {
        match self {
            Backend::Sqlite => format!("{list} ->> ({rank} - 1)"),
            Backend::Postgres => format!("{list}[CAST({rank} AS INTEGER)]"),
        }
    }
}

/// Rows of topCost (docs/review-service.md §8).
pub const TOP_COST_ROWS: i64 = 5;
/// Rows of topFiles (docs/review-service.md §8).
pub const TOP_FILES_ROWS: i64 = 10;
/// The chart latency sample cap (docs/review-service.md §8).
pub const LATENCY_SAMPLE_CAP: i64 = 5000;

/// Per-repo totals (docs/review-service.md §2, ProjectStatsRow). `avg_duration` is the mean of
/// `completed_at - created_at` in seconds over the completed reviews, or null when none
/// completed (failed rows have a completed_at too, but a row failed at boot after a long wait
/// is no review duration).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ProjectStatsRow {
    pub repo_full_name: String,
    pub reviews: i64,
    /// Sum of cost; 0, never null.
    pub cost: f64,
    /// Sum of tokens; 0 when none are recorded.
    pub tokens: i64,
    pub avg_duration: Option<f64>,
}

/// Per-model totals over reviews with a model (docs/review-service.md §2, ModelStatsRow).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ModelStatsRow {
    pub model: String,
    pub reviews: i64,
    pub cost: f64,
    pub tokens: i64,
}

/// Per-UTC-day totals (docs/review-service.md §2, DailyStatsRow); `day` is `YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct DailyStatsRow {
    pub day: String,
    pub reviews: i64,
    pub cost: f64,
    pub tokens: i64,
}

/// Reviews per trigger, `unknown` for null (docs/review-service.md §2, TriggerStatsRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TriggerStatsRow {
    pub trigger: String,
    pub count: i64,
}

/// Findings per severity (docs/review-service.md §2, SeverityStatsRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct SeverityStatsRow {
    pub severity: String,
    pub count: i64,
}

/// One of the most expensive reviews (docs/review-service.md §2, TopCostRow).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TopCostRow {
    /// The review's id.
    pub id: i64,
    pub repo_full_name: String,
    pub pr_number: i64,
    /// USD, from the model catalog's prices.
    pub cost: f64,
    pub tokens: Option<i64>,
    pub model: Option<String>,
}

/// Latency of completed reviews in seconds (docs/review-service.md §4, GET /api/stats): mean, count
/// and nearest-rank 95th percentile; avg and p95 are null when count is 0.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LatencyStats {
    pub avg: Option<f64>,
    pub count: i64,
    pub p95: Option<i64>,
}

/// The body of GET /api/stats (docs/review-service.md §4, Stats).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub projects: Vec<ProjectStatsRow>,
    pub models: Vec<ModelStatsRow>,
    pub daily: Vec<DailyStatsRow>,
    pub triggers: Vec<TriggerStatsRow>,
    pub latency: LatencyStats,
    pub top_cost: Vec<TopCostRow>,
    pub severity: Vec<SeverityStatsRow>,
    /// Every model ever recorded, whatever the filter, sorted.
    pub all_models: Vec<String>,
}

/// Outcomes per UTC day (docs/review-service.md §2, ReliabilityRow); in_flight is pending plus
/// running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ReliabilityRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub completed: i64,
    pub failed: i64,
    /// Pending plus running.
    pub in_flight: i64,
}

/// Latency of one UTC day of the sample, nearest-rank percentiles in seconds
/// (docs/review-service.md §4, GET /api/stats/charts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct LatencyDayRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// Completed reviews of that day in the sample.
    pub count: i64,
    /// Seconds from created_at to completed_at.
    pub p50: Option<i64>,
    pub p95: Option<i64>,
}

/// Findings per UTC day and severity (docs/review-service.md §2, FindingsDailyRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct FindingsDailyRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub severity: String,
    pub count: i64,
}

/// Inline findings per file (docs/review-service.md §2, TopFileRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TopFileRow {
    pub path: String,
    pub count: i64,
}

/// The body of GET /api/stats/charts (docs/review-service.md §4, Stats).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Charts {
    pub reliability: Vec<ReliabilityRow>,
    pub latency: Vec<LatencyDayRow>,
    /// True when more completed reviews matched than the 5000-row sample holds.
    pub latency_truncated: bool,
    pub findings_daily: Vec<FindingsDailyRow>,
    pub top_files: Vec<TopFileRow>,
}

/// The one repo or one model a window is narrowed to, which the rollups split by repo and by
/// model answer (`migrations/0013_stats_filter_rollups.sql`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Facet<'a> {
    Repo(&'a str),
    Model(&'a str),
}

impl<'a> Facet<'a> {
    /// The `facet` column's name for it and the repo or model.
    fn parts(self) -> (&'static str, &'a str) {
        match self {
            Facet::Repo(v) => ("repo", v),
            Facet::Model(v) => ("model", v),
        }
    }
}

/// How a rollup read for a [`Facet`] finds its rows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    /// `facet = <repo|model> AND value = <it>` (the `stats_*_facet*` tables).
    Facet,
    /// `<column> = <the repo or model>`.
    Column(&'static str),
}

/// The rollups one aggregate reads: SQL ending where conditions are appended (`... WHERE
/// <cond>`) for no filter, for a repo and for a model; None where only the raw rows answer.
#[derive(Debug, Clone, Copy)]
struct Rollups<'s> {
    all: &'s str,
    repo: Option<(&'s str, Key)>,
    model: Option<(&'s str, Key)>,
}

impl<'s> Rollups<'s> {
    /// `all` without a filter; `facet` (a `stats_*_facet*` table) for a repo or a model.
    fn faceted(all: &'s str, facet: &'s str) -> Self {
        Self {
            all,
            repo: Some((facet, Key::Facet)),
            model: Some((facet, Key::Facet)),
        }
    }
}

/// How a filter is read: whole days from the rollups plus raw edges, or raw rows only.
#[derive(Debug, Clone, PartialEq)]
struct Plan<'a> {
    filter: &'a StatsFilter,
    /// The repo or model the rollups are read for; None: the unsplit rollups (or raw rows only
    /// when both a repo and a model are given).
    facet: Option<Facet<'a>>,
    /// `[lo, hi)` in days since the epoch, read from the rollups; None: raw rows only.
    days: Option<(i64, i64)>,
    /// Half-open created_at ranges read from the raw rows (None bound: unbounded).
    edges: Vec<(Option<i64>, Option<i64>)>,
}

impl<'a> Plan<'a> {
    fn new(filter: &'a StatsFilter) -> Self {
        let (since, until) = (filter.since, filter.until);
        let facet = match (filter.repo.as_deref(), filter.model.as_deref()) {
            (Some(_), Some(_)) => return Self::raw(filter),
            (Some(repo), None) => Some(Facet::Repo(repo)),
            (None, Some(model)) => Some(Facet::Model(model)),
            (None, None) => None,
        };
        let lo = since.map_or(i64::MIN / DAY, |s| {
            s.div_euclid(DAY) + i64::from(s % DAY != 0)
        });
        let hi = until.map_or(i64::MAX / DAY, |u| u.div_euclid(DAY));
        if lo >= hi {
            return Self::raw(filter);
        }
        let mut edges = Vec::new();
        if let Some(s) = since
            && s < lo * DAY
        {
            edges.push((Some(s), Some(lo * DAY)));
        }
        if let Some(u) = until
            && hi * DAY < u
        {
            edges.push((Some(hi * DAY), Some(u)));
        }
        Self {
            filter,
            facet,
            days: Some((lo, hi)),
            edges,
        }
    }

    /// The whole window from the raw rows.
    fn raw(filter: &'a StatsFilter) -> Self {
        Self {
            filter,
            facet: None,
            days: None,
            edges: vec![(filter.since, filter.until)],
        }
    }

    /// ` AND <created_at in the raw ranges> AND <repo> AND <model>` on alias `r`.
    fn push_raw(&self, q: &mut Sql) {
        push_filter_ranges(q, &self.edges);
        push_repo_model(q, self.filter);
    }

    /// True when the raw rows have anything to contribute.
    fn has_raw(&self) -> bool {
        !self.edges.is_empty()
    }

    /// True when the window is all time: all-time totals answer alone.
    fn all_time(&self) -> bool {
        self.days.is_some()
            && self.filter.since.is_none()
            && self.filter.until.is_none()
            && self.edges.is_empty()
    }

    /// The rollup of `rollups` this plan reads with the condition that picks its repo or model,
    /// or None when the plan reads raw rows only or `rollups` has none for its facet.
    fn rollup<'s>(&self, rollups: &Rollups<'s>) -> Option<(&'s str, Option<(Key, Facet<'a>)>)> {
        self.days?;
        match self.facet {
            None => Some((rollups.all, None)),
            Some(f @ Facet::Repo(_)) => rollups.repo.map(|(sql, key)| (sql, Some((key, f)))),
            Some(f @ Facet::Model(_)) => rollups.model.map(|(sql, key)| (sql, Some((key, f)))),
        }
    }
}

/// The index SQLite walks for the completed reviews of `f`: `by_repo`, `by_model` or
/// `unfiltered` (with both a repo and a model, `by_repo`).
fn filter_index<'i>(
    f: &StatsFilter,
    unfiltered: &'i str,
    by_repo: &'i str,
    by_model: &'i str,
) -> &'i str {
    match (&f.repo, &f.model) {
        (Some(_), _) => by_repo,
        (None, Some(_)) => by_model,
        (None, None) => unfiltered,
    }
}

fn push_filter_ranges(q: &mut Sql, ranges: &[(Option<i64>, Option<i64>)]) {
    if ranges.is_empty() {
        q.push(" AND false");
        return;
    }
    if ranges.iter().all(|r| *r == (None, None)) {
        return;
    }
    q.push(" AND (");
    for (i, (a, b)) in ranges.iter().enumerate() {
        if i > 0 {
            q.push(" OR ");
        }
        q.push("(true");
        if let Some(a) = a {
            q.push(" AND r.created_at >= ").push_bind(*a);
        }
        if let Some(b) = b {
            q.push(" AND r.created_at < ").push_bind(*b);
        }
        q.push(")");
    }
    q.push(")");
}

fn push_repo_model(q: &mut Sql, f: &StatsFilter) {
    if let Some(repo) = &f.repo {
        q.push(" AND r.repo_full_name = ").push_bind(repo.clone());
    }
    if let Some(model) = &f.model {
        q.push(" AND r.model = ").push_bind(model.clone());
    }
}

/// ` AND <whole filter>` on alias `r`, for queries that never use the rollups.
fn push_full_filter(q: &mut Sql, f: &StatsFilter) {
    if let Some(s) = f.since {
        q.push(" AND r.created_at >= ").push_bind(s);
    }
    if let Some(u) = f.until {
        q.push(" AND r.created_at < ").push_bind(u);
    }
    push_repo_model(q, f);
}

/// `SELECT <outer> FROM (` + the rollup branch (when the plan has days and `rollups` one for
/// its filter) + `UNION ALL` + the raw branch (for the edges, or the whole window when no rollup
/// answers) + `) <tail>`. The rollups and `raw` are SQL that end where the plan's conditions are
/// appended (`... WHERE <cond>`); an all-time plan adds no day bounds, so a rollup may read a
/// table without days (the totals).
fn union_query(plan: &Plan<'_>, outer: &str, rollups: Rollups<'_>, raw: &str, tail: &str) -> Sql {
    let Some((rollup, key)) = plan.rollup(&rollups) else {
        let raw_plan = Plan::raw(plan.filter);
        let mut q = Sql::new(format!("SELECT {outer} FROM ("));
        q.push(raw);
        raw_plan.push_raw(&mut q);
        q.push(") AS u ").push(tail);
        return q;
    };
    let mut q = Sql::new(format!("SELECT {outer} FROM ("));
    q.push(rollup);
    if let Some((key, facet)) = key {
        let (name, value) = facet.parts();
        match key {
            Key::Facet => q
                .push(" AND facet = ")
                .push_bind(name.to_owned())
                .push(" AND value = "),
            Key::Column(column) => q.push(" AND ").push(column).push(" = "),
        };
        q.push_bind(value.to_owned());
    }
    if let Some((lo, hi)) = plan.days
        && !plan.all_time()
    {
        q.push(" AND day >= ")
            .push_bind(lo)
            .push(" AND day < ")
            .push_bind(hi);
    }
    if plan.has_raw() {
        q.push(" UNION ALL ").push(raw);
        plan.push_raw(&mut q);
    }
    q.push(") AS u ").push(tail);
    q
}

/// Severity and path of findings of the raw part of a plan: `SELECT <cols> FROM findings f JOIN
/// reviews r ... WHERE r.status != 'skipped' <raw conditions>`.
const FINDINGS_RAW: &str =
    "FROM reviews r JOIN findings f ON f.review_id = r.id WHERE r.status != 'skipped'";

/// `dur_sum` and `dur_n` of one raw review: its duration and 1 when it completed, else 0 and 0
/// (docs/review-service.md §2, ProjectStatsRow: averages are over completed reviews).
const RAW_DURATION: &str = "CASE WHEN r.status = 'completed' THEN coalesce(r.completed_at - r.created_at, 0) ELSE 0 END AS dur_sum,
     CASE WHEN r.status = 'completed' AND r.completed_at IS NOT NULL THEN 1 ELSE 0 END AS dur_n";

/// projects for one repo from `stats_day_facet`: non-skipped reviews, durations of the
/// completed ones (docs/review-service.md §2, ProjectStatsRow).
const FACET_PROJECTS: &str = "SELECT value AS repo_full_name, reviews, cost, tokens,
     CASE WHEN status = 'completed' THEN dur_sum ELSE 0 END AS dur_sum,
     CASE WHEN status = 'completed' THEN dur_n ELSE 0 END AS dur_n
     FROM stats_day_facet WHERE status != 'skipped'";

/// The mean duration of summed `dur_sum` and `dur_n`, null when nothing completed.
const MEAN_DURATION: &str =
    "CASE WHEN sum(dur_n) > 0 THEN CAST(sum(dur_sum) AS DOUBLE PRECISION) / sum(dur_n) END";

impl Store {
    /// GET /api/stats (docs/review-service.md §4, Stats): every aggregate excludes skipped reviews;
    /// latency and the projects' avg_duration are over completed reviews; allModels ignores the
    /// filter.
    pub async fn stats(&self, f: &StatsFilter) -> Result<Stats> {
        let plan = Plan::new(f);
        let pool = &self.pool;
        let db = self.backend;

        let projects = union_query(
            &plan,
            &format!(
                "repo_full_name, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens, {MEAN_DURATION} AS avg_duration",
                db.total("cost")
            ),
            Rollups {
                all: if plan.all_time() {
                    "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_total_repo WHERE true"
                } else {
                    "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_day_repo WHERE true"
                },
                repo: Some((FACET_PROJECTS, Key::Facet)),
                model: Some((
                    if plan.all_time() {
                        "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_total_repo_model WHERE true"
                    } else {
                        "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_day_repo_model WHERE true"
                    },
                    Key::Column("model"),
                )),
            },
            &format!(
                "SELECT r.repo_full_name AS repo_full_name, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
                 coalesce(r.tokens, 0) AS tokens, {RAW_DURATION} FROM reviews r WHERE r.status != 'skipped'"
            ),
            "GROUP BY repo_full_name HAVING sum(reviews) > 0 ORDER BY reviews DESC, repo_full_name",
        );
        let models = union_query(
            &plan,
            &format!(
                "model, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens",
                db.total("cost")
            ),
            Rollups {
                all: "SELECT model, reviews, cost, tokens FROM stats_day_model WHERE true",
                repo: Some((
                    if plan.all_time() {
                        "SELECT model, reviews, cost, tokens FROM stats_total_repo_model WHERE true"
                    } else {
                        "SELECT model, reviews, cost, tokens FROM stats_day_repo_model WHERE true"
                    },
                    Key::Column("repo"),
                )),
                model: Some((
                    "SELECT value AS model, reviews, cost, tokens FROM stats_day_facet WHERE status != 'skipped'",
                    Key::Facet,
                )),
            },
            "SELECT r.model AS model, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
             coalesce(r.tokens, 0) AS tokens
             FROM reviews r WHERE r.status != 'skipped' AND r.model IS NOT NULL",
            "GROUP BY model HAVING sum(reviews) > 0 ORDER BY reviews DESC, model",
        );
        let daily = union_query(
            &plan,
            &format!(
                "{} AS day, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens",
                db.day_text("day"),
                db.total("cost")
            ),
            Rollups::faceted(
                "SELECT day, reviews, cost, tokens FROM stats_day_status WHERE status != 'skipped'",
                "SELECT day, reviews, cost, tokens FROM stats_day_facet WHERE status != 'skipped'",
            ),
            "SELECT r.created_at / 86400 AS day, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
             coalesce(r.tokens, 0) AS tokens FROM reviews r WHERE r.status != 'skipped'",
            "GROUP BY 1 HAVING sum(reviews) > 0 ORDER BY 1",
        );
        let triggers = union_query(
            &plan,
            "trig AS \"trigger\", CAST(sum(n) AS BIGINT) AS count",
            Rollups::faceted(
                "SELECT trig, n FROM stats_day_trigger WHERE true",
                "SELECT trig, n FROM stats_day_facet_trigger WHERE true",
            ),
            "SELECT coalesce(r.\"trigger\", 'unknown') AS trig, 1 AS n FROM reviews r
             WHERE r.status != 'skipped'",
            "GROUP BY trig HAVING sum(n) > 0 ORDER BY count DESC, trig",
        );
        let latency = union_query(
            &plan,
            &format!("CAST(coalesce(sum(dur_n), 0) AS BIGINT), {MEAN_DURATION}"),
            Rollups::faceted(
                "SELECT dur_sum, dur_n FROM stats_day_status WHERE status = 'completed'",
                "SELECT dur_sum, dur_n FROM stats_day_facet WHERE status = 'completed'",
            ),
            &format!("SELECT {RAW_DURATION} FROM reviews r WHERE r.status = 'completed'"),
            "",
        );
        let severity = union_query(
            &plan,
            "severity, CAST(sum(n) AS BIGINT) AS count",
            Rollups::faceted(
                "SELECT severity, n FROM stats_day_severity WHERE true",
                "SELECT severity, n FROM stats_day_facet_severity WHERE true",
            ),
            &format!(
                "SELECT f.severity AS severity, 1 AS n {FINDINGS_RAW} AND f.severity IS NOT NULL"
            ),
            "GROUP BY severity HAVING sum(n) > 0 ORDER BY count DESC, severity",
        );
        // The ids first, then their rows: SQLite ranks a repo's or model's reviews from its
        // covering index instead of reading 20,000 rows for pr_number (70 ms at 1M reviews).
        let mut top_cost = Sql::new(
            "SELECT r.id, r.repo_full_name, r.pr_number, r.cost, r.tokens, r.model FROM reviews r
             WHERE r.id IN (SELECT r.id FROM reviews r WHERE r.status != 'skipped' AND r.cost IS NOT NULL",
        );
        push_full_filter(&mut top_cost, f);
        top_cost
            .push(" ORDER BY r.cost DESC, r.id DESC LIMIT ")
            .push_bind(TOP_COST_ROWS)
            .push(") ORDER BY r.cost DESC, r.id DESC");

        let (projects, models, daily, triggers, (count, avg), severity, top_cost, all_models) = futures::try_join!(
            all(pool, &projects),
            all(pool, &models),
            all(pool, &daily),
            all(pool, &triggers),
            one(pool, &latency),
            all(pool, &severity),
            all(pool, &top_cost),
            self.all_models(),
        )?;
        let p95 = self.completed_duration_rank(f, count, 95).await?;
        Ok(Stats {
            projects,
            models,
            daily,
            triggers,
            latency: LatencyStats { avg, count, p95 },
            top_cost,
            severity,
            all_models,
        })
    }

    /// Every distinct non-null model of every review, sorted: a loose index scan over
    /// `reviews_model_cover` (migration 0009), one seek per model.
    pub async fn all_models(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "WITH RECURSIVE m(model) AS (
                 SELECT (SELECT min(model) FROM reviews WHERE model IS NOT NULL)
                 UNION ALL
                 SELECT (SELECT min(model) FROM reviews WHERE model > m.model) FROM m
                 WHERE m.model IS NOT NULL)
             SELECT model FROM m WHERE model IS NOT NULL",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// The nearest-rank `pct` percentile of `completed_at - created_at` over the `count`
    /// completed reviews of the filter: the value at rank ceil(pct/100 * count), found by
    /// walking `reviews_duration` (or the repo's or model's `reviews_repo_duration`, `reviews_model_duration`) from the top.
    async fn completed_duration_rank(
        &self,
        f: &StatsFilter,
        count: i64,
        pct: i64,
    ) -> Result<Option<i64>> {
        if count <= 0 {
            return Ok(None);
        }
        let rank = (count * pct + 99) / 100;
        let index = filter_index(
            f,
            "reviews_duration",
            "reviews_repo_duration",
            "reviews_model_duration",
        );
        let mut q = Sql::new(format!(
            "SELECT r.completed_at - r.created_at FROM reviews r{}
             WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            self.backend.indexed_by(index)
        ));
        push_full_filter(&mut q, f);
        q.push(" ORDER BY r.completed_at - r.created_at DESC LIMIT 1 OFFSET ")
            .push_bind(count - rank);
        scalar(&self.pool, &q).await
    }

    /// GET /api/stats/charts (docs/review-service.md §4, Stats): reliability per day, per-day
    /// latency percentiles over the newest 5000 completed reviews, findings per day and severity,
    /// and the 10 files with the most inline findings. Skipped reviews are left out throughout.
    pub async fn charts(&self, f: &StatsFilter) -> Result<Charts> {
        let plan = Plan::new(f);
        let pool = &self.pool;
        let db = self.backend;
        let reliability = union_query(
            &plan,
            &format!(
                "{} AS day,
                 CAST(sum(CASE WHEN status = 'completed' THEN reviews ELSE 0 END) AS BIGINT) AS completed,
                 CAST(sum(CASE WHEN status = 'failed' THEN reviews ELSE 0 END) AS BIGINT) AS failed,
                 CAST(sum(CASE WHEN status IN ('pending', 'running') THEN reviews ELSE 0 END) AS BIGINT) AS in_flight",
                db.day_text("day")
            ),
            Rollups::faceted(
                "SELECT day, status, reviews FROM stats_day_status WHERE status != 'skipped'",
                "SELECT day, status, reviews FROM stats_day_facet WHERE status != 'skipped'",
            ),
            "SELECT r.created_at / 86400 AS day, r.status AS status, 1 AS reviews FROM reviews r
             WHERE r.status != 'skipped'",
            "GROUP BY 1 HAVING sum(reviews) > 0 ORDER BY 1",
        );

        // The newest completed reviews of the filter, walked backwards by created_at.
        let newest_completed = filter_index(
            f,
            "reviews_status_created",
            "reviews_repo_cover",
            "reviews_model_cover",
        );
        let mut sample = Sql::new(format!(
            "WITH s AS (SELECT r.created_at / 86400 AS day, r.completed_at - r.created_at AS d
                 FROM reviews r{}
                 WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            db.indexed_by(newest_completed)
        ));
        push_full_filter(&mut sample, f);
        sample
            .push(" ORDER BY r.created_at DESC LIMIT ")
            .push_bind(LATENCY_SAMPLE_CAP)
            .push(&format!(
                // Nearest rank: the day's durations as one sorted list, read at
                // ceil(n * p / 100). Four times faster on SQLite than row_number() windows.
                "), g AS (SELECT day, count(*) AS n, {} AS a FROM s GROUP BY day)
                 SELECT {} AS day, n AS count, {} AS p50, {} AS p95
                 FROM g ORDER BY day",
                db.sorted_list("d"),
                db.day_text("day"),
                db.nth("a", "(n * 50 + 99) / 100"),
                db.nth("a", "(n * 95 + 99) / 100"),
            ));
        let mut matched = Sql::new(format!(
            "SELECT count(*) FROM (SELECT 1 FROM reviews r{}
             WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            db.indexed_by(newest_completed)
        ));
        push_full_filter(&mut matched, f);
        matched
            .push(" LIMIT ")
            .push_bind(LATENCY_SAMPLE_CAP + 1)
            .push(") AS m");

        let findings_daily = union_query(
            &plan,
            &format!(
                "{} AS day, severity, CAST(sum(n) AS BIGINT) AS count",
                db.day_text("day")
            ),
            Rollups::faceted(
                "SELECT day, severity, n FROM stats_day_severity WHERE true",
                "SELECT day, severity, n FROM stats_day_facet_severity WHERE true",
            ),
            &format!(
                "SELECT r.created_at / 86400 AS day, f.severity AS severity, 1 AS n {FINDINGS_RAW}
                 AND f.severity IS NOT NULL"
            ),
            "GROUP BY 1, 2 HAVING sum(n) > 0 ORDER BY 1, 2",
        );
        let top_files = union_query(
            &plan,
            "path, CAST(sum(n) AS BIGINT) AS count",
            // Paths per day and repo or model would be nearly a row per finding: a window
            // filtered on a repo or a model reads its findings (all time: the totals).
            if plan.all_time() {
                Rollups::faceted(
                    "SELECT path, n FROM stats_total_path WHERE true",
                    "SELECT path, n FROM stats_total_facet_path WHERE true",
                )
            } else {
                Rollups {
                    all: "SELECT path, n FROM stats_day_path WHERE true",
                    repo: None,
                    model: None,
                }
            },
            &format!(
                "SELECT f.path AS path, 1 AS n {FINDINGS_RAW} AND f.kind = 'inline' AND f.path IS NOT NULL"
            ),
            "GROUP BY path HAVING sum(n) > 0 ORDER BY count DESC, path LIMIT 10",
        );

        let (reliability, latency, matched, findings_daily, top_files) = futures::try_join!(
            all(pool, &reliability),
            all(pool, &sample),
            scalar(pool, &matched),
            all(pool, &findings_daily),
            all(pool, &top_files),
        )?;
        Ok(Charts {
            reliability,
            latency,
            latency_truncated: matched.unwrap_or(0) > LATENCY_SAMPLE_CAP,
            findings_daily,
            top_files,
        })
    }

    /// GET /api/reviews (docs/review-service.md §4, Reviews): reviews matching the filter and the
    /// exact status (skipped included), newest id first, at most `limit` rows.
    pub async fn list_reviews(
        &self,
        f: &StatsFilter,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let mut q = Sql::new(format!("SELECT {REVIEW_COLUMNS} FROM reviews r WHERE true"));
        push_full_filter(&mut q, f);
        if let Some(s) = status {
            q.push(" AND r.status = ").push_bind(s.to_owned());
        }
        q.push(" ORDER BY r.id DESC LIMIT ").push_bind(limit);
        let rows = bound!(sqlx::query::<Any>(&q.text), q)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(review_from_row).collect()
    }
}
