//! Unit tests of the `incremental` module.

use super::*;
use crate::fleet::join::RawContainer;

fn instance(arn: &str, fingerprint: u64, remaining: u32) -> KnownInstance {
    KnownInstance {
        arn: arn.into(),
        status: "ACTIVE".into(),
        fingerprint,
        view: InstanceView::of(format!("i-{arn}"), "g5.xlarge").with_arn(arn),
        gpus: vec![RawGpu {
            uuid: format!("GPU-{arn}"),
            mode: SharingMode::NvidiaMps,
            total_memory_mib: 24_000,
            remaining_memory_mib: remaining,
            container_count: None,
        }],
        running_tasks: 0,
        pending_tasks: 0,
    }
}

fn cluster(instances: Vec<KnownInstance>) -> ClusterState {
    ClusterState {
        arn: "arn:aws:ecs:us-east-1:1:cluster/prod".into(),
        instances,
        ..ClusterState::default()
    }
}

#[test]
fn a_difference_counts_only_on_instances_unchanged_between_the_reads() {
    let definitions = HashMap::new();
    let ours = cluster(vec![instance("a", 1, 10_000), instance("b", 2, 10_000)]);
    // "a" answered the same to both reads but differs: drift. "b" changed in between:
    // not compared.
    let full = cluster(vec![instance("a", 1, 12_000), instance("b", 3, 12_000)]);
    let drift = compare(std::slice::from_ref(&ours), &[full], &definitions);
    assert_eq!(drift.compared, 1);
    assert_eq!(drift.differing, vec!["prod/a GPU GPU-a".to_string()]);
    let same = compare(
        std::slice::from_ref(&ours),
        std::slice::from_ref(&ours),
        &definitions,
    );
    assert_eq!((same.compared, same.differing.len()), (2, 0));
}

#[test]
fn the_service_sweep_goes_round_every_service() {
    let mut state = cluster(Vec::new());
    for n in 0..25 {
        let arn = format!("arn:svc/{n:02}");
        state.services.insert(
            arn.clone(),
            KnownService {
                arn,
                status: "ACTIVE".into(),
                service: ServiceRef::default(),
            },
        );
    }
    let mut known = Known::new(vec![state]);
    let mut seen = HashSet::new();
    for _ in 0..3 {
        let slice = known.next_sweep();
        assert_eq!(slice.len(), SERVICE_SWEEP);
        seen.extend(slice);
    }
    assert_eq!(seen.len(), 25, "three refreshes describe all 25 services");
}

fn task(arn: &str, definition: &str, gpu: &str) -> RawTask {
    RawTask {
        arn: arn.into(),
        task_definition_arn: definition.into(),
        group: None,
        started_at: None,
        last_status: Some("RUNNING".into()),
        desired_status: Some("RUNNING".into()),
        containers: vec![RawContainer {
            name: "main".into(),
            gpu_ids: vec![gpu.into()],
        }],
        container_instance_arn: Some("a".into()),
        holds_eni: false,
    }
}

fn definitions() -> HashMap<String, DefinitionGpu> {
    let ask = |memory_mib| GpuAsk::Mps {
        memory_mib,
        max_compute_percent: None,
    };
    [
        ("small", ask(4_000)),
        ("large", ask(8_000)),
        ("whole", GpuAsk::Whole(1)),
    ]
    .into_iter()
    .map(|(name, ask)| {
        (
            name.to_string(),
            DefinitionGpu {
                containers: HashMap::from([("main".to_string(), ask)]),
                ..DefinitionGpu::default()
            },
        )
    })
    .collect()
}

#[test]
fn the_gpus_agree_only_with_the_tasks_that_hold_them() {
    let definitions = definitions();
    // 24,000 MiB, 12,000 left, two containers: a small and a large task.
    let mut a = instance("a", 1, 12_000);
    a.gpus[0].container_count = Some(2);
    let (small, large) = (task("t1", "small", "GPU-a"), task("t2", "large", "GPU-a"));
    assert!(gpus_agree(&a, &[&small, &large], &definitions));
    // A lost start of another small task and a lost stop of the large one: one task each
    // way, but 4,000 MiB less allocated than ECS says.
    let other = task("t3", "small", "GPU-a");
    assert!(!gpus_agree(&a, &[&small, &other], &definitions));
    // Memory that adds up with a container too few.
    let mut b = instance("a", 1, 16_000);
    b.gpus[0].container_count = Some(2);
    let big = task("t4", "large", "GPU-a");
    assert!(!gpus_agree(&b, &[&big], &definitions));
    b.gpus[0].container_count = None;
    assert!(
        gpus_agree(&b, &[&big], &definitions),
        "no count: memory alone"
    );
    // A GPU not on the instance, a definition not yet read, a whole-GPU container on an
    // MPS GPU: none of these is accounted for.
    assert!(!gpus_agree(
        &b,
        &[&task("t5", "large", "GPU-b")],
        &definitions
    ));
    assert!(!gpus_agree(
        &b,
        &[&task("t6", "unread", "GPU-a")],
        &definitions
    ));
    let mut c = instance("a", 1, 24_000);
    assert!(!gpus_agree(
        &c,
        &[&task("t7", "whole", "GPU-a")],
        &definitions
    ));
    // A dedicated GPU needs a container; an idle one has none.
    c.gpus[0].mode = SharingMode::Dedicated;
    assert!(gpus_agree(
        &c,
        &[&task("t7", "whole", "GPU-a")],
        &definitions
    ));
    assert!(!gpus_agree(&c, &[], &definitions));
    c.gpus[0].mode = SharingMode::Idle;
    assert!(gpus_agree(&c, &[], &definitions));
    assert!(!gpus_agree(&c, &[&small], &definitions));
}
