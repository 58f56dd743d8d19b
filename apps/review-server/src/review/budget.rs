//! Monthly budgets (docs/review-service.md, "Monthly budget"): before a review does any work,
//! the month-to-date spend (ReviewRow.cost, USD, of the reviews created since the first of
//! the month, UTC) is held to the repository's own `monthly_budget`, or, for a repository
//! without one, the whole service's spend to the global `monthly_budget` setting
//! (MONTHLY_BUDGET). A review over its budget is recorded skipped with the reason and the PR
//! gets one comment per repository and month. The month arithmetic here is pure, so the
//! budget endpoint and the tests share it.

use super::CHECK_RUN_NAME;
use crate::job::PrJob;
use crate::run_settings::monthly_budget;
use crate::state::AppState;
use review_domain::EpochSeconds;
use review_store::StoreError;
use time::{Date, Month as CalendarMonth, OffsetDateTime, Time};

/// A calendar month, UTC: from its first second up to, not including, the next month's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Month {
    /// 00:00:00 UTC on the first of the month.
    pub start: EpochSeconds,
    /// 00:00:00 UTC on the first of the next month: when the budgets reset.
    pub end: EpochSeconds,
    /// `YYYY-MM`.
    pub label: String,
    /// The first of the next month, `YYYY-MM-DD`.
    pub resets: String,
}

impl Month {
    /// The month `at` falls in.
    pub(crate) fn of(at: EpochSeconds) -> Month {
        let date = OffsetDateTime::from_unix_timestamp(at.0)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
            .date();
        let first = first_of(date.year(), date.month());
        let (year, month) = match date.month() {
            CalendarMonth::December => (date.year() + 1, CalendarMonth::January),
            m => (date.year(), m.next()),
        };
        let next = first_of(year, month);
        let midnight =
            |d: Date| EpochSeconds(d.with_time(Time::MIDNIGHT).assume_utc().unix_timestamp());
        Month {
            start: midnight(first),
            end: midnight(next),
            label: format!("{:04}-{:02}", first.year(), u8::from(first.month())),
            resets: format!("{:04}-{:02}-01", next.year(), u8::from(next.month())),
        }
    }

    /// How much of the month has passed at `now`, in (0, 1]: elapsed seconds (at least one)
    /// over the month's seconds.
    pub(crate) fn elapsed_fraction(&self, now: EpochSeconds) -> f64 {
        let length = (self.end.0 - self.start.0).max(1) as f64;
        let elapsed = (now.0 - self.start.0).clamp(1, self.end.0 - self.start.0) as f64;
        elapsed / length
    }

    /// The spend the month ends at if it goes on as it went: `spent` over the elapsed
    /// fraction at `now`.
    pub(crate) fn projected(&self, spent: f64, now: EpochSeconds) -> f64 {
        spent / self.elapsed_fraction(now)
    }
}

/// The first of `month` of `year` (a valid date for every year `time` represents).
fn first_of(year: i32, month: CalendarMonth) -> Date {
    Date::from_calendar_date(year, month, 1).unwrap_or(Date::MIN)
}

/// Whose budget a review reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scope {
    /// The repository's own `monthly_budget`.
    Repo,
    /// The global budget over the whole service's spend; `source` names the setting or
    /// MONTHLY_BUDGET.
    Service { source: &'static str },
}

/// A reached monthly budget: what was spent and the budget, in USD, this month.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    pub scope: Scope,
    pub spent: f64,
    pub budget: f64,
    pub month: Month,
}

impl Reached {
    /// The skipped review's `error` and its check run's summary, e.g. "monthly budget reached:
    /// $12.04 of $12.00 spent this month by acme/widgets (resets 2026-12-01 UTC)".
    pub(crate) fn reason(&self, repo: &str) -> String {
        let whose = match &self.scope {
            Scope::Repo => format!("by {repo} (its own monthly_budget)"),
            Scope::Service { source } => format!("by the whole service ({source})"),
        };
        format!(
            "monthly budget reached: {} of {} spent this month {whose} (resets {} UTC)",
            usd(self.spent),
            usd(self.budget),
            self.month.resets
        )
    }
}

