//! The bill's own numbers: Cost Explorer's amortized cost of each EC2 instance and day
//! (`ce:GetCostAndUsageWithResources`, grouped by resource ID), beside what the console saw of
//! each instance that day, and the reconciliation of the two.
//!
//! Where Cost Explorer has read a day, each instance type and lifecycle is priced that day at
//! what Cost Explorer billed for the instances of it the console saw, over the hours the console
//! recorded them — so the day's total is the bill's for those instances, to the cent, and the
//! same rules split it among teams and services. Hours the console did not record (a restart)
//! are not lost: their cost is spread over the hours it did. Instances of one type under
//! different terms (one under a Savings Plan, one not) share one rate that day: the split knows
//! types, not instances.
//!
//! Where a day has not been read (older than Cost Explorer's 14 days, not closed long enough, or
//! resource-level data is off), the figures are list prices, and the reconciliation says so.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Lifecycle, Price, PriceBook, PriceSource};

/// How long after a day closes (UTC) Cost Explorer is read for it: its figures for a day change
/// until they have been refreshed after the day ends, which AWS says happens at least once every
/// 24 hours; the console takes that as the cautious reading.
pub const SETTLE_SECONDS: i64 = 24 * 3600;

/// How far back Cost Explorer's resource-level data reaches, days.
pub const WINDOW_DAYS: i64 = 14;

/// What the console saw of one instance on one UTC day.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeenDay {
    /// The day's midnight, Unix seconds.
    pub day: i64,
    /// EC2's instance ID (`i-…`), the resource ID Cost Explorer groups by.
    pub instance_id: String,
    pub cluster: String,
    pub instance_type: String,
    pub lifecycle: Option<Lifecycle>,
    /// Minutes recorded.
    pub minutes: u32,
}

/// Cost Explorer's amortized cost of one resource on one day.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BilledLine {
    pub day: i64,
    pub resource_id: String,
    pub usd: f64,
}

/// A day Cost Explorer was read for, once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadDay {
    pub day: i64,
    /// When (Unix seconds).
    pub read_at: i64,
    /// Requests it took (pages).
    pub calls: u32,
}

/// What the console knows of the bill over a period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bill {
    /// What the console saw of each instance a day (the reconciliation's detail; the store
    /// leaves it out when only the prices are wanted, and gives `sums`).
    pub seen: Vec<SeenDay>,
    /// Cost Explorer's lines (detail, as `seen`).
    pub billed: Vec<BilledLine>,
    pub read: Vec<ReadDay>,
    /// The days' groups as the store summed them; a day not here is summed from `seen` and
    /// `billed`.
    pub sums: BTreeMap<i64, DayGroups>,
    /// Why there is no Cost Explorer data (resource-level data off, not allowed, not asked),
    /// when that is so.
    pub off: Option<String>,
}

/// One instance type and lifecycle on one day.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DayGroup {
    /// Minutes recorded, of all its instances.
    pub minutes: u64,
    /// What Cost Explorer billed for the instances of it the console saw.
    pub usd: f64,
    pub instances: usize,
    /// Of them, those Cost Explorer listed.
    pub listed: usize,
}

impl DayGroup {
    /// Instance-hours recorded.
    pub fn hours(&self) -> f64 {
        self.minutes as f64 / 60.0
    }
}

/// A day's groups, by type and lifecycle as priced.
pub type DayGroups = BTreeMap<(String, Lifecycle), DayGroup>;

/// The instances of one type and lifecycle seen on one day, summed: a row of the store's sum,
/// or one instance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeenSum {
    pub day: i64,
    pub instance_type: String,
    pub lifecycle: Option<Lifecycle>,
    pub instances: usize,
    pub minutes: u64,
    /// What Cost Explorer billed for them.
    pub usd: f64,
    /// How many of them Cost Explorer listed.
    pub listed: usize,
}

/// `sums` by day, and by type and lifecycle as priced (instances with no lifecycle are priced
/// as on demand, so their sums join those of on demand).
pub fn grouped(sums: impl IntoIterator<Item = SeenSum>) -> BTreeMap<i64, DayGroups> {
    let mut out: BTreeMap<i64, DayGroups> = BTreeMap::new();
    for sum in sums.into_iter().filter(|s| s.minutes > 0) {
        let group = out
            .entry(sum.day)
            .or_default()
            .entry((sum.instance_type, Lifecycle::priced_as(sum.lifecycle)))
            .or_default();
        group.minutes += sum.minutes;
        group.usd += sum.usd;
        group.instances += sum.instances;
        group.listed += sum.listed;
    }
    out
}

