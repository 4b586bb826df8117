//! Cost over a recorded period: the period a report asks for, what the recorder holds for it
//! (holdings per UTC day and the minutes recorded), and the report, the change against the
//! previous period and the chart made from them.

use std::collections::BTreeMap;

#[cfg(feature = "ssr")]
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use super::holdings::{merge, Holdings};
#[cfg(feature = "ssr")]
use super::{
    largest_remainder, price, price_parts, range::month_start, Books, CostQuery, CostReport,
    Period, RowKind,
};

pub use super::range::Range;

#[cfg(feature = "ssr")]
fn start_of_month(date: NaiveDate) -> NaiveDate {
    date.with_day(1).unwrap_or(date)
}

#[cfg(feature = "ssr")]
fn midnight(date: NaiveDate) -> i64 {
    Utc.from_utc_datetime(&date.and_time(chrono::NaiveTime::MIN))
        .timestamp()
}

#[cfg(feature = "ssr")]
/// Resolves `query`'s period at `now`, checked against what can be kept (`retention_days`).
/// `Ok(None)` for [`Period::Now`]. Errors say what is wrong and what would do.
pub fn resolve(
    query: &CostQuery,
    now: DateTime<Utc>,
    retention_days: u32,
) -> Result<Option<Range>, String> {
    // Up to the end of the hour under way: its recorded minutes count.
    let end = (now.timestamp().div_euclid(3600) + 1) * 3600;
    let today = now.date_naive();
    let range = match query.period {
        Period::Now => return Ok(None),
        Period::Last7 => Range {
            from: end - 7 * 86_400,
            to: end,
        },
        Period::Last30 => Range {
            from: end - 30 * 86_400,
            to: end,
        },
        Period::ThisMonth => Range {
            from: midnight(start_of_month(today)),
            to: end,
        },
        Period::LastMonth => {
            let this = start_of_month(today);
            let last = start_of_month(this - Duration::days(1));
            Range {
                from: midnight(last),
                to: midnight(this),
            }
        }
        Period::Custom => {
            let (Some(from), Some(to)) = (query.from.as_deref(), query.to.as_deref()) else {
                return Err(
                    "a custom period needs from and to, as days (from=2026-11-01&to=2026-11-30)"
                        .to_string(),
                );
            };
            let day = |name: &str, text: &str| {
                NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
                    format!("{name} {text:?} is not a day: give it as YYYY-MM-DD, e.g. 2026-11-01")
                })
            };
            let (from, to) = (day("from", from)?, day("to", to)?);
            if to < from {
                return Err(format!(
                    "the period is reversed: from {from} is after to {to}; swap them"
                ));
            }
            if from > today {
                return Err(format!(
                    "the period starts after today ({today}): nothing has been recorded for {from}"
                ));
            }
            Range {
                from: midnight(from),
                to: midnight(to + Duration::days(1)).min(end),
            }
        }
    };
    let oldest = end - i64::from(retention_days) * 86_400;
    if range.from < oldest {
        return Err(format!(
            "the period starts before the oldest history kept: history is kept for {retention_days} days (--cost-retention-days), so from {} on",
            DateTime::from_timestamp(oldest, 0)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default()
        ));
    }
    Ok(Some(range))
}

/// What the recorder holds for a period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// Holdings per UTC day (the day's midnight, Unix seconds).
    pub days: BTreeMap<i64, Holdings>,
    /// Minutes recorded per UTC day.
    pub minutes: BTreeMap<i64, u32>,
    /// The first minute ever recorded (Unix seconds), when any.
    pub first: Option<i64>,
}

impl Recorded {
    pub fn total(&self) -> Holdings {
        let mut total = Holdings::new();
        for day in self.days.values() {
            merge(&mut total, day);
        }
        total
    }

    /// The holdings per month (the month's first second, UTC), for pricing each month at its
    /// own prices.
    #[cfg(feature = "ssr")]
    pub fn by_month(&self) -> BTreeMap<i64, Holdings> {
        let mut months: BTreeMap<i64, Holdings> = BTreeMap::new();
        for (day, holdings) in &self.days {
            merge(months.entry(month_start(*day)).or_default(), holdings);
        }
        months
    }

