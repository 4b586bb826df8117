//! The fit check: where one task of a task definition could be placed in the fleet now, how
//! many would fit, and which instance types could ever host it. It places with the same rules
//! as the emulator (the `placement` crate), on the fleet snapshot: the GPUs, and what ECS
//! checks besides them (instance status, CPU, memory, static host ports, ENIs, `memberOf`).

use std::collections::BTreeMap;

use placement::{
    capacity, find_gpus,
    resources::{self, Needs},
    GpuRequest, GpuSlot, NoFit, ALL_GPUS,
};
use serde::{Deserialize, Serialize};

use crate::model::{fleet_view::slot, rollout::OneLaunch, FleetSnapshot, InstanceView};

/// GPUs or instances listed by name in a report, at most.
pub const LISTED: usize = 20;

/// One instance type of the fleet, and whether an empty instance of it could take the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeFit {
    pub instance_type: String,
    pub gpus_per_instance: u32,
    pub gpu_memory_mib: u32,
    pub fits_when_empty: bool,
}

/// The answer of a fit check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FitReport {
    /// The cluster checked, or every cluster.
    pub cluster: Option<String>,
    /// MPS: the memory the task's GPU containers need together on one GPU, MiB.
    pub mps_memory_mib: u32,
    /// Whole GPUs: the GPUs the task needs on one instance.
    pub whole_gpus: u32,
    /// Where one task could go now: `<EC2 instance ID>:<GPU index>` for MPS, the instance ID
    /// for whole GPUs; the first [`LISTED`].
    pub placeable: Vec<String>,
    /// How many instances could take one task now.
    pub placeable_instances: u32,
    /// How many more tasks would fit now, placed one by one.
    pub more_tasks: u64,
    /// Every instance type of the checked clusters.
    pub instance_types: Vec<TypeFit>,
    /// Why it can never fit, when it cannot (larger than any GPU, more GPUs than any instance).
    pub never: Option<String>,
    /// Free memory would suffice in total but no single GPU has room.
    pub fragmented: Option<String>,
    /// Instances whose GPUs could take the task but which lack something else, by what ran
    /// out: "2 instances out of memory (4096 MiB per task)".
    #[serde(default)]
    pub blocked: Vec<String>,
    /// What besides GPUs a task needs, in words ("1024 CPU units, 4096 MiB memory, an ENI").
    #[serde(default)]
    pub needs: String,
    /// What each capacity provider of the checked clusters would launch for a task that no
    /// instance has room for (a service on that provider), or why it would not.
    #[serde(default)]
    pub growth: Vec<OneLaunch>,
    /// Why `growth` is missing, when the providers could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_unread: Option<String>,
}

impl FitReport {
    /// Adds what the clusters' providers would launch; a task that no instance of the fleet
    /// could ever host but that a provider would launch for no longer "never" fits.
    pub fn with_growth(mut self, growth: Vec<OneLaunch>) -> FitReport {
        if growth.iter().any(|g| g.instance_type.is_some()) {
            self.never = None;
        }
        self.growth = growth;
        self
    }
}

/// What `needs` asks of an instance besides GPUs, in words.
fn needs_in_words(needs: &Needs) -> String {
    let mut parts = vec![
        format!("{} CPU units", needs.cpu),
        format!("{} MiB memory", needs.memory_mib),
    ];
    for port in &needs.tcp_ports {
        parts.push(format!("host port {port}/tcp"));
    }
    for port in &needs.udp_ports {
        parts.push(format!("host port {port}/udp"));
    }
    if needs.awsvpc {
        parts.push("an ENI (awsvpc)".into());
    }
    for expression in &needs.member_of {
        parts.push(format!("memberOf({})", expression.text));
    }
    parts.join(", ")
}

