//! Sealed months: when a month closes (UTC), the prices its figures were made with are kept as
//! they stood, so a later price file, Price List refresh or host share does not change what a
//! cost review already saw. The history of what the fleet held is never rewritten, so the prices
//! are all a report needs to come out the same. Re-pricing a closed month (an admin's action,
//! audited) seals it again at today's prices, as a new version; the earlier ones are kept.

use serde::{Deserialize, Serialize};

use super::PriceBook;

/// Who sealed a month, when, and why: what a report says of a sealed month it covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sealing {
    /// `2026-11`.
    pub month: String,
    /// 1 when sealed as the month closed; each re-pricing adds one.
    pub version: u32,
    /// RFC 3339.
    pub sealed_at: String,
    /// `the console` when sealed as the month closed, else who re-priced it.
    pub sealed_by: String,
    /// Why it was re-priced; empty for the first seal.
    #[serde(default)]
    pub reason: String,
    /// The audit record of the re-pricing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_id: Option<String>,
    /// The month's total when sealed (by team, memory split, idle as a row), cents.
    pub total_cents: i64,
    /// Of the month, the hours recorded when it was sealed.
    pub recorded_hours: f64,
}

/// A sealed month with the prices it keeps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SealedMonth {
    #[serde(flatten)]
    pub sealing: Sealing,
    pub book: PriceBook,
}

/// How one row of a month changes when the month is re-priced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowChange {
    pub name: String,
    pub kind: String,
    pub before_cents: i64,
    pub after_cents: i64,
}

/// How one instance type's price changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceChange {
    pub instance_type: String,
    pub lifecycle: String,
    /// `$32.7726/h, on-demand, price-list-api: …`, or `no price`.
    pub before: String,
    pub after: String,
}

/// What re-pricing a closed month at today's prices changes, by team: a preview, or what was
/// done.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Repricing {
    pub month: String,
    /// The version in force, and the one re-pricing makes.
    pub from_version: u32,
    pub to_version: u32,
    pub before_total_cents: i64,
    pub after_total_cents: i64,
    /// Rows whose cost changes, largest change first.
    pub rows: Vec<RowChange>,
    /// Instance types whose price changes.
    pub prices: Vec<PriceChange>,
    /// Whether it was done (false: a preview).
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_id: Option<String>,
}

/// What the sealed months' page asks for: one month's re-pricing to look at, or none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonthsQuery {
    pub month: Option<String>,
}

impl MonthsQuery {
    pub const KEYS: [&'static str; 1] = ["month"];

    /// The query of `params`; a month that is not `YYYY-MM` is an error saying so.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<MonthsQuery, String> {
        let mut query = MonthsQuery::default();
        for (key, value) in params {
            match key {
                "month" if value.is_empty() => {}
                "month" => {
                    check_month(value)?;
                    query.month = Some(value.to_string());
                }
                other => {
                    return Err(format!(
                        "there is no parameter {other:?}; the page reads month"
                    ))
                }
            }
        }
        Ok(query)
    }
}

/// The sealed months' page: every seal, and the month asked for at today's prices.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonthsView {
    /// Every version of every sealed month, newest month first.
    pub seals: Vec<Sealing>,
    pub repricing: Option<Repricing>,
    /// Whether the person may re-price (admins), and if not, why and whom to ask.
    pub may_reprice: bool,
    pub why_not: Option<String>,
}

pub use super::range::check_month;
#[cfg(feature = "ssr")]
pub use super::range::{month_label, month_range, month_start, month_words};

#[cfg(feature = "ssr")]
mod books {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::cost::{
        billed::{day_book, day_of, fill_from_latest, Bill},
        range::month_range,
        range::month_start,
        CostReport, Range, RowKind,
    };

    /// The prices a recorded period is made with: each sealed month's own, today's for the rest.
    #[derive(Clone, Debug, Default)]
    pub struct Books {
        pub current: PriceBook,
        /// Month start → the month's latest seal.
        sealed: BTreeMap<i64, SealedMonth>,
        /// Day → the day's prices from Cost Explorer's bill, for the days it was read.
        billed: BTreeMap<i64, PriceBook>,
    }

    impl From<PriceBook> for Books {
        fn from(current: PriceBook) -> Books {
            Books {
                current,
                sealed: BTreeMap::new(),
                billed: BTreeMap::new(),
            }
        }
    }

    impl Books {
        /// Today's prices, and `sealed` (any versions; the latest of each month counts).
        pub fn new(current: PriceBook, sealed: Vec<SealedMonth>) -> Books {
            let mut books = Books::from(current);
            for month in sealed {
                let Ok(range) = month_range(&month.sealing.month) else {
                    continue;
                };
                let newer = books
                    .sealed
                    .get(&range.from)
                    .is_none_or(|m| m.sealing.version < month.sealing.version);
                if newer {
                    books.sealed.insert(range.from, month);
                }
            }
            books
        }

