//! `gpushare bench precheck`: the capacity pre-check of a rollout on an emulated fleet.

use std::time::Instant;

use anyhow::Context;

use super::{print_table, scenario_snapshot, Row};
use crate::config::BenchEmulatorArgs;

/// `gpushare bench precheck`: the capacity pre-check of a 60-task rollout on the scenario's
/// fleet, for 60 tasks of the service with the most GPU tasks — one rollout with 1.5 times the
/// memory, one that asks a whole GPU's memory (which stalls when the fleet lacks room, and
/// then searches for what would let it through), and that one again on a Managed Instances
/// provider, which launches what the rollout needs.
pub async fn precheck(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    use app::model::rollout::Cluster;

    let snapshot = scenario_snapshot(&args.scenario).await?;
    let ((cluster, service), (tasks, memory, largest)) = busiest_mps_service(&snapshot)?;
    // A 60-task service: 60 of its tasks are the old ones, the others' GPUs stay busy.
    let layout = Cluster::of(&snapshot, &cluster, &service)
        .context("the cluster")?
        .with_service_tasks(60);
    let plans = plans(&snapshot, (&cluster, &service), memory, largest);
    let mut rows = Vec::new();
    for (what, plan) in plans {
        let (times, verdict) = time_pre_check(&layout, &plan)?;
        rows.push(Row {
            what,
            value: format!(
                "p50 {:.2} ms, p95 {:.2} ms ({verdict})",
                times[24].as_secs_f64() * 1000.0,
                times[47].as_secs_f64() * 1000.0,
            ),
        });
    }
    print_table(
        &format!(
            "gpushare bench precheck — scenario {}, service {cluster}/{service} ({tasks} MPS tasks in the snapshot), 50 runs each",
            args.scenario
        ),
        &rows,
    );
    Ok(())
}

/// The three rollouts the bench times: 60 tasks with 1.5 times the memory; one more task than
/// the cluster has empty GPUs, each asking a whole GPU's memory; and that one on a Managed
/// Instances provider.
fn plans(
    snapshot: &app::model::FleetSnapshot,
    (cluster, service): (&str, &str),
    memory: u32,
    largest: u32,
) -> Vec<(String, app::model::rollout::RolloutPlan)> {
    use app::model::rollout::RolloutPlan;
    use placement::GpuRequest;
    let (cluster, service) = (cluster.to_string(), service.to_string());
    let needs = placement::resources::Needs {
        cpu: 1_024,
        memory_mib: 4_096,
        ..Default::default()
    };
    let base = RolloutPlan {
        cluster: cluster.clone(),
        service: service.clone(),
        desired: 60,
        running: 60,
        maximum_percent: 200,
        minimum_healthy_percent: 100,
        old: GpuRequest::Mps(vec![memory]),
        new: GpuRequest::Mps(vec![memory + memory / 2]),
        // CPU and memory besides the GPUs, on every instance.
        old_needs: needs.clone(),
        new_needs: needs,
        strategy: None,
        placement_strategy: Vec::new(),
        growth: None,
    };
    // One more task than the cluster has empty GPUs, each asking a whole GPU's memory: the
    // overlap cannot fit, and the pre-check searches for what would let it through.
    let empty_gpus = snapshot
        .clusters
        .iter()
        .filter(|c| c.name == cluster)
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .filter(|g| g.containers.is_empty() && g.total_memory_mib >= largest)
        .count() as u32;
    let stalling = RolloutPlan {
        desired: empty_gpus + 1,
        new: GpuRequest::Mps(vec![largest]),
        ..base.clone()
    };
    // The same rollout on a Managed Instances provider that may launch any of the emulator's
    // GPU types: it completes with launches instead of stalling.
    let growing = RolloutPlan {
        growth: Some(app::model::rollout::Growth {
            provider: "gpu-sharing-mi".into(),
            source: app::model::rollout::GrowthSource::ManagedInstances {
                candidates: emulator::instance_types::ALL
                    .iter()
                    .map(emulator::elastic::facts)
                    .collect(),
                excluded: Vec::new(),
                fee_note: None,
            },
        }),
        ..stalling.clone()
    };
    vec![
        (
            format!("60 tasks, MPS {memory} → {} MiB", memory + memory / 2),
            base,
        ),
        (
            format!(
                "{} tasks, MPS {memory} → {largest} MiB ({empty_gpus} empty GPUs)",
                empty_gpus + 1
            ),
            stalling,
        ),
        (
            format!(
                "the same on a Managed Instances provider ({} types it may launch)",
                emulator::instance_types::ALL.len()
            ),
            growing,
        ),
    ]
}

/// A service: its cluster and name.
type ServiceKey = (String, String);

/// A service's MPS containers, the memory one of them asks, and its cluster's largest GPU memory.
type Counted = (u32, u32, u32);

/// The service with the most MPS containers in the snapshot: its cluster and name, and its
/// containers, the memory one of them asks, and the largest GPU memory in its cluster.
fn busiest_mps_service(
    snapshot: &app::model::FleetSnapshot,
) -> anyhow::Result<(ServiceKey, Counted)> {
    let mut counts: std::collections::BTreeMap<ServiceKey, Counted> = Default::default();
    for cluster in &snapshot.clusters {
        let largest = cluster
            .instances
            .iter()
            .flat_map(|i| i.gpus.iter())
            .map(|g| g.total_memory_mib)
            .max()
            .unwrap_or(0);
        for container in cluster
            .instances
            .iter()
            .flat_map(|i| i.gpus.iter())
            .flat_map(|g| g.containers.iter())
        {
            if let (Some(service), Some(memory)) = (&container.service, container.memory_mib) {
                let entry = counts
                    .entry((cluster.name.clone(), service.clone()))
                    .or_insert((0, memory, largest));
                entry.0 += 1;
            }
        }
    }
    counts
        .into_iter()
        .max_by_key(|(_, (count, _, _))| *count)
        .context("the scenario has no service on MPS GPUs")
}

/// The pre-check of `plan` run 50 times: the times, sorted, and its verdict in words.
fn time_pre_check(
    layout: &app::model::rollout::Cluster,
    plan: &app::model::rollout::RolloutPlan,
) -> anyhow::Result<(Vec<std::time::Duration>, String)> {
    use app::model::rollout::{pre_check, Verdict};
    let mut times = Vec::with_capacity(50);
    let mut check = None;
    for _ in 0..50 {
        let started = Instant::now();
        check = Some(pre_check(layout, plan));
        times.push(started.elapsed());
    }
    times.sort();
    let check = check.context("ran")?;
    let verdict = match &check.verdict {
        Verdict::Completes => format!(
            "completes in {} {}{}",
            check.steps.len(),
            if check.steps.len() == 1 {
                "step"
            } else {
                "steps"
            },
            check
                .growth
                .as_ref()
                .map(|g| {
                    let launches: Vec<String> = g
                        .launches
                        .iter()
                        .map(|(t, n)| format!("{n} × {t}"))
                        .collect();
                    format!(", launching {}", launches.join(", "))
                })
                .unwrap_or_default()
        ),
        Verdict::Stalls { step, .. } => format!(
            "stalls at step {step}; {} suggestions found",
            check.suggestions.len()
        ),
        Verdict::Never { .. } => "never fits".into(),
    };
    Ok((times, verdict))
}