    /// The holdings per set of prices: each day Cost Explorer billed on its own, the other
    /// days per month; keyed by (billed, the day's or month's first second).
    #[cfg(feature = "ssr")]
    pub fn by_book(&self, books: &Books) -> BTreeMap<(bool, i64), Holdings> {
        let mut parts: BTreeMap<(bool, i64), Holdings> = BTreeMap::new();
        for (day, holdings) in &self.days {
            let key = if books.billed(*day) {
                (true, *day)
            } else {
                (false, month_start(*day))
            };
            merge(parts.entry(key).or_default(), holdings);
        }
        parts
    }

    pub fn recorded_hours(&self) -> f64 {
        self.minutes.values().map(|m| f64::from(*m)).sum::<f64>() / 60.0
    }
}

/// The chart over days: one stacked bar per day, one series per row shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// The series' names, in stacking order (bottom first): the largest rows, then "other",
    /// then "idle".
    pub series: Vec<String>,
    pub days: Vec<ChartDay>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChartDay {
    /// `2026-11-18`.
    pub day: String,
    /// Of the day, the part recorded, percent.
    pub recorded_percent: u32,
    /// Cents per series, in the order of `series`.
    pub cents: Vec<i64>,
}

/// Named series in a chart; the rest is "other".
pub const CHART_SERIES: usize = 7;
pub const OTHER: &str = "other";
pub const IDLE: &str = "idle";

#[cfg(feature = "ssr")]
/// `recorded` priced for `query`: each month's part at that month's prices.
pub fn price_recorded(recorded: &Recorded, books: &Books, query: &CostQuery) -> CostReport {
    let parts = recorded.by_book(books);
    let parts: Vec<(&Holdings, &super::PriceBook)> = parts
        .iter()
        .map(|(at, holdings)| (holdings, books.at(at.1)))
        .collect();
    if parts.is_empty() {
        return price(&Holdings::new(), &books.current, query, 0.0);
    }
    price_parts(&parts, query, recorded.recorded_hours())
}

#[cfg(feature = "ssr")]
/// The report over a recorded period: the rows priced from the period's holdings (each sealed
/// month's part at its sealed prices), each row's change against `previous`, the chart over
/// days, and notes on what was not recorded and what is sealed.
pub fn report(
    recorded: &Recorded,
    previous: &Recorded,
    books: &Books,
    query: &CostQuery,
    range: Range,
) -> CostReport {
    let hours = recorded.recorded_hours();
    let mut report = price_recorded(recorded, books, query);
    let previous_hours = previous.recorded_hours();
    if previous_hours > 0.0 {
        let before = price_recorded(previous, books, query);
        let then: BTreeMap<(String, RowKind), i64> = before
            .rows
            .iter()
            .map(|r| ((r.name.clone(), r.kind), r.cost_cents))
            .collect();
        for row in &mut report.rows {
            row.change_cents = then
                .get(&(row.name.clone(), row.kind))
                .map(|cents| row.cost_cents - cents);
        }
        report.previous_total_cents = Some(before.total_cents);
    }
    report.range = Some(range);
    report.period_label = range.label();
    report.recorded_hours = hours;
    let wanted = range.hours();
    if hours + 0.01 < wanted {
        let covered = coverage(hours, wanted);
        let since = recorded
            .first
            .and_then(|t| DateTime::from_timestamp(t, 0))
            .map(|t| format!(" (recording began {} UTC)", t.format("%Y-%m-%d %H:%M")))
            .unwrap_or_default();
        report.notes.push(format!(
            "The history covers {covered} of this period{since}: hours the console was not recording are not in the figures."
        ));
    }
    if previous_hours + 0.01 < range.hours() && previous_hours > 0.0 {
        report.notes.push(format!(
            "The previous period ({}) is only {} recorded, so the changes compare unlike spans.",
            range.previous().label(),
            coverage(previous_hours, range.hours())
        ));
    }
    sealed_notes(&mut report, recorded, books, range);
    report.chart = Some(chart(recorded, books, query, &report));
    report
}

