//! Team GPU budgets: what the policy file allows a team on a cluster (GPU memory, optionally whole
//! GPUs and a monthly cost), what the team holds now, and whether a change would take it past the
//! budget — with the arithmetic in words, for the person who asks and the person who says yes.
//!
//! What a team holds on a cluster is Σ over its services (by their team tag) of the desired count
//! × the GPU memory one task of the running revision asks for; a whole GPU counts as the memory
//! of the cluster's largest GPU (ECS may place it on any of them, so the budget counts the most
//! it could take). Requests waiting for approval count as held.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::{fleet::FleetSnapshot, task_definition::GpuSetting};

/// One budget of the policy file: a team on a cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRule {
    pub team: String,
    pub cluster: String,
    /// GPU memory the team's services may ask for on the cluster, in MiB (`"128 GiB"`,
    /// `"4096 MiB"` or a number of MiB in the file).
    #[serde(rename = "gpu_memory", with = "memory_amount")]
    pub gpu_memory_mib: u64,
    /// Whole GPUs (dedicated) the team may hold on the cluster; none: no limit of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_gpus: Option<u32>,
    /// What the team may spend on the cluster's GPUs a month, in cents (`"$20,000"` or a number
    /// of dollars in the file); the cost review shows the burn against it.
    #[serde(
        default,
        rename = "monthly_cost",
        with = "cost_amount",
        skip_serializing_if = "Option::is_none"
    )]
    pub monthly_cost_cents: Option<u64>,
    /// Groups whose members may approve the team's requests on this cluster, besides admins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
}

/// A memory amount as the policy file writes it: `"128 GiB"`, `"4096 MiB"`, `"1 TiB"`, or a
/// number of MiB. Says what to write when it cannot read it.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == ','))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: String = number.chars().filter(|c| !matches!(c, '_' | ',')).collect();
    let hint = "write it as \"128 GiB\", \"4096 MiB\" or a number of MiB";
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not an amount of GPU memory: {hint}"))?;
    let factor = match unit.trim() {
        "" | "MiB" => 1.0,
        "GiB" => 1024.0,
        "TiB" => 1024.0 * 1024.0,
        "GB" | "MB" | "TB" | "G" | "M" | "gb" | "mb" | "Gi" | "Mi" => {
            return Err(format!(
                "{text:?}: the unit {:?} is ambiguous here; GPU memory is counted in binary units, so {hint}",
                unit.trim()
            ))
        }
        other => return Err(format!("{text:?}: unknown unit {other:?}; {hint}")),
    };
    let mib = value * factor;
    if !mib.is_finite() || !(0.0..=1e15).contains(&mib) {
        return Err(format!("{text:?} is out of range; {hint}"));
    }
    if mib.fract() != 0.0 {
        return Err(format!("{text:?} is not a whole number of MiB; {hint}"));
    }
    Ok(mib as u64)
}

/// A monthly cost as the policy file writes it: `"$20,000"`, `"20000.50"`, `"20000 USD"` or a
/// number of dollars; in cents.
pub fn parse_cost(text: &str) -> Result<u64, String> {
    let hint = "write it in dollars, as \"$20,000\" or 20000";
    let trimmed = text.trim();
    let body = trimmed
        .strip_suffix("USD")
        .unwrap_or(trimmed)
        .trim()
        .trim_start_matches('$')
        .replace([',', '_'], "");
    let value: f64 = body
        .parse()
        .map_err(|_| format!("{text:?} is not a monthly cost: {hint}"))?;
    if !value.is_finite() || !(0.0..=1e12).contains(&value) {
        return Err(format!("{text:?} is out of range: {hint}"));
    }
    Ok((value * 100.0).round() as u64)
}

/// A number or a text in the policy file.
#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Integer(i64),
    Float(f64),
    Text(String),
}

mod memory_amount {
    use super::*;

