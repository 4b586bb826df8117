//! What the fleet page shows of a snapshot: the filters and colour mode from its URL, the
//! filtered fleet, the summary, the heatmap colours and one GPU's details. Plain functions of a
//! snapshot, shared by the page and `GET /api/v1/fleet`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::model::{ClusterView, FleetSnapshot, GpuMode, GpuView, InstanceView};

/// How the heatmap colours a GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColourMode {
    /// GPU memory ECS allocated, % of the GPU's memory.
    #[default]
    Memory,
    /// Σ `maxComputePercent` of the GPU's containers (unset counts 100); past 100 % is
    /// oversubscribed.
    Compute,
    /// GPU utilisation from CloudWatch, latest minute.
    Utilization,
    /// GPU memory in use from CloudWatch, % of the GPU's memory.
    MemoryUsed,
    /// Memory allocated but not in use, % of the GPU's memory.
    Unused,
}

impl ColourMode {
    pub const ALL: [ColourMode; 5] = [
        ColourMode::Memory,
        ColourMode::Compute,
        ColourMode::Utilization,
        ColourMode::MemoryUsed,
        ColourMode::Unused,
    ];

    /// Its spelling in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            ColourMode::Memory => "memory",
            ColourMode::Compute => "compute",
            ColourMode::Utilization => "utilization",
            ColourMode::MemoryUsed => "memory-used",
            ColourMode::Unused => "unused",
        }
    }

    /// What the legend calls it.
    pub fn label(self) -> &'static str {
        match self {
            ColourMode::Memory => "Memory allocated %",
            ColourMode::Compute => "Compute allocated % (Σ maxComputePercent)",
            ColourMode::Utilization => "GPU utilisation % (CloudWatch)",
            ColourMode::MemoryUsed => "Memory used % (CloudWatch)",
            ColourMode::Unused => "Allocated but unused memory %",
        }
    }

    pub fn parse(value: &str) -> Option<ColourMode> {
        ColourMode::ALL.into_iter().find(|m| m.as_str() == value)
    }
}

/// A sharing mode's spelling in the ECS API and the URL.
pub fn mode_str(mode: GpuMode) -> &'static str {
    match mode {
        GpuMode::Idle => "IDLE",
        GpuMode::NvidiaMps => "NVIDIA_MPS",
        GpuMode::Dedicated => "DEDICATED",
    }
}

pub fn parse_mode(value: &str) -> Option<GpuMode> {
    [GpuMode::Idle, GpuMode::NvidiaMps, GpuMode::Dedicated]
        .into_iter()
        .find(|m| mode_str(*m) == value)
}

/// The fleet page's view: filters, colour mode and the selected GPU, as its URL carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FleetQuery {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    pub mode: Option<GpuMode>,
    #[serde(default)]
    pub colour: ColourMode,
    /// The selected GPU: `<EC2 instance ID>:<index>` or its UUID.
    pub gpu: Option<String>,
}

/// The URL parameters the fleet page reads.
pub const QUERY_PARAMETERS: [&str; 7] = [
    "cluster",
    "team",
    "service",
    "instance_type",
    "mode",
    "colour",
    "gpu",
];

