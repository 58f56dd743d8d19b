//! The query filters of the dashboard (docs/review-service.md §4, Stats: filter
//! parameters and rules 1-6; Reviews: the list query table; §8, limit param).
//!
//! One parser for GET /api/stats, GET /api/stats/charts and GET /api/reviews, so the three
//! endpoints can never disagree on what a query string means. Parsing never fails: junk falls
//! back exactly as the rules say, and the result is a resolved window of epoch seconds that the
//! store turns into `WHERE` clauses. Pure: the current time is an argument.

use crate::EpochSeconds;
use time::{Date, Month};

const DAY: i64 = 86_400;

/// The default of the `limit` param of GET /api/reviews (docs/review-service.md §8).
pub const DEFAULT_LIST_LIMIT: i64 = 100;
/// The largest `limit` of GET /api/reviews (docs/review-service.md §8).
pub const MAX_LIST_LIMIT: i64 = 1000;

/// The rolling windows of the `range` param (docs/review-service.md §4, Stats filter parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsRange {
    Day,
    Week,
    Month,
    Quarter,
    All,
}

impl StatsRange {
    /// `24h`, `7d`, `30d`, `90d` or `all`; anything else is None (rule 5 is applied by the
    /// caller, which knows whether the value was given at all).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "24h" => Self::Day,
            "7d" => Self::Week,
            "30d" => Self::Month,
            "90d" => Self::Quarter,
            "all" => Self::All,
            _ => return None,
        })
    }

    /// Length of the window in seconds; None for `all` (no cutoff).
    pub fn seconds(self) -> Option<i64> {
        match self {
            Self::Day => Some(DAY),
            Self::Week => Some(7 * DAY),
            Self::Month => Some(30 * DAY),
            Self::Quarter => Some(90 * DAY),
            Self::All => None,
        }
    }
}

/// A resolved stats filter (docs/review-service.md §4, Stats rules 1-6): reviews with
/// `since <= created_at < until`, of `repo`, of `model`. Every bound is optional; None means
/// no filter on that field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsFilter {
    /// Inclusive lower bound on created_at, epoch seconds.
    pub since: Option<i64>,
    /// Exclusive upper bound on created_at, epoch seconds (`to` plus one day).
    pub until: Option<i64>,
    /// Exact `owner/name`.
    pub repo: Option<String>,
    /// Exact model spec.
    pub model: Option<String>,
}

/// Rule 6: an empty value means the parameter is absent.
fn present(v: Option<&str>) -> Option<&str> {
    v.filter(|s| !s.is_empty())
}

/// A strict `YYYY-MM-DD` that names a real calendar day, as epoch seconds of its UTC midnight
/// (rule 4: anything else is None).
pub fn parse_day(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits(0..4)?).ok()?;
    let month = Month::try_from(u8::try_from(digits(5..7)?).ok()?).ok()?;
    let day = u8::try_from(digits(8..10)?).ok()?;
    let date = Date::from_calendar_date(year, month, day).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp())
}

impl StatsFilter {
    /// Resolve the raw query values (each None when the param is missing) at `now` (epoch
    /// seconds), by docs/review-service.md §4, Stats filter rules:
    ///
    /// 1. no range, from or to: no date filter;
    /// 2. a from or to that is a real date wins over range;
    /// 3. from >= to drops the upper bound;
    /// 4. a from or to that is not a real `YYYY-MM-DD` date is absent;
    /// 5. a range other than 24h, 7d, 30d, 90d, all is 30d;
    /// 6. an empty value is absent.
    pub fn parse(
        range: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
        repo: Option<&str>,
        model: Option<&str>,
        now: EpochSeconds,
    ) -> Self {
        let from = present(from).and_then(parse_day);
        let to = present(to).and_then(parse_day);
        let (since, until) = if from.is_some() || to.is_some() {
            let until = match (from, to) {
                (Some(f), Some(t)) if f >= t => None,
                (_, t) => t.map(|t| t + DAY),
            };
            (from, until)
        } else {
            match present(range) {
                None => (None, None),
                Some(r) => {
                    let window = StatsRange::parse(r).unwrap_or(StatsRange::Month);
                    (window.seconds().map(|s| now.0 - s), None)
                }
            }
        };
        Self {
            since,
            until,
            repo: present(repo).map(str::to_owned),
            model: present(model).map(str::to_owned),
        }
    }
}