    pub fn serialize<S: Serializer>(mib: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{mib} MiB"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        match Amount::deserialize(deserializer)? {
            Amount::Integer(n) if n >= 0 => Ok(n as u64),
            Amount::Integer(n) => Err(serde::de::Error::custom(format!(
                "gpu_memory {n} is negative; write it as \"128 GiB\""
            ))),
            Amount::Float(f) => parse_memory(&f.to_string()).map_err(serde::de::Error::custom),
            Amount::Text(text) => parse_memory(&text).map_err(serde::de::Error::custom),
        }
    }
}

mod cost_amount {
    use super::*;

    pub fn serialize<S: Serializer>(cents: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match cents {
            Some(cents) => serializer.serialize_str(&format!("{}.{:02}", cents / 100, cents % 100)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        let cents = match Amount::deserialize(deserializer)? {
            Amount::Integer(n) if n >= 0 => Ok(n as u64 * 100),
            Amount::Integer(n) => Err(format!("monthly_cost {n} is negative")),
            Amount::Float(f) => parse_cost(&f.to_string()),
            Amount::Text(text) => parse_cost(&text),
        };
        cents.map(Some).map_err(serde::de::Error::custom)
    }
}

/// What one task of a revision asks of the GPUs: MPS memory, and whole GPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskGpu {
    pub memory_mib: u64,
    pub whole_gpus: u32,
}

impl TaskGpu {
    /// The sum over a task definition's containers' GPU settings.
    pub fn of(settings: &[(String, GpuSetting)]) -> TaskGpu {
        settings
            .iter()
            .fold(TaskGpu::default(), |sum, (_, setting)| match setting {
                GpuSetting::None => sum,
                GpuSetting::Whole { count } => TaskGpu {
                    whole_gpus: sum.whole_gpus + count,
                    ..sum
                },
                GpuSetting::Mps { memory_mib, .. } => TaskGpu {
                    memory_mib: sum.memory_mib + u64::from(*memory_mib),
                    ..sum
                },
            })
    }

    /// The GPU memory one task counts against a budget, a whole GPU as `whole_gpu_mib`.
    pub fn budget_mib(self, whole_gpu_mib: u64) -> u64 {
        self.memory_mib + u64::from(self.whole_gpus) * whole_gpu_mib
    }
}

/// What a budget counts a whole GPU as on `cluster`: the memory of its largest GPU (0 when the
/// cluster has no GPU).
pub fn whole_gpu_mib(snapshot: &FleetSnapshot, cluster: &str) -> u64 {
    snapshot
        .clusters
        .iter()
        .filter(|c| c.name == cluster)
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .map(|g| u64::from(g.total_memory_mib))
        .max()
        .unwrap_or(0)
}

/// One service's part of what its team holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceHolding {
    pub service: String,
    pub desired: u32,
    /// One task's ask; `None` when the running revision could not be read.
    pub per_task: Option<TaskGpu>,
    pub memory_mib: u64,
    pub whole_gpus: u64,
    /// Counted from a change the console sent (or from ECS now) rather than from the fleet
    /// data, which has not shown it yet.
    #[serde(default)]
    pub counts_sent: bool,
}

/// A team's budget on a cluster and what it holds, waits for and has free.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetUse {
    pub team: String,
    pub cluster: String,
    pub budget_mib: u64,
    #[serde(default)]
    pub whole_gpus_budget: Option<u32>,
    #[serde(default)]
    pub monthly_cost_cents: Option<u64>,
    /// What the team's services hold now, GPU memory (whole GPUs counted in) and whole GPUs.
    pub held_mib: u64,
    pub held_whole_gpus: u64,
    /// What its requests waiting for approval would add.
    pub pending_mib: u64,
    pub pending_whole_gpus: u64,
    pub pending_requests: u32,
    /// What a whole GPU counts as on the cluster.
    pub whole_gpu_mib: u64,
    pub services: Vec<ServiceHolding>,
    /// Services whose running revision could not be read: not counted, and said so.
    #[serde(default)]
    pub unknown: Vec<String>,
}

impl BudgetUse {
    /// The budget's memory not held or waiting (0 when past it).
    pub fn free_mib(&self) -> u64 {
        self.budget_mib
            .saturating_sub(self.held_mib + self.pending_mib)
    }