impl FleetQuery {
    /// Reads the URL's parameters leniently: a malformed value is dropped, and a note says
    /// what was wrong, so the page shows a corrected view rather than an error.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> (FleetQuery, Vec<String>) {
        let mut notes = Vec::new();
        let text = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mode = text("mode").and_then(|value| {
            let mode = parse_mode(&value);
            if mode.is_none() {
                notes.push(format!(
                    "Sharing mode {value:?} does not exist; showing every mode. Use IDLE, NVIDIA_MPS or DEDICATED."
                ));
            }
            mode
        });
        let colour = match text("colour") {
            None => ColourMode::default(),
            Some(value) => ColourMode::parse(&value).unwrap_or_else(|| {
                notes.push(format!(
                    "Colour mode {value:?} does not exist; showing memory allocated. Use {}.",
                    ColourMode::ALL.map(ColourMode::as_str).join(", ")
                ));
                ColourMode::default()
            }),
        };
        let query = FleetQuery {
            cluster: text("cluster"),
            team: text("team"),
            service: text("service"),
            instance_type: text("instance_type"),
            mode,
            colour,
            gpu: text("gpu"),
        };
        (query, notes)
    }

    /// The URL query string for this view, `?` included, or empty.
    pub fn to_query_string(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (name, value) in [
            ("cluster", &self.cluster),
            ("team", &self.team),
            ("service", &self.service),
            ("instance_type", &self.instance_type),
        ] {
            if let Some(value) = value {
                pairs.push((name, value));
            }
        }
        if let Some(mode) = self.mode {
            pairs.push(("mode", mode_str(mode)));
        }
        if self.colour != ColourMode::default() {
            pairs.push(("colour", self.colour.as_str()));
        }
        if let Some(gpu) = &self.gpu {
            pairs.push(("gpu", gpu));
        }
        if pairs.is_empty() {
            return String::new();
        }
        let encoded: Vec<String> = pairs
            .into_iter()
            .map(|(name, value)| format!("{name}={}", encode(value)))
            .collect();
        format!("?{}", encoded.join("&"))
    }

    /// Whether any filter narrows the fleet.
    pub fn filters(&self) -> bool {
        self.cluster.is_some()
            || self.team.is_some()
            || self.service.is_some()
            || self.instance_type.is_some()
            || self.mode.is_some()
    }
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// What exists in a snapshot, for the filter menus and for saying what exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetOptions {
    pub clusters: Vec<String>,
    pub teams: Vec<String>,
    pub services: Vec<String>,
    pub instance_types: Vec<String>,
}

impl FleetOptions {
    pub fn of(snapshot: &FleetSnapshot) -> FleetOptions {
        let mut teams = BTreeSet::new();
        let mut services = BTreeSet::new();
        let mut types = BTreeSet::new();
        for instance in snapshot.clusters.iter().flat_map(|c| c.instances.iter()) {
            types.insert(instance.instance_type.as_str());
            for container in instance.gpus.iter().flat_map(|g| g.containers.iter()) {
                teams.extend(container.team.as_deref());
                services.extend(container.service.as_deref());
            }
        }
        let owned = |set: BTreeSet<&str>| set.into_iter().map(str::to_string).collect();
        FleetOptions {
            clusters: snapshot.clusters.iter().map(|c| c.name.clone()).collect(),
            teams: owned(teams),
            services: owned(services),
            instance_types: owned(types),
        }
    }
}

/// A filter value that names nothing in the fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownValue {
    /// The URL parameter.
    pub parameter: &'static str,
    pub value: String,
    /// What exists for that parameter.
    pub existing: Vec<String>,
}

impl UnknownValue {
    /// "There is no cluster "x"; the clusters are: a, b."
    pub fn message(&self) -> String {
        let what = match self.parameter {
            "cluster" => "cluster",
            "team" => "team with GPU containers",
            "service" => "service with GPU containers",
            _ => "instance type",
        };
        let existing = if self.existing.is_empty() {
            "there are none".to_string()
        } else {
            format!("they are: {}", self.existing.join(", "))
        };
        format!("There is no {what} {:?}; {existing}.", self.value)
    }
}

/// The filter values of `query` that name nothing in `options`.
pub fn unknown_values(query: &FleetQuery, options: &FleetOptions) -> Vec<UnknownValue> {
    [
        ("cluster", &query.cluster, &options.clusters),
        ("team", &query.team, &options.teams),
        ("service", &query.service, &options.services),
        (
            "instance_type",
            &query.instance_type,
            &options.instance_types,
        ),
    ]
    .into_iter()
    .filter_map(|(parameter, value, existing)| {
        let value = value.as_ref()?;
        (!existing.contains(value)).then(|| UnknownValue {
            parameter,
            value: value.clone(),
            existing: existing.clone(),
        })
    })
    .collect()
}

