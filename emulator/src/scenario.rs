//! Fleets to emulate, deterministic from a seed: `demo` to look at, `large` to measure,
//! `empty` for a new account.

mod build;

use chrono::{DateTime, Datelike, Duration, Utc};
use serde_json::{json, Value};

use crate::{
    capacity::{CapacityProvider, ProviderKind, StrategyItem},
    engine::{NewService, ServiceUpdate},
    instance_types::{
        InstanceType, G5_12XLARGE, G5_48XLARGE, G5_XLARGE, G6E_12XLARGE, G6E_48XLARGE, G6_12XLARGE,
        G6_48XLARGE, P4D_24XLARGE, P5_48XLARGE,
    },
    model::{splitmix, DeploymentConfig, Fleet, Tag},
};

use self::build::{
    add_instances, add_provider, add_service, breaker, task_definition, Gpu, ServiceSpec,
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

/// Three clusters, 24 instances of mixed types, four teams, a dozen services — with idle GPUs, an
/// oversubscribed GPU, a fragmented cluster, an impaired MPS daemon and a rollout that failed and
/// rolled back.
fn demo(seed: u64, now: DateTime<Utc>) -> Fleet {
    let start = now - Duration::hours(2);
    let mut fleet = Fleet::new(seed, start);
    demo_instances(&mut fleet, start);
    let specs = demo_services();
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

    demo_troubles(&mut fleet, &specs, start);
    demo_oddities(&mut fleet, start);
    fleet.now = now;
    fleet
}

/// The demo's clusters and instances: mixed types, a p4d without GPU sharing.
fn demo_instances(fleet: &mut Fleet, start: DateTime<Utc>) {
    for name in ["inference-prod", "batch-sim", "ml-dev"] {
        let _ = fleet.create_cluster(name);
    }
    add_instances(fleet, "inference-prod", &G5_12XLARGE, 4, start);
    add_instances(fleet, "inference-prod", &G6_12XLARGE, 3, start);
    add_instances(fleet, "inference-prod", &G6E_12XLARGE, 2, start);
    add_instances(fleet, "inference-prod", &G5_XLARGE, 3, start);
    add_instances(fleet, "batch-sim", &P4D_24XLARGE, 1, start);
    // The p4d runs an agent without GPU sharing: ECS reports its GPUs only as GPU resources, with
    // no gpuDevices, and places only whole-GPU tasks on it.
    if let Some(p4d) = fleet
        .clusters
        .get_mut("batch-sim")
        .and_then(|c| c.instances.last_mut())
    {
        p4d.mps_capable = false;
    }
    add_instances(fleet, "batch-sim", &P5_48XLARGE, 1, start);
    add_instances(fleet, "batch-sim", &G6E_12XLARGE, 2, start);
    add_instances(fleet, "batch-sim", &G5_12XLARGE, 1, start);
    add_instances(fleet, "ml-dev", &G5_XLARGE, 5, start);
    add_instances(fleet, "ml-dev", &G6_12XLARGE, 2, start);
    demo_providers(fleet);
}

/// The demo's capacity providers: inference-prod's g6 and g6e instances come from a Managed
/// Instances provider for GPU sharing (auto repair on, infrastructure optimization off, so its
/// idle g6e instances stay), batch-sim's g6e and g5 from the Auto Scaling group
/// `batch-sim-gpu` (three instances, `MaxSize` four) with managed scaling; the other instances
/// were registered by hand.
fn demo_providers(fleet: &mut Fleet) {
    let managed = json!({
        "infrastructureRoleArn": format!("arn:aws:iam::{}:role/ecsInfrastructureRole", fleet.account),
        "instanceLaunchTemplate": {
            "ec2InstanceProfileArn": format!("arn:aws:iam::{}:instance-profile/ecsInstanceRole", fleet.account),
            "networkConfiguration": {
                "subnets": ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002", "subnet-0a1b2c3d4e5f60003"],
                "securityGroups": ["sg-0a1b2c3d4e5f60001"]
            },
            "capacityOptionType": "ON_DEMAND",
            "instanceRequirements": {
                "vCpuCount": {"min": 4, "max": 64},
                "memoryMiB": {"min": 16384},
                "acceleratorTypes": ["gpu"],
                "acceleratorManufacturers": ["nvidia"],
                "acceleratorNames": ["a10g", "l4", "l40s"],
                "allowedInstanceTypes": ["g5.*", "g6.*", "g6e.*"]
            }
        },
        "propagateTags": "CAPACITY_PROVIDER",
        "infrastructureOptimization": {"scaleInAfter": -1},
        "autoRepairConfiguration": {"actionsStatus": "ENABLED"}
    });
    let asg = json!({
        "autoScalingGroupArn": format!("arn:aws:autoscaling:{}:{}:autoScalingGroup:5a1c9e2b-7d1f-4c3e-9b8a-2f6d4e8c0a11:autoScalingGroupName/batch-sim-gpu", fleet.region, fleet.account),
        "managedScaling": {"status": "ENABLED", "targetCapacity": 90, "minimumScalingStepSize": 1, "maximumScalingStepSize": 2, "instanceWarmupPeriod": 300},
        "managedTerminationProtection": "DISABLED",
        "managedDraining": "ENABLED"
    });
    for (name, kind, cluster, settings, types) in [
        (
            "gpu-sharing-mi",
            ProviderKind::ManagedInstances,
            "inference-prod",
            managed,
            &["g6.12xlarge", "g6e.12xlarge"][..],
        ),
        (
            "batch-sim-gpu-asg",
            ProviderKind::AutoScalingGroup,
            "batch-sim",
            asg,
            &["g6e.12xlarge", "g5.12xlarge"][..],
        ),
    ] {
        let group = (kind == ProviderKind::AutoScalingGroup).then_some(("batch-sim-gpu", 1, 4, 3));
        add_provider(
            fleet,
            (name, kind, cluster),
            settings,
            types,
            group,
            kind == ProviderKind::AutoScalingGroup,
        );
    }
}

/// One demo service: its cluster, name, team and image, the GPU of each GPU container, its
/// desired count, and each task's CPU units and memory (MiB).
type DemoRow = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [Gpu],
    u32,
    u32,
    u32,
);

