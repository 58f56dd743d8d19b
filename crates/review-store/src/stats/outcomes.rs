//! GET /api/stats/outcomes (docs/review-service.md, "Finding outcomes"): the posted inline
//! findings of the filtered reviews and what became of them, per repository, model and
//! severity, with the acceptance rate (resolved over posted), the dismissal rate and the cost
//! per resolved finding. Raw rows only: findings have no rollup of their outcomes, which change
//! long after the day they were posted.

use super::rows::{OutcomeStats, OutcomeStatsRow};
use crate::sql::{Sql, all, push_full_filter};
use crate::{Result, Store};
use review_domain::StatsFilter;
use std::collections::BTreeMap;

/// Counts of one group as the query reads them.
#[derive(sqlx::FromRow)]
struct Counts {
    key: String,
    posted: i64,
    open: i64,
    resolved: i64,
    dismissed: i64,
}

/// The spend of one group.
#[derive(sqlx::FromRow)]
struct Spend {
    key: String,
    cost: f64,
}

impl Store {
    /// The outcome table of the reviews `f` selects (skipped reviews aside, as every
    /// aggregate): see the module's documentation.
    pub async fn outcome_stats(&self, f: &StatsFilter) -> Result<OutcomeStats> {
        let counts = |key: &str| {
            let mut q = Sql::new(format!(
                "SELECT {key} AS key, CAST(count(*) AS BIGINT) AS posted,
                 CAST(sum(CASE WHEN f.outcome = 'open' THEN 1 ELSE 0 END) AS BIGINT) AS open,
                 CAST(sum(CASE WHEN f.outcome = 'resolved' THEN 1 ELSE 0 END) AS BIGINT) AS resolved,
                 CAST(sum(CASE WHEN f.outcome = 'dismissed' THEN 1 ELSE 0 END) AS BIGINT) AS dismissed
                 FROM reviews r JOIN findings f ON f.review_id = r.id
                 WHERE r.status != 'skipped' AND f.kind = 'inline' AND f.outcome IS NOT NULL
                 AND {key} IS NOT NULL"
            ));
            push_full_filter(&mut q, f);
            q.push(&format!(" GROUP BY {key}"));
            q
        };
        let spend = |key: &str| {
            let mut q = Sql::new(format!(
                "SELECT {key} AS key, CAST(coalesce(sum(r.cost), 0) AS DOUBLE PRECISION) AS cost
                 FROM reviews r WHERE r.status != 'skipped' AND {key} IS NOT NULL"
            ));
            push_full_filter(&mut q, f);
            q.push(&format!(" GROUP BY {key}"));
            q
        };
        let pool = &self.pool;
        let queries = [
            counts("r.repo_full_name"),
            counts("r.model"),
            counts("f.severity"),
            spend("r.repo_full_name"),
            spend("r.model"),
        ];
        let (repo_counts, model_counts, severity_counts, repo_spend, model_spend) = futures::try_join!(
            all::<Counts>(pool, &queries[0]),
            all::<Counts>(pool, &queries[1]),
            all::<Counts>(pool, &queries[2]),
            all::<Spend>(pool, &queries[3]),
            all::<Spend>(pool, &queries[4]),
        )?;
        Ok(OutcomeStats {
            by_repo: table(repo_counts, Some(repo_spend)),
            by_model: table(model_counts, Some(model_spend)),
            by_severity: table(severity_counts, None),
        })
    }
}

/// The rows of one grouping, most posted first: every group with findings or spend; rates
/// from the counts; cost only where the grouping has one (`spend`).
fn table(counts: Vec<Counts>, spend: Option<Vec<Spend>>) -> Vec<OutcomeStatsRow> {
    let mut rows: BTreeMap<String, OutcomeStatsRow> = BTreeMap::new();
    for c in counts {
        let ratio = |n: i64| (c.posted > 0).then(|| n as f64 / c.posted as f64);
        rows.insert(
            c.key.clone(),
            OutcomeStatsRow {
                acceptance_rate: ratio(c.resolved),
                dismissal_rate: ratio(c.dismissed),
                key: c.key,
                posted: c.posted,
                open: c.open,
                resolved: c.resolved,
                dismissed: c.dismissed,
                cost: None,
                cost_per_resolved: None,
            },
        );
    }
    for s in spend.into_iter().flatten() {
        let row = rows
            .entry(s.key.clone())
            .or_insert_with(|| OutcomeStatsRow {
                key: s.key,
                posted: 0,
                open: 0,
                resolved: 0,
                dismissed: 0,
                acceptance_rate: None,
                dismissal_rate: None,
                cost: None,
                cost_per_resolved: None,
            });
        row.cost = Some(s.cost);
        row.cost_per_resolved = (row.resolved > 0).then(|| s.cost / row.resolved as f64);
    }
    let mut rows: Vec<_> = rows.into_values().collect();
    rows.sort_by(|a, b| b.posted.cmp(&a.posted).then_with(|| a.key.cmp(&b.key)));
    rows
}
