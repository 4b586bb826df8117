//! Fleets to emulate, deterministic from a seed: `demo` to look at, `large` to measure,
//! `empty` for a new account.

use chrono::{DateTime, Datelike, Duration, Utc};
use serde_json::{json, Value};

use crate::{
    engine::{NewService, ServiceUpdate},
    instance_types::{
        InstanceType, G5_12XLARGE, G5_48XLARGE, G5_XLARGE, G6E_12XLARGE, G6E_48XLARGE, G6_12XLARGE,
        G6_48XLARGE, P4D_24XLARGE, P5_48XLARGE,
    },
    model::{splitmix, ContainerInstance, DeploymentConfig, Fleet, Tag},
    placement::GpuSlot,
};

/// A scenario's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Demo,
    Large,
    Empty,
}

impl Scenario {
    pub const NAMES: [&'static str; 3] = ["demo", "large", "empty"];

    pub fn parse(name: &str) -> Option<Scenario> {
        match name {
            "demo" => Some(Scenario::Demo),
            "large" => Some(Scenario::Large),
            "empty" => Some(Scenario::Empty),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Demo => "demo",
            Scenario::Large => "large",
            Scenario::Empty => "empty",
        }
    }

    /// Builds the fleet as it stood `days` days before `now`, with the story of those days
    /// scheduled, so that running its clock to `now` walks through them and ends where
    /// [`Scenario::build`] starts. Only `demo` has a past; the others are built at `now`.
    pub fn build_with_past(self, seed: u64, now: DateTime<Utc>, days: u32) -> Fleet {
        if days == 0 || self != Scenario::Demo {
            return self.build(seed, now);
        }
        let mut fleet = demo(seed, now - Duration::days(i64::from(days)));
        demo_story(&mut fleet, now);
        fleet
    }

    /// Builds the fleet as it stands at `now`.
    pub fn build(self, seed: u64, now: DateTime<Utc>) -> Fleet {
        match self {
            Scenario::Demo => demo(seed, now),
            Scenario::Large => large(seed, now),
            Scenario::Empty => Fleet::new(seed, now),
        }
    }
}

fn hex(fleet: &mut Fleet) -> String {
    fleet.new_hex_id()
}

fn add_instances(
    fleet: &mut Fleet,
    cluster: &str,
    kind: &InstanceType,
    count: usize,
    at: DateTime<Utc>,
) {
    let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
    for n in 0..count {
        let id = hex(fleet);
        let ec2 = format!("i-0{}", &id[..16]);
        let arn = fleet.arn(&format!("container-instance/{cluster}/{id}"));
        let gpu_ids = (0..kind.gpus)
            .map(|_| {
                let g = hex(fleet);
                format!(
                    "GPU-{}-{}-{}-{}-{}",
                    &g[..8],
                    &g[8..12],
                    &g[12..16],
                    &g[16..20],
                    &g[20..32]
                )
            })
            .collect();
        let cpu = kind.registered_cpu();
        fleet.add_instance(
            cluster,
            ContainerInstance {
                arn,
                ec2_instance_id: ec2,
                instance_type: kind.name.to_string(),
                availability_zone: zones[n % zones.len()].to_string(),
                gpu_ids,
                gpus: vec![GpuSlot::idle(kind.gpu_memory_mib); kind.gpus],
                gpu_model: kind.gpu_model.to_string(),
                cpu,
                memory_mib: kind.registered_memory_mib(),
                room: ContainerInstance::fresh_room(
                    kind.name,
                    zones[n % zones.len()],
                    cpu,
                    kind.registered_memory_mib(),
                ),
                mps_capable: true,
                mps_impaired: None,
                cloudwatch_agent: true,
                agent_instance_id_dimension: false,
                private_ip: String::new(),
                spot: false,
                registered_at: at - Duration::days(3) + Duration::minutes(n as i64 * 7),
                running_tasks: 0,
                pending_tasks: 0,
                version: 1,
            },
        );
    }
}

/// The GPU part of a container definition.
enum Gpu {
    Mps(u32, Option<u32>),
    Whole(u32),
}

struct ServiceSpec {
    cluster: &'static str,
    name: &'static str,
    team: &'static str,
    image: &'static str,
    gpus: Vec<Gpu>,
    desired: u32,
    cpu: u32,
    memory_mib: u32,
}

fn container(name: &str, image: &str, gpu: Option<&Gpu>, cpu: u32, memory_mib: u32) -> Value {
    let mut body = json!({
        "name": name,
        "image": image,
        "cpu": cpu,
        "memory": memory_mib,
        "essential": true,
        "portMappings": [{"containerPort": 8080, "protocol": "tcp"}],
        "environment": [{"name": "LOG_LEVEL", "value": "info"}],
        "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": format!("/ecs/{name}"), "awslogs-region": "us-east-1", "awslogs-stream-prefix": "ecs"}},
    });
    match gpu {
        Some(Gpu::Mps(memory, compute)) => {
            let mut mps = json!({"memory": memory});
            if let Some(compute) = compute {
                mps["maxComputePercent"] = json!(compute);
            }
            body["resourceRequirements"] =
                json!([{"type": "GPU", "sharingStrategy": {"nvidiaMps": mps}}]);
        }
        Some(Gpu::Whole(count)) => {
            body["resourceRequirements"] = json!([{"type": "GPU", "value": count.to_string()}]);
        }
        None => {}
    }
    body
}

