//! Cost review: what the GPU fleet costs at today's allocations, split by team, service,
//! cluster or instance type so that the shares and the idle rows add up to the instances' bill
//! to the cent.
//!
//! The rule, as the page writes it: an instance's hourly price is split equally across its
//! GPUs. A dedicated GPU's cost goes to its container's service. An MPS GPU's cost is split by
//! each container's share of the GPU's memory (memory is what ECS reserves; the compute limit is
//! a cap, not a reservation); the memory nobody holds is idle, counted per cluster. Unused is the
//! part of an allocation the GPU did not use over the usage window, shown beside, never taken off.

pub mod consolidate;
pub mod history;
pub mod holdings;
pub mod prices;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::FleetSnapshot;
pub use history::{Chart, ChartDay, Period, Range, Recorded};
pub use holdings::{Amounts, HoldingKey, HoldingKind, Holdings};
pub use prices::{Lifecycle, Price, PriceBook, PriceFile, SpotQuote};

/// The rule, in the words the page, the CSV's readers and the API docs use.
pub const RULE: &str = "Each instance's hourly price is split equally across its GPUs. A whole (dedicated) GPU's cost goes to the service of the container that holds it. A GPU shared through MPS is split by each container's share of the GPU's memory — memory is what ECS reserves; the compute limit (maxComputePercent) is a cap, not a reservation. Memory nobody holds is idle, counted per cluster (or shared out in proportion, when chosen); what ECS counts as allocated with no known container holding it is a row of its own, never idle. Unused is the part of an allocation the GPU did not use, by 15 minutes of CloudWatch data (memory used on MPS GPUs, utilisation on whole GPUs) — the last 15 minutes for today's allocations, each recorded minute's for a period; it is shown beside the cost, not taken off it. Amounts are rounded to the cent by largest remainder, so the rows add up to the total exactly. Instances without a price are left out of the totals and listed.";

/// The rule with the CPU and memory part, when a share of the price goes to it.
pub fn rule(host_share: f64) -> String {
    if host_share <= 0.0 {
        return RULE.to_string();
    }
    let gpus = format!("{:.0} %", (1.0 - host_share) * 100.0);
    let host = format!("{:.0} %", host_share * 100.0);
    RULE.replacen(
        "Each instance's hourly price is split equally across its GPUs.",
        &format!("{gpus} of each instance's hourly price is split equally across its GPUs; the other {host} pays for its CPU and memory, half split by the CPU units its tasks reserve and half by the memory they reserve (the task definition's task-level cpu and memory, else its containers' cpu and memoryReservation or memory), and what no task reserves is idle."),
        1,
    )
}

/// How the rows are grouped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    #[default]
    Team,
    Service,
    Cluster,
    InstanceType,
}

impl Grouping {
    pub const ALL: [Grouping; 4] = [
        Grouping::Team,
        Grouping::Service,
        Grouping::Cluster,
        Grouping::InstanceType,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Grouping::Team => "team",
            Grouping::Service => "service",
            Grouping::Cluster => "cluster",
            Grouping::InstanceType => "instance_type",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Grouping::Team => "Team",
            Grouping::Service => "Service",
            Grouping::Cluster => "Cluster",
            Grouping::InstanceType => "Instance type",
        }
    }

    pub fn parse(text: &str) -> Result<Grouping, String> {
        Grouping::ALL
            .into_iter()
            .find(|g| g.as_str() == text)
            .ok_or_else(|| {
                format!("group {text:?} is not one of team, service, cluster, instance_type")
            })
    }
}

/// The span the run rate is given for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    Hour,
    Day,
    #[default]
    Month,
}

impl Span {
    pub const ALL: [Span; 3] = [Span::Hour, Span::Day, Span::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Span::Hour => "hour",
            Span::Day => "day",
            Span::Month => "month",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Span::Hour => "an hour",
            Span::Day => "a day",
            Span::Month => "30 days",
        }
    }

    pub fn hours(self) -> u32 {
        match self {
            Span::Hour => 1,
            Span::Day => 24,
            Span::Month => 720,
        }
    }

    pub fn parse(text: &str) -> Result<Span, String> {
        Span::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("span {text:?} is not one of hour, day, month"))
    }
}

/// The column the rows are sorted by, largest first (name: A to Z).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    #[default]
    Cost,
    Name,
    GpuHours,
    Unused,
}

impl SortKey {
    pub const ALL: [SortKey; 4] = [
        SortKey::Cost,
        SortKey::Name,
        SortKey::GpuHours,
        SortKey::Unused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Cost => "cost",
            SortKey::Name => "name",
            SortKey::GpuHours => "gpu_hours",
            SortKey::Unused => "unused",
        }
    }

    pub fn parse(text: &str) -> Result<SortKey, String> {
        SortKey::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("sort {text:?} is not one of cost, name, gpu_hours, unused"))
    }
}

