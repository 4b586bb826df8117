//! A span of time, `[from, to)` in Unix seconds, and the calendar months (UTC) reports and
//! sealed months are made of.

use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use chrono::DateTime;

/// A period resolved to times: `[from, to)`, whole hours, Unix seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub from: i64,
    pub to: i64,
}

#[cfg(feature = "ssr")]
impl Range {
    pub fn hours(&self) -> f64 {
        (self.to - self.from) as f64 / 3600.0
    }

    /// The period of the same length just before.
    pub fn previous(&self) -> Range {
        Range {
            from: self.from - (self.to - self.from),
            to: self.from,
        }
    }

    /// `2026-11-02 – 2026-12-01` (the last day included).
    pub fn label(&self) -> String {
        let day = |t: i64| {
            DateTime::from_timestamp(t, 0)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default()
        };
        let last = day(self.to - 1);
        let first = day(self.from);
        if first == last {
            first
        } else {
            format!("{first} – {last}")
        }
    }
}

/// `2026-11` for a month; the error says how to write one.
pub fn check_month(text: &str) -> Result<(i32, u32), String> {
    let bad = || format!("{text:?} is not a month: give it as YYYY-MM, e.g. 2026-11");
    let (year, month) = text.split_once('-').ok_or_else(bad)?;
    if year.len() != 4 || month.len() != 2 {
        return Err(bad());
    }
    let year: i32 = year.parse().map_err(|_| bad())?;
    let month: u32 = month.parse().map_err(|_| bad())?;
    if !(1..=12).contains(&month) || !(2000..=2999).contains(&year) {
        return Err(bad());
    }
    Ok((year, month))
}

#[cfg(feature = "ssr")]
mod months {
    use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};

    use super::*;

    /// The first second of the month that holds `at` (Unix seconds, UTC).
    pub fn month_start(at: i64) -> i64 {
        let date = DateTime::from_timestamp(at, 0)
            .unwrap_or_default()
            .date_naive();
        first_of(date.year(), date.month())
    }

    fn first_of(year: i32, month: u32) -> i64 {
        NaiveDate::from_ymd_opt(year, month, 1)
            .map(|d| Utc.from_utc_datetime(&d.and_time(chrono::NaiveTime::MIN)))
            .map_or(0, |d| d.timestamp())
    }

    /// `2026-11` for the month that holds `at`.
    pub fn month_label(at: i64) -> String {
        DateTime::from_timestamp(at, 0)
            .map(|d| d.format("%Y-%m").to_string())
            .unwrap_or_default()
    }

    /// `November 2026`.
    pub fn month_words(at: i64) -> String {
        DateTime::from_timestamp(at, 0)
            .map(|d| d.format("%B %Y").to_string())
            .unwrap_or_default()
    }

    /// The month `text` (`2026-11`) as times.
    pub fn month_range(text: &str) -> Result<Range, String> {
        let (year, month) = check_month(text)?;
        let from = first_of(year, month);
        let to = if month == 12 {
            first_of(year + 1, 1)
        } else {
            first_of(year, month + 1)
        };
        Ok(Range { from, to })
    }
}

#[cfg(feature = "ssr")]
pub use months::*;