fn task_definition(
    spec: &ServiceSpec,
    extra_env: Option<(&str, &str)>,
) -> serde_json::Map<String, Value> {
    let per = spec.gpus.len().max(1) as u32;
    let mut containers: Vec<Value> = spec
        .gpus
        .iter()
        .enumerate()
        .map(|(i, gpu)| {
            let name = if spec.gpus.len() == 1 {
                spec.name.to_string()
            } else {
                format!("{}-{}", spec.name, i + 1)
            };
            container(
                &name,
                spec.image,
                Some(gpu),
                spec.cpu / per,
                spec.memory_mib / per,
            )
        })
        .collect();
    if let Some((key, value)) = extra_env {
        if let Some(env) = containers[0]["environment"].as_array_mut() {
            env.push(json!({"name": key, "value": value}));
        }
    }
    // vision-detect binds a static host port: one task per instance at most, whatever its GPUs.
    if let Some(port) = static_host_port(spec.name) {
        containers[0]["portMappings"] =
            json!([{"containerPort": 8080, "hostPort": port, "protocol": "tcp"}]);
    }
    json!({
        "family": spec.name,
        "networkMode": network_mode(spec.name),
        "requiresCompatibilities": ["EC2"],
        "containerDefinitions": containers,
        "tags": [{"key": "team", "value": spec.team}],
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// The demo services' network modes: speech-align runs in `awsvpc` mode, an ENI per task, so
/// on ml-dev's g5.xlarge (4 network interfaces) three of its tasks fill an instance whose GPU
/// has room for five.
fn network_mode(service: &str) -> &'static str {
    if service == "speech-align" {
        "awsvpc"
    } else {
        "bridge"
    }
}

/// The demo services that bind a static host port.
fn static_host_port(service: &str) -> Option<u16> {
    (service == "vision-detect").then_some(8443)
}

/// The demo services' placement constraints: vision-detect spreads one task per instance; tts
/// runs only on inference-prod's g5.xlarge, whose 15 GiB of memory hold one of its 8 GiB
/// tasks while the GPU has room for four.
fn constraints(service: &str) -> Vec<Value> {
    match service {
        "vision-detect" => vec![json!({"type": "distinctInstance"})],
        "tts" => vec![
            json!({"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.xlarge"}),
        ],
        _ => Vec::new(),
    }
}

fn add_service(fleet: &mut Fleet, spec: &ServiceSpec, config: DeploymentConfig) {
    let now = fleet.now;
    let Ok(td) = fleet.register_task_definition(task_definition(spec, None), now) else {
        return;
    };
    let td = td.arn.clone();
    let new = NewService {
        name: spec.name.to_string(),
        task_definition: td,
        desired_count: spec.desired,
        config,
        placement_constraints: constraints(spec.name),
        placement_strategy: Vec::new(),
    };
    if let Ok(service) = fleet.create_service(spec.cluster, new) {
        let arn = service.arn.clone();
        fleet.tags.insert(
            arn,
            vec![Tag {
                key: "team".into(),
                value: spec.team.into(),
            }],
        );
    }
}

fn breaker() -> DeploymentConfig {
    DeploymentConfig {
        circuit_breaker_enable: true,
        circuit_breaker_rollback: true,
        ..DeploymentConfig::default()
    }
}

/// Three clusters, 24 instances of mixed types, four teams, a dozen services — with idle GPUs, an
/// oversubscribed GPU, a fragmented cluster, an impaired MPS daemon and a rollout that failed and
/// rolled back.
fn demo(seed: u64, now: DateTime<Utc>) -> Fleet {
    let start = now - Duration::hours(2);
    let mut fleet = Fleet::new(seed, start);
    for name in ["inference-prod", "batch-sim", "ml-dev"] {
        let _ = fleet.create_cluster(name);
    }
    add_instances(&mut fleet, "inference-prod", &G5_12XLARGE, 4, start);
    add_instances(&mut fleet, "inference-prod", &G6_12XLARGE, 3, start);
    add_instances(&mut fleet, "inference-prod", &G6E_12XLARGE, 2, start);
    add_instances(&mut fleet, "inference-prod", &G5_XLARGE, 3, start);
    add_instances(&mut fleet, "batch-sim", &P4D_24XLARGE, 1, start);
    // The p4d runs an agent without GPU sharing: ECS reports its GPUs only as GPU resources, with
    // no gpuDevices, and places only whole-GPU tasks on it.
    if let Some(p4d) = fleet
        .clusters
        .get_mut("batch-sim")
        .and_then(|c| c.instances.last_mut())
    {
        p4d.mps_capable = false;
    }
    add_instances(&mut fleet, "batch-sim", &P5_48XLARGE, 1, start);
    add_instances(&mut fleet, "batch-sim", &G6E_12XLARGE, 2, start);
    add_instances(&mut fleet, "batch-sim", &G5_12XLARGE, 1, start);
    add_instances(&mut fleet, "ml-dev", &G5_XLARGE, 5, start);
    add_instances(&mut fleet, "ml-dev", &G6_12XLARGE, 2, start);

    let specs = [
        ServiceSpec {
            cluster: "inference-prod",
            name: "embed-api",
            team: "search",
            image: "search/embed:2.4.1",
            gpus: vec![Gpu::Mps(4_096, Some(50))],
            desired: 8,
            cpu: 1024,
            memory_mib: 4096,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "rerank",
            team: "search",
            image: "search/rerank:1.9.0",
            gpus: vec![Gpu::Mps(8_192, Some(30))],
            desired: 4,
            cpu: 2048,
            memory_mib: 8192,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "vision-detect",
            team: "vision",
            image: "vision/detect:5.0.2",
            gpus: vec![Gpu::Mps(6_144, Some(60))],
            desired: 6,
            cpu: 2048,
            memory_mib: 8192,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "ocr",
            team: "vision",
            image: "vision/ocr:3.1.0",
            gpus: vec![Gpu::Mps(3_072, None)],
            desired: 6,
            cpu: 1024,
            memory_mib: 4096,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "asr-stream",
            team: "speech",
            image: "speech/asr:7.2.0",
            gpus: vec![Gpu::Mps(10_240, Some(40)), Gpu::Mps(2_048, Some(20))],
            desired: 4,
            cpu: 2048,
            memory_mib: 8192,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "tts",
            team: "speech",
            image: "speech/tts:2.0.3",
            gpus: vec![Gpu::Mps(5_120, Some(50))],
            desired: 3,
            cpu: 1024,
            memory_mib: 8192,
        },
        ServiceSpec {
            cluster: "inference-prod",
            name: "llm-chat",
            team: "research",
            image: "research/llm-chat:0.9.4",
            gpus: vec![Gpu::Whole(1)],
            desired: 2,
            cpu: 8192,
            memory_mib: 65_536,
        },
        ServiceSpec {
            cluster: "batch-sim",
            name: "trainer",
            team: "research",
            image: "research/trainer:4.2.0",
            gpus: vec![Gpu::Whole(8)],
            desired: 1,
            cpu: 65_536,
            memory_mib: 524_288,
        },
        ServiceSpec {
            cluster: "batch-sim",
            name: "physics-sim",
            team: "research",
            image: "research/physics:1.3.0",
            gpus: vec![Gpu::Mps(20_000, Some(60))],
            desired: 5,
            cpu: 4096,
            memory_mib: 16_384,
        },
        ServiceSpec {
            cluster: "batch-sim",
            name: "sim-render",
            team: "vision",
            image: "vision/render:2.2.1",
            gpus: vec![Gpu::Mps(12_000, Some(70))],
            desired: 3,
            cpu: 4096,
            memory_mib: 16_384,
        },
        ServiceSpec {
            cluster: "ml-dev",
            name: "notebook-gpu",
            team: "research",
            image: "research/notebook:2026.11",
            gpus: vec![Gpu::Mps(14_000, None)],
            desired: 5,
            cpu: 1024,
            memory_mib: 4096,
        },
        ServiceSpec {
            cluster: "ml-dev",
            name: "speech-align",
            team: "speech",
            image: "speech/align:1.4.0",
            gpus: vec![Gpu::Mps(4_096, Some(25))],
            desired: 2,
            cpu: 1024,
            memory_mib: 4096,
        },
    ];
    for spec in &specs {
        // notebook-gpu deploys blue/green: the whole new set beside the old one.
        let config = if spec.name == "notebook-gpu" {
            // The circuit breaker is for rolling updates only.
            DeploymentConfig {
                strategy: "BLUE_GREEN".into(),
                ..DeploymentConfig::default()
            }
        } else {
            breaker()
        };
        add_service(&mut fleet, spec, config);
    }
    fleet.advance(start + Duration::seconds(60));

    // The MPS daemon of batch-sim's g5.12xlarge stops answering: the agent marks the instance
    // IMPAIRED and stops nothing, so its simulation tasks keep running.
    if let Some(arn) = fleet
        .clusters
        .get("batch-sim")
        .and_then(|c| c.instances.last())
        .map(|i| i.arn.clone())
    {
        fleet.impair_mps("batch-sim", &arn);
    }
    fleet.advance(start + Duration::seconds(120));

    // A release of speech-align that crashes on start: the circuit breaker rolls it back.
    let broken = &specs[11];
    let body = task_definition(broken, Some(("EMULATOR_EXIT_CODE", "137")));
    let at = fleet.now;
    if let Ok(td) = fleet
        .register_task_definition(body, at)
        .map(|td| td.arn.clone())
    {
        let update = ServiceUpdate {
            task_definition: Some(td),
            ..ServiceUpdate::default()
        };
        let _ = fleet.update_service("ml-dev", "speech-align", update);
    }
    fleet.advance(start + Duration::seconds(600));
    // A dev box that never got the CloudWatch agent: its GPUs have no metrics.
    if let Some(instance) = fleet
        .clusters
        .get_mut("ml-dev")
        .and_then(|c| c.instances.last_mut())
    {
        instance.cloudwatch_agent = false;
    }
    // The dev cluster runs on spot instances; the p5's CloudWatch agent is configured to
    // append the InstanceId dimension (the others publish only their hostname).
    if let Some(cluster) = fleet.clusters.get_mut("ml-dev") {
        for instance in &mut cluster.instances {
            instance.spot = true;
        }
    }
    if let Some(p5) = fleet.clusters.get_mut("batch-sim").and_then(|c| {
        c.instances
            .iter_mut()
            .find(|i| i.instance_type == "p5.48xlarge")
    }) {
        p5.agent_instance_id_dimension = true;
    }
    // Two more dev boxes that take no tasks: one set to DRAINING, one whose agent lost its
    // connection.
    add_instances(&mut fleet, "ml-dev", &G5_XLARGE, 2, start);
    if let Some(cluster) = fleet.clusters.get_mut("ml-dev") {
        let count = cluster.instances.len();
        cluster.instances[count - 2].room.status = "DRAINING".into();
        cluster.instances[count - 1].room.agent_connected = false;
    }
    fleet.now = now;
    fleet
}

/// The demo's last two weeks, as a cost review would find them: the search team grew (embed-api
/// from 3 tasks to 5 ten days ago, to 8 with rerank from 2 to 4 four days ago); speech moved
/// its text-to-speech into asr-stream's new release five days ago (2 tasks to 4) and left tts
/// running idle;
/// and the batch cluster dips at weekends (physics-sim and notebook-gpu down to one task from
/// Saturday to Monday). Changes before the fleet's time are made at once; the others scheduled.
fn demo_story(fleet: &mut Fleet, present: DateTime<Utc>) {
    let day = |days: i64, hour: u32| {
        let date = (present - Duration::days(days)).date_naive();
        date.and_hms_opt(hour, 0, 0)
            .map_or(present, |t| t.and_utc())
    };
    let long_ago = DateTime::<Utc>::MIN_UTC;
    let mut changes: Vec<(DateTime<Utc>, &str, &str, u32)> = vec![
        (long_ago, "inference-prod", "embed-api", 3),
        (long_ago, "inference-prod", "rerank", 2),
        (long_ago, "inference-prod", "asr-stream", 2),
        (day(10, 9), "inference-prod", "embed-api", 5),
        (day(5, 10), "inference-prod", "asr-stream", 4),
        (day(4, 9), "inference-prod", "embed-api", 8),
        (day(4, 9), "inference-prod", "rerank", 4),
    ];
    // Weekends that ended before today: down on Saturday, back on Monday.
    let today = day(0, 0);
    let mut monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    while monday > fleet.now - Duration::days(2) {
        for (service, cluster, weekday) in [
            ("physics-sim", "batch-sim", 5),
            ("notebook-gpu", "ml-dev", 5),
        ] {
            changes.push((monday - Duration::days(2), cluster, service, 1));
            changes.push((monday, cluster, service, weekday));
        }
        monday -= Duration::days(7);
    }
    changes.sort_by_key(|(at, ..)| *at);
    // What stands at the fleet's time: each service's last count by then, set once (a service
    // already at it is left as built).
    let mut standing: std::collections::BTreeMap<(&str, &str), u32> = Default::default();
    for (at, cluster, service, desired) in &changes {
        if *at <= fleet.now {
            standing.insert((cluster, service), *desired);
        }
    }
    for ((cluster, service), desired) in standing {
        let built = fleet
            .clusters
            .get(cluster)
            .and_then(|c| c.services.get(service))
            .map(|s| s.desired_count);
        if built != Some(desired) {
            let update = ServiceUpdate {
                desired_count: Some(desired),
                ..ServiceUpdate::default()
            };
            let _ = fleet.update_service(cluster, service, update);
        }
    }
    for (at, cluster, service, desired) in changes {
        if at > fleet.now {
            fleet.schedule.push_back(crate::model::Scheduled {
                at,
                cluster: cluster.to_string(),
                service: service.to_string(),
                desired,
            });
        }
    }
    fleet
        .idle_services
        .insert("inference-prod/tts".to_string(), day(5, 10));
    // Let the changes made at once settle before the clock runs.
    let settle = fleet.now + Duration::seconds(120);
    fleet.advance(settle);
}

/// 1,000 instances with 8 GPUs each in four clusters, 60 services, about 20,000 tasks.
fn large(seed: u64, now: DateTime<Utc>) -> Fleet {
    let start = now - Duration::hours(1);
    let mut fleet = Fleet::new(seed, start);
    let clusters = ["prod-a", "prod-b", "prod-c", "batch"];
    let kinds = [
        &G5_48XLARGE,
        &G6_48XLARGE,
        &G6E_48XLARGE,
        &P4D_24XLARGE,
        &P5_48XLARGE,
    ];
    for (c, cluster) in clusters.iter().enumerate() {
        let _ = fleet.create_cluster(cluster);
        for (k, kind) in kinds.iter().enumerate() {
            add_instances(
                &mut fleet,
                cluster,
                kind,
                50,
                start + Duration::minutes((c * 5 + k) as i64),
            );
        }
    }
    let teams = ["search", "vision", "speech", "research", "ads", "platform"];
    let images = ["app/infer:1.0.0", "app/embed:2.1.0", "app/batch:3.0.1"];
    let mut specs = Vec::new();
    for n in 0..60_u64 {
        let h = splitmix(seed ^ (n + 1));
        let cluster = clusters[(n % 4) as usize];
        let name: &'static str = Box::leak(format!("svc-{n:02}").into_boxed_str());
        let gpus = if n % 20 == 7 {
            vec![Gpu::Whole(1 + (h % 2) as u32)]
        } else {
            vec![Gpu::Mps(
                1_024 * (1 + (h % 12) as u32),
                (!h.is_multiple_of(3)).then_some(10 + (h % 9) as u32 * 10),
            )]
        };
        let desired = if matches!(gpus[0], Gpu::Whole(_)) {
            40
        } else {
            300 + (h % 120) as u32
        };
        specs.push(ServiceSpec {
            cluster,
            name,
            team: teams[(h % teams.len() as u64) as usize],
            image: images[(n % 3) as usize],
            gpus,
            desired,
            cpu: 512,
            memory_mib: 2048,
        });
    }
    for spec in &specs {
        add_service(&mut fleet, spec, breaker());
    }
    fleet.advance(start + Duration::seconds(30));
    fleet.now = now;
    fleet
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaskStatus;

    #[test]
    fn the_same_seed_builds_the_same_fleet() {
        let now = Utc::now();
        let a = Scenario::Demo.build(7, now);
        let b = Scenario::Demo.build(7, now);
        let ids = |f: &Fleet| {
            f.clusters
                .values()
                .flat_map(|c| c.tasks.keys().cloned())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_ne!(ids(&a), ids(&Scenario::Demo.build(8, now)));
    }

    #[test]
    fn the_demos_past_walks_its_story_to_where_the_demo_starts() {
        // A Wednesday: the two weekends before it dip.
        let now = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .expect("a time")
            .with_timezone(&Utc);
        let mut fleet = Scenario::Demo.build_with_past(7, now, 14);
        let desired = |fleet: &Fleet, cluster: &str, service: &str| {
            fleet.clusters[cluster].services[service].desired_count
        };
        assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 3);
        // Saturday 21 November to Monday 23, and 28 to 30: four changes each for two services.
        let dips: Vec<_> = fleet
            .schedule
            .iter()
            .filter(|s| s.service == "physics-sim")
            .map(|s| (s.at.to_rfc3339(), s.desired))
            .collect();
        assert_eq!(
            dips,
            [
                ("2026-11-21T00:00:00+00:00".to_string(), 1),
                ("2026-11-23T00:00:00+00:00".to_string(), 5),
                ("2026-11-28T00:00:00+00:00".to_string(), 1),
                ("2026-11-30T00:00:00+00:00".to_string(), 5),
            ]
        );
        fleet.advance(now - Duration::days(7));
        assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 5);
        assert_eq!(
            desired(&fleet, "batch-sim", "physics-sim"),
            5,
            "a Wednesday"
        );
        fleet.advance(now - Duration::days(3));
        assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 8);
        assert_eq!(desired(&fleet, "batch-sim", "physics-sim"), 1, "a Sunday");
        fleet.advance(now);
        assert!(fleet.schedule.is_empty());
        let plain = Scenario::Demo.build(7, now);
        for (cluster, c) in &plain.clusters {
            for (name, service) in &c.services {
                assert_eq!(
                    desired(&fleet, cluster, name),
                    service.desired_count,
                    "{cluster}/{name}"
                );
            }
        }
        assert!(fleet.idle_services.contains_key("inference-prod/tts"));
    }

    #[test]
    fn demo_has_what_it_promises() {
        let fleet = Scenario::Demo.build(1, Utc::now());
        let instances: Vec<_> = fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .collect();
        assert_eq!(fleet.clusters.len(), 3);
        assert_eq!(instances.len(), 26);
        assert!(instances.iter().any(|i| i.spot) && instances.iter().any(|i| !i.spot));
        assert_eq!(
            instances
                .iter()
                .filter(|i| i.agent_instance_id_dimension)
                .count(),
            1
        );
        assert_eq!(
            fleet.clusters["ml-dev"].services["notebook-gpu"]
                .config
                .strategy,
            "BLUE_GREEN"
        );
        assert!(instances.iter().any(|i| i.room.status == "DRAINING"));
        assert!(instances.iter().any(|i| !i.room.agent_connected));
        let vision: Vec<_> = fleet.clusters["inference-prod"]
            .tasks
            .values()
            .filter(|t| t.is_live() && t.group == "service:vision-detect")
            .collect();
        let hosts: std::collections::BTreeSet<_> = vision.iter().map(|t| &t.instance_arn).collect();
        assert!(vision.len() > 1);
        assert_eq!(
            hosts.len(),
            vision.len(),
            "distinctInstance: one per instance"
        );
        assert!(vision.iter().all(|t| t.needs.tcp_ports == vec![8443]));
        // speech-align's awsvpc tasks each hold one of their instance's ENIs.
        let ml_dev = &fleet.clusters["ml-dev"];
        let align_tasks: Vec<_> = ml_dev
            .tasks
            .values()
            .filter(|t| t.is_live() && t.group == "service:speech-align")
            .collect();
        assert!(!align_tasks.is_empty() && align_tasks.iter().all(|t| t.needs.awsvpc));
        for instance in &ml_dev.instances {
            let held = align_tasks
                .iter()
                .filter(|t| t.instance_arn == instance.arn)
                .count() as u32;
            let kind = crate::instance_types::find(&instance.instance_type).expect("known");
            assert_eq!(instance.room.enis_free, Some(kind.task_enis() - held));
        }
        // Instances bound by CPU or memory before their GPUs: a GPU with room for a task of a
        // service of their cluster, but not the instance memory or CPU that task needs.
        let mut bound = Vec::new();
        for cluster in fleet.clusters.values() {
            for service in cluster.services.values() {
                let td = fleet
                    .task_definition(&service.task_definition_arn)
                    .expect("registered");
                let ask = td.gpu.mps_memory_mib();
                for i in &cluster.instances {
                    if i.room.status == "ACTIVE"
                        && ask > 0
                        && i.mps_capable
                        && i.mps_impaired.is_none()
                        && i.gpus.iter().any(|g| g.fits_mps(ask))
                        && (i.room.memory_remaining_mib < td.needs.memory_mib
                            || i.room.cpu_remaining < td.needs.cpu)
                    {
                        bound.push((service.name.clone(), i.instance_type.clone()));
                    }
                }
            }
        }
        assert!(
            bound.contains(&("tts".to_string(), "g5.xlarge".to_string())),
            "tts fills its g5.xlarge's memory before their GPUs: {bound:?}"
        );
        let gpus = || instances.iter().flat_map(|i| i.gpus.iter());
        assert!(
            gpus().any(|g| g.mode == crate::placement::SharingMode::Idle),
            "some idle GPUs"
        );
        assert!(
            gpus().any(|g| g.mode == crate::placement::SharingMode::Dedicated),
            "a dedicated GPU"
        );
        let impaired: Vec<_> = instances
            .iter()
            .filter(|i| i.mps_impaired.is_some())
            .collect();
        assert_eq!(impaired.len(), 1, "one impaired daemon");
        assert!(
            fleet.clusters["batch-sim"]
                .tasks
                .values()
                .any(|t| t.is_live()
                    && t.instance_arn == impaired[0].arn
                    && t.last_status == crate::model::TaskStatus::Running),
            "tasks still running on the impaired instance"
        );
        let unshared: Vec<_> = instances.iter().filter(|i| !i.mps_capable).collect();
        assert_eq!(unshared.len(), 1, "one instance without GPU sharing");
        assert!(
            unshared[0]
                .gpus
                .iter()
                .all(|g| g.mode != crate::placement::SharingMode::NvidiaMps),
            "no MPS task on an instance without GPU sharing"
        );
        let services: Vec<_> = fleet
            .clusters
            .values()
            .flat_map(|c| c.services.values())
            .collect();
        assert_eq!(services.len(), 12);
        let align = services
            .iter()
            .find(|s| s.name == "speech-align")
            .expect("speech-align");
        assert!(
            align.task_definition_arn.ends_with("speech-align:1"),
            "rolled back to revision 1"
        );
        assert!(
            align
                .events
                .iter()
                .any(|e| e.message.contains("deployment failed")),
            "{:?}",
            align.events
        );
        assert!(align
            .events
            .iter()
            .any(|e| e.message.contains("rolling back")));
        // Every service but the one that failed reaches its desired count.
        for service in &services {
            let running: u32 = service.deployments.iter().map(|d| d.running_count).sum();
            assert_eq!(running, service.desired_count, "{}", service.name);
        }
        // Allocation bookkeeping matches the tasks placed.
        for cluster in fleet.clusters.values() {
            for instance in &cluster.instances {
                for (index, slot) in instance.gpus.iter().enumerate() {
                    let uuid = &instance.gpu_ids[index];
                    let containers: Vec<_> = cluster
                        .tasks
                        .values()
                        .filter(|t| t.last_status != TaskStatus::Stopped)
                        .flat_map(|t| t.containers.iter())
                        .filter(|c| c.gpu_ids.contains(uuid))
                        .collect();
                    assert_eq!(
                        slot.container_count as usize,
                        containers.len().min(
                            if slot.mode == crate::placement::SharingMode::Dedicated {
                                1
                            } else {
                                usize::MAX
                            }
                        ),
                        "{uuid}"
                    );
                }
            }
        }
    }
}