/// What a report asks for; every field has a default, so `/cost` alone is a report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostQuery {
    /// The period: today's allocations (for `span`) or a recorded one.
    pub period: Period,
    /// A custom period's first and last day, `YYYY-MM-DD`.
    pub from: Option<String>,
    pub to: Option<String>,
    pub group: Grouping,
    pub span: Span,
    pub sort: SortKey,
    /// Share each cluster's idle cost out to its rows in proportion to their cost, instead of
    /// idle rows.
    pub share_idle: bool,
    /// Only this cluster.
    pub cluster: Option<String>,
}

impl CostQuery {
    /// The URL parameters a query reads, for the page, the API and their messages.
    pub const KEYS: [&'static str; 8] = [
        "period", "from", "to", "group", "span", "sort", "idle", "cluster",
    ];

    /// From the URL's parameters (page and API alike); an unknown value is an error naming the
    /// ones that exist.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<CostQuery, String> {
        let mut query = CostQuery::default();
        let mut period = None;
        for (key, value) in params {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match key {
                "period" => period = Some(Period::parse(value)?),
                "from" => query.from = Some(day(key, value)?),
                "to" => query.to = Some(day(key, value)?),
                "group" => query.group = Grouping::parse(value)?,
                "span" => {
                    query.span = Span::parse(value)?;
                    // A span is for today's allocations: alone, it asks for them.
                    period.get_or_insert(Period::Now);
                }
                "sort" => query.sort = SortKey::parse(value)?,
                "idle" => {
                    query.share_idle = match value {
                        "row" => false,
                        "share" => true,
                        other => {
                            return Err(format!("idle {other:?} is not row or share"));
                        }
                    }
                }
                "cluster" => query.cluster = Some(value.to_string()),
                _ => {}
            }
        }
        query.period = match period {
            Some(period) => period,
            // Days alone ask for a custom period.
            None if query.from.is_some() || query.to.is_some() => Period::Custom,
            None => Period::default(),
        };
        if query.period != Period::Custom {
            query.from = None;
            query.to = None;
        }
        Ok(query)
    }

    /// This query as URL parameters, defaults left out, for links and the CSV export.
    pub fn to_params(&self) -> String {
        let mut parts = Vec::new();
        let default = CostQuery::default();
        if self.period != default.period {
            parts.push(format!("period={}", self.period.as_str()));
        }
        if self.period == Period::Custom {
            for (key, value) in [("from", &self.from), ("to", &self.to)] {
                if let Some(value) = value {
                    parts.push(format!("{key}={value}"));
                }
            }
        }
        if self.group != default.group {
            parts.push(format!("group={}", self.group.as_str()));
        }
        if self.period == Period::Now && self.span != default.span {
            parts.push(format!("span={}", self.span.as_str()));
        }
        if self.sort != default.sort {
            parts.push(format!("sort={}", self.sort.as_str()));
        }
        if self.share_idle {
            parts.push("idle=share".to_string());
        }
        if let Some(cluster) = &self.cluster {
            parts.push(format!(
                "cluster={}",
                crate::model::fleet_view::encode(cluster)
            ));
        }
        parts.join("&")
    }
}

/// A day as `YYYY-MM-DD`, checked for its shape here (the server checks it is a real day).
fn day(key: &str, value: &str) -> Result<String, String> {
    let parts: Vec<&str> = value.split('-').collect();
    let number = |text: &str, digits: usize, range: std::ops::RangeInclusive<u32>| {
        text.len() == digits
            && text.bytes().all(|b| b.is_ascii_digit())
            && text.parse::<u32>().is_ok_and(|n| range.contains(&n))
    };
    match parts.as_slice() {
        [y, m, d] if number(y, 4, 1970..=9999) && number(m, 2, 1..=12) && number(d, 2, 1..=31) => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "{key} {value:?} is not a day: give it as YYYY-MM-DD, e.g. 2026-11-01"
        )),
    }
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
}

/// The key a holding is counted under.
fn key_of(group: Grouping, key: &HoldingKey) -> String {
    match group {
        Grouping::Team if key.team.is_empty() => "(no team)".to_string(),
        Grouping::Team => key.team.clone(),
        Grouping::Service if key.service.is_empty() => {
            format!("{}/(tasks outside services)", key.cluster)
        }
        Grouping::Service => format!("{}/{}", key.cluster, key.service),
        Grouping::Cluster => key.cluster.clone(),
        Grouping::InstanceType => key.instance_type.clone(),
    }
}