/// Whether a task would fit an empty instance of this one's type, noted per type.
fn note_type(
    types: &mut BTreeMap<String, TypeFit>,
    instance: &InstanceView,
    gpus: &[GpuSlot],
    request: &GpuRequest,
) {
    let empty: Vec<GpuSlot> = gpus
        .iter()
        .map(|g| GpuSlot::idle(g.total_memory_mib))
        .collect();
    let entry = types
        .entry(instance.instance_type.clone())
        .or_insert_with(|| TypeFit {
            instance_type: instance.instance_type.clone(),
            gpus_per_instance: gpus.len() as u32,
            gpu_memory_mib: gpus.iter().map(|g| g.total_memory_mib).max().unwrap_or(0),
            fits_when_empty: false,
        });
    entry.fits_when_empty |= find_gpus(&empty, instance.mps_capable, request).is_ok();
}

/// Lists where a task could go on an instance that takes it: for MPS, every GPU of the
/// instance that could take it, not only the one chosen; otherwise the instance.
fn list_placeable(
    placeable: &mut Vec<String>,
    instance: &InstanceView,
    gpus: &[GpuSlot],
    request: &GpuRequest,
) {
    match request {
        GpuRequest::Mps(_) => {
            for (index, gpu) in gpus.iter().enumerate() {
                if gpu.fits_mps(request.mps_memory_mib()) && placeable.len() < LISTED {
                    placeable.push(format!("{}:{index}", instance.ec2_instance_id));
                }
            }
        }
        _ => placeable.push(instance.ec2_instance_id.clone()),
    }
}

/// What the report concludes: the instances blocked by other resources, and why nothing fits
/// when nothing does (never, or fragmented free memory).
fn conclude(
    report: &mut FitReport,
    blocked: BTreeMap<String, u32>,
    request: &GpuRequest,
    free_total: u64,
    largest_free: u32,
) {
    report.blocked = blocked
        .into_iter()
        .map(|(resource, count)| {
            format!(
                "{count} {} out of {resource}",
                if count == 1 { "instance" } else { "instances" }
            )
        })
        .collect();
    if !report.instance_types.iter().any(|t| t.fits_when_empty) {
        report.never = Some(never_message(report, request));
    } else if report.placeable_instances == 0
        && report.blocked.is_empty()
        && matches!(request, GpuRequest::Mps(_))
        && free_total >= u64::from(report.mps_memory_mib)
    {
        report.fragmented = Some(format!(
            "The GPUs have {free_total} MiB free in all, enough for {} MiB, but the most any single GPU has free is {largest_free} MiB: the free memory is fragmented. A task's MPS containers must all fit on one GPU.",
            report.mps_memory_mib
        ));
    }
}

/// Checks a task's GPU request, and what it `needs` besides GPUs, against the clusters of
/// `snapshot` (one, or all).
pub fn fit_check(
    snapshot: &FleetSnapshot,
    cluster: Option<&str>,
    request: &GpuRequest,
    needs: &Needs,
) -> FitReport {
    let mut report = FitReport {
        cluster: cluster.map(str::to_string),
        mps_memory_mib: request.mps_memory_mib(),
        whole_gpus: request.whole_gpus(),
        needs: needs_in_words(needs),
        ..FitReport::default()
    };
    let mut blocked: BTreeMap<String, u32> = BTreeMap::new();
    let mut types: BTreeMap<String, TypeFit> = BTreeMap::new();
    let mut free_total: u64 = 0;
    let mut largest_free: u32 = 0;
    for instance in snapshot
        .clusters
        .iter()
        .filter(|c| cluster.is_none_or(|name| c.name == name))
        .flat_map(|c| c.instances.iter())
    {
        let gpus: Vec<GpuSlot> = instance.gpus.iter().map(slot).collect();
        let mps_capable = instance.mps_capable && instance.impaired.is_none();
        note_type(&mut types, instance, &gpus, request);
        // DRAINING instances and disconnected agents take nothing.
        if !instance.takes_tasks() {
            continue;
        }
        if mps_capable {
            for gpu in &gpus {
                let free = gpu.largest_mps_request();
                free_total += u64::from(free);
                largest_free = largest_free.max(free);
            }
        }
        if find_gpus(&gpus, mps_capable, request).is_err() {
            continue;
        }
        // What ECS checks besides GPUs, where the snapshot has the instance's room.
        let room_takes = match &instance.room {
            Some(room) => match resources::check(room, needs, 0) {
                Ok(()) => resources::tasks_that_fit(room, needs),
                Err(why) => {
                    *blocked.entry(why.resource()).or_default() += 1;
                    continue;
                }
            },
            None => u32::MAX,
        };
        report.placeable_instances += 1;
        report.more_tasks = report.more_tasks.saturating_add(u64::from(
            capacity(&gpus, mps_capable, request).min(room_takes),
        ));
        if report.placeable.len() < LISTED {
            list_placeable(&mut report.placeable, instance, &gpus, request);
        }
    }
    report.instance_types = types.into_values().collect();
    conclude(&mut report, blocked, request, free_total, largest_free);
    report
}

