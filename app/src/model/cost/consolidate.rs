//! The consolidation plan: the cheapest set of instances found that still holds today's GPU
//! allocations, placed with the same rules as the pre-check and the emulator (the `placement`
//! crate: MPS or whole GPUs, a task's MPS containers on one GPU, CPU, memory, host ports,
//! ENIs, `distinctInstance` and `memberOf`), keeping room for each cluster's largest rolling
//! deployment and a spare share of GPU memory. It says which instances to drain, where their
//! tasks would go, what that saves a month at the console's prices, and what it costs in blast
//! radius. It is a plan: nothing here changes the fleet.
//!
//! How it searches: per cluster (tasks never move between clusters), the instances are tried
//! for draining one at a time, the least allocated first (the dearer first among equals); an
//! instance is drained when every task on it — and every task moved onto it before — can be
//! placed on the instances kept, best fit first as ECS's placement here does. The greedy search
//! finds a good plan quickly; it does not prove that no cheaper one exists.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use placement::{
    allocate, find_gpus, fit_score, release,
    resources::{self, Needs, Room},
    GpuAssignment, GpuRequest, GpuSlot,
};
use serde::{Deserialize, Serialize};

use crate::model::{
    cost::{Lifecycle, PriceBook},
    fleet_view::slot,
    rollout::add_container,
    FleetSnapshot, ServiceRef,
};

mod drain;
mod sim;

use self::sim::{cents, overlap, request_mib, Host, Noticed, Sim, Task};
use crate::model::words::DeploymentStrategy;

/// Hours in a month, as AWS's pricing pages count them.
pub const HOURS_PER_MONTH: f64 = super::MONTH_HOURS as f64;

/// Clients one MPS server takes on Volta and later (NVIDIA's MPS documentation). ECS does not
/// enforce it and counts containers, not CUDA contexts, so the plan warns and does not refuse.
pub const MPS_CLIENT_LIMIT: usize = 48;

/// The spare share of GPU memory kept free when no `spare` is given, percent.
pub const DEFAULT_SPARE_PERCENT: u32 = 10;

/// What the plan is asked for: one cluster or all, and the share of GPU memory to keep free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanQuery {
    pub cluster: Option<String>,
    /// GPU memory the instances kept must still have free, percent of theirs (0–90).
    pub spare_percent: u32,
}

impl Default for PlanQuery {
    fn default() -> PlanQuery {
        PlanQuery {
            cluster: None,
            spare_percent: DEFAULT_SPARE_PERCENT,
        }
    }
}

impl PlanQuery {
    /// The query parameters the plan reads.
    pub const KEYS: [&'static str; 2] = ["cluster", "spare"];

    /// Reads `cluster` and `spare` (an integer percent from 0 to 90); anything else is refused
    /// with what exists.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PlanQuery, String> {
        let mut query = PlanQuery::default();
        for (key, value) in params {
            match key {
                "cluster" => {
                    let value = value.trim();
                    query.cluster = (!value.is_empty()).then(|| value.to_string());
                }
                "spare" => {
                    let value = value.trim().trim_end_matches('%').trim();
                    query.spare_percent = match value.parse::<u32>() {
                        Ok(percent) if percent <= 90 => percent,
                        _ => {
                            return Err(format!(
                                "spare {value:?} is not a percentage from 0 to 90: give the share of GPU memory to keep free, e.g. spare=10"
                            ))
                        }
                    };
                }
                other => {
                    return Err(format!(
                        "unknown parameter {other:?}: the plan takes {}",
                        PlanQuery::KEYS.join(" and ")
                    ))
                }
            }
        }
        Ok(query)
    }

    /// The query as URL parameters, without the defaults.
    pub fn to_params(&self) -> String {
        let mut params = Vec::new();
        if let Some(cluster) = &self.cluster {
            params.push(format!(
                "cluster={}",
                crate::model::fleet_view::encode(cluster)
            ));
        }
        if self.spare_percent != DEFAULT_SPARE_PERCENT {
            params.push(format!("spare={}", self.spare_percent));
        }
        params.join("&")
    }
}