        /// These books with the bill's prices for each day Cost Explorer was read (see
        /// [`billed`](crate::model::cost::billed)); today's prices get, for a type they cannot
        /// price, the latest day's billed rate.
        pub fn with_bill(mut self, bill: &Bill) -> Books {
            for day in bill.read_days() {
                let book = day_book(self.listed(day), bill, day);
                self.billed.insert(day, book);
            }
            self.current = fill_from_latest(&self.current, &self.billed);
            self
        }

        /// The prices of the day (or hour) that starts at `at`: the bill's, where Cost Explorer
        /// was read for the day, else the month's seal or today's.
        pub fn at(&self, at: i64) -> &PriceBook {
            self.billed
                .get(&day_of(at))
                .unwrap_or_else(|| self.listed(at))
        }

        /// The prices of the day that starts at `at` without the bill: the month's seal or
        /// today's.
        pub fn listed(&self, at: i64) -> &PriceBook {
            self.sealed
                .get(&month_start(at))
                .map_or(&self.current, |m| &m.book)
        }

        /// Whether the day of `at` is priced from Cost Explorer's bill.
        pub fn billed(&self, at: i64) -> bool {
            self.billed.contains_key(&day_of(at))
        }

        /// The seal of month `text` (`2026-11`), when it has one.
        pub fn sealed(&self, text: &str) -> Option<&SealedMonth> {
            let range = month_range(text).ok()?;
            self.sealed.get(&range.from)
        }

        /// The sealed months `range` reaches into.
        pub fn sealed_in(&self, range: Range) -> Vec<&SealedMonth> {
            self.sealed
                .range(month_start(range.from)..range.to)
                .map(|(_, m)| m)
                .collect()
        }
    }

    /// What re-pricing `month` changes: its report at the sealed prices against the same report
    /// at today's, by row and by price.
    pub fn compare(
        month: &str,
        version: u32,
        before: &CostReport,
        after: &CostReport,
    ) -> Repricing {
        let key = |name: &str, kind: RowKind| (name.to_string(), kind.as_str().to_string());
        let mut rows: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
        for row in &before.rows {
            rows.entry(key(&row.name, row.kind)).or_default().0 += row.cost_cents;
        }
        for row in &after.rows {
            rows.entry(key(&row.name, row.kind)).or_default().1 += row.cost_cents;
        }
        let mut rows: Vec<RowChange> = rows
            .into_iter()
            .filter(|(_, (b, a))| b != a)
            .map(|((name, kind), (before_cents, after_cents))| RowChange {
                name,
                kind,
                before_cents,
                after_cents,
            })
            .collect();
        rows.sort_by(|a, b| {
            (b.after_cents - b.before_cents)
                .abs()
                .cmp(&(a.after_cents - a.before_cents).abs())
                .then(a.name.cmp(&b.name))
        });
        Repricing {
            month: month.to_string(),
            from_version: version,
            to_version: version + 1,
            before_total_cents: before.total_cents,
            after_total_cents: after.total_cents,
            rows,
            prices: price_changes(before, after),
            applied: false,
            audit_id: None,
        }
    }

    /// The prices a report used, by type and lifecycle, in words; types left unpriced as `no price`.
    fn price_changes(before: &CostReport, after: &CostReport) -> Vec<PriceChange> {
        let words = |report: &CostReport| {
            let mut out: BTreeMap<(String, String), String> = BTreeMap::new();
            for used in &report.prices {
                let p = &used.price;
                out.insert(
                    (p.instance_type.clone(), p.lifecycle.as_str().to_string()),
                    format!("${}/h, {}, {}", p.usd_per_hour, p.billed(), p.provenance()),
                );
            }
            for unpriced in &report.unpriced {
                out.insert(
                    (
                        unpriced.instance_type.clone(),
                        unpriced.lifecycle.as_str().to_string(),
                    ),
                    "no price".to_string(),
                );
            }
            out
        };
        let (was, now) = (words(before), words(after));
        let mut keys: Vec<&(String, String)> = was.keys().chain(now.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter_map(|key| {
                let before = was.get(key).cloned().unwrap_or_else(|| "not used".into());
                let after = now.get(key).cloned().unwrap_or_else(|| "not used".into());
                (before != after).then(|| PriceChange {
                    instance_type: key.0.clone(),
                    lifecycle: key.1.clone(),
                    before,
                    after,
                })
            })
            .collect()
    }
}

#[cfg(feature = "ssr")]
pub use books::*;

#[cfg(all(test, feature = "ssr"))]
mod tests;