/// Drops the filters that name nothing, so the page shows what exists instead of nothing.
pub fn without_unknown(query: &FleetQuery, unknown: &[UnknownValue]) -> FleetQuery {
    let mut query = query.clone();
    for u in unknown {
        match u.parameter {
            "cluster" => query.cluster = None,
            "team" => query.team = None,
            "service" => query.service = None,
            _ => query.instance_type = None,
        }
    }
    query
}

/// Whether a GPU passes the GPU-level filters (mode, team, service).
fn gpu_matches(gpu: &GpuView, query: &FleetQuery) -> bool {
    query.mode.is_none_or(|m| gpu.mode == m)
        && query
            .team
            .as_ref()
            .is_none_or(|team| gpu.containers.iter().any(|c| c.team.as_ref() == Some(team)))
        && query.service.as_ref().is_none_or(|service| {
            gpu.containers
                .iter()
                .any(|c| c.service.as_ref() == Some(service))
        })
}

/// The clusters, instances and GPUs that match every filter of `query`. An instance stays when
/// any of its GPUs matches; with a GPU-level filter, instances with none go.
pub fn filter(snapshot: &FleetSnapshot, query: &FleetQuery) -> FleetSnapshot {
    let gpu_level = query.mode.is_some() || query.team.is_some() || query.service.is_some();
    let clusters = snapshot
        .clusters
        .iter()
        .filter(|c| query.cluster.as_ref().is_none_or(|name| &c.name == name))
        .map(|c| ClusterView {
            name: c.name.clone(),
            services: c.services,
            service_list: c.service_list.clone(),
            running_tasks: c.running_tasks,
            pending_tasks: c.pending_tasks,
            instances: c
                .instances
                .iter()
                .filter(|i| {
                    query
                        .instance_type
                        .as_ref()
                        .is_none_or(|t| &i.instance_type == t)
                })
                .filter_map(|i| {
                    let gpus: Vec<GpuView> = i
                        .gpus
                        .iter()
                        .filter(|g| gpu_matches(g, query))
                        .cloned()
                        .collect();
                    (!gpu_level || !gpus.is_empty()).then(|| InstanceView {
                        gpus,
                        ..instance_header(i)
                    })
                })
                .collect(),
        })
        .filter(|c| !gpu_level || !c.instances.is_empty())
        .collect();
    FleetSnapshot {
        taken_at: snapshot.taken_at.clone(),
        api_calls: snapshot.api_calls,
        cloudwatch_calls: snapshot.cloudwatch_calls,
        usage_error: snapshot.usage_error.clone(),
        clusters,
        unknown_gpu_ids: snapshot.unknown_gpu_ids,
    }
}

/// An instance without its GPUs.
fn instance_header(instance: &InstanceView) -> InstanceView {
    InstanceView {
        arn: instance.arn.clone(),
        ec2_instance_id: instance.ec2_instance_id.clone(),
        instance_type: instance.instance_type.clone(),
        impaired: instance.impaired.clone(),
        mps_capable: instance.mps_capable,
        gpu_model: instance.gpu_model.clone(),
        gpus: Vec::new(),
    }
}

/// A GPU's value in a colour mode, in percent; `None` when CloudWatch has no data for it.
pub fn colour_value(gpu: &GpuView, mode: ColourMode) -> Option<f64> {
    let total = f64::from(gpu.total_memory_mib.max(1));
    let allocated = match gpu.mode {
        GpuMode::Dedicated => f64::from(gpu.total_memory_mib),
        _ => f64::from(gpu.allocated_memory_mib()),
    };
    let used = || gpu.usage?.memory_used_mib.map(|r| r.latest);
    match mode {
        ColourMode::Memory => Some(allocated / total * 100.0),
        ColourMode::Compute => Some(f64::from(match gpu.mode {
            GpuMode::Dedicated => 100,
            _ => gpu.compute_allocated_percent,
        })),
        ColourMode::Utilization => gpu.usage?.utilization_percent.map(|r| r.latest),
        ColourMode::MemoryUsed => used().map(|u| (u / total * 100.0).min(100.0)),
        ColourMode::Unused => used().map(|u| ((allocated - u) / total * 100.0).clamp(0.0, 100.0)),
    }
}