fn never_message(report: &FitReport, request: &GpuRequest) -> String {
    let where_ = match &report.cluster {
        Some(cluster) => format!("in cluster {cluster}"),
        None => "in the fleet".to_string(),
    };
    let largest = report
        .instance_types
        .iter()
        .max_by_key(|t| t.gpu_memory_mib);
    match (request, largest) {
        (_, None) => format!("There are no GPU instances {where_}."),
        (GpuRequest::Mps(_), Some(largest)) => format!(
            "The task's MPS containers need {} MiB together on one GPU, more than the largest GPU {where_} has ({} MiB on {}). Ask for less memory, or add instances with larger GPUs.",
            report.mps_memory_mib, largest.gpu_memory_mib, largest.instance_type
        ),
        (GpuRequest::Whole(_), Some(_)) => {
            let most = report
                .instance_types
                .iter()
                .max_by_key(|t| t.gpus_per_instance)
                .map(|t| (t.gpus_per_instance, t.instance_type.clone()))
                .unwrap_or_default();
            if report.whole_gpus == ALL_GPUS {
                format!("No instance {where_} can take a task that asks for ALL GPUs.")
            } else {
                format!(
                    "The task needs {} whole GPUs on one instance; the most any instance {where_} has is {} ({}).",
                    report.whole_gpus, most.0, most.1
                )
            }
        }
        (GpuRequest::None, Some(_)) => format!("The task asks for no GPU {where_}."),
    }
}

