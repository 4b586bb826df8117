//! The pre-check's growth against the emulator's providers, across generated cases: a cluster
//! with a Managed Instances provider (requirements allowing a random set of the emulator's GPU
//! types) or an Auto Scaling group provider (a random type, size, `MaxSize`, largest step and
//! target), a few instances the provider already launched, another service filling some of
//! them, and a new service on the provider of random size, GPU memory and CPU. Each case is read
//! through the SDK into a fleet snapshot and checked, then the service is created on the
//! emulator and run for two simulated hours. The check's verdict must be the emulator's, and
//! the instances it predicts the provider launches must be those the emulator launched.

use app::model::rollout::{pre_check, Cluster, Growth, GrowthSource, RolloutPlan, Verdict};
use chrono::{Duration, Utc};
use emulator::{
    capacity::{CapacityProvider, ProviderKind, StrategyItem},
    elastic::{facts, AutoScalingGroup},
    engine::NewService,
    instance_types::{self, InstanceType},
    model::{DeploymentConfig, Fleet, RolloutState},
    Emulator, Faults,
};
use gpushare::fleet::{ec2::Ec2Reader, reader::FleetReader};
use placement::growth::{AsgScaling, Requirements};
use rand::{rngs::StdRng, seq::IndexedRandom, Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// The emulator's types a case may use: one, four and eight GPUs of 22 to 45 GB.
const TYPES: [&str; 5] = [
    "g5.xlarge",
    "g5.12xlarge",
    "g6.12xlarge",
    "g6e.12xlarge",
    "g6.48xlarge",
];

#[derive(Debug, Clone)]
struct Case {
    managed: bool,
    /// Managed Instances: the types its requirements allow. An Auto Scaling group: its type.
    types: Vec<&'static str>,
    /// Instances the provider launched before, and how many of them a filler service uses.
    existing: usize,
    filler: u32,
    max_size: u32,
    max_step: u32,
    target: u32,
    desired: u32,
    memory: u32,
    cpu: u32,
}

fn generate(rng: &mut StdRng) -> Case {
    let managed = rng.random_bool(0.5);
    let mut types: Vec<&'static str> = TYPES
        .iter()
        .copied()
        .filter(|_| rng.random_ratio(1, 2))
        .collect();
    if types.is_empty() || !managed {
        types = vec![*TYPES.choose(rng).expect("some")];
    }
    let existing = rng.random_range(0..=2);
    Case {
        managed,
        types,
        existing,
        filler: rng.random_range(0..=existing as u32 * 2),
        max_size: existing as u32 + rng.random_range(0..=4),
        max_step: rng.random_range(1..=3),
        target: *[100, 90, 75].choose(rng).expect("some"),
        desired: rng.random_range(1..=16),
        memory: *[4_000, 10_000, 20_000, 40_000].choose(rng).expect("some"),
        cpu: *[1_024, 4_096, 8_192].choose(rng).expect("some"),
    }
}

fn task_definition(family: &str, memory: u32, cpu: u32) -> Map<String, Value> {
    json!({
        "family": family,
        "requiresCompatibilities": ["EC2", "MANAGED_INSTANCES"],
        "containerDefinitions": [{
            "name": "model", "image": "model:1", "cpu": cpu, "memory": 1_024,
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": memory}}}]
        }]
    })
    .as_object()
    .cloned()
    .expect("an object")
}

const GROUP_ARN: &str =
    "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/gpu";

fn settings(case: &Case) -> Value {
    if case.managed {
        json!({
            "infrastructureRoleArn": "arn:aws:iam::123456789012:role/infra",
            "instanceLaunchTemplate": {
                "ec2InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/ecs",
                "networkConfiguration": {"subnets": ["subnet-1"]},
                "instanceRequirements": {
                    "vCpuCount": {"min": 1}, "memoryMiB": {"min": 1},
                    "acceleratorManufacturers": ["nvidia"],
                    "allowedInstanceTypes": case.types
                }
            },
            "autoRepairConfiguration": {"actionsStatus": "ENABLED"},
            "infrastructureOptimization": {"scaleInAfter": -1}
        })
    } else {
        json!({
            "autoScalingGroupArn": GROUP_ARN,
            "managedScaling": {"status": "ENABLED", "targetCapacity": case.target,
                "minimumScalingStepSize": 1, "maximumScalingStepSize": case.max_step,
                "instanceWarmupPeriod": 120}
        })
    }
}

fn kind_of(name: &str) -> &'static InstanceType {
    instance_types::find(name).expect("a type the emulator knows")
}

/// The case's fleet: the provider, its instances, the filler service settled on them.
fn build(case: &Case, seed: u64) -> Option<Fleet> {
    let start = Utc::now() - Duration::hours(1);
    let mut fleet = Fleet::new(seed, start);
    fleet.create_cluster("c").ok()?;
    let kind = if case.managed {
        ProviderKind::ManagedInstances
    } else {
        ProviderKind::AutoScalingGroup
    };
    fleet.capacity_providers.insert(
        "gpu".into(),
        CapacityProvider {
            name: "gpu".into(),
            arn: fleet.arn("capacity-provider/gpu"),
            kind,
            cluster: case.managed.then(|| "c".into()),
            settings: settings(case).as_object().cloned().unwrap_or_default(),
            active: true,
            update_status: None,
        },
    );
    fleet
        .clusters
        .get_mut("c")?
        .capacity_providers
        .push("gpu".into());
    if !case.managed {
        fleet.elastic.groups.insert(
            "gpu".into(),
            AutoScalingGroup {
                name: "gpu".into(),
                arn: GROUP_ARN.into(),
                cluster: "c".into(),
                instance_types: vec![case.types[0].to_string()],
                min_size: 0,
                max_size: case.max_size,
                desired_capacity: case.existing as u32,
                last_scale_out: None,
                above_target_since: None,
            },
        );
    }
    for n in 0..case.existing {
        let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][n % 3];
        let mut instance = fleet.instance_of_type("c", kind_of(case.types[0]), zone, start);
        instance.capacity_provider = Some("gpu".into());
        fleet.add_instance("c", instance);
    }
    let now = fleet.now;
    if case.filler > 0 {
        let filler = fleet
            .register_task_definition(task_definition("filler", 12_000, 1_024), now)
            .ok()?
            .arn
            .clone();
        // On the EC2 launch type: it takes room on the provider's instances and launches none.
        let mut service = new_service("filler", filler, case.filler);
        service.capacity_provider_strategy.clear();
        fleet.create_service("c", service).ok()?;
        fleet.advance(now + Duration::seconds(120));
    }
    Some(fleet)
}