    /// Whether held and pending memory are past the budget.
    pub fn over(&self) -> bool {
        self.held_mib + self.pending_mib > self.budget_mib
    }

    /// Per mille of the budget held, and pending, for a bar (each capped so the two fit).
    pub fn bar(&self) -> (u32, u32) {
        if self.budget_mib == 0 {
            return (
                if self.held_mib > 0 { 1000 } else { 0 },
                if self.pending_mib > 0 && self.held_mib == 0 {
                    1000
                } else {
                    0
                },
            );
        }
        let of = |mib: u64| ((mib.saturating_mul(1000)) / self.budget_mib).min(1000) as u32;
        let held = of(self.held_mib);
        let pending = of(self.pending_mib).min(1000 - held);
        (held, pending)
    }

    /// "holds 96 GiB of 128 GiB on inference-prod (16 GiB more waiting for approval)".
    pub fn holds_words(&self) -> String {
        let mut words = format!(
            "{} holds {} of {} on {}",
            self.team,
            mib_words(self.held_mib),
            mib_words(self.budget_mib),
            self.cluster
        );
        if self.pending_requests > 0 {
            words.push_str(&format!(
                " ({} more in {} request{} waiting for approval)",
                mib_words(self.pending_mib),
                self.pending_requests,
                if self.pending_requests == 1 { "" } else { "s" }
            ));
        }
        if let Some(whole) = self.whole_gpus_budget {
            words.push_str(&format!(
                "; {} of {whole} whole GPU{}",
                self.held_whole_gpus + self.pending_whole_gpus,
                if whole == 1 { "" } else { "s" }
            ));
        }
        if !self.unknown.is_empty() {
            words.push_str(&format!(
                "; not counted because their revision could not be read: {}",
                self.unknown.join(", ")
            ));
        }
        words
    }
}

/// What a change adds to (or frees from) a team's use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub memory_mib: i64,
    pub whole_gpus: i64,
}

impl Delta {
    /// `desired_after` tasks of `after` in place of `desired_before` tasks of `before`.
    pub fn of(
        desired_before: u32,
        before: TaskGpu,
        desired_after: u32,
        after: TaskGpu,
        whole_gpu_mib: u64,
    ) -> Delta {
        let total = |n: u32, t: TaskGpu| {
            (
                i64::from(n) * t.budget_mib(whole_gpu_mib) as i64,
                i64::from(n) * i64::from(t.whole_gpus),
            )
        };
        let (b_mib, b_whole) = total(desired_before, before);
        let (a_mib, a_whole) = total(desired_after, after);
        Delta {
            memory_mib: a_mib - b_mib,
            whole_gpus: a_whole - b_whole,
        }
    }
}

/// The budget's answer to a change: within it, or past it and by how much, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetVerdict {
    /// Whether the change needs someone's approval.
    pub over: bool,
    /// "search holds 96 GiB of 128 GiB on inference-prod; this deploy adds 48 GiB, to 144 GiB:
    /// 16 GiB past the budget."
    pub arithmetic: String,
    /// GPU memory held, waiting and added after the change, for a later look.
    pub after_mib: u64,
    pub after_whole_gpus: u64,
}

