//! Cost review: what the GPU fleet costs at today's allocations, split by team, service,
//! cluster or instance type so that the shares and the idle rows add up to the instances' bill
//! to the cent.
//!
//! The rule, as the page writes it: an instance's hourly price is split equally across its
//! GPUs. A dedicated GPU's cost goes to its container's service. An MPS GPU's cost is split by
//! each container's share of the GPU's memory (memory is what ECS reserves; the compute limit is
//! a cap, not a reservation); the memory nobody holds is idle, counted per cluster. Unused is the
//! part of an allocation the GPU did not use over the usage window, shown beside, never taken off.

#[cfg(feature = "ssr")]
pub mod billed;
pub mod consolidate;
#[cfg(feature = "ssr")]
pub mod focus;
pub mod history;
pub mod holdings;
pub mod prices;
mod query;
pub mod range;
pub mod reconcile;
pub mod sealed;
mod split;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use crate::model::words::Lifecycle;
use crate::model::FleetSnapshot;
pub use history::{Chart, ChartDay, Recorded};
pub use holdings::{Amounts, HoldingKey, HoldingKind, Holdings};
pub use prices::{Commitment, ListQuote, Price, PriceBook, PriceFile, PriceSource, SpotQuote};
pub use query::{CostQuery, Grouping, Period, SortKey, Span, SplitRule};
pub use range::Range;
pub use reconcile::{
    Explained, Reconciliation, ReconciliationDay, ReconciliationQuery, RECONCILIATION_PARAMETERS,
};
#[cfg(feature = "ssr")]
pub use sealed::Books;
pub use sealed::{MonthsQuery, MonthsView, Repricing, SealedMonth, Sealing};
pub use split::{exact_dollars, price, price_parts};

/// A month's hours wherever the console prices a month (a report's `span=month`, the
/// consolidation plan's savings, what retiring a service frees): 730, as AWS's monthly prices
/// count it (8,760 hours a year over 12), so the same instance costs the same a month on every page.
pub const MONTH_HOURS: u32 = 730;

/// The rule, in the words the page, the CSV's readers and the API docs use.
pub const RULE: &str = "Each instance's hourly price is split equally across its GPUs. A whole (dedicated) GPU's cost goes to the service of the container that holds it. A GPU shared through MPS is split by each container's share of the GPU's memory — memory is what ECS reserves; the compute limit (maxComputePercent) is a cap, not a reservation. Memory nobody holds is idle, counted per cluster (or shared out in proportion, when chosen); what ECS counts as allocated with no known container holding it is a row of its own, never idle. Unused is the part of an allocation the GPU did not use, by 15 minutes of CloudWatch data (memory used on MPS GPUs, utilisation on whole GPUs) — the last 15 minutes for today's allocations, each recorded minute's for a period; it is shown beside the cost, not taken off it, and on MPS GPUs a tenant's part of it is an estimate (the metrics are per GPU). Amounts are rounded to the cent by largest remainder, so the rows add up to the total exactly. Instances without a price are left out of the totals and listed.";

/// How the rule words a GPU shared through MPS under the larger-share split.
const MAX_RULE: &str = "A GPU shared through MPS is split by the larger of each container's share of the GPU's memory and its compute limit (maxComputePercent ÷ 100, 100 % when unset), scaled down where a GPU's shares add up to more than the whole GPU — so a tenant with a tenth of the memory and the whole compute pays as much as it may take.";

/// The rule with the split chosen and the CPU and memory part, when a share of the price goes to
/// it.
pub fn rule(host_share: f64, split: SplitRule) -> String {
    let base = match split {
        SplitRule::Memory => RULE.to_string(),
        SplitRule::Max => RULE.replacen(
            "A GPU shared through MPS is split by each container's share of the GPU's memory — memory is what ECS reserves; the compute limit (maxComputePercent) is a cap, not a reservation.",
            MAX_RULE,
            1,
        ),
    };
    if host_share <= 0.0 {
        return base;
    }
    let gpus = format!("{:.0} %", (1.0 - host_share) * 100.0);
    let host = format!("{:.0} %", host_share * 100.0);
    base.replacen(
        "Each instance's hourly price is split equally across its GPUs.",
        &format!("{gpus} of each instance's hourly price is split equally across its GPUs; the other {host} pays for its CPU and memory, half split by the CPU units its tasks reserve and half by the memory they reserve (the task definition's task-level cpu and memory, else its containers' cpu and memoryReservation or memory), and what no task reserves is idle."),
        1,
    )
}

