//! The fit check: where one task of a task definition could be placed in the fleet now, how
//! many would fit, and which instance types could ever host it. It places with the same rules
//! as the emulator (the `placement` crate), on the fleet snapshot.

use std::collections::BTreeMap;

use placement::{capacity, find_gpus, GpuRequest, GpuSlot, NoFit, ALL_GPUS};
use serde::{Deserialize, Serialize};

use crate::model::{fleet_view::slot, FleetSnapshot};

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
}

/// Checks a task's GPU request against the clusters of `snapshot` (one, or all).
pub fn fit_check(
    snapshot: &FleetSnapshot,
    cluster: Option<&str>,
    request: &GpuRequest,
) -> FitReport {
    let mut report = FitReport {
        cluster: cluster.map(str::to_string),
        mps_memory_mib: request.mps_memory_mib(),
        whole_gpus: request.whole_gpus(),
        ..FitReport::default()
    };
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
        let Ok(assignment) = find_gpus(&gpus, mps_capable, request) else {
            continue;
        };
        report.placeable_instances += 1;
        report.more_tasks =
            report
                .more_tasks
                .saturating_add(u64::from(capacity(&gpus, mps_capable, request)));
        if report.placeable.len() < LISTED {
            match request {
                GpuRequest::Mps(_) => {
                    // Every GPU of the instance that could take it, not only the one chosen.
                    for (index, gpu) in gpus.iter().enumerate() {
                        if gpu.fits_mps(request.mps_memory_mib()) && report.placeable.len() < LISTED
                        {
                            report
                                .placeable
                                .push(format!("{}:{index}", instance.ec2_instance_id));
                        }
                    }
                }
                _ => {
                    let _ = assignment;
                    report.placeable.push(instance.ec2_instance_id.clone());
                }
            }
        }
    }
    report.instance_types = types.into_values().collect();
    if !report.instance_types.iter().any(|t| t.fits_when_empty) {
        report.never = Some(never_message(&report, request));
    } else if report.placeable_instances == 0
        && matches!(request, GpuRequest::Mps(_))
        && free_total >= u64::from(report.mps_memory_mib)
    {
        report.fragmented = Some(format!(
            "The GPUs have {free_total} MiB free in all, enough for {} MiB, but the most any single GPU has free is {largest_free} MiB: the free memory is fragmented. A task's MPS containers must all fit on one GPU.",
            report.mps_memory_mib
        ));
    }
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
        InstanceView {
            arn: format!("arn:{id}"),
            ec2_instance_id: id.into(),
            instance_type: kind.into(),
            impaired: None,
            mps_capable: true,
            gpu_model: None,
            not_placing: None,
            availability_zone: None,
            lifecycle: None,
            room: None,
            gpus,
        }
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
        let report = fit_check(&snapshot, Some("prod"), &GpuRequest::Mps(vec![8_192]));
        assert_eq!(report.placeable, ["i-1:0", "i-1:2", "i-2:0"]);
        assert_eq!(report.placeable_instances, 2);
        // 10,000 / 8,192 = 1, 22,000 / 8,192 = 2, then 1 on i-2.
        assert_eq!(report.more_tasks, 4);
        assert!(report.never.is_none() && report.fragmented.is_none());
        assert!(report.instance_types.iter().all(|t| t.fits_when_empty));
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
        let report = fit_check(&snapshot, None, &GpuRequest::Mps(vec![30_000, 20_000]));
        assert_eq!(report.placeable_instances, 0);
        let never = report.never.expect("never fits");
        assert!(never.contains("50000 MiB"), "{never}");
        assert!(never.contains("45582 MiB on g6e.xlarge"), "{never}");
        assert!(report.fragmented.is_none());
        let g6e = fit_check(&snapshot, None, &GpuRequest::Mps(vec![40_000]));
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
        let report = fit_check(&snapshot, None, &GpuRequest::Mps(vec![8_000]));
        assert_eq!(report.placeable_instances, 0);
        assert!(report.never.is_none(), "an empty GPU would take it");
        let warning = report.fragmented.expect("fragmented");
        assert!(
            warning.contains("18000 MiB free") && warning.contains("6000 MiB"),
            "{warning}"
        );
        // More than all free memory is no fragmentation: the fleet is full.
        let full = fit_check(&snapshot, None, &GpuRequest::Mps(vec![20_000]));
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
        let whole = fit_check(&snapshot, None, &GpuRequest::Whole(vec![2]));
        assert_eq!(
            whole.placeable,
            ["i-2"],
            "whole GPUs do not need the MPS daemon"
        );
        let mps = fit_check(&snapshot, None, &GpuRequest::Mps(vec![1_000]));
        assert_eq!(
            mps.placeable,
            ["i-1:0"],
            "the impaired instance takes no MPS task"
        );
        let too_many = fit_check(&snapshot, None, &GpuRequest::Whole(vec![4]));
        let never = too_many.never.expect("never");
        assert!(
            never.contains("4 whole GPUs") && never.contains("is 2"),
            "{never}"
        );
    }
}