/// Whether `delta` (what `what` adds, e.g. "this deploy") takes the team past `usage`'s budget.
/// A change that adds nothing never waits.
pub fn judge(usage: &BudgetUse, delta: Delta, what: &str) -> BudgetVerdict {
    let before = usage.held_mib + usage.pending_mib;
    let after = before.saturating_add_signed(delta.memory_mib);
    let before_whole = usage.held_whole_gpus + usage.pending_whole_gpus;
    let after_whole = before_whole.saturating_add_signed(delta.whole_gpus);
    let memory_over = delta.memory_mib > 0 && after > usage.budget_mib;
    let whole_over = delta.whole_gpus > 0
        && usage
            .whole_gpus_budget
            .is_some_and(|limit| after_whole > u64::from(limit));
    let change = if delta.memory_mib >= 0 {
        format!("{what} adds {}", mib_words(delta.memory_mib as u64))
    } else {
        format!(
            "{what} frees {}",
            mib_words(delta.memory_mib.unsigned_abs())
        )
    };
    let mut arithmetic = format!("{}; {change}, to {}", usage.holds_words(), mib_words(after));
    if memory_over {
        arithmetic.push_str(&format!(
            ": {} past the budget",
            mib_words(after - usage.budget_mib)
        ));
    } else {
        arithmetic.push_str(": within the budget");
    }
    if whole_over {
        arithmetic.push_str(&format!(
            "; and {after_whole} whole GPUs, past the budget of {}",
            usage.whole_gpus_budget.unwrap_or_default()
        ));
    }
    arithmetic.push('.');
    BudgetVerdict {
        over: memory_over || whole_over,
        arithmetic,
        after_mib: after,
        after_whole_gpus: after_whole,
    }
}

/// A team's monthly cost budget on a cluster against what it spent this month, and where the
/// month ends at the rate recorded so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetBurn {
    pub team: String,
    pub cluster: String,
    pub monthly_cents: u64,
    /// What the team's share of the cluster cost from the first of the month (UTC) to now, by
    /// the cost review's rule (idle as its own row, not shared out).
    pub spent_cents: i64,
    /// Hours of this month recorded, and gone by.
    pub recorded_hours: f64,
    pub elapsed_hours: f64,
    pub month_hours: f64,
    /// What it will have spent at the month's end at the recorded rate.
    pub forecast_cents: i64,
}

impl BudgetBurn {
    /// The burn of `spent_cents` over `recorded_hours` of a month of `month_hours` of which
    /// `elapsed_hours` have gone by: the rest of the month at the recorded rate.
    pub fn of(
        team: &str,
        cluster: &str,
        monthly_cents: u64,
        spent_cents: i64,
        recorded_hours: f64,
        elapsed_hours: f64,
        month_hours: f64,
    ) -> BudgetBurn {
        let rest = (month_hours - elapsed_hours).max(0.0);
        let forecast = if recorded_hours > 0.0 {
            spent_cents as f64 + spent_cents as f64 / recorded_hours * rest
        } else {
            spent_cents as f64
        };
        BudgetBurn {
            team: team.to_string(),
            cluster: cluster.to_string(),
            monthly_cents,
            spent_cents,
            recorded_hours,
            elapsed_hours,
            month_hours,
            forecast_cents: forecast.round() as i64,
        }
    }

    /// Whether the forecast goes past the budget.
    pub fn over(&self) -> bool {
        self.forecast_cents > self.monthly_cents as i64
    }

    /// Per mille of the budget spent, and forecast beyond that, for a bar.
    pub fn bar(&self) -> (u32, u32) {
        if self.monthly_cents == 0 {
            return (1000, 0);
        }
        let of = |cents: i64| (cents.max(0) as u64 * 1000 / self.monthly_cents).min(1000) as u32;
        let spent = of(self.spent_cents);
        (spent, of(self.forecast_cents).saturating_sub(spent))
    }

    /// What the burn rests on, when not every hour of the month so far was recorded.
    pub fn note(&self) -> Option<String> {
        (self.recorded_hours + 1.0 < self.elapsed_hours).then(|| {
            format!(
                "{:.0} of the month's {:.0} hours so far were recorded; the unrecorded hours are not in the spend, and the forecast runs the recorded rate to the month's end",
                self.recorded_hours, self.elapsed_hours
            )
        })
    }
}

/// GPU memory in words: `96 GiB`, `1.5 GiB`, `512 MiB`.
pub fn mib_words(mib: u64) -> String {
    if mib >= 1024 && mib.is_multiple_of(1024) {
        format!("{} GiB", mib / 1024)
    } else if mib >= 1024 {
        format!("{:.1} GiB", mib as f64 / 1024.0)
    } else {
        format!("{mib} MiB")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