/// What a row stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    /// What a team, service, cluster or instance type holds.
    Allocated,
    /// A cluster's GPU capacity that nobody holds.
    Idle,
    /// Memory ECS says is allocated on a GPU, with no container known to hold it (a task the
    /// snapshot could not describe).
    Unattributed,
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// The team, `cluster/service`, cluster or instance type; for idle rows, the cluster.
    pub name: String,
    pub kind: RowKind,
    /// The cost over the span, in cents; the rows add up to the report's total.
    pub cost_cents: i64,
    /// Of the report's total, percent.
    pub share_percent: f64,
    /// GPU-hours over the span (a half GPU for a day is 12).
    pub gpu_hours: f64,
    /// Of this row's cost, the part the GPUs did not use, in cents; `None` when no usage was
    /// reported for any of its GPUs.
    pub unused_cents: Option<i64>,
    /// Of `unused_cents`, the part on MPS GPUs: an estimate, as CloudWatch measures GPUs, not
    /// tenants.
    #[serde(default)]
    pub estimated_unused_cents: i64,
    /// Of this row's cost, the part on GPUs without usage data, in cents.
    pub without_usage_cents: i64,
    /// Against the previous period of the same length: this row's cost less what it was then,
    /// in cents; `None` when there is no previous period or the row was not in it.
    #[serde(default)]
    pub change_cents: Option<i64>,
}

/// Instances of one type the report could not price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unpriced {
    pub instance_type: String,
    pub lifecycle: Lifecycle,
    pub instances: u32,
    pub gpus: u32,
}

/// The price a report used for one instance type, with how many instances it priced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceUsed {
    pub price: Price,
    pub instances: u32,
}

/// The report: rows that add up to the total, and what it rests on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    pub query: CostQuery,
    /// When the fleet snapshot it prices was taken, RFC 3339.
    pub taken_at: String,
    pub region: String,
    pub rows: Vec<CostRow>,
    /// Σ instance-hours × price over the priced instances, in cents.
    pub total_cents: i64,
    /// The capacity nobody holds, in cents: the idle rows' sum, or, with idle shared out, what
    /// was shared (plus any idle row left).
    pub idle_cents: i64,
    pub unused_cents: i64,
    /// Of `total_cents`, what ECS Managed Instances charges on top of EC2's price.
    #[serde(default)]
    pub managed_instances_cents: i64,
    pub gpus: u32,
    pub instances: u32,
    pub prices: Vec<PriceUsed>,
    pub unpriced: Vec<Unpriced>,
    pub notes: Vec<String>,
    pub rule: String,
    /// The clusters the fleet has, for the page's filter.
    pub clusters: Vec<String>,
    /// A recorded period's times, and `2026-11-02 – 2026-12-01`; `None` for today's
    /// allocations.
    pub range: Option<Range>,
    pub period_label: String,
    /// Of the period, the hours recorded.
    pub recorded_hours: f64,
    /// The previous period's total, when it has any history.
    pub previous_total_cents: Option<i64>,
    /// Cost per day, stacked by the largest rows.
    pub chart: Option<Chart>,
    /// While the emulator's past is being replayed into the history: how far it has got.
    pub replaying: Option<String>,
    /// Each team's monthly cost budget (from the policy file) against this month's spend, with
    /// a forecast to the month's end; whatever the report's period.
    #[serde(default)]
    pub budgets: Vec<crate::model::budget::BudgetBurn>,
    /// The sealed months the period reaches into: those parts are priced as they stood when
    /// the month closed (or was last re-priced).
    #[serde(default)]
    pub sealed: Vec<Sealing>,
}

/// Splits `total` cents across `values` (exact amounts that add up to about `total`) so that
/// the parts add up to `total` exactly: each gets its floor, and the cents left go to the
/// largest remainders (ties to the earlier). Negative or non-finite values count as zero.
pub fn largest_remainder(values: &[f64], total: i64) -> Vec<i64> {
    let clean: Vec<f64> = values
        .iter()
        .map(|v| if v.is_finite() && *v > 0.0 { *v } else { 0.0 })
        .collect();
    let sum: f64 = clean.iter().sum();
    if clean.is_empty() {
        return Vec::new();
    }
    if sum <= 0.0 || total <= 0 {
        let mut parts = vec![0; clean.len()];
        parts[0] = total;
        return parts;
    }
    // Scale so that the values add up to `total` exactly, whatever the float error.
    let scaled: Vec<f64> = clean.iter().map(|v| v / sum * total as f64).collect();
    #[allow(clippy::cast_possible_truncation)]
    let mut parts: Vec<i64> = scaled.iter().map(|v| v.floor() as i64).collect();
    let mut left = total - parts.iter().sum::<i64>();
    let mut order: Vec<usize> = (0..scaled.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = scaled[a] - scaled[a].floor();
        let rb = scaled[b] - scaled[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let mut i = 0;
    while left > 0 {
        parts[order[i % order.len()]] += 1;
        left -= 1;
        i += 1;
    }
    while left < 0 {
        // Float error only: take back from the largest parts.
        let at = order[i % order.len()];
        if parts[at] > 0 {
            parts[at] -= 1;
            left += 1;
        }
        i += 1;
    }
    parts
}

/// Checks that `cluster`, when given, is one of `clusters`; the error names the ones there are.
pub fn check_cluster(cluster: Option<&String>, clusters: &[String]) -> Result<(), String> {
    match cluster {
        Some(wanted) if !clusters.contains(wanted) => Err(format!(
            "there is no cluster {wanted:?}; the fleet has {}",
            if clusters.is_empty() {
                "none".to_string()
            } else {
                clusters.join(", ")
            }
        )),
        _ => Ok(()),
    }
}

/// The report for `query` over `snapshot` at `prices`: today's allocations, held for the
/// query's span. An unknown cluster is an error naming the ones that exist.
pub fn report(
    snapshot: &FleetSnapshot,
    prices: &PriceBook,
    query: &CostQuery,
) -> Result<CostReport, String> {
    let clusters: Vec<String> = snapshot.clusters.iter().map(|c| c.name.clone()).collect();
    check_cluster(query.cluster.as_ref(), &clusters)?;
    let hours = f64::from(query.span.hours());
    let holdings = holdings::of_snapshot(snapshot, hours);
    let mut report = price(&holdings, prices, query, hours);
    report.taken_at = snapshot.taken_at.clone();
    report.clusters = clusters;
    Ok(report)
}

/// `$1,234.56`.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    let dollars = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, digit) in dollars.chars().enumerate() {
        if i > 0 && (dollars.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}${grouped}.{:02}", cents % 100)
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Allocated => "allocated",
            RowKind::Idle => "idle",
            RowKind::Unattributed => "unattributed",
        }
    }

    /// How the row is named in the table: idle rows carry their cluster.
    pub fn label(self, name: &str) -> String {
        match self {
            RowKind::Allocated => name.to_string(),
            RowKind::Idle => format!("idle · {name}"),
            RowKind::Unattributed => format!("allocated, holder not known · {name}"),
        }
    }
}