/// How a heatmap cell is coloured: one of ten steps, oversubscribed, or no data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shade {
    Step(u8),
    Oversubscribed,
    NoData,
}

impl Shade {
    pub fn of(value: Option<f64>) -> Shade {
        match value {
            None => Shade::NoData,
            Some(v) if v > 100.0 => Shade::Oversubscribed,
            Some(v) => Shade::Step(((v / 10.0).floor().max(0.0) as u8).min(9)),
        }
    }

    /// Its CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Shade::Step(n) => {
                ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"][usize::from(n.min(9))]
            }
            Shade::Oversubscribed => "ov",
            Shade::NoData => "nd",
        }
    }
}

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
    /// GPUs whose Σ `maxComputePercent` passes 100 %.
    pub oversubscribed: u32,
    pub impaired_instances: u32,
    /// GPUs CloudWatch has no usage for.
    pub without_usage: u32,
    pub clusters: Vec<ClusterFit>,
}

impl FleetSummary {
    pub fn of(snapshot: &FleetSnapshot) -> FleetSummary {
        let mut summary = FleetSummary::default();
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
                        GpuMode::Idle => summary.idle += 1,
                        GpuMode::NvidiaMps => summary.shared += 1,
                        GpuMode::Dedicated => summary.dedicated += 1,
                    }
                    summary.memory_total_mib += u64::from(gpu.total_memory_mib);
                    summary.memory_allocated_mib += u64::from(match gpu.mode {
                        GpuMode::Dedicated => gpu.total_memory_mib,
                        _ => gpu.allocated_memory_mib(),
                    });
                    summary.oversubscribed += u32::from(gpu.compute_allocated_percent > 100);
                    summary.without_usage += u32::from(gpu.usage.is_none());
                    // An impaired MPS daemon takes no MPS containers.
                    if instance.impaired.is_none() {
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
        mode: match gpu.mode {
            GpuMode::Idle => placement::SharingMode::Idle,
            GpuMode::NvidiaMps => placement::SharingMode::NvidiaMps,
            GpuMode::Dedicated => placement::SharingMode::Dedicated,
        },
        total_memory_mib: gpu.total_memory_mib,
        remaining_memory_mib: gpu.remaining_memory_mib,
        container_count: gpu.containers.len() as u32,
    }
}

/// A GPU with where it is and what a fault on it would hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuDetail {
    pub cluster: String,
    /// The instance without its GPUs.
    pub instance: InstanceView,
    pub gpu: GpuView,
    /// Services on this GPU: a fatal GPU fault in one client reaches every client on it.
    pub gpu_services: Vec<String>,
    /// Services on the instance's other MPS GPUs, which share its MPS control daemon.
    pub daemon_services: Vec<String>,
    /// Teams on this GPU.
    pub teams: Vec<String>,
    /// The key that selects it: `<EC2 instance ID>:<index>`.
    pub key: String,
}

/// MPS allows 48 client CUDA contexts per GPU on Volta and later.
pub const MPS_CLIENT_LIMIT: usize = 48;