/// The midnight before `at`.
pub fn day_of(at: i64) -> i64 {
    at.div_euclid(86_400) * 86_400
}

impl Bill {
    /// The days read.
    pub fn read_days(&self) -> BTreeSet<i64> {
        self.read.iter().map(|r| r.day).collect()
    }

    /// Cost Explorer's lines of `day`, by resource ID.
    pub fn lines(&self, day: i64) -> BTreeMap<&str, f64> {
        let mut out: BTreeMap<&str, f64> = BTreeMap::new();
        for line in self.billed.iter().filter(|l| l.day == day) {
            *out.entry(line.resource_id.as_str()).or_default() += line.usd;
        }
        out
    }

    /// What the console saw on `day`, per type and lifecycle (as priced), with what Cost
    /// Explorer billed for those instances: the store's sums when it gave them, else summed
    /// from the detail.
    pub fn groups(&self, day: i64) -> DayGroups {
        if let Some(sums) = self.sums.get(&day) {
            return sums.clone();
        }
        let lines = self.lines(day);
        grouped(self.seen.iter().filter(|s| s.day == day).map(|seen| {
            let usd = lines.get(seen.instance_id.as_str());
            SeenSum {
                day,
                instance_type: seen.instance_type.clone(),
                lifecycle: seen.lifecycle,
                instances: 1,
                minutes: u64::from(seen.minutes),
                usd: usd.copied().unwrap_or(0.0),
                listed: usize::from(usd.is_some()),
            }
        }))
        .remove(&day)
        .unwrap_or_default()
    }
}

/// `base` with each type and lifecycle the console saw on `day` priced at what Cost Explorer
/// billed for its instances over their recorded hours. A group none of whose instances Cost
/// Explorer listed keeps its price from `base`.
pub fn day_book(base: &PriceBook, bill: &Bill, day: i64) -> PriceBook {
    let mut book = base.clone();
    let label = chrono::DateTime::from_timestamp(day, 0)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    for ((instance_type, lifecycle), group) in bill.groups(day) {
        let hours = group.hours();
        if group.listed == 0 || hours <= 0.0 {
            continue;
        }
        let fee = base
            .price(&instance_type, Lifecycle::OnDemand)
            .and_then(|p| p.managed_instances_usd_per_hour);
        let price = Price {
            instance_type: instance_type.clone(),
            lifecycle,
            usd_per_hour: group.usd / hours,
            managed_instances_usd_per_hour: (lifecycle == Lifecycle::OnDemand)
                .then_some(fee)
                .flatten(),
            source: PriceSource::CostExplorer,
            detail: format!(
                "Cost Explorer, amortized, {label}: {} instance{} over {:.1} recorded hours",
                group.instances,
                if group.instances == 1 { "" } else { "s" },
                hours
            ),
            commitment: None,
            effective: Some(label.clone()),
        };
        book.prices
            .retain(|p| !(p.instance_type == instance_type && p.lifecycle == lifecycle));
        book.prices.push(price);
    }
    book.prices.sort_by(|a, b| {
        (a.instance_type.as_str(), a.lifecycle).cmp(&(b.instance_type.as_str(), b.lifecycle))
    });
    book
}

/// `current` with a price for each type and lifecycle it cannot price (a Capacity Block without
/// a rate in the price file), from the latest day Cost Explorer billed it.
pub fn fill_from_latest(current: &PriceBook, billed: &BTreeMap<i64, PriceBook>) -> PriceBook {
    let mut book = current.clone();
    for day_book in billed.values().rev() {
        for price in &day_book.prices {
            if price.source == PriceSource::CostExplorer
                && book.price(&price.instance_type, price.lifecycle).is_none()
            {
                let mut price = price.clone();
                price.detail = format!(
                    "{} (the latest day Cost Explorer billed; no other price)",
                    price.detail
                );
                book.prices.push(price);
            }
        }
    }
    book.prices.sort_by(|a, b| {
        (a.instance_type.as_str(), a.lifecycle).cmp(&(b.instance_type.as_str(), b.lifecycle))
    });
    book
}

#[cfg(test)]
mod tests;
