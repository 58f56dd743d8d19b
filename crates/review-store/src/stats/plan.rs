//! How a stats window is read (module docs of `stats`): the [`Plan`] of a filter, the rollups
//! each aggregate may read, and [`union_query`], which puts a rollup branch and a raw-row branch
//! under one `GROUP BY`.

use crate::sql::{Sql, push_repo_model};
use review_domain::StatsFilter;

/// Seconds in a UTC day.
const DAY: i64 = 86_400;

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
pub(super) enum Key {
    /// `facet = <repo|model> AND value = <it>` (the `stats_*_facet*` tables).
    Facet,
    /// `<column> = <the repo or model>`.
    Column(&'static str),
}

/// The rollups one aggregate reads: SQL ending where conditions are appended (`... WHERE
/// <cond>`) for no filter, for a repo and for a model; None where only the raw rows answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rollups<'s> {
    /// Without a filter.
    pub(super) all: &'s str,
    /// For one repo, with how its rows are found.
    pub(super) repo: Option<(&'s str, Key)>,
    /// For one model, with how its rows are found.
    pub(super) model: Option<(&'s str, Key)>,
}

impl<'s> Rollups<'s> {
    /// `all` without a filter; `facet` (a `stats_*_facet*` table) for a repo or a model.
    pub(super) fn faceted(all: &'s str, facet: &'s str) -> Self {
        Self {
            all,
            repo: Some((facet, Key::Facet)),
            model: Some((facet, Key::Facet)),
        }
    }
}

/// How a filter is read: whole days from the rollups plus raw edges, or raw rows only.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan<'a> {
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
    /// The plan of `filter`.
    pub(super) fn new(filter: &'a StatsFilter) -> Self {
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
    pub(super) fn all_time(&self) -> bool {
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
pub(super) fn filter_index<'i>(
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

/// `SELECT <outer> FROM (` + the rollup branch (when the plan has days and `rollups` one for
/// its filter) + `UNION ALL` + the raw branch (for the edges, or the whole window when no rollup
/// answers) + `) <tail>`. The rollups and `raw` are SQL that end where the plan's conditions are
/// appended (`... WHERE <cond>`); an all-time plan adds no day bounds, so a rollup may read a
/// table without days (the totals).
pub(super) fn union_query(
    plan: &Plan<'_>,
    outer: &str,
    rollups: Rollups<'_>,
    raw: &str,
    tail: &str,
) -> Sql {
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
