//! The numbers at the top of the fleet page: GPUs by mode, memory allocated, compute limits
//! over 100 % and contention, impaired instances, and per cluster the largest MPS request that
//! still fits.

use serde::{Deserialize, Serialize};

use super::Compute;
use crate::model::{FleetSnapshot, GpuView, SharingMode};

/// The largest MPS request that fits on one GPU of a cluster now, and its free memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterFit {
    pub cluster: String,
    pub gpus: u32,
    /// Unallocated memory on GPUs that take MPS containers, MiB.
    pub free_mib: u64,
    /// The largest request that still fits on a single GPU, MiB.
    pub largest_mps_request_mib: u32,
}

/// The numbers at the top of the fleet page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSummary {
    pub instances: u32,
    pub gpus: u32,
    pub idle: u32,
    pub shared: u32,
    pub dedicated: u32,
    pub memory_total_mib: u64,
    pub memory_allocated_mib: u64,
    /// GPUs whose Σ `maxComputePercent` passes 100 % (unset counts 100): information, since
    /// a limit is a cap, not a reservation.
    pub oversubscribed: u32,
    /// Of those, the GPUs busy at or above `contention_threshold` % over the window: their
    /// containers wait for each other.
    #[serde(default)]
    pub contended: u32,
    /// Of those, the GPUs CloudWatch has no utilisation for: contention unknown.
    #[serde(default)]
    pub over_limits_unknown_use: u32,
    /// The utilisation, in percent, at or above which limits over 100 % are contention.
    #[serde(default)]
    pub contention_threshold: u32,
    pub impaired_instances: u32,
    /// GPUs CloudWatch has no usage for.
    pub without_usage: u32,
    pub clusters: Vec<ClusterFit>,
}

impl FleetSummary {
    /// The summary of `snapshot`, contention judged at `threshold` % utilisation.
    pub fn of(snapshot: &FleetSnapshot, threshold: u32) -> FleetSummary {
        let mut summary = FleetSummary {
            contention_threshold: threshold,
            ..FleetSummary::default()
        };
        for cluster in &snapshot.clusters {
            let mut fit = ClusterFit {
                cluster: cluster.name.clone(),
                gpus: 0,
                free_mib: 0,
                largest_mps_request_mib: 0,
            };
            for instance in &cluster.instances {
                summary.instances += 1;
                summary.impaired_instances += u32::from(instance.impaired.is_some());
                for gpu in &instance.gpus {
                    summary.gpus += 1;
                    fit.gpus += 1;
                    match gpu.mode {
                        SharingMode::Idle => summary.idle += 1,
                        SharingMode::NvidiaMps => summary.shared += 1,
                        SharingMode::Dedicated => summary.dedicated += 1,
                    }
                    summary.memory_total_mib += u64::from(gpu.total_memory_mib);
                    summary.memory_allocated_mib += u64::from(match gpu.mode {
                        SharingMode::Dedicated => gpu.total_memory_mib,
                        _ => gpu.allocated_memory_mib(),
                    });
                    match Compute::of(gpu, threshold) {
                        Compute::WithinLimits => {}
                        Compute::OverLimits => summary.oversubscribed += 1,
                        Compute::Contended => {
                            summary.oversubscribed += 1;
                            summary.contended += 1;
                        }
                        Compute::OverLimitsUnknownUse => {
                            summary.oversubscribed += 1;
                            summary.over_limits_unknown_use += 1;
                        }
                    }
                    summary.without_usage += u32::from(gpu.usage.is_none());
                    // An impaired MPS daemon, an instance without GPU sharing, a DRAINING
                    // instance or a disconnected agent takes no MPS containers.
                    if instance.impaired.is_none() && instance.mps_capable && instance.takes_tasks()
                    {
                        let slot = slot(gpu);
                        let largest = slot.largest_mps_request();
                        fit.free_mib += u64::from(largest);
                        fit.largest_mps_request_mib = fit.largest_mps_request_mib.max(largest);
                    }
                }
            }
            summary.clusters.push(fit);
        }
        summary
    }
}

/// A GPU as the placement rules see it.
pub fn slot(gpu: &GpuView) -> placement::GpuSlot {
    placement::GpuSlot {
        mode: gpu.mode,
        total_memory_mib: gpu.total_memory_mib,
        remaining_memory_mib: gpu.remaining_memory_mib,
        container_count: gpu.containers.len() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fleet_view::fixture::snapshot;

    #[test]
    fn the_summary_counts_modes_memory_oversubscription_and_fragmentation() {
        let summary = FleetSummary::of(&snapshot(), 90);
        assert_eq!(
            (
                summary.gpus,
                summary.idle,
                summary.shared,
                summary.dedicated
            ),
            (6, 2, 3, 1)
        );
        assert_eq!(summary.memory_total_mib, 120_000);
        // 12,000 + 5,000 + a whole GPU 20,000 + 19,000.
        assert_eq!(summary.memory_allocated_mib, 56_000);
        assert_eq!(summary.oversubscribed, 1, "60 + 50 > 100");
        assert_eq!(
            (summary.contended, summary.over_limits_unknown_use),
            (0, 1),
            "no utilisation: contention unknown, not assumed"
        );
        assert_eq!(summary.impaired_instances, 1);
        assert_eq!(summary.without_usage, 6);
        let prod = &summary.clusters[0];
        // The impaired instance's idle GPU takes no MPS containers; the idle GPU 3 does.
        assert_eq!(prod.largest_mps_request_mib, 20_000);
        assert_eq!(prod.free_mib, 8_000 + 15_000 + 20_000);
        assert_eq!(summary.clusters[1].largest_mps_request_mib, 1_000);

        // Busy over the window: the same GPU is contended, and only at the threshold.
        let mut busy = snapshot();
        for gpu in busy.clusters[0].instances[0].gpus.iter_mut() {
            gpu.usage = Some(crate::model::GpuUsage {
                utilization_percent: Some(crate::model::Reading {
                    latest: 10.0,
                    average: 93.0,
                }),
                memory_used_mib: None,
            });
        }
        let at = |threshold| {
            let s = FleetSummary::of(&busy, threshold);
            (s.oversubscribed, s.contended, s.over_limits_unknown_use)
        };
        assert_eq!(at(90), (1, 1, 0));
        assert_eq!(at(95), (1, 0, 0));

        // An instance without GPU sharing takes no MPS containers either.
        let mut unshared = snapshot();
        for instance in &mut unshared.clusters[0].instances {
            instance.mps_capable = false;
        }
        let summary = FleetSummary::of(&unshared, 90);
        assert_eq!(summary.clusters[0].largest_mps_request_mib, 0);
        assert_eq!(summary.clusters[0].free_mib, 0);
        assert_eq!(summary.gpus, 6, "its GPUs still count");
    }
}
