//! What the fleet page shows of a snapshot: the filters and colour mode from its URL, the
//! filtered fleet, the summary, the heatmap colours and one GPU's details. Plain functions of a
//! snapshot, shared by the page and `GET /api/v1/fleet`.

mod colour;
mod detail;
mod filter;
mod overview;
pub mod packing;
mod query;
mod summary;

pub use colour::{colour_value, shade, Compute, Shade, DEFAULT_CONTENTION_THRESHOLD};
pub use detail::{gpu_detail, GpuDetail, GpuKey, MPS_CLIENT_LIMIT};
pub use filter::{
    filter, instance_header, unknown_values, without_unknown, zoom_into, FleetOptions, UnknownValue,
};
pub use overview::FleetOverview;
pub use query::{
    encode, ColourMode, FleetQuery, Grouping, SortKey, Zoom, MAX_BRUSHED, QUERY_PARAMETERS,
};
pub use summary::{slot, ClusterFit, FleetSummary};

/// A small fleet for the tests of this module's parts.
#[cfg(test)]
mod fixture {
    use crate::model::{
        ClusterView, FleetSnapshot, GpuContainer, GpuView, InstanceView, SharingMode,
    };

    pub fn container(service: &str, team: &str, memory: u32, compute: u32) -> GpuContainer {
        GpuContainer {
            task_arn: format!("arn:task/{service}"),
            container: service.into(),
            service: Some(service.into()),
            team: Some(team.into()),
            memory_mib: Some(memory),
            compute_percent: compute,
            whole_gpu: false,
            started_at: None,
        }
    }

    pub fn gpu(
        index: u32,
        mode: SharingMode,
        remaining: u32,
        containers: Vec<GpuContainer>,
    ) -> GpuView {
        GpuView {
            uuid: format!("GPU-{index}"),
            index,
            mode,
            total_memory_mib: 20_000,
            remaining_memory_mib: remaining,
            compute_allocated_percent: containers.iter().map(|c| c.compute_percent).sum(),
            containers,
            usage: None,
        }
    }

    pub fn snapshot() -> FleetSnapshot {
        let instance = |id: &str, kind: &str, impaired: bool, gpus| InstanceView {
            impaired: impaired.then(|| "MPS control daemon is not responding".into()),
            ..InstanceView::of(id, kind)
                .with_arn(format!("arn:ci/{id}"))
                .with_gpus(gpus)
        };
        FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 1,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: vec![
                ClusterView {
                    name: "prod".into(),
                    instances: vec![
                        instance(
                            "i-1",
                            "g5.12xlarge",
                            false,
                            vec![
                                gpu(
                                    0,
                                    SharingMode::NvidiaMps,
                                    8_000,
                                    vec![
                                        container("embed", "search", 8_000, 60),
                                        container("rerank", "search", 4_000, 50),
                                    ],
                                ),
                                gpu(
                                    1,
                                    SharingMode::NvidiaMps,
                                    15_000,
                                    vec![container("ocr", "vision", 5_000, 100)],
                                ),
                                gpu(2, SharingMode::Dedicated, 0, Vec::new()),
                                gpu(3, SharingMode::Idle, 20_000, Vec::new()),
                            ],
                        ),
                        instance(
                            "i-2",
                            "g6.xlarge",
                            true,
                            vec![gpu(0, SharingMode::Idle, 20_000, Vec::new())],
                        ),
                    ],
                    ..ClusterView::default()
                },
                ClusterView {
                    name: "dev".into(),
                    instances: vec![instance(
                        "i-3",
                        "g6.xlarge",
                        false,
                        vec![gpu(
                            0,
                            SharingMode::NvidiaMps,
                            1_000,
                            vec![container("asr", "speech", 19_000, 100)],
                        )],
                    )],
                    ..ClusterView::default()
                },
            ],
            unknown_gpu_ids: 0,
        }
    }
}
