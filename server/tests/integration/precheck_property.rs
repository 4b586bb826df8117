//! The capacity pre-check against the emulator, across generated cases: clusters of random
//! instances (GPUs, CPU, memory, type and so network interfaces, spread over three zones, one
//! maybe DRAINING, one in some cases with an impaired MPS daemon), a service of random size with static host ports, `awsvpc` mode or
//! `distinctInstance` now and then, another service fragmenting the GPUs, both placed by a
//! random strategy (ECS's default spread across zones, spread by instance, binpack on memory,
//! random), and a rollout of random GPU memory, CPU and bounds. Each case is read through the
//! SDK into a fleet snapshot, checked, then rolled out on the emulator. Where the check says
//! "completes", the emulator's rollout must complete; where it says "stalls", the emulator may
//! still get through (the check is allowed to be cautious, never hopeful).

use app::model::rollout::{pre_check, Cluster, RolloutPlan, Verdict};
use chrono::{Duration, Utc};
use emulator::{
    engine::{NewService, ServiceUpdate},
    model::{ContainerInstance, DeploymentConfig, Fleet, RolloutState},
    placement::{GpuSlot, SharingMode},
    Emulator, Faults,
};
use gpushare::fleet::{ec2::Ec2Reader, reader::FleetReader};
use rand::{rngs::StdRng, seq::IndexedRandom, Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    /// GPUs, GPU memory, CPU, memory, DRAINING, instance type (its network interfaces).
    instances: Vec<(usize, u32, u32, u32, bool, &'static str)>,
    desired: u32,
    old_memory: u32,
    new_memory: u32,
    old_cpu: u32,
    new_cpu: u32,
    host_port: bool,
    awsvpc: bool,
    distinct: bool,
    filler: (u32, u32),
    /// The services' `placementStrategy`: none (ECS's default, spread across zones), or one
    /// of spread by instance, binpack on memory, random.
    strategy: Vec<Value>,
    maximum_percent: u32,
    minimum_healthy_percent: u32,
    /// The instance whose MPS daemon stops answering once both services run, if any.
    impaired: Option<usize>,
}

fn generate(rng: &mut StdRng) -> Case {
    let awsvpc = rng.random_ratio(1, 3);
    // In awsvpc mode mostly small instances, whose few ENIs bind before their GPUs.
    let kinds: &[&'static str] = if awsvpc {
        &["g5.xlarge", "g5.xlarge", "g6.12xlarge"]
    } else {
        &["g5.xlarge", "g6.12xlarge", "g5.12xlarge"]
    };
    let count = rng.random_range(1..=4);
    let instances = (0..count)
        .map(|n| {
            (
                rng.random_range(1..=4),
                *[15_360, 22_563, 45_000].choose(rng).expect("some"),
                *[4_096, 8_192, 16_384].choose(rng).expect("some"),
                *[16_000, 32_000, 64_000].choose(rng).expect("some"),
                n > 0 && rng.random_ratio(1, 6),
                // 3, 7 and 14 ENIs for awsvpc tasks.
                *kinds.choose(rng).expect("some"),
            )
        })
        .collect();
    let old_memory = *[2_000, 4_000, 8_000].choose(rng).expect("some");
    Case {
        instances,
        desired: rng.random_range(1..=5),
        old_memory,
        new_memory: (old_memory as f64 * [0.5, 1.0, 1.5, 2.5].choose(rng).expect("some")) as u32,
        old_cpu: *[512, 1_024, 2_048].choose(rng).expect("some"),
        new_cpu: *[512, 1_024, 2_048, 4_096].choose(rng).expect("some"),
        host_port: !awsvpc && rng.random_ratio(1, 4),
        awsvpc,
        distinct: rng.random_ratio(1, 4),
        filler: (
            rng.random_range(0..=3),
            *[4_000, 8_000, 12_000].choose(rng).expect("some"),
        ),
        strategy: [
            Vec::new(),
            vec![json!({"type": "spread", "field": "instanceId"})],
            vec![json!({"type": "binpack", "field": "memory"})],
            vec![json!({"type": "random"})],
        ]
        .choose(rng)
        .expect("some")
        .clone(),
        maximum_percent: *[100, 150, 200].choose(rng).expect("some"),
        minimum_healthy_percent: *[0, 50, 100].choose(rng).expect("some"),
        impaired: None,
    }
}

fn task_definition(
    family: &str,
    memory: u32,
    cpu: u32,
    host_port: bool,
    awsvpc: bool,
) -> Map<String, Value> {
    let port = if awsvpc {
        json!([{"containerPort": 8080}])
    } else if host_port {
        json!([{"containerPort": 8080, "hostPort": 8080}])
    } else {
        json!([{"containerPort": 8080, "hostPort": 0}])
    };
    json!({
        "family": family,
        "networkMode": if awsvpc { "awsvpc" } else { "bridge" },
        "requiresCompatibilities": ["EC2"],
        "containerDefinitions": [{
            "name": "model", "image": "model:1", "cpu": cpu, "memory": 1_024,
            "portMappings": port,
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": memory}}}]
        }]
    })
    .as_object()
    .cloned()
    .expect("an object")
}

/// The case's fleet, settled: both services placed as far as they go.
fn build(case: &Case, seed: u64) -> Option<Fleet> {
    let start = Utc::now() - Duration::hours(1);
    let mut fleet = Fleet::new(seed, start);
    fleet.create_cluster("c").ok()?;
    for (n, (gpus, gpu_memory, cpu, memory, draining, kind)) in case.instances.iter().enumerate() {
        let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][n % 3];
        let mut room = ContainerInstance::fresh_room(kind, zone, *cpu, *memory);
        if *draining {
            room.status = "DRAINING".into();
        }
        fleet.add_instance(
            "c",
            ContainerInstance {
                arn: format!("arn:aws:ecs:us-east-1:123456789012:container-instance/c/{n:032x}"),
                ec2_instance_id: format!("i-{n:017x}"),
                instance_type: kind.to_string(),
                availability_zone: zone.into(),
                gpu_ids: (0..*gpus).map(|g| format!("GPU-{n}-{g}")).collect(),
                gpus: vec![GpuSlot::idle(*gpu_memory); *gpus],
                gpu_model: "NVIDIA A10G".into(),
                cpu: *cpu,
                memory_mib: *memory,
                room,
                mps_capable: true,
                mps_impaired: None,
                cloudwatch_agent: false,
                agent_instance_id_dimension: false,
                private_ip: String::new(),
                spot: false,
                capacity_block: false,
                capacity_provider: None,
                registered_at: start,
                running_tasks: 0,
                pending_tasks: 0,
                version: 1,
            },
        );
    }
    let now = fleet.now;
    let service = |name: &str, td: String, desired: u32, constraints: Vec<Value>| NewService {
        name: name.into(),
        task_definition: td,
        desired_count: desired,
        config: DeploymentConfig {
            maximum_percent: case.maximum_percent,
            minimum_healthy_percent: case.minimum_healthy_percent,
            ..DeploymentConfig::default()
        },
        placement_constraints: constraints,
        placement_strategy: case.strategy.clone(),
        capacity_provider_strategy: Vec::new(),
    };
    let filler = fleet
        .register_task_definition(
            task_definition("filler", case.filler.1, 256, false, case.awsvpc),
            now,
        )
        .ok()?
        .arn
        .clone();
    fleet
        .create_service("c", service("filler", filler, case.filler.0, Vec::new()))
        .ok()?;
    fleet.advance(now + Duration::seconds(60));
    let old = fleet
        .register_task_definition(
            task_definition(
                "svc",
                case.old_memory,
                case.old_cpu,
                case.host_port,
                case.awsvpc,
            ),
            now,
        )
        .ok()?
        .arn
        .clone();
    let constraints = if case.distinct {
        vec![json!({"type": "distinctInstance"})]
    } else {
        Vec::new()
    };
    fleet
        .create_service("c", service("svc", old, case.desired, constraints))
        .ok()?;
    fleet.advance(now + Duration::seconds(600));
    if let Some(n) = case.impaired {
        fleet.impair_mps(
            "c",
            &format!("arn:aws:ecs:us-east-1:123456789012:container-instance/c/{n:032x}"),
        );
    }
    // Only cases that start steady: the old revision fully running.
    let svc = &fleet.clusters["c"].services["svc"];
    (svc.deployments.len() == 1 && svc.deployments[0].rollout_state == RolloutState::Completed)
        .then_some(fleet)
}