/// Why one instance cannot take a task, in words.
pub fn explain(no_fit: &NoFit) -> String {
    match no_fit {
        NoFit::NoGpus => "the instance has no GPU".into(),
        NoFit::NoMpsCapability => {
            "the instance cannot share GPUs with MPS (no ecs.capability.gpu-sharing-mps, or its MPS daemon is impaired)".into()
        }
        NoFit::NotEnoughGpuMemory {
            needed_mib,
            largest_free_mib,
        } => format!("needs {needed_mib} MiB on one GPU; the most free is {largest_free_mib} MiB"),
        NoFit::NotEnoughIdleGpus { needed, idle } => {
            format!("needs {needed} idle GPUs; {idle} are idle")
        }
        NoFit::LargerThanAnyGpu {
            needed_mib,
            largest_total_mib,
        } => format!("needs {needed_mib} MiB; its largest GPU has {largest_total_mib} MiB"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterView, GpuView, InstanceView, SharingMode};

    fn gpu(index: u32, mode: SharingMode, total: u32, remaining: u32) -> GpuView {
        GpuView {
            uuid: format!("GPU-{index}"),
            index,
            mode,
            total_memory_mib: total,
            remaining_memory_mib: remaining,
            compute_allocated_percent: 0,
            containers: Vec::new(),
            usage: None,
        }
    }

    fn instance(id: &str, kind: &str, gpus: Vec<GpuView>) -> InstanceView {
        InstanceView::of(id, kind).with_gpus(gpus)
    }

    fn fleet(instances: Vec<InstanceView>) -> FleetSnapshot {
        FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: vec![ClusterView {
                name: "prod".into(),
                instances,
                ..ClusterView::default()
            }],
            unknown_gpu_ids: 0,
        }
    }

    #[test]
    fn mps_lists_every_gpu_with_room_and_counts_the_tasks_that_fit() {
        let snapshot = fleet(vec![
            instance(
                "i-1",
                "g5.12xlarge",
                vec![
                    gpu(0, SharingMode::NvidiaMps, 22_000, 10_000),
                    gpu(1, SharingMode::Dedicated, 22_000, 0),
                    gpu(2, SharingMode::Idle, 22_000, 22_000),
                    gpu(3, SharingMode::NvidiaMps, 22_000, 4_000),
                ],
            ),
            instance(
                "i-2",
                "g5.xlarge",
                vec![gpu(0, SharingMode::NvidiaMps, 22_000, 8_192)],
            ),
        ]);
        let report = fit_check(
            &snapshot,
            Some("prod"),
            &GpuRequest::Mps(vec![8_192]),
            &Needs::default(),
        );
        assert_eq!(report.placeable, ["i-1:0", "i-1:2", "i-2:0"]);
        assert_eq!(report.placeable_instances, 2);
        // 10,000 / 8,192 = 1, 22,000 / 8,192 = 2, then 1 on i-2.
        assert_eq!(report.more_tasks, 4);
        assert!(report.never.is_none() && report.fragmented.is_none());
        assert!(report.instance_types.iter().all(|t| t.fits_when_empty));
    }

    #[test]
    fn cpu_memory_and_enis_bound_the_fit_and_blocked_instances_are_counted() {
        let room = |cpu: u32, memory: u32, enis: Option<u32>| placement::resources::Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            cpu_remaining: cpu,
            memory_remaining_mib: memory,
            enis_free: enis,
            ..Default::default()
        };
        let with_room = |id: &str, room| InstanceView {
            room: Some(room),
            ..instance(
                id,
                "g5.xlarge",
                vec![gpu(0, SharingMode::Idle, 22_000, 22_000)],
            )
        };
        // Each GPU has room for five 4 GB tasks.
        let snapshot = fleet(vec![
            with_room("i-1", room(4_096, 15_000, Some(3))),
            with_room("i-2", room(512, 15_000, Some(3))),
            with_room("i-3", room(4_096, 2_000, Some(3))),
            with_room("i-4", room(4_096, 15_000, Some(0))),
        ]);
        let needs = Needs {
            cpu: 1_024,
            memory_mib: 2_048,
            awsvpc: true,
            ..Needs::default()
        };
        let request = GpuRequest::Mps(vec![4_000]);
        let report = fit_check(&snapshot, None, &request, &needs);
        assert_eq!(report.placeable, ["i-1:0"]);
        // i-1: five by GPU, four by CPU, seven by memory, three by ENIs.
        assert_eq!(report.more_tasks, 3);
        assert_eq!(
            report.blocked,
            [
                "1 instance out of CPU (1024 units per task)",
                "1 instance out of ENI attachment points (awsvpc: one per task)",
                "1 instance out of memory (2048 MiB per task)",
            ]
        );
        assert_eq!(
            report.needs,
            "1024 CPU units, 2048 MiB memory, an ENI (awsvpc)"
        );
        assert!(report.fragmented.is_none(), "not a GPU fragmentation");
        // The same without awsvpc: CPU bounds i-1 and i-4 at four each.
        let bridge = Needs {
            awsvpc: false,
            ..needs
        };
        assert_eq!(fit_check(&snapshot, None, &request, &bridge).more_tasks, 8);
    }

    #[test]
    fn a_request_larger_than_any_gpu_names_the_largest() {
        let snapshot = fleet(vec![
            instance(
                "i-1",
                "g5.xlarge",
                vec![gpu(0, SharingMode::Idle, 22_563, 22_563)],
            ),
            instance(
                "i-2",
                "g6e.xlarge",
                vec![gpu(0, SharingMode::Idle, 45_582, 45_582)],
            ),
        ]);
        let report = fit_check(
            &snapshot,
            None,
            &GpuRequest::Mps(vec![30_000, 20_000]),
            &Needs::default(),
        );
        assert_eq!(report.placeable_instances, 0);
        let never = report.never.expect("never fits");
        assert!(never.contains("50000 MiB"), "{never}");
        assert!(never.contains("45582 MiB on g6e.xlarge"), "{never}");
        assert!(report.fragmented.is_none());
        let g6e = fit_check(
            &snapshot,
            None,
            &GpuRequest::Mps(vec![40_000]),
            &Needs::default(),
        );
        assert!(g6e.never.is_none());
        let types: Vec<_> = g6e
            .instance_types
            .iter()
            .map(|t| (t.instance_type.as_str(), t.fits_when_empty))
            .collect();
        assert_eq!(types, [("g5.xlarge", false), ("g6e.xlarge", true)]);
    }

    #[test]
    fn enough_free_memory_spread_over_gpus_is_fragmentation() {
        let snapshot = fleet(vec![instance(
            "i-1",
            "g5.12xlarge",
            vec![
                gpu(0, SharingMode::NvidiaMps, 22_000, 6_000),
                gpu(1, SharingMode::NvidiaMps, 22_000, 6_000),
                gpu(2, SharingMode::NvidiaMps, 22_000, 6_000),
            ],
        )]);
        let report = fit_check(
            &snapshot,
            None,
            &GpuRequest::Mps(vec![8_000]),
            &Needs::default(),
        );
        assert_eq!(report.placeable_instances, 0);
        assert!(report.never.is_none(), "an empty GPU would take it");
        let warning = report.fragmented.expect("fragmented");
        assert!(
            warning.contains("18000 MiB free") && warning.contains("6000 MiB"),
            "{warning}"
        );
        // More than all free memory is no fragmentation: the fleet is full.
        let full = fit_check(
            &snapshot,
            None,
            &GpuRequest::Mps(vec![20_000]),
            &Needs::default(),
        );
        assert!(full.fragmented.is_none());
    }

    #[test]
    fn whole_gpus_need_idle_gpus_and_impaired_daemons_take_no_mps() {
        let mut impaired = instance(
            "i-2",
            "g5.12xlarge",
            vec![
                gpu(0, SharingMode::Idle, 22_000, 22_000),
                gpu(1, SharingMode::Idle, 22_000, 22_000),
            ],
        );
        impaired.impaired = Some("MPS control daemon is not responding".into());
        let snapshot = fleet(vec![
            instance(
                "i-1",
                "g5.12xlarge",
                vec![
                    gpu(0, SharingMode::Idle, 22_000, 22_000),
                    gpu(1, SharingMode::NvidiaMps, 22_000, 1),
                ],
            ),
            impaired,
        ]);
        let whole = fit_check(
            &snapshot,
            None,
            &GpuRequest::Whole(vec![2]),
            &Needs::default(),
        );
        assert_eq!(
            whole.placeable,
            ["i-2"],
            "whole GPUs do not need the MPS daemon"
        );
        let mps = fit_check(
            &snapshot,
            None,
            &GpuRequest::Mps(vec![1_000]),
            &Needs::default(),
        );
        assert_eq!(
            mps.placeable,
            ["i-1:0"],
            "the impaired instance takes no MPS task"
        );
        let too_many = fit_check(
            &snapshot,
            None,
            &GpuRequest::Whole(vec![4]),
            &Needs::default(),
        );
        let never = too_many.never.expect("never");
        assert!(
            never.contains("4 whole GPUs") && never.contains("is 2"),
            "{never}"
        );
    }
}
