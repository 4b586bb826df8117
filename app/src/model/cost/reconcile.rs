//! The reconciliation: per day of a month, the console's figure for the EC2 instances it saw
//! against Cost Explorer's amortized cost, and the difference explained — instances Cost
//! Explorer billed that the console never saw, instances it saw that Cost Explorer did not
//! bill, hours it did not record — or, for a day Cost Explorer was not read for, the list-price
//! figure and why.
//!
//! Both sides are EC2 compute only: the Managed Instances charge is billed under ECS, not in
//! Cost Explorer's resource-level data, so it is left out here (the cost review adds it).

use serde::{Deserialize, Serialize};

/// `?month=2026-11[&format=csv]`; the current month when left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconciliationQuery {
    #[serde(default)]
    pub month: Option<String>,
    /// `json` (the default) or `csv`.
    #[serde(default)]
    pub format: Option<String>,
}

/// The query parameters, for a refusal's message.
pub const RECONCILIATION_PARAMETERS: &str = "month (YYYY-MM) and format (json or csv)";

impl Reconciliation {
    /// A line per day, then the month's totals and the notes, each line's kind named.
    pub fn to_csv(&self) -> String {
        let field = |text: &str| {
            if text.contains([',', '"', '\n']) {
                format!("\"{}\"", text.replace('"', "\"\""))
            } else {
                text.to_string()
            }
        };
        let money = |cents: Option<i64>| {
            cents.map_or(String::new(), |c| {
                format!(
                    "{}{}.{:02}",
                    if c < 0 { "-" } else { "" },
                    c.abs() / 100,
                    c.abs() % 100
                )
            })
        };
        let mut out = String::from(
            "kind,day,source,console_usd,cost_explorer_usd,difference_usd,list_usd,instances_seen,recorded_hours,explained\n",
        );
        for day in &self.days {
            let explained: Vec<String> = day
                .explained
                .iter()
                .map(|e| format!("{} {}: {}", e.kind, money(Some(e.cents)), e.text))
                .collect();
            out.push_str(&format!(
                "day,{},{},{},{},{},{},{},{:.2},{}\n",
                day.day,
                day.source,
                money(Some(day.console_cents)),
                money(day.cost_explorer_cents),
                money(day.difference_cents),
                money(Some(day.list_cents)),
                day.instances_seen,
                f64::from(day.recorded_minutes) / 60.0,
                field(&explained.join(" | ")),
            ));
        }
        out.push_str(&format!(
            "month,{},{},{},{},{},{},,,{}\n",
            self.month,
            self.source,
            money(Some(self.console_cents)),
            money(self.cost_explorer_cents),
            money(self.difference_cents),
            money(Some(self.list_cents)),
            field(&format!(
                "{} days at the bill; the console's figure over them {}",
                self.days_billed,
                money(Some(self.console_billed_days_cents))
            )),
        ));
        for note in &self.notes {
            out.push_str(&format!("note,,,,,,,,,{}\n", field(note)));
        }
        out
    }
}

/// One part of a day's difference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explained {
    /// `not-seen`, `not-billed`, `hours-not-recorded`, `unpriced` or `rounding`.
    pub kind: String,
    /// Its part of the difference (Cost Explorer's minus the console's), cents.
    pub cents: i64,
    pub text: String,
}

/// One day.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReconciliationDay {
    /// `2026-11-18`.
    pub day: String,
    /// `cost-explorer` when the day's figures are the bill's; `list-prices` when not.
    pub source: String,
    /// The console's figure for the instances it saw, at the day's prices.
    pub console_cents: i64,
    /// Cost Explorer's amortized total of every EC2 instance it billed that day.
    pub cost_explorer_cents: Option<i64>,
    pub difference_cents: Option<i64>,
    /// The same instances at the list and price-file prices, to show what commitments save.
    pub list_cents: i64,
    pub instances_seen: u32,
    /// Of the day, the minutes the console recorded.
    pub recorded_minutes: u32,
    pub explained: Vec<Explained>,
}

/// A month's reconciliation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reconciliation {
    /// `2026-11`.
    pub month: String,
    /// `cost-explorer` when any day of the month was read from it; `list-prices` when none was.
    pub source: String,
    pub days: Vec<ReconciliationDay>,
    /// The days' figures added up.
    pub console_cents: i64,
    /// Over the days read from Cost Explorer only.
    pub cost_explorer_cents: Option<i64>,
    pub difference_cents: Option<i64>,
    pub list_cents: i64,
    /// The console's figure over the days read from Cost Explorer, to compare with its total.
    pub console_billed_days_cents: i64,
    pub days_billed: u32,
    /// Cost Explorer requests made for the month's days.
    pub calls: u32,
    pub notes: Vec<String>,
}

#[cfg(feature = "ssr")]
pub use compute::reconcile;

#[cfg(feature = "ssr")]
mod compute {
    use std::collections::BTreeSet;

    use chrono::DateTime;

    use super::*;
    use crate::model::cost::{billed::Bill, Books, Range, Recorded};

    fn cents(usd: f64) -> i64 {
        (usd * 100.0).round() as i64
    }

    fn label(day: i64) -> String {
        DateTime::from_timestamp(day, 0)
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_default()
    }