/// A row's exact amounts, before rounding.
#[derive(Default, Clone)]
struct Exact {
    dollars: f64,
    gpu_hours: f64,
    unused: f64,
    with_usage: bool,
    without_usage: f64,
}

/// What one (cluster, instance type, lifecycle)'s capacity costs, and what its holders pay per
/// GPU-hour, CPU unit-hour and memory MiB-hour.
#[derive(Clone, Copy, Debug, Default)]
struct Rates {
    dollars: f64,
    gpu_hours: f64,
    gpu: f64,
    cpu: f64,
    memory: f64,
}

impl Rates {
    /// The rates of `capacity`, which costs `dollars`, with `host_share` of it going to CPU
    /// and memory — when the instances' CPU and memory are known; otherwise all to the GPUs.
    fn of(capacity: &Amounts, dollars: f64, host_share: f64) -> Rates {
        let host_known = capacity.cpu_hours > 0.0 && capacity.host_memory_mib_hours > 0.0;
        let host = if host_share > 0.0 && host_known {
            dollars * host_share
        } else {
            0.0
        };
        let per = |part: f64, hours: f64| if hours > 0.0 { part / hours } else { 0.0 };
        Rates {
            dollars,
            gpu_hours: capacity.gpu_hours,
            gpu: per(dollars - host, capacity.gpu_hours),
            cpu: per(host / 2.0, capacity.cpu_hours),
            memory: per(host / 2.0, capacity.host_memory_mib_hours),
        }
    }
}

impl Exact {
    /// A holding's amounts at `rate`. Unused is of the GPU part only: usage is the GPUs'.
    fn priced(amounts: &Amounts, rate: &Rates) -> Exact {
        Exact {
            dollars: amounts.gpu_hours * rate.gpu
                + amounts.cpu_hours * rate.cpu
                + amounts.host_memory_mib_hours * rate.memory,
            gpu_hours: amounts.gpu_hours,
            unused: amounts.unused_gpu_hours * rate.gpu,
            with_usage: amounts.usage_gpu_hours > 0.0,
            without_usage: (amounts.gpu_hours - amounts.usage_gpu_hours).max(0.0) * rate.gpu,
        }
    }

    fn scaled(&self, factor: f64) -> Exact {
        Exact {
            dollars: self.dollars * factor,
            gpu_hours: self.gpu_hours * factor,
            unused: self.unused * factor,
            with_usage: self.with_usage,
            without_usage: self.without_usage * factor,
        }
    }

