//! Times as the console writes them: RFC 3339 in UTC, so that text order is time order.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, RFC 3339 in UTC with milliseconds.
pub fn now() -> String {
    rfc3339(Utc::now())
}

/// `at`, RFC 3339 in UTC with milliseconds (`2026-11-30T13:35:07.058Z`).
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `at`, RFC 3339 in UTC with microseconds, for records that must keep their order when
/// written within the same millisecond.
pub fn rfc3339_micros(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A time given in seconds and nanoseconds since the epoch (as the AWS SDK gives it), RFC 3339
/// in UTC with milliseconds.
pub fn rfc3339_of_epoch(seconds: i64, nanos: u32) -> String {
    rfc3339(DateTime::from_timestamp(seconds, nanos).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sort_as_text_whatever_their_precision() {
        assert!(rfc3339_of_epoch(1_796_040_000, 0) < rfc3339_of_epoch(1_796_040_000, 500_000_000));
        assert!(rfc3339_of_epoch(1_796_040_000, 0).ends_with(".000Z"));
        assert!(now().ends_with('Z'));
        let at = DateTime::from_timestamp(1_796_040_000, 1_000).unwrap_or_default();
        assert_eq!(rfc3339_micros(at), "2026-11-30T12:00:00.000001Z");
    }
}