/// Cents as dollars for a spreadsheet: `1234.05`, `-3.50`.
pub(crate) fn usd(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", (cents / 100).abs(), (cents % 100).abs())
}

/// The table as CSV: the same rows, columns and order, then the total, then the prices, the
/// instances without a price, the notes and the method (`csv_trailer`).
pub fn to_csv(report: &CostReport) -> String {
    let change = report.previous_total_cents.is_some();
    let mut out = format!(
        "{},kind,cost_usd,share_percent,gpu_hours,unused_usd,without_usage_usd{}\n",
        report.query.group.as_str(),
        if change { ",change_usd" } else { "" }
    );
    for row in &report.rows {
        out.push_str(&format!(
            "{},{},{},{:.2},{:.2},{},{}{}\n",
            crate::model::csv::field(&row.name),
            row.kind.as_str(),
            usd(row.cost_cents),
            row.share_percent,
            row.gpu_hours,
            row.unused_cents.map(usd).unwrap_or_default(),
            usd(row.without_usage_cents),
            if change {
                format!(",{}", row.change_cents.map(usd).unwrap_or_default())
            } else {
                String::new()
            }
        ));
    }
    out.push_str(&format!(
        "total,total,{},100.00,{:.2},{},{}\n",
        usd(report.total_cents),
        report.rows.iter().map(|r| r.gpu_hours).sum::<f64>(),
        usd(report.unused_cents),
        report
            .previous_total_cents
            .map(|before| format!(",{}", usd(report.total_cents - before)))
            .unwrap_or_default(),
    ));
    out.push_str(&csv_trailer(report, header_fields(&out)));
    out
}

/// An hourly rate as a person writes it: up to six decimals, no trailing zeros (a spot price's
/// mean over a fleet is not a round number of cents).
fn rate(usd: f64) -> String {
    let text = format!("{usd:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The fields of a CSV's first line.
fn header_fields(csv: &str) -> usize {
    csv.lines().next().map_or(0, |h| h.split(',').count())
}

/// What a spreadsheet needs besides the rows, as lines of their own after them: the prices used
/// with their source, the instances left out for want of a price, the notes and the method —
/// the name in the first field, what it is in the second (`price`, `unpriced`, `note`,
/// `method`), the other `fields` empty.
pub fn csv_trailer(report: &CostReport, fields: usize) -> String {
    use crate::model::csv::field;
    let pad = ",".repeat(fields.saturating_sub(2));
    let mut out = String::new();
    let mut line = |text: &str, kind: &str| out.push_str(&format!("{},{kind}{pad}\n", field(text)));
    for used in &report.prices {
        let price = &used.price;
        line(
            &format!(
                "{} ({}) at ${}/h, {}, {} {}",
                price.instance_type,
                price.billed(),
                rate(price.usd_per_hour),
                price.provenance(),
                used.instances,
                if used.instances == 1 {
                    "instance"
                } else {
                    "instances"
                }
            ),
            "price",
        );
    }
    for unpriced in &report.unpriced {
        line(
            &format!(
                "{} ({}), {} {} with {} {}: no price, not in the totals",
                unpriced.instance_type,
                unpriced.lifecycle.as_str(),
                unpriced.instances,
                if unpriced.instances == 1 {
                    "instance"
                } else {
                    "instances"
                },
                unpriced.gpus,
                if unpriced.gpus == 1 { "GPU" } else { "GPUs" },
            ),
            "unpriced",
        );
    }
    for note in &report.notes {
        line(note, "note");
    }
    line(&report.rule, "method");
    out
}

#[cfg(test)]
mod tests;