#[cfg(feature = "ssr")]
/// Says which months of the period are sealed, and when history reached a sealed month after
/// its seal (a replica's late minutes), which its figures then include.
fn sealed_notes(report: &mut CostReport, recorded: &Recorded, books: &Books, range: Range) {
    for month in books.sealed_in(range) {
        let s = &month.sealing;
        report.sealed.push(s.clone());
        let by = if s.version == 1 {
            "as it closed".to_string()
        } else {
            format!("when {} re-priced it (version {})", s.sealed_by, s.version)
        };
        report.notes.push(format!(
            "{} is sealed: its part is priced as the prices stood {by}, {} UTC; later price changes do not alter it.",
            s.month,
            s.sealed_at.get(..16).unwrap_or(&s.sealed_at).replace('T', " ")
        ));
        let Ok(whole) = super::sealed::month_range(&s.month) else {
            continue;
        };
        if range.from <= whole.from && range.to >= whole.to {
            let now: f64 = recorded
                .minutes
                .range(whole.from..whole.to)
                .map(|(_, m)| f64::from(*m))
                .sum::<f64>()
                / 60.0;
            if now > s.recorded_hours + 0.01 {
                report.notes.push(format!(
                    "{:.1} hours of {} were recorded after it was sealed (another replica's minutes, or a replay): they are in the figures, at the sealed prices.",
                    now - s.recorded_hours,
                    s.month
                ));
            }
        }
    }
}

#[cfg(feature = "ssr")]
/// One bar per day of the period, priced alike; the largest rows of the report by name.
fn chart(recorded: &Recorded, books: &Books, query: &CostQuery, report: &CostReport) -> Chart {
    // The report's rows are sorted by the chosen key; the chart stacks the largest by cost.
    let mut allocated: Vec<(&str, i64)> = report
        .rows
        .iter()
        .filter(|r| r.kind == RowKind::Allocated)
        .map(|r| (r.name.as_str(), r.cost_cents))
        .collect();
    allocated.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let named: Vec<&str> = allocated
        .into_iter()
        .take(CHART_SERIES)
        .map(|(name, _)| name)
        .collect();
    let mut series: Vec<String> = named.iter().map(|s| s.to_string()).collect();
    series.push(OTHER.to_string());
    series.push(IDLE.to_string());
    let (range_from, range_to) = report.range.map_or((0, 0), |r| (r.from, r.to));
    let mut days = Vec::new();
    let mut day = range_from.div_euclid(86_400) * 86_400;
    while day < range_to {
        let minutes = recorded.minutes.get(&day).copied().unwrap_or(0);
        let mut cents = vec![0; series.len()];
        if let Some(holdings) = recorded.days.get(&day) {
            let priced = price(holdings, books.at(day), query, f64::from(minutes) / 60.0);
            for row in priced.rows {
                let at = match row.kind {
                    RowKind::Idle => series.len() - 1,
                    _ => named
                        .iter()
                        .position(|n| *n == row.name)
                        .unwrap_or(series.len() - 2),
                };
                cents[at] += row.cost_cents;
            }
        }
        // The day's part inside the period.
        let span = (day + 86_400).min(range_to) - day.max(range_from);
        days.push(ChartDay {
            day: DateTime::from_timestamp(day, 0)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            recorded_percent: if span > 0 {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let p = (f64::from(minutes) * 60.0 / span as f64 * 100.0)
                    .round()
                    .min(100.0) as u32;
                p
            } else {
                0
            },
            cents,
        });
        day += 86_400;
    }
    Chart { series, days }
}

