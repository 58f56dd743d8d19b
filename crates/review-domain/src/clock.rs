//! The two units of time the review service stores, as types, so a count of seconds cannot be
//! passed where milliseconds are meant (docs/review-service.md §2: every `*_at` field is epoch
//! seconds; docs/architecture.md, "Many replicas": leases and the webhook inbox count
//! milliseconds).

use std::time::Duration;

/// Whole seconds since the Unix epoch, UTC: the unit of every `*_at` column and API field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EpochSeconds(pub i64);

/// Milliseconds since the Unix epoch, UTC: the unit of queue leases (`lease_until`), due
/// retries and the webhook inbox's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EpochMillis(pub i64);

impl EpochSeconds {
    /// Now, by the system clock.
    pub fn now() -> EpochSeconds {
        EpochSeconds(time::OffsetDateTime::now_utc().unix_timestamp())
    }

    /// This time moved `by` (whole seconds; sub-second parts are dropped) earlier.
    pub fn minus(self, by: Duration) -> EpochSeconds {
        EpochSeconds(self.0 - i64::try_from(by.as_secs()).unwrap_or(i64::MAX))
    }
}

impl EpochMillis {
    /// Now, by the system clock.
    pub fn now() -> EpochMillis {
        let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        EpochMillis(i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX))
    }

    /// This time moved `by` later (saturating).
    pub fn plus(self, by: Duration) -> EpochMillis {
        EpochMillis(
            self.0
                .saturating_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX)),
        )
    }

    /// This time moved `ms` milliseconds later (saturating).
    pub fn plus_millis(self, ms: i64) -> EpochMillis {
        EpochMillis(self.0.saturating_add(ms))
    }

    /// The same instant in whole seconds (rounded down).
    pub fn seconds(self) -> EpochSeconds {
        EpochSeconds(self.0.div_euclid(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_units_convert_only_on_purpose() {
        let ms = EpochMillis(1_700_000_123_456);
        assert_eq!(ms.seconds(), EpochSeconds(1_700_000_123));
        assert_eq!(
            ms.plus(Duration::from_secs(30)),
            EpochMillis(1_700_000_153_456)
        );
        assert_eq!(
            EpochSeconds(100).minus(Duration::from_secs(40)),
            EpochSeconds(60)
        );
        let (s, m) = (EpochSeconds::now(), EpochMillis::now());
        assert!((m.seconds().0 - s.0).abs() <= 1);
    }
}