/// The `limit` param of GET /api/reviews (docs/review-service.md §4 list query table, §8): default
/// 100; a numeric value is clamped to 1..1000; non-numeric or non-positive falls back to 100.
/// A fractional value is truncated toward zero (0.5 is positive, so it clamps to 1).
pub fn parse_limit(limit: Option<&str>) -> i64 {
    let Some(s) = present(limit).map(str::trim) else {
        return DEFAULT_LIST_LIMIT;
    };
    let value = match s.parse::<i64>() {
        Ok(n) => n as f64,
        Err(_) => match s.parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => return DEFAULT_LIST_LIMIT,
        },
    };
    if value <= 0.0 {
        DEFAULT_LIST_LIMIT
    } else {
        // In range of i64 after the clamp, so the cast is exact.
        value.trunc().clamp(1.0, MAX_LIST_LIMIT as f64) as i64
    }
}

/// A resolved GET /api/reviews query (docs/review-service.md §4, Reviews: list query parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewListQuery {
    /// The shared date/repo/model filter.
    pub filter: StatsFilter,
    /// Exact status; skipped is a status like any other here.
    pub status: Option<String>,
    /// 1..=1000.
    pub limit: i64,
    /// Only ids under this one: the next page after a page ending at it (docs/review-service.md,
    /// "Review list paging"); a value that is not a positive whole number is ignored.
    pub before: Option<i64>,
}

impl ReviewListQuery {
    /// Resolve the raw `limit` and `status` values (None when missing) beside a `filter`
    /// already resolved by [`StatsFilter::parse`]; never fails.
    pub fn parse(limit: Option<&str>, status: Option<&str>, filter: StatsFilter) -> Self {
        Self {
            filter,
            status: present(status).map(str::to_owned),
            limit: parse_limit(limit),
            before: None,
        }
    }