/// Services on one GPU and on one MPS server: who a fault takes down together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Blast {
    /// GPUs holding at least one task.
    pub gpus_in_use: u32,
    /// The most services on one GPU.
    pub most_services_per_gpu: u32,
    /// The mean number of services on a GPU in use.
    pub mean_services_per_gpu: f64,
    /// GPUs with three services or more.
    pub gpus_with_three_or_more: u32,
    /// The most services on one instance's MPS server (the AMI runs one per instance).
    pub most_services_per_mps_server: u32,
    /// GPUs with more than [`MPS_CLIENT_LIMIT`] MPS containers.
    pub gpus_over_client_limit: u32,
}

/// Tasks of one service (or one standalone task) leaving an instance, and where they go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The service, or `task <id>` for a task no service started.
    pub service: String,
    pub team: Option<String>,
    pub tasks: u32,
    /// The EC2 instance IDs they would go to.
    pub to: Vec<String>,
}

/// An instance the plan drains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drain {
    pub cluster: String,
    pub ec2_instance_id: String,
    pub instance_type: String,
    pub lifecycle: Lifecycle,
    /// What it costs a month at the console's prices; `None` when its type has no price.
    pub monthly_cents: Option<i64>,
    /// What keeps billing it after it goes ("a Savings Plan", "a Reserved Instance", "a
    /// Capacity Block"): its price is then not in the net saving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeps_billing: Option<String>,
    /// Who retires it once it is drained, and what they do.
    #[serde(default)]
    pub who_acts: String,
    /// GPU memory allocated on it now, MiB, and its GPUs' memory.
    pub allocated_mib: u64,
    pub total_mib: u64,
    pub moves: Vec<Move>,
}

/// One cluster's part of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterPlan {
    pub name: String,
    /// Instances that take tasks now, and after the plan.
    pub instances_before: u32,
    pub instances_after: u32,
    pub monthly_before_cents: i64,
    pub monthly_after_cents: i64,
    /// The room kept for a rollout: "embed-api: 4 more tasks of 8192 MiB (maximumPercent 150)".
    pub headroom: Option<String>,
    /// GPU memory of the instances kept, MiB, and what stays free there after the plan.
    pub kept_mib: u64,
    pub free_after_mib: u64,
    /// The instances not drained because the rest could not hold what is allocated (and the
    /// rollout room) with the spare share free.
    pub held_for_spare: u32,
}

/// The plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationPlan {
    pub query: PlanQuery,
    /// The snapshot it was made from, RFC 3339.
    pub taken_at: String,
    pub clusters: Vec<ClusterPlan>,
    /// Every cluster of the snapshot, for the picker.
    pub all_clusters: Vec<String>,
    pub drains: Vec<Drain>,
    /// What the drained instances cost a month (those with a price): the gross saving.
    pub saving_cents_per_month: i64,
    /// Of the gross saving, what commitments and Capacity Blocks keep billing after the
    /// instances go.
    #[serde(default)]
    pub still_billed_cents_per_month: i64,
    /// The gross saving less what keeps billing.
    #[serde(default)]
    pub net_saving_cents_per_month: i64,
    pub monthly_before_cents: i64,
    pub before: Blast,
    pub after: Blast,
    /// Tasks the plan moves.
    pub tasks_moved: u32,
    /// Things to look at before draining: the MPS client limit, tasks whose CPU and memory
    /// could not be checked, …
    pub warnings: Vec<String>,
    /// What the plan could not know, in words.
    pub unknown: Vec<String>,
    /// Instance types (and how billed) with no price: their instances are kept and not counted.
    pub unpriced: Vec<String>,
}

/// The words the page and the API docs use for how the plan is made.
pub const METHOD: &str = "From today's allocations, per cluster: instances are tried for draining one at a time, the least allocated first (the dearer first among equals). An instance is drained when every task on it, and every task moved onto it before, can be placed on the instances kept, with the same rules as the deployment pre-check — MPS or whole GPUs, all of a task's MPS containers on one GPU, CPU, memory, host ports, ENIs, distinctInstance and memberOf — choosing the best fit as the pre-check does. Before anything moves, each cluster's largest rolling deployment (the extra tasks its maximumPercent lets run beside the old ones) is placed as if it were running, so the instances kept leave room for it; and the instances kept must keep the spare share of their GPU memory free. Savings are at the console's prices over 730 hours a month; the net saving leaves out the instances whose price is a commitment's effective rate (Savings Plan, Reserved Instance) or a Capacity Block's, which keep billing until the commitment ends. The search is greedy: it finds a good plan, not a proven optimum. Nothing is drained from here: drain the instances with ECS (UpdateContainerInstancesState DRAINING) and let the services move their tasks.";

