//! Joins what ECS reports — instances with their `gpuDevices`, tasks with their containers'
//! `gpuIds`, task definitions with each container's GPU ask, services with their team — into
//! one view per GPU. Plain data in, plain data out.

use std::{
    borrow::Borrow,
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use app::model::{words::TaskStatus, GpuContainer, GpuView, HostReserved, SharingMode};

/// One GPU as DescribeContainerInstances reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawGpu {
    pub uuid: String,
    pub mode: SharingMode,
    pub total_memory_mib: u32,
    pub remaining_memory_mib: u32,
    /// `containerCount`: the containers ECS assigned it; none for an instance that reports no
    /// `gpuDevices`.
    pub container_count: Option<u32>,
}

/// One container of a task, with the GPUs ECS assigned it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawContainer {
    pub name: Arc<str>,
    pub gpu_ids: Vec<Arc<str>>,
}

/// One task as DescribeTasks reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawTask {
    pub arn: Arc<str>,
    pub task_definition_arn: Arc<str>,
    /// `service:<name>` for service tasks.
    pub group: Option<Arc<str>>,
    pub started_at: Option<String>,
    /// `lastStatus`.
    pub last_status: Option<TaskStatus>,
    /// `desiredStatus`: `RUNNING`, or `STOPPED` for a task told to stop.
    pub desired_status: Option<TaskStatus>,
    pub containers: Vec<RawContainer>,
    /// The container instance it runs on.
    pub container_instance_arn: Option<Arc<str>>,
    /// Holds an ENI of its own (`awsvpc`): an `ElasticNetworkInterface` attachment not yet
    /// deleted.
    pub holds_eni: bool,
}

/// What one container of a task definition asks of the GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuAsk {
    None,
    Whole(u32),
    Mps {
        memory_mib: u32,
        max_compute_percent: Option<u32>,
    },
}

/// The GPU asks of a task definition's containers, its team tag, and what one task reserves
/// of an instance's CPU units and memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefinitionGpu {
    pub containers: HashMap<String, GpuAsk>,
    pub team: Option<String>,
    pub cpu: u32,
    pub memory_mib: u32,
}

/// A container that names a GPU no instance reports (an instance that left, or stale data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownGpu {
    pub task_arn: String,
    pub container: String,
    pub gpu_id: String,
}

/// The join's result: per instance (in input order), its GPUs; and what could not be joined.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Joined {
    pub instances: Vec<Vec<GpuView>>,
    pub unknown_gpus: Vec<UnknownGpu>,
}