    /// This query from `before` on (see [`ReviewListQuery::before`]).
    pub fn before(self, before: Option<&str>) -> Self {
        let before = present(before)
            .and_then(|b| b.trim().parse::<i64>().ok())
            .filter(|id| *id > 0);
        Self { before, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// 2024-03-15T12:00:00Z.
    const NOW: i64 = 1_710_504_000;
    /// 2024-03-01T00:00:00Z.
    const MAR_1: i64 = 1_709_251_200;

    /// `-` stands for a missing param.
    fn opt(s: &str) -> Option<&str> {
        (s != "-").then_some(s)
    }

    fn f(range: &str, from: &str, to: &str) -> StatsFilter {
        StatsFilter::parse(
            opt(range),
            opt(from),
            opt(to),
            None,
            None,
            EpochSeconds(NOW),
        )
    }

    fn window(since: Option<i64>, until: Option<i64>) -> StatsFilter {
        StatsFilter {
            since,
            until,
            ..StatsFilter::default()
        }
    }

    #[test]
    fn days_parse_as_utc_midnight() {
        assert_eq!(parse_day("2024-03-01"), Some(MAR_1));
        assert_eq!(parse_day("1970-01-01"), Some(0));
        assert_eq!(parse_day("2024-02-29"), Some(MAR_1 - DAY));
    }

    #[test]
    fn rule_1_no_range_from_or_to_means_all_time() {
        assert_eq!(f("-", "-", "-"), window(None, None));
    }

    #[test]
    fn rule_2_a_real_from_or_to_wins_over_range() {
        assert_eq!(f("7d", "2024-03-01", "-"), window(Some(MAR_1), None));
        assert_eq!(f("24h", "-", "2024-03-01"), window(None, Some(MAR_1 + DAY)));
        assert_eq!(
            f("all", "2024-03-01", "2024-03-02"),
            window(Some(MAR_1), Some(MAR_1 + 2 * DAY))
        );
    }

    #[test]
    fn to_is_inclusive_so_until_is_the_next_midnight() {
        assert_eq!(f("-", "-", "2024-02-29"), window(None, Some(MAR_1)));
    }

    #[test]
    fn rule_3_from_at_or_after_to_drops_the_upper_bound() {
        assert_eq!(
            f("-", "2024-03-02", "2024-03-01"),
            window(Some(MAR_1 + DAY), None)
        );
        assert_eq!(
            f("-", "2024-03-01", "2024-03-01"),
            window(Some(MAR_1), None)
        );
    }

    #[test]
    fn rule_4_invalid_dates_are_absent() {
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-1-01",
            "24-01-01",
            "2024/01/01",
            "2024x01-01",
            "2024-01x01",
            "+024-01-01",
            "2024-01-01T00:00:00Z",
            "yesterday",
        ] {
            assert_eq!(parse_day(bad), None, "{bad}");
            assert_eq!(f("-", bad, "-"), window(None, None), "{bad}");
        }
        // An invalid from leaves a valid to alone (and range stays ignored).
        assert_eq!(
            f("7d", "2024-02-30", "2024-03-01"),
            window(None, Some(MAR_1 + DAY))
        );
        // Both invalid: range applies.
        assert_eq!(
            f("7d", "nope", "2024-02-30"),
            window(Some(NOW - 7 * DAY), None)
        );
    }

    #[test]
    fn rule_5_unknown_range_falls_back_to_30d() {
        for bad in ["1y", "30", "30D", " 7d", "ALL"] {
            assert_eq!(
                f(bad, "-", "-"),
                window(Some(NOW - 30 * DAY), None),
                "{bad}"
            );
        }
    }

    #[test]
    fn known_ranges_are_rolling_windows_ending_now() {
        assert_eq!(f("24h", "-", "-"), window(Some(NOW - DAY), None));
        assert_eq!(f("7d", "-", "-"), window(Some(NOW - 7 * DAY), None));
        assert_eq!(f("30d", "-", "-"), window(Some(NOW - 30 * DAY), None));
        assert_eq!(f("90d", "-", "-"), window(Some(NOW - 90 * DAY), None));
        assert_eq!(f("all", "-", "-"), window(None, None));
        // 30d is a known range in its own right, not the fallback (rule 5 applies to others).
        assert_eq!(StatsRange::parse("30d"), Some(StatsRange::Month));
        assert_eq!(StatsRange::parse("1y"), None);
    }

    #[test]
    fn rule_6_empty_values_are_absent() {
        assert_eq!(f("", "", ""), window(None, None));
        assert_eq!(f("", "2024-03-01", ""), window(Some(MAR_1), None));
        assert_eq!(
            StatsFilter::parse(None, None, None, Some(""), Some(""), EpochSeconds(NOW)),
            StatsFilter::default()
        );
        assert_eq!(
            StatsFilter::parse(
                None,
                None,
                None,
                Some("a/b"),
                Some("x/y"),
                EpochSeconds(NOW)
            ),
            StatsFilter {
                repo: Some("a/b".into()),
                model: Some("x/y".into()),
                ..StatsFilter::default()
            }
        );
    }

    #[test]
    fn limit_defaults_to_100() {
        assert_eq!(parse_limit(None), 100);
        assert_eq!(parse_limit(Some("")), 100);
    }

    #[test]
    fn limit_above_1000_is_clamped() {
        assert_eq!(parse_limit(Some("1001")), 1000);
        assert_eq!(parse_limit(Some("99999999999999999999999")), 1000);
        assert_eq!(parse_limit(Some("1e9")), 1000);
    }

    #[test]
    fn junk_limit_falls_back_to_100() {
        for junk in ["abc", "10abc", "NaN", "inf", "-inf", "0x10"] {
            assert_eq!(parse_limit(Some(junk)), 100, "{junk}");
        }
    }

    #[test]
    fn non_positive_limit_falls_back_to_100() {
        for v in ["0", "-1", "-5000", "-0.5", "0.0"] {
            assert_eq!(parse_limit(Some(v)), 100, "{v}");
        }
    }

    #[test]
    fn limit_in_range_is_kept() {
        assert_eq!(parse_limit(Some("1")), 1);
        assert_eq!(parse_limit(Some("250")), 250);
        assert_eq!(parse_limit(Some("1000")), 1000);
        assert_eq!(parse_limit(Some("12.9")), 12);
        assert_eq!(parse_limit(Some("0.5")), 1);
    }

    #[test]
    fn list_query_status_is_exact_and_empty_is_absent() {
        let q = ReviewListQuery::parse(None, Some("skipped"), StatsFilter::default());
        assert_eq!(q.status.as_deref(), Some("skipped"));
        let q = ReviewListQuery::parse(None, Some(""), StatsFilter::default());
        assert_eq!(
            q,
            ReviewListQuery {
                filter: StatsFilter::default(),
                status: None,
                limit: 100,
                before: None,
            }
        );
        let before = |b| ReviewListQuery::parse(None, None, StatsFilter::default()).before(b);
        assert_eq!(before(Some("42")).before, Some(42));
        for junk in [Some("0"), Some("-3"), Some("x"), Some(""), None] {
            assert_eq!(before(junk).before, None, "{junk:?}");
        }
    }

    mod reference {
        //! A deliberately naive reference for the proptests: days from the civil calendar
        //! (Howard Hinnant's algorithm) and the rules spelled out one by one.
        use super::super::DAY;

        fn leap(y: i64) -> bool {
            (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        }

        pub(super) fn day(s: &str) -> Option<i64> {
            let parts: Vec<&str> = s.split('-').collect();
            if parts.len() != 3
                || parts[0].len() != 4
                || parts[1].len() != 2
                || parts[2].len() != 2
                || !parts.iter().all(|p| p.bytes().all(|c| c.is_ascii_digit()))
            {
                return None;
            }
            let (y, m, d): (i64, i64, i64) = (
                parts[0].parse().ok()?,
                parts[1].parse().ok()?,
                parts[2].parse().ok()?,
            );
            let dim = [
                31,
                if leap(y) { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            if !(1..=12).contains(&m) || d < 1 || d > dim[(m - 1) as usize] {
                return None;
            }
            let y2 = if m <= 2 { y - 1 } else { y };
            let era = y2.div_euclid(400);
            let yoe = y2 - era * 400;
            let mp = (m + 9) % 12;
            let doy = (153 * mp + 2) / 5 + d - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            Some((era * 146_097 + doe - 719_468) * DAY)
        }

        pub(super) fn window(
            range: Option<&str>,
            from: Option<&str>,
            to: Option<&str>,
            now: i64,
        ) -> (Option<i64>, Option<i64>) {
            let from = from.filter(|s| !s.is_empty()).and_then(day);
            let to = to.filter(|s| !s.is_empty()).and_then(day);
            if from.is_none() && to.is_none() {
                return match range.filter(|s| !s.is_empty()) {
                    None | Some("all") => (None, None),
                    Some("24h") => (Some(now - DAY), None),
                    Some("7d") => (Some(now - 7 * DAY), None),
                    Some("90d") => (Some(now - 90 * DAY), None),
                    Some(_) => (Some(now - 30 * DAY), None),
                };
            }
            if let (Some(f), Some(t)) = (from, to)
                && f >= t
            {
                return (Some(f), None);
            }
            (from, to.map(|t| t + DAY))
        }

        pub(super) fn limit(s: Option<&str>) -> i64 {
            match s.and_then(|s| s.parse::<i128>().ok()) {
                Some(n) if n > 1000 => 1000,
                Some(n) if n >= 1 => n as i64,
                _ => 100,
            }
        }
    }

    mod props {
        use super::super::*;
        use super::reference;
        use proptest::prelude::*;

        fn date_like() -> impl Strategy<Value = Option<String>> {
            prop_oneof![
                Just(None),
                Just(Some(String::new())),
                (1900u32..2200, 0u32..14, 0u32..33)
                    .prop_map(|(y, m, d)| Some(format!("{y:04}-{m:02}-{d:02}"))),
                "[0-9-]{0,12}".prop_map(Some),
                ".{0,12}".prop_map(Some),
            ]
        }

        fn range_like() -> impl Strategy<Value = Option<String>> {
            prop_oneof![
                Just(None),
                prop::sample::select(vec!["", "24h", "7d", "30d", "90d", "all", "1y", "7D"])
                    .prop_map(|s| Some(s.to_owned())),
                ".{0,5}".prop_map(Some),
            ]
        }

        proptest! {
            #[test]
            fn filter_window_matches_the_reference(
                range in range_like(),
                from in date_like(),
                to in date_like(),
                now in 0i64..4_000_000_000,
            ) {
                let got = StatsFilter::parse(
                    range.as_deref(), from.as_deref(), to.as_deref(), None, None, EpochSeconds(now));
                let want = reference::window(range.as_deref(), from.as_deref(), to.as_deref(), now);
                prop_assert_eq!((got.since, got.until), want);
            }

            #[test]
            fn integer_limits_match_the_reference(n in any::<i64>()) {
                let s = n.to_string();
                prop_assert_eq!(parse_limit(Some(&s)), reference::limit(Some(&s)));
            }

            #[test]
            fn limit_is_always_within_1_to_1000(s in ".{0,24}") {
                let n = parse_limit(Some(&s));
                prop_assert!((1..=MAX_LIST_LIMIT).contains(&n));
            }
        }
    }
}
