//! The split itself: holdings priced per instance-hour, shared among the rows by the rule, rounded
//! by largest remainder so that the rows add up to the total, and sorted as asked.

use super::*;

/// The key a holding is counted under.
pub(super) fn key_of(group: Grouping, key: &HoldingKey) -> String {
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
pub(super) struct Exact {
    pub(super) dollars: f64,
    pub(super) gpu_hours: f64,
    pub(super) unused: f64,
    /// Of `unused`, the part on MPS GPUs: an estimate (see [`Amounts`]).
    pub(super) estimated_unused: f64,
    pub(super) with_usage: bool,
    pub(super) without_usage: f64,
}

/// What one (cluster, instance type, lifecycle)'s capacity costs, and what its holders pay per
/// GPU-hour, CPU unit-hour and memory MiB-hour.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rates {
    pub(super) dollars: f64,
    pub(super) gpu_hours: f64,
    pub(super) gpu: f64,
    pub(super) cpu: f64,
    pub(super) memory: f64,
}

impl Rates {
    /// The rates of `capacity`, which costs `dollars`, with `host_share` of it going to CPU
    /// and memory — when the instances' CPU and memory are known; otherwise all to the GPUs.
    pub(super) fn of(capacity: &Amounts, dollars: f64, host_share: f64) -> Rates {
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
    /// A holding's amounts at `rate`, its GPU-hours counted by `rule`. Unused is of the GPU
    /// part only: usage is the GPUs'.
    pub(super) fn priced(amounts: &Amounts, rate: &Rates, rule: SplitRule) -> Exact {
        let gpu_hours = match rule {
            SplitRule::Memory => amounts.gpu_hours,
            SplitRule::Max => amounts.max_rule_gpu_hours,
        };
        // Usage and unused are measured per GPU: a larger share holds more of the same.
        let scale = if amounts.gpu_hours > 0.0 {
            gpu_hours / amounts.gpu_hours
        } else {
            1.0
        };
        Exact {
            dollars: gpu_hours * rate.gpu
                + amounts.cpu_hours * rate.cpu
                + amounts.host_memory_mib_hours * rate.memory,
            gpu_hours,
            unused: amounts.unused_gpu_hours * scale * rate.gpu,
            estimated_unused: amounts.estimated_unused_gpu_hours * scale * rate.gpu,
            with_usage: amounts.usage_gpu_hours > 0.0,
            without_usage: (amounts.gpu_hours - amounts.usage_gpu_hours).max(0.0)
                * scale
                * rate.gpu,
        }
    }

    pub(super) fn scaled(&self, factor: f64) -> Exact {
        Exact {
            dollars: self.dollars * factor,
            gpu_hours: self.gpu_hours * factor,
            unused: self.unused * factor,
            estimated_unused: self.estimated_unused * factor,
            with_usage: self.with_usage,
            without_usage: self.without_usage * factor,
        }
    }

    pub(super) fn merge(&mut self, other: &Exact) {
        self.dollars += other.dollars;
        self.gpu_hours += other.gpu_hours;
        self.unused += other.unused;
        self.estimated_unused += other.estimated_unused;
        self.with_usage |= other.with_usage;
        self.without_usage += other.without_usage;
    }
}

/// An average count over `hours` from a sum of hours: never 0 for something that was there.
pub(super) fn average_count(sum_hours: f64, hours: f64) -> u32 {
    if sum_hours <= 0.0 || hours <= 0.0 {
        return 0;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let count = (sum_hours / hours).round().max(1.0) as u32;
    count
}

mod notes;
use notes::notes;

/// A (cluster, instance type, lifecycle): the capacity that one rate prices.
type Group = (String, String, Option<Lifecycle>);

/// What the instances of the period cost, from the capacity holdings.
#[derive(Default)]
struct Capacity {
    /// Each priced group's rates and what its capacity costs.
    rates: BTreeMap<Group, Rates>,
    /// Σ instance-hours × price.
    dollars: f64,
    gpu_hours: f64,
    instance_hours: f64,
    /// The prices used (by type, lifecycle and rate: a period across sealed months may use two
    /// rates for one type), with the instance-hours each priced.
    used: BTreeMap<(String, Lifecycle, u64), (Price, f64)>,
    /// Types without a price: instance-hours and GPU-hours.
    unpriced: BTreeMap<(String, Lifecycle), (f64, f64)>,
    /// Instance-hours priced on demand because EC2 could not say their lifecycle.
    lifecycle_unknown: f64,
    /// Instance-hours whose CPU and memory were not known, so the GPUs took the whole price.
    host_unknown: f64,
    /// Of `dollars`, the ECS Managed Instances charge, and the Managed Instances' hours it
    /// priced.
    managed_dollars: f64,
    managed_hours: f64,
    /// Managed Instances' hours by type whose charge the price file does not give.
    managed_unpriced: BTreeMap<String, f64>,
    /// Under the larger-share rule: GPU-hours held that count by memory share, as they were
    /// recorded before compute shares were.
    max_rule_unknown: f64,
}

impl Capacity {
    /// Adds another part's capacity (its rates stay with its own split).
    fn absorb(&mut self, other: Capacity) {
        self.dollars += other.dollars;
        self.gpu_hours += other.gpu_hours;
        self.instance_hours += other.instance_hours;
        for (key, (price, hours)) in other.used {
            self.used.entry(key).or_insert_with(|| (price, 0.0)).1 += hours;
        }
        for (key, (instances, gpus)) in other.unpriced {
            let entry = self.unpriced.entry(key).or_default();
            entry.0 += instances;
            entry.1 += gpus;
        }
        self.lifecycle_unknown += other.lifecycle_unknown;
        self.host_unknown += other.host_unknown;
        self.managed_dollars += other.managed_dollars;
        self.managed_hours += other.managed_hours;
        for (key, hours) in other.managed_unpriced {
            *self.managed_unpriced.entry(key).or_default() += hours;
        }
        self.max_rule_unknown += other.max_rule_unknown;
    }
}

/// What the holders took of the priced capacity.
#[derive(Default)]
struct Taken {
    /// (cluster, row key) → exact amounts held.
    held: BTreeMap<(String, String), Exact>,
    /// Per cluster: held by tasks outside any service or team.
    unattributed: BTreeMap<String, Exact>,
    /// Per group: the dollars and GPU-hours its holders took.
    by_group: BTreeMap<Group, (f64, f64)>,
    /// Under the larger-share rule: GPU-hours recorded before compute shares were, so counted
    /// by memory share.
    max_rule_unknown: f64,
}

/// Prices `holdings`, which stand for `hours` hours in all, for `query`: the rows, the totals
/// and what they rest on. The idle rows are what the instances cost less what is held, so the
/// rows add up to Σ instance-hours × price whatever the holdings.
pub fn price(holdings: &Holdings, prices: &PriceBook, query: &CostQuery, hours: f64) -> CostReport {
    price_parts(&[(holdings, prices)], query, hours)
}

/// Prices a period made of parts, each at its own prices (a sealed month's, today's), which
/// stand for `hours` hours in all: each part is split on its own, and the exact amounts added up
/// before rounding, so the rows still add up to the total to the cent.
pub fn price_parts(parts: &[(&Holdings, &PriceBook)], query: &CostQuery, hours: f64) -> CostReport {
    let mut capacity = Capacity::default();
    let mut by_row: BTreeMap<(RowKind, String), Exact> = BTreeMap::new();
    let mut idle_dollars = 0.0;
    let mut book_notes: Vec<String> = Vec::new();
    for (holdings, book) in parts {
        let (part, exact, idle) = split(holdings, book, query);
        capacity.absorb(part);
        for (name, kind, amount) in exact {
            by_row.entry((kind, name)).or_default().merge(&amount);
        }
        idle_dollars += idle;
        for note in &book.notes {
            if !book_notes.contains(note) {
                book_notes.push(note.clone());
            }
        }
    }
    // Allocated rows by key, then idle, then unattributed: the order the rounding breaks ties by.
    let exact: Vec<(String, RowKind, Exact)> = by_row
        .into_iter()
        .map(|((kind, name), amount)| (name, kind, amount))
        .collect();
    let total_cents = cents(capacity.dollars);
    let mut rows = rows(exact, total_cents);
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
    let mut notes = notes(&book_notes, &capacity, hours);
    if exact_estimated(&rows) {
        notes.push(ESTIMATED_UNUSED.to_string());
    }
    let shares: BTreeSet<u64> = parts.iter().map(|(_, b)| b.host_share.to_bits()).collect();
    if shares.len() > 1 {
        notes.push("The part of the price on CPU and memory (--cost-host-share) differs between the period's months: each month is split by its own; the rule below is today's.".to_string());
    }
    let (prices, unpriced) = listed(&mut capacity, hours);
    let last = parts.last().map(|(_, b)| *b);
    let managed_instances_cents = cents(capacity.managed_dollars).min(total_cents);
    CostReport {
        managed_instances_cents,
        query: query.clone(),
        region: parts
            .first()
            .map(|(_, b)| b.region.clone())
            .unwrap_or_default(),
        rows,
        total_cents,
        idle_cents,
        unused_cents,
        gpus: average_count(capacity.gpu_hours, hours),
        instances: average_count(capacity.instance_hours, hours),
        prices,
        unpriced,
        notes,
        rule: rule(last.map_or(0.0, |b| b.host_share), query.split),
        ..CostReport::default()
    }
}

/// The prices used and the types left unpriced, as the report lists them.
fn listed(capacity: &mut Capacity, hours: f64) -> (Vec<PriceUsed>, Vec<Unpriced>) {
    let prices = std::mem::take(&mut capacity.used)
        .into_values()
        .map(|(price, hours_used)| PriceUsed {
            price,
            instances: average_count(hours_used, hours),
        })
        .collect();
    let unpriced = std::mem::take(&mut capacity.unpriced)
        .into_iter()
        .map(|((instance_type, lifecycle), (inst, gpus))| Unpriced {
            instance_type,
            lifecycle,
            instances: average_count(inst, hours),
            gpus: average_count(gpus, hours),
        })
        .collect();
    (prices, unpriced)
}

/// Each row's exact dollars before rounding, by (name, kind): what `price` rounds to the cent.
pub fn exact_dollars(
    holdings: &Holdings,
    prices: &PriceBook,
    query: &CostQuery,
) -> BTreeMap<(String, RowKind), f64> {
    let (_, exact, _) = split(holdings, prices, query);
    exact
        .into_iter()
        .map(|(name, kind, amount)| ((name, kind), amount.dollars))
        .collect()
}

/// The capacity priced, the rows' exact amounts (allocated by key, summed over clusters, then
/// idle and unattributed per cluster), and the idle dollars before any were shared out.
fn split(
    holdings: &Holdings,
    prices: &PriceBook,
    query: &CostQuery,
) -> (Capacity, Vec<(String, RowKind, Exact)>, f64) {
    let mut capacity = capacity(holdings, prices, query);
    let Taken {
        mut held,
        unattributed,
        by_group,
        max_rule_unknown,
    } = taken(holdings, &capacity.rates, query);
    capacity.max_rule_unknown = max_rule_unknown;
    let mut idle = idle(&capacity.rates, &by_group);
    let idle_dollars: f64 = idle.values().map(|a| a.dollars).sum();
    if query.share_idle {
        idle = share_idle(idle, &mut held);
    }
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
    (capacity, exact, idle_dollars)
}

/// Whether `query` covers the holding of `key`.
fn wanted(query: &CostQuery, key: &HoldingKey) -> bool {
    query.cluster.as_ref().is_none_or(|c| c == &key.cluster)
}

/// The group that prices `key`.
fn group_of(key: &HoldingKey) -> Group {
    (
        key.cluster.clone(),
        key.instance_type.clone(),
        key.lifecycle,
    )
}

/// Prices the capacity holdings: each group's rates, and what is priced and what is not.
fn capacity(holdings: &Holdings, prices: &PriceBook, query: &CostQuery) -> Capacity {
    let mut out = Capacity::default();
    for (key, amounts) in holdings {
        if key.kind != HoldingKind::Capacity || !wanted(query, key) {
            continue;
        }
        // Instances EC2 could not be asked about: priced on demand, and said so.
        let lifecycle = Lifecycle::priced_as(key.lifecycle);
        let Some(price) = prices.price(&key.instance_type, lifecycle) else {
            let entry = out
                .unpriced
                .entry((key.instance_type.clone(), lifecycle))
                .or_default();
            entry.0 += amounts.instance_hours;
            entry.1 += amounts.gpu_hours;
            continue;
        };
        if key.lifecycle.is_none() {
            out.lifecycle_unknown += amounts.instance_hours;
        }
        let mut dollars = price.usd_per_hour * amounts.instance_hours;
        if amounts.managed_instance_hours > 0.0 {
            // The charge is per instance type, whatever EC2 bills (on demand or spot).
            let fee = prices
                .price(&key.instance_type, Lifecycle::OnDemand)
                .and_then(|p| p.managed_instances_usd_per_hour);
            match fee {
                Some(fee) => {
                    let charge = fee * amounts.managed_instance_hours;
                    dollars += charge;
                    out.managed_dollars += charge;
                    out.managed_hours += amounts.managed_instance_hours;
                }
                None => {
                    *out.managed_unpriced
                        .entry(key.instance_type.clone())
                        .or_default() += amounts.managed_instance_hours;
                }
            }
        }
        out.dollars += dollars;
        out.instance_hours += amounts.instance_hours;
        out.gpu_hours += amounts.gpu_hours;
        out.used
            .entry((
                price.instance_type.clone(),
                lifecycle,
                price.usd_per_hour.to_bits(),
            ))
            .or_insert_with(|| (price.clone(), 0.0))
            .1 += amounts.instance_hours;
        let rate = Rates::of(amounts, dollars, prices.host_share);
        if prices.host_share > 0.0 && rate.cpu == 0.0 {
            out.host_unknown += amounts.instance_hours;
        }
        out.rates.insert(group_of(key), rate);
    }
    out
}

/// Prices what the holders hold at their group's rates.
fn taken(holdings: &Holdings, rates: &BTreeMap<Group, Rates>, query: &CostQuery) -> Taken {
    let mut out = Taken::default();
    for (key, amounts) in holdings {
        if key.kind == HoldingKind::Capacity || !wanted(query, key) {
            continue;
        }
        let group = group_of(key);
        let Some(rate) = rates.get(&group) else {
            continue;
        };
        if query.split == SplitRule::Max {
            out.max_rule_unknown += amounts.max_rule_unknown_gpu_hours;
        }
        let exact = Exact::priced(amounts, rate, query.split);
        let took = out.by_group.entry(group).or_default();
        took.0 += exact.dollars;
        took.1 += exact.gpu_hours;
        match key.kind {
            HoldingKind::Held => out
                .held
                .entry((key.cluster.clone(), key_of(query.group, key)))
                .or_default()
                .merge(&exact),
            _ => out
                .unattributed
                .entry(key.cluster.clone())
                .or_default()
                .merge(&exact),
        }
    }
    out
}

/// Idle per cluster: what its capacity costs less what is held of it — all of it unused by
/// definition, so not counted as unused.
fn idle(
    rates: &BTreeMap<Group, Rates>,
    taken: &BTreeMap<Group, (f64, f64)>,
) -> BTreeMap<String, Exact> {
    let mut idle: BTreeMap<String, Exact> = BTreeMap::new();
    for (group, rate) in rates {
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
    idle
}

/// Shares each cluster's idle out to that cluster's rows by their cost; the idle of a cluster
/// without rows to take it is kept.
fn share_idle(
    idle: BTreeMap<String, Exact>,
    held: &mut BTreeMap<(String, String), Exact>,
) -> BTreeMap<String, Exact> {
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
    kept
}

/// Why a tenant's unused on an MPS GPU is an estimate, as the page and the exports say it.
pub const ESTIMATED_UNUSED: &str = "Unused on GPUs shared through MPS is an estimate: CloudWatch's GPU metrics are per GPU, and ECS gives per-task GPU metrics only for tasks that hold whole GPUs, so each tenant is given its share of its GPU's unused memory. The GPU's own unused is measured; see it on the GPU and its instance in the fleet view.";

/// Whether any row's unused is in part an estimate.
fn exact_estimated(rows: &[CostRow]) -> bool {
    rows.iter().any(|r| r.estimated_unused_cents > 0)
}

/// The rows from their exact amounts, in cents that add up to `total_cents`.
fn rows(exact: Vec<(String, RowKind, Exact)>, total_cents: i64) -> Vec<CostRow> {
    let dollars: Vec<f64> = exact.iter().map(|(_, _, a)| a.dollars).collect();
    let parts = largest_remainder(&dollars, total_cents);
    exact
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
            estimated_unused_cents: if amount.with_usage && kind != RowKind::Idle {
                cents(amount.estimated_unused)
                    .min(cents(amount.unused))
                    .min(cost_cents)
            } else {
                0
            },
            without_usage_cents: cents(amount.without_usage).min(cost_cents),
            change_cents: None,
        })
        .collect()
}

/// Dollars to whole cents, half away from zero — first to a millionth of a dollar, so that sums
/// that are exactly half a cent in decimal (prices have four decimals) round the same whatever
/// order the float additions took.
pub(super) fn cents(dollars: f64) -> i64 {
    let micros = (dollars * 1_000_000.0).round();
    #[allow(clippy::cast_possible_truncation)]
    let cents = (micros / 10_000.0).round() as i64;
    cents
}

/// Allocated rows by the key (largest first; names A to Z), then idle and unattributed rows.
pub(super) fn sort_rows(rows: &mut [CostRow], key: SortKey) {
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

#[cfg(test)]
mod tests;