fn new_service(name: &str, td: String, desired: u32) -> NewService {
    NewService {
        name: name.into(),
        task_definition: td,
        desired_count: desired,
        config: DeploymentConfig::default(),
        placement_constraints: Vec::new(),
        placement_strategy: Vec::new(),
        capacity_provider_strategy: vec![StrategyItem {
            capacity_provider: "gpu".into(),
            weight: 1,
            base: 0,
        }],
    }
}

/// The growth the console would build from the provider's settings and the type facts.
fn growth(case: &Case, snapshot_size: u32) -> Growth {
    let source = if case.managed {
        let requirements = Requirements::from_json(
            &settings(case)["instanceLaunchTemplate"]["instanceRequirements"],
        );
        GrowthSource::ManagedInstances {
            candidates: instance_types::ALL
                .iter()
                .map(facts)
                .filter(|f| requirements.check(f).is_ok() && f.shares_gpus())
                .collect(),
            excluded: Vec::new(),
            fee_note: None,
        }
    } else {
        GrowthSource::AutoScaling {
            kind: facts(kind_of(case.types[0])),
            scaling: AsgScaling {
                target: case.target,
                min_step: 1,
                max_step: case.max_step,
                max_size: case.max_size,
            },
            size: snapshot_size,
            warmup_seconds: 120,
        }
    };
    Growth {
        provider: "gpu".into(),
        source,
    }
}

#[tokio::test]
async fn the_pre_checks_launches_are_the_emulators() {
    let mut rng = StdRng::seed_from_u64(20_261_204);
    let (mut cases, mut launching, mut limited, mut never) = (0, 0, 0, 0);
    let mut attempts = 0;
    while cases < 40 && attempts < 200 {
        attempts += 1;
        let case = generate(&mut rng);
        let Some(fleet) = build(&case, attempts) else {
            continue;
        };
        cases += 1;
        let emulator = Emulator::new(fleet, "property", 1.0, Faults::default());
        let clients = crate::support::serve(&emulator).await;
        let snapshot = FleetReader::new(clients.ecs.clone(), "team", 4)
            .with_ec2(Ec2Reader::new(clients.ec2.clone()))
            .read()
            .await
            .expect("read");
        let body = task_definition("svc", case.memory, case.cpu);
        let plan = RolloutPlan {
            cluster: "c".into(),
            service: "svc".into(),
            desired: case.desired,
            running: 0,
            maximum_percent: 200,
            minimum_healthy_percent: 100,
            old: placement::GpuRequest::None,
            new: placement::rules::check_task(&body).expect("valid"),
            old_needs: placement::resources::Needs::default(),
            new_needs: placement::resources::needs_of(&body, &[]).expect("valid"),
            strategy: None,
            placement_strategy: Vec::new(),
            growth: Some(growth(&case, case.existing as u32)),
        };
        let layout = Cluster::of_provider(&snapshot, "c", "svc", Some("gpu")).expect("cluster c");
        let check = pre_check(&layout, &plan);
        let predicted = check.growth.as_ref().map_or(0, |g| g.instances());

        let before = case.existing;
        emulator.with_fleet(|fleet| {
            let now = fleet.now;
            let td = fleet
                .register_task_definition(body.clone(), now)
                .map(|td| td.arn.clone())
                .expect("registered");
            fleet
                .create_service("c", new_service("svc", td, case.desired))
                .map(|_| ())
                .expect("created");
        });
        let mut completed = false;
        for _ in 0..120 {
            emulator.advance(60);
            completed = emulator.with_fleet(|fleet| {
                fleet.clusters["c"].services["svc"].deployments[0].rollout_state
                    == RolloutState::Completed
            });
            if completed {
                break;
            }
        }
        let launched = emulator.with_fleet(|fleet| {
            let here = fleet.clusters["c"]
                .instances
                .iter()
                .filter(|i| i.capacity_provider.as_deref() == Some("gpu"))
                .count();
            here + fleet.elastic.launches.len() - before
        }) as u32;
        let verdict = match &check.verdict {
            Verdict::Completes => "completes",
            Verdict::Stalls { .. } => "stalls",
            Verdict::Never { .. } => "never",
        };
        assert_eq!(
            (verdict == "completes", predicted),
            (completed, launched),
            "the pre-check ({verdict}, {predicted} launched) is not the emulator ({completed}, {launched} launched): {case:?}\n{check:?}"
        );
        launching += u32::from(predicted > 0);
        limited += u32::from(check.growth.as_ref().is_some_and(|g| g.limit.is_some()));
        never += u32::from(verdict == "never");
    }
    eprintln!(
        "elastic pre-check property: {cases} cases, {launching} with launches, {limited} held by a limit, {never} that no type fits; all agree with the emulator"
    );
    assert!(
        cases >= 30 && launching >= 10 && limited >= 3,
        "too few telling cases: {cases} / {launching} / {limited}"
    );
}
