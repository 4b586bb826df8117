//! Retiring a service: what it frees (its blast radius) before the typed confirmation, and the
//! request that scales it to 0 and deletes it.

use serde::{Deserialize, Serialize};

use crate::model::{FleetSnapshot, ServiceRef};

/// One GPU the service's containers hold now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FreedGpu {
    pub instance_id: String,
    pub instance_type: String,
    pub index: u32,
    /// The GPU memory its containers asked for (the whole GPU's for a whole-GPU container).
    pub memory_mib: u64,
    /// Whether a container of the service has the GPU to itself.
    pub whole: bool,
    /// The services (`cluster/service`, or the task for a task of no service) that stay on it.
    pub others: Vec<String>,
}

/// An instance on which nothing would run any more.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptiedInstance {
    pub instance_id: String,
    pub instance_type: String,
    pub capacity_provider: Option<String>,
    /// What becomes of it, in words: who may retire it, or that it keeps billing.
    pub after: String,
}

/// What retiring a service would stop and free, shown before it is confirmed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RetirePreview {
    pub cluster: String,
    pub service: String,
    pub team: Option<String>,
    /// `family:N` it runs.
    pub runs: String,
    pub desired: u32,
    pub running: u32,
    pub pending: u32,
    /// The GPUs its containers hold, by instance and index.
    pub gpus: Vec<FreedGpu>,
    /// GPU memory freed, MiB, and whole GPUs freed.
    pub memory_mib: u64,
    pub whole_gpus: u32,
    /// Instances that would hold no task afterwards.
    pub emptied: Vec<EmptiedInstance>,
    /// Its share of the GPUs' cost a month at today's allocations, in cents, by the cost
    /// review's rule (memory share); `None` when it could not be priced (`cost_note` says why).
    pub monthly_cents: Option<i64>,
    pub cost_note: String,
    /// Requests for approval of changes of this service, waiting: approving one after the
    /// service is gone fails.
    pub waiting_requests: u64,
    /// A rollout still in progress, in words.
    pub in_flight: Option<String>,
    /// Whether the person asking may retire it, and why not.
    pub allowed: bool,
    pub reason: Option<String>,
}

/// A retirement: the service's name typed again, the desired count the person saw, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetireRequest {
    /// The service's name, typed to confirm.
    pub confirm: String,
    /// The desired count the person saw; refused when ECS has another now.
    #[serde(default)]
    pub expected_desired: Option<u32>,
    #[serde(default)]
    pub description: String,
}

/// What a retirement did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetireAnswer {
    pub audit_id: String,
    /// Whether UpdateService set the desired count to 0 (false when it was 0 already).
    pub scaled_to_zero: bool,
    /// The service's status after DeleteService: `DRAINING` while its tasks stop, then
    /// `INACTIVE`.
    pub status: String,
    pub request_id: Option<String>,
}

/// What becomes of an instance left with no task: who may retire it, or that it bills on.
fn fate_of(instance: &crate::model::InstanceView) -> String {
    match (&instance.capacity_provider, instance.managed_instance) {
        (Some(provider), true) => format!(
            "Managed Instances provider {provider} retires it once it has been idle for its scale-in delay (unless that is -1)"
        ),
        (Some(provider), false) => format!(
            "the Auto Scaling group of {provider} may scale in once managed scaling's target allows"
        ),
        (None, _) => {
            "no capacity provider launched it: it keeps billing until someone terminates it".into()
        }
    }
}