    fn merge(&mut self, other: &Exact) {
        self.dollars += other.dollars;
        self.gpu_hours += other.gpu_hours;
        self.unused += other.unused;
        self.with_usage |= other.with_usage;
        self.without_usage += other.without_usage;
    }
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

/// An average count over `hours` from a sum of hours: never 0 for something that was there.
fn average_count(sum_hours: f64, hours: f64) -> u32 {
    if sum_hours <= 0.0 || hours <= 0.0 {
        return 0;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let count = (sum_hours / hours).round().max(1.0) as u32;
    count
}

/// Prices `holdings`, which stand for `hours` hours in all, for `query`: the rows, the totals
/// and what they rest on. The idle rows are what the instances cost less what is held, so the
/// rows add up to Σ instance-hours × price whatever the holdings.
pub fn price(holdings: &Holdings, prices: &PriceBook, query: &CostQuery, hours: f64) -> CostReport {
    type Group = (String, String, String);
    let wanted = |key: &HoldingKey| query.cluster.as_ref().is_none_or(|c| c == &key.cluster);
    // (cluster, type, lifecycle) → what its capacity costs and its rates, for the priced ones.
    let mut rates: BTreeMap<Group, Rates> = BTreeMap::new();
    let mut host_unknown = 0.0;
    let mut instance_dollars = 0.0;
    let mut used: BTreeMap<(String, Lifecycle), (Price, f64)> = BTreeMap::new();
    let mut unpriced: BTreeMap<(String, Lifecycle), (f64, f64)> = BTreeMap::new();
    let (mut gpu_hours, mut instance_hours, mut lifecycle_unknown) = (0.0, 0.0, 0.0);
    for (key, amounts) in holdings {
        if key.kind != HoldingKind::Capacity || !wanted(key) {
            continue;
        }
        // Instances EC2 could not be asked about: priced on demand, and said so.
        let lifecycle = Lifecycle::of(Some(key.lifecycle.as_str()));
        let Some(price) = prices.price(&key.instance_type, lifecycle) else {
            let entry = unpriced
                .entry((key.instance_type.clone(), lifecycle))
                .or_default();
            entry.0 += amounts.instance_hours;
            entry.1 += amounts.gpu_hours;
            continue;
        };
        if key.lifecycle.is_empty() {
            lifecycle_unknown += amounts.instance_hours;
        }
        let dollars = price.usd_per_hour * amounts.instance_hours;
        instance_dollars += dollars;
        instance_hours += amounts.instance_hours;
        gpu_hours += amounts.gpu_hours;
        used.entry((price.instance_type.clone(), lifecycle))
            .or_insert_with(|| (price.clone(), 0.0))
            .1 += amounts.instance_hours;
        let rate = Rates::of(amounts, dollars, prices.host_share);
        if prices.host_share > 0.0 && rate.cpu == 0.0 {
            host_unknown += amounts.instance_hours;
        }
        let group = (
            key.cluster.clone(),
            key.instance_type.clone(),
            key.lifecycle.clone(),
        );
        rates.insert(group, rate);
    }

    // (cluster, key) → exact amounts; unattributed per cluster; what each group's holders took.
    let mut held: BTreeMap<(String, String), Exact> = BTreeMap::new();
    let mut unattributed: BTreeMap<String, Exact> = BTreeMap::new();
    let mut taken: BTreeMap<Group, (f64, f64)> = BTreeMap::new();
    for (key, amounts) in holdings {
        if key.kind == HoldingKind::Capacity || !wanted(key) {
            continue;
        }
        let group = (
            key.cluster.clone(),
            key.instance_type.clone(),
            key.lifecycle.clone(),
        );
        let Some(rate) = rates.get(&group) else {
            continue;
        };
        let exact = Exact::priced(amounts, rate);
        let took = taken.entry(group).or_default();
        took.0 += exact.dollars;
        took.1 += exact.gpu_hours;
        match key.kind {
            HoldingKind::Held => held
                .entry((key.cluster.clone(), key_of(query.group, key)))
                .or_default()
                .merge(&exact),
            _ => unattributed
                .entry(key.cluster.clone())
                .or_default()
                .merge(&exact),
        }
    }
    // Idle: what each cluster's capacity costs less what is held of it — all of it unused by
    // definition, so not counted as unused.
    let mut idle: BTreeMap<String, Exact> = BTreeMap::new();
    for (group, rate) in &rates {
        let (dollars, gpus) = (rate.dollars, rate.gpu_hours);
        let (took_dollars, took_gpus) = taken.get(group).copied().unwrap_or_default();
        let entry = idle.entry(group.0.clone()).or_insert_with(|| Exact {
            with_usage: true,
            ..Exact::default()
        });
        entry.dollars += (dollars - took_dollars).max(0.0);
        entry.gpu_hours += (gpus - took_gpus).max(0.0);
    }
    idle.retain(|_, e| e.dollars > 0.0 || e.gpu_hours > 0.0);

    let idle_dollars: f64 = idle.values().map(|a| a.dollars).sum();
    // Idle shared out: each cluster's idle goes to that cluster's rows by their cost.
    if query.share_idle {
        let mut kept = BTreeMap::new();
        for (cluster, amount) in idle {
            let rows: Vec<(String, String)> = held
                .keys()
                .filter(|(c, _)| c == &cluster)
                .cloned()
                .collect();
            let base: f64 = rows.iter().map(|k| held[k].dollars).sum();
            if base <= 0.0 {
                kept.insert(cluster, amount);
                continue;
            }
            for k in rows {
                let factor = held[&k].dollars / base;
                let share = amount.scaled(factor);
                if let Some(row) = held.get_mut(&k) {
                    row.dollars += share.dollars;
                    row.gpu_hours += share.gpu_hours;
                }
            }
        }
        idle = kept;
    }

    // Rows: allocated by key (summed over clusters), then idle and unattributed per cluster.
    let mut exact: Vec<(String, RowKind, Exact)> = Vec::new();
    let mut by_key: BTreeMap<String, Exact> = BTreeMap::new();
    for ((_, key), amount) in held {
        by_key.entry(key).or_default().merge(&amount);
    }
    exact.extend(by_key.into_iter().map(|(k, a)| (k, RowKind::Allocated, a)));
    exact.extend(idle.into_iter().map(|(c, a)| (c, RowKind::Idle, a)));
    exact.extend(
        unattributed
            .into_iter()
            .map(|(c, a)| (c, RowKind::Unattributed, a)),
    );
    let total_cents = cents(instance_dollars);
    let dollars: Vec<f64> = exact.iter().map(|(_, _, a)| a.dollars).collect();
    let parts = largest_remainder(&dollars, total_cents);
    let mut rows: Vec<CostRow> = exact
        .into_iter()
        .zip(parts)
        .map(|((name, kind, amount), cost_cents)| CostRow {
            name,
            kind,
            cost_cents,
            share_percent: if total_cents > 0 {
                cost_cents as f64 * 100.0 / total_cents as f64
            } else {
                0.0
            },
            gpu_hours: amount.gpu_hours,
            // Idle is unused by definition: it has no "unused" of its own.
            unused_cents: (amount.with_usage && kind != RowKind::Idle)
                .then(|| cents(amount.unused).min(cost_cents)),
            without_usage_cents: cents(amount.without_usage).min(cost_cents),
            change_cents: None,
        })
        .collect();
    sort_rows(&mut rows, query.sort);
    let idle_cents = if query.share_idle {
        cents(idle_dollars)
    } else {
        rows.iter()
            .filter(|r| r.kind == RowKind::Idle)
            .map(|r| r.cost_cents)
            .sum()
    };
    let unused_cents = rows.iter().filter_map(|r| r.unused_cents).sum();
    let mut notes = prices.notes.clone();
    let unknown_types: BTreeSet<String> = unpriced
        .keys()
        .map(|(instance_type, lifecycle)| format!("{instance_type} ({})", lifecycle.as_str()))
        .collect();
    let unknown = average_count(lifecycle_unknown, hours);
    if unknown > 0 {
        notes.push(format!(
            "EC2 could not be read for {unknown} {}, so whether {} spot is not known: priced at the on-demand rate.",
            if unknown == 1 { "instance" } else { "instances" },
            if unknown == 1 { "it is" } else { "they are" }
        ));
    }
    let host_unknown = average_count(host_unknown, hours);
    if host_unknown > 0 {
        notes.push(format!(
            "The CPU and memory of {host_unknown} {} are not known (not recorded then, or not reported): {} whole price went to {} GPUs.",
            if host_unknown == 1 { "instance" } else { "instances" },
            if host_unknown == 1 { "its" } else { "their" },
            if host_unknown == 1 { "its" } else { "their" },
        ));
    }
    if !unknown_types.is_empty() {
        notes.push(format!(
            "No price for {}: those instances are not in the totals. Give their prices in the price file (--prices).",
            unknown_types.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    CostReport {
        query: query.clone(),
        region: prices.region.clone(),
        rows,
        total_cents,
        idle_cents,
        unused_cents,
        gpus: average_count(gpu_hours, hours),
        instances: average_count(instance_hours, hours),
        prices: used
            .into_values()
            .map(|(price, hours_used)| PriceUsed {
                price,
                instances: average_count(hours_used, hours),
            })
            .collect(),
        unpriced: unpriced
            .into_iter()
            .map(|((instance_type, lifecycle), (inst, gpus))| Unpriced {
                instance_type,
                lifecycle,
                instances: average_count(inst, hours),
                gpus: average_count(gpus, hours),
            })
            .collect(),
        notes,
        rule: rule(prices.host_share),
        ..CostReport::default()
    }
}

/// Dollars to whole cents, half away from zero — first to a millionth of a dollar, so that sums
/// that are exactly half a cent in decimal (prices have four decimals) round the same whatever
/// order the float additions took.
fn cents(dollars: f64) -> i64 {
    let micros = (dollars * 1_000_000.0).round();
    #[allow(clippy::cast_possible_truncation)]
    let cents = (micros / 10_000.0).round() as i64;
    cents
}

/// Allocated rows by the key (largest first; names A to Z), then idle and unattributed rows.
fn sort_rows(rows: &mut [CostRow], key: SortKey) {
    let rank = |kind: RowKind| match kind {
        RowKind::Allocated => 0,
        RowKind::Unattributed => 1,
        RowKind::Idle => 2,
    };
    rows.sort_by(|a, b| {
        rank(a.kind)
            .cmp(&rank(b.kind))
            .then_with(|| match key {
                SortKey::Cost => b.cost_cents.cmp(&a.cost_cents),
                SortKey::Name => std::cmp::Ordering::Equal,
                SortKey::GpuHours => b.gpu_hours.total_cmp(&a.gpu_hours),
                SortKey::Unused => b
                    .unused_cents
                    .unwrap_or(-1)
                    .cmp(&a.unused_cents.unwrap_or(-1)),
            })
            .then_with(|| a.name.cmp(&b.name))
    });
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

/// The table as CSV: the same rows, columns and order, then the total.
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
    out
}

#[cfg(test)]
mod tests;