/// The detailed CSV: one line per day of the period and row of the report's grouping, days
/// with nothing recorded left out. Each row's cost is the report's for the period, shared out
/// over the days by what each day held at that day's prices, unrounded (largest remainder), so
/// a row's days add up to its line in the report and all lines to the report's total, to the
/// cent, and each day is within a cent of its share. (Rounded day by day, the lines drifted from
/// the period's total by up to a cent a day.)
#[cfg(feature = "ssr")]
pub fn daily_csv(recorded: &Recorded, books: &Books, query: &CostQuery) -> String {
    use super::usd;
    let mut out = format!(
        "day,{},kind,cost_usd,gpu_hours,unused_usd,recorded_hours\n",
        query.group.as_str()
    );
    let (period, days) = daily_rows(recorded, books, query);
    for day in &days {
        let date = DateTime::from_timestamp(day.day, 0)
            .map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_default();
        for row in &day.rows {
            out.push_str(&format!(
                "{date},{},{},{},{:.2},{},{:.2}\n",
                crate::model::csv::field(&row.name),
                row.kind.as_str(),
                usd(row.cost_cents),
                row.gpu_hours,
                row.unused_cents.map(usd).unwrap_or_default(),
                day.hours,
            ));
        }
    }
    out.push_str(&super::csv_trailer(&period, 7));
    out
}

/// One recorded day's rows, their cost the day's share of the period's.
#[cfg(feature = "ssr")]
pub struct DayRows {
    /// The day's midnight, Unix seconds.
    pub day: i64,
    /// Of the day, the hours recorded.
    pub hours: f64,
    /// The day's rows as that day's holdings price them, with `cost_cents` the day's share of
    /// the row's cost over the period.
    pub rows: Vec<super::CostRow>,
}

/// The period's report and each recorded day's rows (days with nothing recorded left out),
/// each row's cost over the period shared out over its days (see `daily_csv`).
#[cfg(feature = "ssr")]
pub fn daily_rows(
    recorded: &Recorded,
    books: &Books,
    query: &CostQuery,
) -> (CostReport, Vec<DayRows>) {
    let days: Vec<(i64, &Holdings, f64)> = recorded
        .days
        .iter()
        .filter_map(|(day, holdings)| {
            let minutes = recorded.minutes.get(day).copied().unwrap_or(0);
            (minutes > 0).then(|| (*day, holdings, f64::from(minutes) / 60.0))
        })
        .collect();
    let (period, shares) = daily_cents(recorded, &days, books, query);
    let rows = days
        .iter()
        .enumerate()
        .map(|(n, (day, holdings, hours))| {
            let mut rows = price(holdings, books.at(*day), query, *hours).rows;
            for row in &mut rows {
                row.cost_cents = shares
                    .get(&(row.name.clone(), row.kind))
                    .and_then(|by_day| by_day.get(n))
                    .copied()
                    .unwrap_or(0);
            }
            DayRows {
                day: *day,
                hours: *hours,
                rows,
            }
        })
        .collect();
    (period, rows)
}

/// The period's report and, per row of it, its cents shared out over `days` by each day's exact
/// dollars: (name, kind) → cents per day, in the order of `days`.
#[cfg(feature = "ssr")]
pub fn daily_cents(
    recorded: &Recorded,
    days: &[(i64, &Holdings, f64)],
    books: &Books,
    query: &CostQuery,
) -> (CostReport, BTreeMap<(String, RowKind), Vec<i64>>) {
    let period = price_recorded(recorded, books, query);
    let exact: Vec<BTreeMap<(String, RowKind), f64>> = days
        .iter()
        .map(|(day, holdings, _)| super::exact_dollars(holdings, books.at(*day), query))
        .collect();
    let shares = period
        .rows
        .iter()
        .map(|row| {
            let key = (row.name.clone(), row.kind);
            let weights: Vec<f64> = exact
                .iter()
                .map(|day| day.get(&key).copied().unwrap_or(0.0))
                .collect();
            let cents = largest_remainder(&weights, row.cost_cents);
            (key, cents)
        })
        .collect();
    (period, shares)
}

/// How much of a period of `wanted` hours the `hours` recorded cover, as a person reads it:
/// `none`, `under 1 %`, `37 %`, `over 99 %`. Never `-0 %` (no recorded hours may sum to minus
/// zero), and never `100 %` for a period that is not whole.
#[cfg(feature = "ssr")]
fn coverage(hours: f64, wanted: f64) -> String {
    if hours <= 0.0 || wanted <= 0.0 {
        return "none".to_string();
    }
    let percent = hours / wanted * 100.0;
    if percent < 1.0 {
        "under 1 %".to_string()
    } else if percent > 99.0 {
        "over 99 %".to_string()
    } else {
        format!("{percent:.0} %")
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests;