/// The demo's services: four teams, MPS and whole-GPU tasks, one with two GPU containers.
#[rustfmt::skip]
const DEMO_SERVICES: [DemoRow; 12] = [
    ("inference-prod", "embed-api", "search", "search/embed:2.4.1", &[Gpu::Mps(4_096, Some(50))], 8, 1024, 4096),
    ("inference-prod", "rerank", "search", "search/rerank:1.9.0", &[Gpu::Mps(8_192, Some(30))], 4, 2048, 8192),
    ("inference-prod", "vision-detect", "vision", "vision/detect:5.0.2", &[Gpu::Mps(6_144, Some(60))], 6, 2048, 8192),
    ("inference-prod", "ocr", "vision", "vision/ocr:3.1.0", &[Gpu::Mps(3_072, None)], 6, 1024, 4096),
    ("inference-prod", "asr-stream", "speech", "speech/asr:7.2.0", &[Gpu::Mps(10_240, Some(40)), Gpu::Mps(2_048, Some(20))], 4, 2048, 8192),
    ("inference-prod", "tts", "speech", "speech/tts:2.0.3", &[Gpu::Mps(5_120, Some(50))], 3, 1024, 8192),
    ("inference-prod", "llm-chat", "research", "research/llm-chat:0.9.4", &[Gpu::Whole(1)], 2, 8192, 65_536),
    ("batch-sim", "trainer", "research", "research/trainer:4.2.0", &[Gpu::Whole(8)], 1, 65_536, 524_288),
    ("batch-sim", "physics-sim", "research", "research/physics:1.3.0", &[Gpu::Mps(20_000, Some(60))], 5, 4096, 16_384),
    ("batch-sim", "sim-render", "vision", "vision/render:2.2.1", &[Gpu::Mps(12_000, Some(70))], 3, 4096, 16_384),
    ("ml-dev", "notebook-gpu", "research", "research/notebook:2026.11", &[Gpu::Mps(14_000, None)], 5, 1024, 4096),
    ("ml-dev", "speech-align", "speech", "speech/align:1.4.0", &[Gpu::Mps(4_096, Some(25))], 2, 1024, 4096),
];

fn demo_services() -> [ServiceSpec; 12] {
    DEMO_SERVICES.map(
        |(cluster, name, team, image, gpus, desired, cpu, memory_mib)| ServiceSpec {
            cluster,
            name,
            team,
            image,
            gpus: gpus.to_vec(),
            desired,
            cpu,
            memory_mib,
        },
    )
}