/// Makes the plan for `query` from `snapshot`, priced by `prices`. `needs` gives, per
/// (cluster, service), what one task of the revision the service runs needs besides GPUs;
/// a service missing there is placed by its GPUs only, and the plan says so.
pub fn plan(
    snapshot: &FleetSnapshot,
    prices: &PriceBook,
    needs: &HashMap<(String, String), Needs>,
    query: &PlanQuery,
) -> Result<ConsolidationPlan, String> {
    let all_clusters: Vec<String> = snapshot.clusters.iter().map(|c| c.name.clone()).collect();
    crate::model::cost::check_cluster(query.cluster.as_ref(), &all_clusters)?;
    let mut plan = ConsolidationPlan {
        query: query.clone(),
        taken_at: snapshot.taken_at.clone(),
        all_clusters,
        ..ConsolidationPlan::default()
    };
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut seen = Noticed::default();
    let mut kept_unexplained = 0u32;
    for cluster in snapshot
        .clusters
        .iter()
        .filter(|c| query.cluster.as_ref().is_none_or(|name| &c.name == name))
    {
        let planned = drain::plan_cluster(cluster, prices, needs, query, &mut seen);
        before.push(planned.before);
        after.push(planned.after);
        kept_unexplained += planned.kept_unexplained;
        plan.tasks_moved += planned
            .drains
            .iter()
            .flat_map(|d| &d.moves)
            .map(|m| m.tasks)
            .sum::<u32>();
        plan.drains.extend(planned.drains);
        plan.clusters.push(planned.plan);
    }
    plan.before = combine(&before);
    plan.after = combine(&after);
    totals(&mut plan);
    say_what_is_not_known(&mut plan, &seen, kept_unexplained);
    plan.unpriced = seen.unpriced.into_iter().collect();
    Ok(plan)
}

/// The fleet's monthly cost before and the saving, and the drains dearest first.
fn totals(plan: &mut ConsolidationPlan) {
    plan.monthly_before_cents = plan.clusters.iter().map(|c| c.monthly_before_cents).sum();
    plan.saving_cents_per_month = plan
        .clusters
        .iter()
        .map(|c| c.monthly_before_cents - c.monthly_after_cents)
        .sum();
    plan.still_billed_cents_per_month = plan
        .drains
        .iter()
        .filter(|d| d.keeps_billing.is_some())
        .filter_map(|d| d.monthly_cents)
        .sum();
    plan.net_saving_cents_per_month =
        plan.saving_cents_per_month - plan.still_billed_cents_per_month;
    plan.drains.sort_by(|a, b| {
        b.monthly_cents
            .cmp(&a.monthly_cents)
            .then_with(|| a.ec2_instance_id.cmp(&b.ec2_instance_id))
    });
}