/// The GPUs, memory and emptied instances of `service` of `cluster` in the snapshot (the rest of
/// the preview is filled in by the caller).
pub fn blast_radius(
    snapshot: &FleetSnapshot,
    cluster: &str,
    service: &ServiceRef,
) -> RetirePreview {
    let mut preview = RetirePreview {
        cluster: cluster.to_string(),
        service: service.name.clone(),
        team: service.team.clone(),
        desired: service.desired,
        running: service.running,
        pending: service.pending,
        ..RetirePreview::default()
    };
    let Some(view) = snapshot.clusters.iter().find(|c| c.name == cluster) else {
        return preview;
    };
    let ours = |name: Option<&str>| name == Some(service.name.as_str());
    for instance in &view.instances {
        let mut holds = false;
        let mut others_anywhere = false;
        for gpu in &instance.gpus {
            let (mine, theirs): (Vec<_>, Vec<_>) = gpu
                .containers
                .iter()
                .partition(|c| ours(c.service.as_deref()));
            others_anywhere |= !theirs.is_empty();
            if mine.is_empty() {
                continue;
            }
            holds = true;
            let whole = mine.iter().any(|c| c.whole_gpu);
            let memory_mib = if whole {
                u64::from(gpu.total_memory_mib)
            } else {
                mine.iter()
                    .map(|c| u64::from(c.memory_mib.unwrap_or(0)))
                    .sum()
            };
            let mut others: Vec<String> = theirs
                .iter()
                .map(|c| match &c.service {
                    Some(s) => format!("{cluster}/{s}"),
                    None => format!("task {}", c.task_arn.rsplit('/').next().unwrap_or("")),
                })
                .collect();
            others.sort();
            others.dedup();
            preview.memory_mib += memory_mib;
            preview.whole_gpus += u32::from(whole);
            preview.gpus.push(FreedGpu {
                instance_id: instance.ec2_instance_id.clone(),
                instance_type: instance.instance_type.clone(),
                index: gpu.index,
                memory_mib,
                whole,
                others,
            });
        }
        let host_others = instance
            .host
            .as_ref()
            .is_some_and(|h| h.reserved.iter().any(|r| !ours(r.service.as_deref())));
        if holds && !others_anywhere && !host_others {
            preview.emptied.push(EmptiedInstance {
                instance_id: instance.ec2_instance_id.clone(),
                instance_type: instance.instance_type.clone(),
                capacity_provider: instance.capacity_provider.clone(),
                after: fate_of(instance),
            });
        }
    }
    preview
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{ClusterView, GpuContainer, GpuView, InstanceView, SharingMode};

    fn container(service: &str, memory: Option<u32>) -> GpuContainer {
        GpuContainer {
            task_arn: format!("arn:task/prod/{service}-1"),
            container: "model".into(),
            service: Some(service.into()),
            team: None,
            memory_mib: memory,
            compute_percent: 100,
            whole_gpu: memory.is_none(),
            started_at: None,
        }
    }

    fn gpu(index: u32, containers: Vec<GpuContainer>) -> GpuView {
        GpuView {
            uuid: format!("GPU-{index}"),
            index,
            mode: SharingMode::NvidiaMps,
            total_memory_mib: 24_000,
            remaining_memory_mib: 0,
            compute_allocated_percent: 0,
            containers,
            usage: None,
        }
    }

    #[test]
    fn the_blast_radius_counts_the_services_gpus_and_the_instances_it_empties() {
        let mut shared = InstanceView::of("i-shared", "g6e.12xlarge").with_gpus(vec![
            gpu(
                0,
                vec![
                    container("embed", Some(8_192)),
                    container("rank", Some(4_096)),
                ],
            ),
            gpu(1, vec![container("embed", Some(2_048))]),
        ]);
        shared.capacity_provider = Some("gpu-mi".into());
        let mut alone = InstanceView::of("i-alone", "g6.xlarge")
            .with_gpus(vec![gpu(0, vec![container("embed", None)])]);
        alone.capacity_provider = Some("gpu-mi".into());
        alone.managed_instance = true;
        let untouched = InstanceView::of("i-other", "g6.xlarge")
            .with_gpus(vec![gpu(0, vec![container("rank", None)])]);
        let service = ServiceRef {
            name: "embed".into(),
            desired: 3,
            running: 3,
            team: Some("search".into()),
            ..ServiceRef::default()
        };
        let snapshot = FleetSnapshot {
            clusters: vec![ClusterView {
                name: "prod".into(),
                instances: vec![shared, alone, untouched],
                services: 2,
                service_list: vec![service.clone()],
                running_tasks: 4,
                pending_tasks: 0,
            }],
            taken_at: String::new(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
        };
        let preview = blast_radius(&snapshot, "prod", &service);
        assert_eq!(preview.gpus.len(), 3);
        assert_eq!(preview.memory_mib, 8_192 + 2_048 + 24_000);
        assert_eq!(preview.whole_gpus, 1);
        assert_eq!(preview.gpus[0].others, ["prod/rank"]);
        assert!(preview.gpus[1].others.is_empty());
        // Only the instance it has to itself is left empty; the shared one keeps rank.
        assert_eq!(preview.emptied.len(), 1);
        assert_eq!(preview.emptied[0].instance_id, "i-alone");
        assert!(preview.emptied[0]
            .after
            .contains("Managed Instances provider gpu-mi"));
        assert_eq!(preview.team.as_deref(), Some("search"));
    }
}