/// What goes wrong in the demo's first minutes: an impaired MPS daemon on an instance registered
/// by hand (it stays impaired), one on a Managed Instance (it is repaired), and a release that
/// crashes on start and is rolled back.
fn demo_troubles(fleet: &mut Fleet, specs: &[ServiceSpec], start: DateTime<Utc>) {
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
    // The MPS daemon of one of inference-prod's Managed Instances stops answering too: auto
    // repair drains it, launches a replacement and terminates it; its tasks move elsewhere.
    if let Some(arn) = fleet
        .clusters
        .get("inference-prod")
        .and_then(|c| {
            c.instances
                .iter()
                .find(|i| i.instance_type == "g6.12xlarge")
        })
        .map(|i| i.arn.clone())
    {
        fleet.impair_mps("inference-prod", &arn);
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
}

/// The demo's odd instances: one without the CloudWatch agent, spot dev boxes, a p5 in a
/// Capacity Block whose agent adds the InstanceId dimension, and two dev boxes that take no
/// tasks.
fn demo_oddities(fleet: &mut Fleet, start: DateTime<Utc>) {
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
        // It runs in a Capacity Block for ML, paid for up front.
        p5.capacity_block = true;
    }
    // Two more dev boxes that take no tasks: one set to DRAINING, one whose agent lost its
    // connection.
    add_instances(fleet, "ml-dev", &G5_XLARGE, 2, start);
    if let Some(cluster) = fleet.clusters.get_mut("ml-dev") {
        let count = cluster.instances.len();
        cluster.instances[count - 2].room.status = "DRAINING".into();
        cluster.instances[count - 1].room.agent_connected = false;
    }
    fleet.billing_follows_instances();
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

/// Each `large` cluster's providers: its g5, g6 and g6e instances from a Managed Instances
/// provider (auto repair on; infrastructure optimization off, so that a benchmark's fleet stays
/// put), its p4d and p5 instances from an Auto Scaling group with managed scaling (100 of at
/// most 120).
fn large_providers(fleet: &mut Fleet, cluster: &str) {
    let account = fleet.account.clone();
    let managed = json!({
        "infrastructureRoleArn": format!("arn:aws:iam::{account}:role/ecsInfrastructureRole"),
        "instanceLaunchTemplate": {
            "ec2InstanceProfileArn": format!("arn:aws:iam::{account}:instance-profile/ecsInstanceRole"),
            "networkConfiguration": {"subnets": ["subnet-0b1c2d3e4f5a60001", "subnet-0b1c2d3e4f5a60002"]},
            "instanceRequirements": {
                "vCpuCount": {"min": 4},
                "memoryMiB": {"min": 16384},
                "acceleratorTypes": ["gpu"],
                "acceleratorManufacturers": ["nvidia"],
                "allowedInstanceTypes": ["g5.*", "g6.*", "g6e.*"]
            }
        },
        "infrastructureOptimization": {"scaleInAfter": -1},
        "autoRepairConfiguration": {"actionsStatus": "ENABLED"}
    });
    let group = format!("{cluster}-p");
    let asg = json!({
        "autoScalingGroupArn": format!("arn:aws:autoscaling:{}:{account}:autoScalingGroup:7c2e4a1b-0d3f-4e5a-9b8c-1d2e3f4a5b6c:autoScalingGroupName/{group}", fleet.region),
        "managedScaling": {"status": "ENABLED", "targetCapacity": 100},
        "managedTerminationProtection": "DISABLED"
    });
    let group: &'static str = Box::leak(group.into_boxed_str());
    add_provider(
        fleet,
        (
            &format!("{cluster}-gpu-mi"),
            ProviderKind::ManagedInstances,
            cluster,
        ),
        managed,
        &["g5.48xlarge", "g6.48xlarge", "g6e.48xlarge"],
        None,
        false,
    );
    add_provider(
        fleet,
        (
            &format!("{cluster}-p-asg"),
            ProviderKind::AutoScalingGroup,
            cluster,
        ),
        asg,
        &["p5.48xlarge", "p4d.24xlarge"],
        Some((group, 0, 120, 100)),
        false,
    );
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
        large_providers(&mut fleet, cluster);
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
mod tests;