#[tokio::test]
async fn the_pre_check_never_says_completes_where_the_emulator_stalls() {
    let mut rng = StdRng::seed_from_u64(20_261_201);
    let (mut cases, mut agree, mut cautious, mut stalls) = (0, 0, 0, 0);
    let (mut awsvpc_cases, mut eni_stalls) = (0, 0);
    let (mut impaired_cases, mut impaired_stalls) = (0, 0);
    let mut attempts = 0;
    while cases < 60 && attempts < 400 {
        attempts += 1;
        let mut case = generate(&mut rng);
        // One case in four has an instance whose MPS daemon is impaired (chosen apart from the
        // generator, which leaves the other cases as they were).
        case.impaired = (attempts % 4 == 0).then(|| attempts as usize % case.instances.len());
        let Some(fleet) = build(&case, attempts) else {
            continue;
        };
        cases += 1;
        awsvpc_cases += u32::from(case.awsvpc);
        let emulator = Emulator::new(fleet, "property", 1.0, Faults::default());
        let clients = crate::support::serve(&emulator).await;
        let snapshot = FleetReader::new(clients.ecs.clone(), "team", 4)
            .with_ec2(Ec2Reader::new(clients.ec2.clone()))
            .read()
            .await
            .expect("read");
        let new_body = task_definition(
            "svc",
            case.new_memory,
            case.new_cpu,
            case.host_port,
            case.awsvpc,
        );
        let old_body = task_definition(
            "svc",
            case.old_memory,
            case.old_cpu,
            case.host_port,
            case.awsvpc,
        );
        let constraints = if case.distinct {
            vec![json!({"type": "distinctInstance"})]
        } else {
            Vec::new()
        };
        let running = snapshot.clusters[0]
            .service_list
            .iter()
            .find(|s| s.name == "svc")
            .map_or(0, |s| s.running);
        let plan = RolloutPlan {
            cluster: "c".into(),
            service: "svc".into(),
            desired: case.desired,
            running,
            maximum_percent: case.maximum_percent,
            minimum_healthy_percent: case.minimum_healthy_percent,
            old: placement::rules::check_task(&old_body).expect("valid"),
            new: placement::rules::check_task(&new_body).expect("valid"),
            old_needs: placement::resources::needs_of(&old_body, &constraints).expect("valid"),
            new_needs: placement::resources::needs_of(&new_body, &constraints).expect("valid"),
            strategy: None,
            placement_strategy: snapshot.clusters[0]
                .service_list
                .iter()
                .find(|s| s.name == "svc")
                .map(|s| s.placement_strategy.clone())
                .unwrap_or_default(),
            growth: None,
        };
        let layout = Cluster::of(&snapshot, "c", "svc").expect("cluster c");
        let check = pre_check(&layout, &plan);
        if matches!(&check.verdict, Verdict::Stalls { reason, .. } if reason.contains("RESOURCE:ENI"))
        {
            eni_stalls += 1;
        }
        impaired_cases += u32::from(case.impaired.is_some());
        if matches!(&check.verdict, Verdict::Stalls { reason, .. } if reason.contains("MPS daemon is impaired"))
        {
            impaired_stalls += 1;
        }

        // The same rollout on the emulator, for up to three simulated hours.
        let new_arn = emulator.with_fleet(|fleet| {
            let now = fleet.now;
            fleet
                .register_task_definition(new_body.clone(), now)
                .map(|td| td.arn.clone())
                .expect("registered")
        });
        emulator
            .with_fleet(|fleet| {
                fleet
                    .update_service(
                        "c",
                        "svc",
                        ServiceUpdate {
                            task_definition: Some(new_arn),
                            ..ServiceUpdate::default()
                        },
                    )
                    .map(|_| ())
            })
            .expect("updated");
        let mut completed = false;
        for _ in 0..180 {
            emulator.advance(60);
            completed = emulator.with_fleet(|fleet| {
                let svc = &fleet.clusters["c"].services["svc"];
                svc.deployments[0].rollout_state == RolloutState::Completed
            });
            if completed {
                break;
            }
        }
        match (&check.verdict, completed) {
            (Verdict::Completes, false) => {
                let gpus: Vec<Vec<(SharingMode, u32)>> = emulator.with_fleet(|fleet| {
                    fleet.clusters["c"]
                        .instances
                        .iter()
                        .map(|i| {
                            i.gpus
                                .iter()
                                .map(|g| (g.mode, g.remaining_memory_mib))
                                .collect()
                        })
                        .collect()
                });
                panic!(
                    "the pre-check says completes, the emulator stalls: {case:?}\ncheck: {check:?}\nGPUs after: {gpus:?}"
                );
            }
            (Verdict::Completes, true) => agree += 1,
            (_, false) => {
                agree += 1;
                stalls += 1;
            }
            (_, true) => cautious += 1,
        }
    }
    println!(
        "pre-check vs emulator: {cases} cases, {agree} agree ({stalls} stall on both), {cautious} where the check was cautious; {awsvpc_cases} in awsvpc mode, {eni_stalls} stalled on ENIs; {impaired_cases} with an impaired MPS daemon, {impaired_stalls} stalled on it"
    );
    assert!(
        impaired_stalls >= 3,
        "some stall on an impaired MPS daemon: {impaired_stalls} of {impaired_cases}"
    );
    assert!(
        awsvpc_cases >= 10,
        "the cases include awsvpc: {awsvpc_cases}"
    );
    assert!(eni_stalls >= 1, "some stall on ENIs: {eni_stalls}");
    assert!(
        cases >= 40,
        "enough cases start steady: {cases} of {attempts}"
    );
    assert!(stalls >= 5, "the cases include stalls: {stalls}");
    assert!(
        agree > cases / 2,
        "the check mostly agrees: {agree} of {cases}"
    );
}