/// USD with cents, or with four decimals under a dollar so small budgets still read.
pub(crate) fn usd(amount: f64) -> String {
    if amount.abs() < 1.0 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

/// Whether `repo` may spend more this month at `now`: None when it may, else the budget it
/// reached. A repository with its own `monthly_budget` is held to its own spend only; any
/// other to the global budget over the whole service's spend. Errors: the store's.
pub(crate) async fn reached(
    app: &AppState,
    repo: &str,
    now: EpochSeconds,
) -> Result<Option<Reached>, StoreError> {
    let month = Month::of(now);
    let own = app.records.repo(repo).await?.and_then(|r| r.monthly_budget);
    let (budget, scope, spent_by) = match own {
        Some(budget) => (budget, Scope::Repo, Some(repo)),
        None => {
            let stored = app.records.store.settings().await?;
            match monthly_budget(&app.config, &stored) {
                Some((budget, source)) => (budget, Scope::Service { source }, None),
                None => return Ok(None),
            }
        }
    };
    let spent = app.records.store.spend_since(spent_by, month.start).await?;
    Ok((spent >= budget).then_some(Reached {
        scope,
        spent,
        budget,
        month,
    }))
}

/// Posts the PR comment that says the budget is reached, once per repository and month over
/// every replica: only the caller whose record of the notice was written posts. Failures are
/// logged; the review is recorded skipped either way.
pub(crate) async fn notify_once(app: &AppState, review_id: i64, job: &PrJob, reached: &Reached) {
    let repo = job.repo.full_name();
    match app
        .records
        .claim_budget_notice(&repo, &reached.month.label, job.pr.number)
        .await
    {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::warn!(review_id, error = %e, "cannot record the monthly budget notice; not posting it");
            return;
        }
    }
    let body = format!(
        "**{CHECK_RUN_NAME}**: the {} is reached, so new reviews of this repository are skipped until {} UTC: {}.\n\nA maintainer can raise it in the dashboard (the `monthly_budget` setting, or this repository's own monthly budget); this comment is posted once a month.",
        match reached.scope {
            Scope::Repo => "monthly budget of this repository",
            Scope::Service { .. } => "monthly budget of the review service",
        },
        reached.month.resets,
        reached.reason(&repo),
    );
    if let Err(e) = app
        .forge
        .post_comment(&job.repo, job.pr.number, &body)
        .await
    {
        tracing::warn!(review_id, error = %e, "cannot post the monthly budget comment");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Epoch seconds of `YYYY-MM-DD hh:mm:ss` UTC.
    fn at(text: &str) -> EpochSeconds {
        let format =
            time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
        EpochSeconds(
            time::PrimitiveDateTime::parse(text, format)
                .unwrap()
                .assume_utc()
                .unix_timestamp(),
        )
    }

    #[test]
    fn a_month_runs_from_its_first_midnight_utc_to_the_next_months() {
        let m = Month::of(at("2026-11-28 16:30:00"));
        assert_eq!(
            m,
            Month {
                start: at("2026-11-01 00:00:00"),
                end: at("2026-12-01 00:00:00"),
                label: "2026-11".into(),
                resets: "2026-12-01".into(),
            }
        );
        assert_eq!(Month::of(at("2026-11-01 00:00:00")), m);
        assert_eq!(Month::of(at("2026-10-31 23:59:59")).label, "2026-10");
    }

    #[test]
    fn december_resets_on_the_first_of_january_and_february_has_its_own_length() {
        let dec = Month::of(at("2026-12-31 23:59:59"));
        assert_eq!(
            (dec.label.as_str(), dec.resets.as_str()),
            ("2026-12", "2027-01-01")
        );
        assert_eq!(dec.end, at("2027-01-01 00:00:00"));
        let feb = Month::of(at("2028-02-10 12:00:00"));
        assert_eq!(feb.end.0 - feb.start.0, 29 * 86_400, "2028 is a leap year");
    }

    #[test]
    fn the_projection_is_the_spend_over_the_elapsed_fraction_of_the_month() {
        let m = Month::of(at("2026-11-16 00:00:00"));
        // November has 30 days: on the 16th at midnight, 15 have passed, half the month.
        assert_eq!(m.elapsed_fraction(at("2026-11-16 00:00:00")), 0.5);
        assert_eq!(m.projected(6.0, at("2026-11-16 00:00:00")), 12.0);
        assert_eq!(m.projected(0.0, at("2026-11-16 00:00:00")), 0.0);
        // The first second counts as one elapsed second, never zero.
        assert_eq!(m.projected(1.0, m.start), 30.0 * 86_400.0);
        assert_eq!(m.elapsed_fraction(at("2026-12-01 00:00:00")), 1.0);
    }

    #[test]
    fn the_reason_names_spend_budget_scope_and_reset() {
        let r = Reached {
            scope: Scope::Service {
                source: "monthly_budget setting",
            },
            spent: 12.04,
            budget: 12.0,
            month: Month::of(at("2026-11-28 16:30:00")),
        };
        assert_eq!(
            r.reason("acme/widgets"),
            "monthly budget reached: $12.04 of $12.00 spent this month by the whole service \
             (monthly_budget setting) (resets 2026-12-01 UTC)"
        );
        let own = Reached {
            scope: Scope::Repo,
            spent: 0.5,
            budget: 0.25,
            ..r
        };
        assert_eq!(
            own.reason("acme/widgets"),
            "monthly budget reached: $0.5000 of $0.2500 spent this month by acme/widgets (its \
             own monthly_budget) (resets 2026-12-01 UTC)"
        );
    }
}