    /// The reconciliation of `month` over `range` (up to now), from what was recorded, the bill
    /// and the prices; `why_not` says why a day without Cost Explorer data has none.
    pub fn reconcile(
        month: &str,
        range: Range,
        recorded: &Recorded,
        bill: &Bill,
        books: &Books,
        why_not: &dyn Fn(i64) -> String,
    ) -> Reconciliation {
        let read = bill.read_days();
        let mut out = Reconciliation {
            month: month.to_string(),
            ..Reconciliation::default()
        };
        let mut day = range.from;
        while day < range.to {
            let minutes = recorded.minutes.get(&day).copied().unwrap_or(0);
            let row = one_day(day, minutes, bill, books, read.contains(&day), why_not);
            out.console_cents += row.console_cents;
            out.list_cents += row.list_cents;
            if let Some(ce) = row.cost_explorer_cents {
                *out.cost_explorer_cents.get_or_insert(0) += ce;
                out.console_billed_days_cents += row.console_cents;
                out.days_billed += 1;
            }
            if row.instances_seen > 0 || row.cost_explorer_cents.is_some() {
                out.days.push(row);
            }
            day += 86_400;
        }
        out.difference_cents = out
            .cost_explorer_cents
            .map(|ce| ce - out.console_billed_days_cents);
        out.calls = bill
            .read
            .iter()
            .filter(|r| r.day >= range.from && r.day < range.to)
            .map(|r| r.calls)
            .sum();
        out.source = if out.days_billed > 0 {
            "cost-explorer"
        } else {
            "list-prices"
        }
        .to_string();
        out.notes.push("Both sides are EC2 compute: the Managed Instances charge is billed under ECS, not in Cost Explorer's resource-level data, so the cost review adds it and this page does not.".into());
        if let Some(off) = &bill.off {
            out.notes.push(off.clone());
        }
        if out.days_billed == 0 {
            out.notes.push("No day of this month has Cost Explorer's figures: every figure here is at list and price-file prices, not the bill.".into());
        }
        out
    }

    fn one_day(
        day: i64,
        minutes: u32,
        bill: &Bill,
        books: &Books,
        read: bool,
        why_not: &dyn Fn(i64) -> String,
    ) -> ReconciliationDay {
        let groups = bill.groups(day);
        let (priced, listed) = (books.at(day), books.listed(day));
        let (mut console, mut list, mut unpriced) = (0.0, 0.0, 0.0);
        let mut not_billed = (0_usize, 0.0);
        for ((instance_type, lifecycle), group) in &groups {
            let rate = |book: &crate::model::cost::PriceBook| {
                book.price(instance_type, *lifecycle)
                    .map(|p| p.usd_per_hour)
            };
            let hours = group.hours();
            match rate(priced) {
                Some(usd) => console += usd * hours,
                None => unpriced += hours,
            }
            list += rate(listed).unwrap_or(0.0) * hours;
            if read && group.listed == 0 {
                not_billed.0 += group.instances;
                not_billed.1 += rate(priced).unwrap_or(0.0) * hours;
            }
        }
        let seen: BTreeSet<&str> = bill
            .seen
            .iter()
            .filter(|s| s.day == day && s.minutes > 0)
            .map(|s| s.instance_id.as_str())
            .collect();
        let mut row = ReconciliationDay {
            day: label(day),
            source: if read { "cost-explorer" } else { "list-prices" }.into(),
            console_cents: cents(console),
            cost_explorer_cents: None,
            difference_cents: None,
            list_cents: cents(list),
            instances_seen: u32::try_from(seen.len()).unwrap_or(u32::MAX),
            recorded_minutes: minutes,
            explained: Vec::new(),
        };
        if unpriced > 0.0 {
            row.explained.push(Explained {
                kind: "unpriced".into(),
                cents: 0,
                text: format!("{unpriced:.1} instance-hours have no price and are left out of the console's figure."),
            });
        }
        if !read {
            row.explained.push(Explained {
                kind: "list-prices".into(),
                cents: 0,
                text: why_not(day),
            });
            return row;
        }
        explain(&mut row, bill, day, &seen, not_billed);
        row
    }

    /// The day's Cost Explorer total, the difference and its parts.
    fn explain(
        row: &mut ReconciliationDay,
        bill: &Bill,
        day: i64,
        seen: &BTreeSet<&str>,
        not_billed: (usize, f64),
    ) {
        let minutes = row.recorded_minutes;
        let lines = bill.lines(day);
        let total: f64 = lines.values().sum();
        let (mut others, mut others_usd) = (0, 0.0);
        for (id, usd) in &lines {
            if !seen.contains(id) {
                others += 1;
                others_usd += usd;
            }
        }
        let ce = cents(total);
        let difference = ce - row.console_cents;
        row.cost_explorer_cents = Some(ce);
        row.difference_cents = Some(difference);
        let mut explained = 0;
        if others > 0 {
            let part = cents(others_usd);
            explained += part;
            row.explained.push(Explained {
                kind: "not-seen".into(),
                cents: part,
                text: format!("{others} EC2 instance{} Cost Explorer billed that the console did not see in any ECS cluster that day (instances outside ECS, or in a cluster it does not read).", if others == 1 { "" } else { "s" }),
            });
        }
        if not_billed.0 > 0 {
            let part = -cents(not_billed.1);
            explained += part;
            row.explained.push(Explained {
                kind: "not-billed".into(),
                cents: part,
                text: format!("{} instance{} the console saw that Cost Explorer did not bill (another account's, or its data is late), counted at list price.", not_billed.0, if not_billed.0 == 1 { "" } else { "s" }),
            });
        }
        if minutes < 1440 {
            row.explained.push(Explained {
                kind: "hours-not-recorded".into(),
                cents: 0,
                text: format!("The console recorded {:.1} of the day's 24 hours; the bill of the instances it saw is spread over the hours it recorded, so nothing is lost.", f64::from(minutes) / 60.0),
            });
        }
        if difference != explained {
            row.explained.push(Explained {
                kind: "rounding".into(),
                cents: difference - explained,
                text: "Each part is rounded to the cent on its own.".into(),
            });
        }
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests;