/// The warnings (MPS's client limit, services whose needs are not known) and what the plan
/// could not know.
fn say_what_is_not_known(plan: &mut ConsolidationPlan, seen: &Noticed, kept_unexplained: u32) {
    if plan.after.gpus_over_client_limit > plan.before.gpus_over_client_limit {
        plan.warnings.push(format!(
            "After the plan {} GPUs would carry more than {MPS_CLIENT_LIMIT} MPS containers (now {}). MPS takes {MPS_CLIENT_LIMIT} client CUDA contexts per GPU; ECS does not check it, so a task past it fails when it starts its CUDA context.",
            plan.after.gpus_over_client_limit, plan.before.gpus_over_client_limit
        ));
    }
    if !seen.unchecked_services.is_empty() {
        let listed: Vec<&str> = seen
            .unchecked_services
            .iter()
            .map(String::as_str)
            .take(10)
            .collect();
        plan.warnings.push(format!(
            "The task definitions of {} service(s) could not be read ({}{}), so their CPU, memory, ports and constraints were not checked: only their GPUs.",
            seen.unchecked_services.len(),
            listed.join(", "),
            if seen.unchecked_services.len() > listed.len() { ", …" } else { "" }
        ));
    }
    if seen.standalone > 0 {
        plan.unknown.push(format!(
            "{} task(s) started by no service: they would not move by themselves when their instance drains. Stop and start them elsewhere.",
            seen.standalone
        ));
    }
    if kept_unexplained > 0 {
        plan.unknown.push(format!(
            "{kept_unexplained} instance(s) hold GPU memory that no task the console knows explains: kept, since what holds it could not be moved."
        ));
    }
    if seen.not_placing > 0 {
        plan.unknown.push(format!(
            "{} instance(s) take no tasks now (draining, impaired or agent disconnected): left out of the plan and of its monthly cost ({} a month at the console's prices), which is why the plan's cost before is below the cost review's for the same fleet.",
            seen.not_placing,
            crate::model::cost::money(seen.not_placing_cents)
        ));
    }
    if plan.still_billed_cents_per_month > 0 {
        let kept: BTreeSet<&str> = plan
            .drains
            .iter()
            .filter_map(|d| d.keeps_billing.as_deref())
            .collect();
        plan.warnings.push(format!(
            "{} a month of the saving is not saved until the commitments end: the instances priced by {} keep being billed after they go. The net saving leaves it out.",
            crate::model::cost::money(plan.still_billed_cents_per_month),
            kept.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    plan.unknown.push("Tasks that hold no GPU are not in the fleet snapshot: instances to drain may also run some; ECS moves them with their services.".into());
    plan.unknown.push("The plan is made from today's allocations, not from the period's peak: a service that scales out later needs room the plan does not keep beyond the spare.".into());
}

/// The blast radius over several clusters.
fn combine(parts: &[Blast]) -> Blast {
    let mut all = Blast::default();
    let mut sum = 0.0;
    for part in parts {
        all.gpus_in_use += part.gpus_in_use;
        sum += part.mean_services_per_gpu * f64::from(part.gpus_in_use);
        all.most_services_per_gpu = all.most_services_per_gpu.max(part.most_services_per_gpu);
        all.gpus_with_three_or_more += part.gpus_with_three_or_more;
        all.most_services_per_mps_server = all
            .most_services_per_mps_server
            .max(part.most_services_per_mps_server);
        all.gpus_over_client_limit += part.gpus_over_client_limit;
    }
    if all.gpus_in_use > 0 {
        all.mean_services_per_gpu = sum / f64::from(all.gpus_in_use);
    }
    all
}

/// The plan as CSV: a line per instance to drain and service moving off it (one line for an
/// instance with nothing to move), as the page's table, with what keeps billing it and who must
/// act; then the gross saving, what keeps billing and the net saving.
pub fn to_csv(plan: &ConsolidationPlan) -> String {
    use crate::model::{cost::usd, csv::field};
    let mut out = String::from(
        "cluster,instance,instance_type,lifecycle,monthly_usd,keeps_billing,service,team,tasks,to,who_acts\n",
    );
    let nothing = [Move {
        service: String::new(),
        team: None,
        tasks: 0,
        to: Vec::new(),
    }];
    for drain in &plan.drains {
        // An instance with no GPU task still has its line, as in the table.
        let moves = if drain.moves.is_empty() {
            &nothing[..]
        } else {
            &drain.moves[..]
        };
        for step in moves {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                field(&drain.cluster),
                field(&drain.ec2_instance_id),
                field(&drain.instance_type),
                drain.lifecycle.as_str(),
                drain.monthly_cents.map(usd).unwrap_or_default(),
                field(drain.keeps_billing.as_deref().unwrap_or_default()),
                field(&step.service),
                field(step.team.as_deref().unwrap_or_default()),
                step.tasks,
                field(&step.to.join(" ")),
                field(&drain.who_acts),
            ));
        }
    }
    out.push_str(&format!(
        "total,{} instances,,,{},,,,{},,\n",
        plan.drains.len(),
        usd(plan.saving_cents_per_month),
        plan.tasks_moved
    ));
    out.push_str(&format!(
        "still billed,commitments and Capacity Blocks,,,{},,,,,,\n",
        usd(plan.still_billed_cents_per_month)
    ));
    out.push_str(&format!(
        "net saving,,,,{},,,,,,\n",
        usd(plan.net_saving_cents_per_month)
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