/// Per container instance ARN, what its tasks reserve of its CPU and memory, per service and
/// team (as [`join`] names them), in service order. A stopped task holds nothing; a task whose
/// definition was not read counts nothing.
pub fn host_reserved(
    tasks: &[impl Borrow<RawTask>],
    definitions: &HashMap<String, DefinitionGpu>,
    service_teams: &HashMap<String, String>,
) -> HashMap<String, Vec<HostReserved>> {
    // Per instance, per (service, team): CPU units and memory.
    type Sums = BTreeMap<(Option<String>, Option<String>), (u32, u32)>;
    let mut sums: HashMap<&str, Sums> = HashMap::new();
    for task in tasks.iter().map(Borrow::borrow) {
        if task.last_status == Some(TaskStatus::Stopped) {
            continue;
        }
        let (Some(instance), Some(definition)) = (
            task.container_instance_arn.as_deref(),
            definitions.get(&*task.task_definition_arn),
        ) else {
            continue;
        };
        let service = service_of(task);
        let team = team_of(service.as_ref(), Some(definition), service_teams);
        let sum = sums
            .entry(instance)
            .or_default()
            .entry((service, team))
            .or_default();
        sum.0 = sum.0.saturating_add(definition.cpu);
        sum.1 = sum.1.saturating_add(definition.memory_mib);
    }
    sums.into_iter()
        .map(|(instance, by)| {
            (
                instance.to_string(),
                by.into_iter()
                    .map(|((service, team), (cpu, memory_mib))| HostReserved {
                        service,
                        team,
                        cpu,
                        memory_mib,
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The service that started `task`, from its `group`.
fn service_of(task: &RawTask) -> Option<String> {
    task.group
        .as_deref()
        .and_then(|g| g.strip_prefix("service:"))
        .map(str::to_string)
}

/// A task's team: its service's tag, else its task definition's.
fn team_of(
    service: Option<&String>,
    definition: Option<&DefinitionGpu>,
    service_teams: &HashMap<String, String>,
) -> Option<String> {
    service
        .and_then(|s| service_teams.get(s).cloned())
        .or_else(|| definition.and_then(|d| d.team.clone()))
}

/// MPS applies 100 % when a container sets no `maxComputePercent`.
pub const DEFAULT_COMPUTE_PERCENT: u32 = 100;

/// An instance's GPUs as ECS reports them, before the containers on them are joined.
fn empty_views(gpus: &[RawGpu]) -> Vec<GpuView> {
    gpus.iter()
        .enumerate()
        .map(|(index, gpu)| GpuView {
            uuid: gpu.uuid.clone(),
            index: index as u32,
            mode: gpu.mode,
            total_memory_mib: gpu.total_memory_mib,
            remaining_memory_mib: gpu.remaining_memory_mib.min(gpu.total_memory_mib),
            compute_allocated_percent: 0,
            containers: Vec::new(),
            usage: None,
        })
        .collect()
}

/// What a container holds of one GPU: its memory (MPS), its compute limit, and whether it has
/// the whole GPU. A whole GPU, or a GPU the definition does not explain: the container has it
/// all.
fn share_of(ask: GpuAsk) -> (Option<u32>, u32, bool) {
    match ask {
        GpuAsk::Mps {
            memory_mib,
            max_compute_percent,
        } => (
            Some(memory_mib),
            max_compute_percent.unwrap_or(DEFAULT_COMPUTE_PERCENT),
            false,
        ),
        GpuAsk::Whole(_) | GpuAsk::None => (None, DEFAULT_COMPUTE_PERCENT, true),
    }
}

/// Joins instances' GPUs to the containers on them. Both are borrowed: the reader's state is
/// joined as it is kept, not copied.
pub fn join(
    instances: &[impl AsRef<[RawGpu]>],
    tasks: &[impl Borrow<RawTask>],
    definitions: &HashMap<String, DefinitionGpu>,
    service_teams: &HashMap<String, String>,
) -> Joined {
    let mut views: Vec<Vec<GpuView>> = instances
        .iter()
        .map(|gpus| empty_views(gpus.as_ref()))
        .collect();
    let position: HashMap<&str, (usize, usize)> = instances
        .iter()
        .enumerate()
        .flat_map(|(i, gpus)| {
            gpus.as_ref()
                .iter()
                .enumerate()
                .map(move |(g, gpu)| (gpu.uuid.as_str(), (i, g)))
        })
        .collect();
    let mut unknown_gpus = Vec::new();
    for task in tasks.iter().map(Borrow::borrow) {
        let service = service_of(task);
        let definition = definitions.get(&*task.task_definition_arn);
        let team = team_of(service.as_ref(), definition, service_teams);
        for container in &task.containers {
            let ask = definition
                .and_then(|d| d.containers.get(&*container.name).copied())
                .unwrap_or(GpuAsk::None);
            for gpu_id in &container.gpu_ids {
                let Some(&(i, g)) = position.get(&**gpu_id) else {
                    unknown_gpus.push(UnknownGpu {
                        task_arn: task.arn.to_string(),
                        container: container.name.to_string(),
                        gpu_id: gpu_id.to_string(),
                    });
                    continue;
                };
                let view = &mut views[i][g];
                let (memory_mib, compute_percent, whole_gpu) = share_of(ask);
                view.compute_allocated_percent += compute_percent;
                view.containers.push(GpuContainer {
                    task_arn: task.arn.to_string(),
                    container: container.name.to_string(),
                    service: service.clone(),
                    team: team.clone(),
                    memory_mib,
                    compute_percent,
                    whole_gpu,
                    started_at: task.started_at.clone(),
                });
            }
        }
    }
    // Vectors grown by pushes keep room for more; the snapshot keeps these for a whole refresh.
    for gpu in views.iter_mut().flatten() {
        gpu.containers.shrink_to_fit();
    }
    Joined {
        instances: views,
        unknown_gpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(uuid: &str, mode: SharingMode, remaining: u32) -> RawGpu {
        RawGpu {
            uuid: uuid.into(),
            mode,
            total_memory_mib: 22_563,
            remaining_memory_mib: remaining,
            container_count: None,
        }
    }

    fn task(arn: &str, td: &str, service: &str, containers: &[(&str, &[&str])]) -> RawTask {
        RawTask {
            arn: arn.into(),
            task_definition_arn: td.into(),
            group: Some(format!("service:{service}").into()),
            started_at: Some("2026-11-30T00:00:00Z".into()),
            last_status: Some("RUNNING".into()),
            desired_status: Some("RUNNING".into()),
            containers: containers
                .iter()
                .map(|(name, ids)| RawContainer {
                    name: (*name).into(),
                    gpu_ids: ids.iter().map(|s| Arc::from(*s)).collect(),
                })
                .collect(),
            container_instance_arn: None,
            holds_eni: false,
        }
    }

    fn definition(asks: &[(&str, GpuAsk)], team: Option<&str>) -> DefinitionGpu {
        DefinitionGpu {
            containers: asks.iter().map(|(n, a)| (n.to_string(), *a)).collect(),
            team: team.map(str::to_string),
            ..DefinitionGpu::default()
        }
    }

    /// Each instance's tasks reserve their definition's CPU and memory, summed per service and
    /// team; a stopped task, a task without an instance and a definition not read count nothing.
    #[test]
    fn tasks_reserve_their_definitions_cpu_and_memory_per_service_and_team() {
        let on = |mut t: RawTask, instance: &str, status: &str| {
            t.container_instance_arn = Some(instance.into());
            t.last_status = Some(status.into());
            t
        };
        let tasks = vec![
            on(task("t1", "td:a", "a", &[]), "i-1", "RUNNING"),
            on(task("t2", "td:a", "a", &[]), "i-1", "PENDING"),
            on(task("t3", "td:b", "b", &[]), "i-1", "RUNNING"),
            on(task("t4", "td:a", "a", &[]), "i-1", "STOPPED"),
            on(task("t5", "td:a", "a", &[]), "i-2", "RUNNING"),
            on(task("t6", "td:unread", "a", &[]), "i-2", "RUNNING"),
            task("t7", "td:a", "a", &[]),
        ];
        let definitions = HashMap::from([
            (
                "td:a".to_string(),
                DefinitionGpu {
                    cpu: 1024,
                    memory_mib: 4096,
                    ..definition(&[], Some("from-definition"))
                },
            ),
            (
                "td:b".to_string(),
                DefinitionGpu {
                    cpu: 512,
                    memory_mib: 1000,
                    ..definition(&[], None)
                },
            ),
        ]);
        let teams = HashMap::from([("b".to_string(), "search".to_string())]);
        let reserved = host_reserved(&tasks, &definitions, &teams);
        let expected = |service: &str, team: &str, cpu, memory_mib| HostReserved {
            service: Some(service.into()),
            team: Some(team.into()),
            cpu,
            memory_mib,
        };
        assert_eq!(
            reserved["i-1"],
            vec![
                expected("a", "from-definition", 2048, 8192),
                expected("b", "search", 512, 1000),
            ]
        );
        assert_eq!(
            reserved["i-2"],
            vec![expected("a", "from-definition", 1024, 4096)]
        );
        assert_eq!(reserved.len(), 2);
    }

    #[test]
    fn mps_containers_add_memory_and_compute_with_unset_counting_100() {
        let instances = vec![vec![gpu("GPU-a", SharingMode::NvidiaMps, 22_563 - 12_288)]];
        let definitions = HashMap::from([
            (
                "td:embed".to_string(),
                definition(
                    &[(
                        "embed",
                        GpuAsk::Mps {
                            memory_mib: 4_096,
                            max_compute_percent: Some(50),
                        },
                    )],
                    Some("search"),
                ),
            ),
            (
                "td:ocr".to_string(),
                definition(
                    &[(
                        "ocr",
                        GpuAsk::Mps {
                            memory_mib: 8_192,
                            max_compute_percent: None,
                        },
                    )],
                    Some("vision"),
                ),
            ),
        ]);
        let tasks = vec![
            task("t1", "td:embed", "embed-api", &[("embed", &["GPU-a"])]),
            task("t2", "td:ocr", "ocr", &[("ocr", &["GPU-a"])]),
        ];
        let teams = HashMap::from([("embed-api".to_string(), "search-infra".to_string())]);
        let joined = join(&instances, &tasks, &definitions, &teams);
        let view = &joined.instances[0][0];
        assert_eq!(view.containers.len(), 2);
        assert_eq!(
            view.compute_allocated_percent, 150,
            "50 % plus an unset limit counted as 100 %"
        );
        assert_eq!(view.allocated_memory_mib(), 12_288);
        let requested: u32 = view.containers.iter().filter_map(|c| c.memory_mib).sum();
        assert_eq!(requested, view.allocated_memory_mib());
        assert_eq!(
            view.containers[0].team.as_deref(),
            Some("search-infra"),
            "the service's tag wins"
        );
        assert_eq!(
            view.containers[1].team.as_deref(),
            Some("vision"),
            "else the task definition's"
        );
        assert_eq!(view.services(), ["embed-api", "ocr"]);
    }

    #[test]
    fn a_dedicated_gpu_has_one_whole_container() {
        let instances = vec![vec![
            gpu("GPU-a", SharingMode::Dedicated, 0),
            gpu("GPU-b", SharingMode::Dedicated, 0),
        ]];
        let definitions = HashMap::from([(
            "td:train".to_string(),
            definition(&[("trainer", GpuAsk::Whole(2))], None),
        )]);
        let tasks = vec![task(
            "t1",
            "td:train",
            "trainer",
            &[("trainer", &["GPU-a", "GPU-b"])],
        )];
        let joined = join(&instances, &tasks, &definitions, &HashMap::new());
        for view in &joined.instances[0] {
            assert_eq!(view.containers.len(), 1);
            assert!(view.containers[0].whole_gpu);
            assert_eq!(view.containers[0].memory_mib, None);
            assert_eq!(view.compute_allocated_percent, 100);
            assert_eq!(view.allocated_memory_mib(), 22_563);
        }
    }

    #[test]
    fn a_multi_container_task_lands_on_one_gpu() {
        let instances = vec![vec![
            gpu("GPU-a", SharingMode::Idle, 22_563),
            gpu("GPU-b", SharingMode::NvidiaMps, 22_563 - 12_288),
        ]];
        let definitions = HashMap::from([(
            "td:asr".to_string(),
            definition(
                &[
                    (
                        "asr",
                        GpuAsk::Mps {
                            memory_mib: 10_240,
                            max_compute_percent: Some(40),
                        },
                    ),
                    (
                        "vad",
                        GpuAsk::Mps {
                            memory_mib: 2_048,
                            max_compute_percent: Some(20),
                        },
                    ),
                    ("sidecar", GpuAsk::None),
                ],
                None,
            ),
        )]);
        let tasks = vec![task(
            "t1",
            "td:asr",
            "asr-stream",
            &[("asr", &["GPU-b"]), ("vad", &["GPU-b"]), ("sidecar", &[])],
        )];
        let joined = join(&instances, &tasks, &definitions, &HashMap::new());
        assert!(joined.instances[0][0].containers.is_empty());
        let view = &joined.instances[0][1];
        assert_eq!(view.containers.len(), 2);
        assert_eq!(view.compute_allocated_percent, 60);
        assert_eq!(
            view.services(),
            ["asr-stream"],
            "one service, however many containers"
        );
    }

    #[test]
    fn a_gpu_id_no_instance_reports_is_set_aside() {
        let instances = vec![vec![gpu("GPU-a", SharingMode::Idle, 22_563)]];
        let tasks = vec![task("t1", "td:x", "x", &[("c", &["GPU-gone"])])];
        let joined = join(&instances, &tasks, &HashMap::new(), &HashMap::new());
        assert!(joined.instances[0][0].containers.is_empty());
        assert_eq!(
            joined.unknown_gpus,
            vec![UnknownGpu {
                task_arn: "t1".into(),
                container: "c".into(),
                gpu_id: "GPU-gone".into()
            }]
        );
    }

    #[test]
    fn remaining_memory_never_exceeds_total() {
        let instances = vec![vec![RawGpu {
            uuid: "GPU-a".into(),
            mode: SharingMode::Idle,
            total_memory_mib: 100,
            remaining_memory_mib: 150,
            container_count: None,
        }]];
        let joined = join(
            &instances,
            &[] as &[RawTask],
            &HashMap::new(),
            &HashMap::new(),
        );
        assert_eq!(joined.instances[0][0].allocated_memory_mib(), 0);
        assert_eq!(joined.instances[0][0].remaining_memory_mib, 100);
    }
}