/// Finds a GPU by `<EC2 instance ID>:<index>` or by its UUID.
pub fn gpu_detail(snapshot: &FleetSnapshot, key: &str) -> Option<GpuDetail> {
    let (host, index) = match key.rsplit_once(':') {
        Some((host, index)) => (Some(host), index.parse::<u32>().ok()),
        None => (None, None),
    };
    for cluster in &snapshot.clusters {
        for instance in &cluster.instances {
            let found = instance.gpus.iter().find(|g| {
                g.uuid == key
                    || (host == Some(instance.ec2_instance_id.as_str()) && index == Some(g.index))
            });
            let Some(gpu) = found else { continue };
            let sorted = |names: &mut dyn Iterator<Item = String>| {
                names
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
            };
            let gpu_services = sorted(&mut gpu.services().into_iter().map(str::to_string));
            let daemon_services = if gpu.mode == GpuMode::NvidiaMps {
                sorted(
                    &mut instance
                        .gpus
                        .iter()
                        .filter(|g| g.index != gpu.index && g.mode == GpuMode::NvidiaMps)
                        .flat_map(|g| g.containers.iter().filter_map(|c| c.service.clone()))
                        .filter(|s| !gpu_services.contains(s)),
                )
            } else {
                Vec::new()
            };
            let teams = sorted(&mut gpu.containers.iter().filter_map(|c| c.team.clone()));
            return Some(GpuDetail {
                cluster: cluster.name.clone(),
                instance: instance_header(instance),
                gpu: gpu.clone(),
                gpu_services,
                daemon_services,
                teams,
                key: format!("{}:{}", instance.ec2_instance_id, gpu.index),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuContainer, GpuUsage, Reading};

    fn container(service: &str, team: &str, memory: u32, compute: u32) -> GpuContainer {
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

    fn gpu(index: u32, mode: GpuMode, remaining: u32, containers: Vec<GpuContainer>) -> GpuView {
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

    fn snapshot() -> FleetSnapshot {
        let instance = |id: &str, kind: &str, impaired: bool, gpus| InstanceView {
            arn: format!("arn:ci/{id}"),
            ec2_instance_id: id.into(),
            instance_type: kind.into(),
            impaired: impaired.then(|| "MPS control daemon is not responding".into()),
            mps_capable: true,
            gpu_model: None,
            gpus,
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
                                    GpuMode::NvidiaMps,
                                    8_000,
                                    vec![
                                        container("embed", "search", 8_000, 60),
                                        container("rerank", "search", 4_000, 50),
                                    ],
                                ),
                                gpu(
                                    1,
                                    GpuMode::NvidiaMps,
                                    15_000,
                                    vec![container("ocr", "vision", 5_000, 100)],
                                ),
                                gpu(2, GpuMode::Dedicated, 0, Vec::new()),
                                gpu(3, GpuMode::Idle, 20_000, Vec::new()),
                            ],
                        ),
                        instance(
                            "i-2",
                            "g6.xlarge",
                            true,
                            vec![gpu(0, GpuMode::Idle, 20_000, Vec::new())],
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
                            GpuMode::NvidiaMps,
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

    #[test]
    fn the_summary_counts_modes_memory_oversubscription_and_fragmentation() {
        let summary = FleetSummary::of(&snapshot());
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
        assert_eq!(summary.impaired_instances, 1);
        assert_eq!(summary.without_usage, 6);
        let prod = &summary.clusters[0];
        // The impaired instance's idle GPU takes no MPS containers; the idle GPU 3 does.
        assert_eq!(prod.largest_mps_request_mib, 20_000);
        assert_eq!(prod.free_mib, 8_000 + 15_000 + 20_000);
        assert_eq!(summary.clusters[1].largest_mps_request_mib, 1_000);
    }

    #[test]
    fn filters_narrow_to_matching_gpus_and_instances() {
        let all = snapshot();
        let count = |s: &FleetSnapshot| FleetSummary::of(s).gpus;
        let query = |f: fn(&mut FleetQuery)| {
            let mut q = FleetQuery::default();
            f(&mut q);
            q
        };
        assert_eq!(count(&filter(&all, &FleetQuery::default())), 6);
        assert_eq!(
            count(&filter(&all, &query(|q| q.cluster = Some("dev".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.team = Some("search".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.service = Some("ocr".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.mode = Some(GpuMode::Idle)))),
            2
        );
        assert_eq!(
            count(&filter(
                &all,
                &query(|q| q.instance_type = Some("g6.xlarge".into()))
            )),
            2
        );
        let vision = filter(&all, &query(|q| q.team = Some("vision".into())));
        assert_eq!(vision.clusters.len(), 1, "clusters without a match go");
        assert_eq!(vision.clusters[0].instances.len(), 1);
    }

    #[test]
    fn unknown_filter_values_say_what_exists_and_are_dropped() {
        let options = FleetOptions::of(&snapshot());
        assert_eq!(options.clusters, ["prod", "dev"]);
        assert_eq!(options.teams, ["search", "speech", "vision"]);
        let query = FleetQuery {
            cluster: Some("nope".into()),
            team: Some("search".into()),
            ..FleetQuery::default()
        };
        let unknown = unknown_values(&query, &options);
        assert_eq!(unknown.len(), 1);
        assert_eq!(
            unknown[0].message(),
            "There is no cluster \"nope\"; they are: prod, dev."
        );
        let corrected = without_unknown(&query, &unknown);
        assert_eq!(corrected.cluster, None);
        assert_eq!(corrected.team.as_deref(), Some("search"));
    }

    #[test]
    fn malformed_parameters_are_corrected_with_a_note() {
        let params = |name: &str| match name {
            "mode" => Some("SHARED".to_string()),
            "colour" => Some("rainbow".to_string()),
            "cluster" => Some("  ".to_string()),
            "team" => Some("search".to_string()),
            _ => None,
        };
        let (query, notes) = FleetQuery::from_params(params);
        assert_eq!(query.mode, None);
        assert_eq!(query.colour, ColourMode::Memory);
        assert_eq!(query.cluster, None, "blank is no filter");
        assert_eq!(query.team.as_deref(), Some("search"));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("NVIDIA_MPS"));
        assert!(notes[1].contains("memory-used"));
    }

    #[test]
    fn a_query_round_trips_through_its_url() {
        let query = FleetQuery {
            cluster: Some("prod a&b".into()),
            mode: Some(GpuMode::NvidiaMps),
            colour: ColourMode::Compute,
            gpu: Some("i-1:3".into()),
            ..FleetQuery::default()
        };
        let url = query.to_query_string();
        assert_eq!(
            url,
            "?cluster=prod%20a%26b&mode=NVIDIA_MPS&colour=compute&gpu=i-1%3A3"
        );
        assert_eq!(FleetQuery::default().to_query_string(), "");
    }

    #[test]
    fn colour_values_per_mode() {
        let all = snapshot();
        let shared = &all.clusters[0].instances[0].gpus[0];
        assert_eq!(colour_value(shared, ColourMode::Memory), Some(60.0));
        assert_eq!(colour_value(shared, ColourMode::Compute), Some(110.0));
        assert_eq!(
            Shade::of(colour_value(shared, ColourMode::Compute)),
            Shade::Oversubscribed
        );
        assert_eq!(
            colour_value(shared, ColourMode::Utilization),
            None,
            "no data, not zero"
        );
        assert_eq!(Shade::of(None).class(), "nd");
        let dedicated = &all.clusters[0].instances[0].gpus[2];
        assert_eq!(colour_value(dedicated, ColourMode::Memory), Some(100.0));
        assert_eq!(Shade::of(Some(100.0)), Shade::Step(9));
        assert_eq!(Shade::of(Some(0.0)), Shade::Step(0));
        let mut used = shared.clone();
        used.usage = Some(GpuUsage {
            utilization_percent: Some(Reading {
                latest: 42.0,
                average: 40.0,
            }),
            memory_used_mib: Some(Reading {
                latest: 2_000.0,
                average: 1_000.0,
            }),
        });
        assert_eq!(colour_value(&used, ColourMode::Utilization), Some(42.0));
        assert_eq!(colour_value(&used, ColourMode::MemoryUsed), Some(10.0));
        // 12,000 allocated, 2,000 used, of 20,000.
        assert_eq!(colour_value(&used, ColourMode::Unused), Some(50.0));
    }

    #[test]
    fn a_gpu_is_found_by_key_or_uuid_with_its_blast_radius() {
        let all = snapshot();
        let detail = gpu_detail(&all, "i-1:0").expect("found");
        assert_eq!(detail.gpu.uuid, "GPU-0");
        assert_eq!(detail.gpu_services, ["embed", "rerank"]);
        assert_eq!(
            detail.daemon_services,
            ["ocr"],
            "the other MPS GPU shares the daemon"
        );
        assert_eq!(detail.teams, ["search"]);
        assert_eq!(detail.key, "i-1:0");
        assert_eq!(
            gpu_detail(&all, "GPU-0").map(|d| d.cluster),
            Some("prod".into())
        );
        assert!(gpu_detail(&all, "i-1:9").is_none());
        assert!(gpu_detail(&all, "nonsense").is_none());
    }
}
