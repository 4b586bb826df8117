use serde_json::json;

use super::*;

fn kind(name: &str, gpus: usize, gpu_memory_mib: u32, vcpus: u32, price: f64) -> TypeFacts {
    TypeFacts {
        name: name.into(),
        gpus,
        gpu_memory_mib,
        total_gpu_memory_mib: gpu_memory_mib * gpus as u32,
        accelerator_name: "l4".into(),
        manufacturer: "nvidia".into(),
        vcpus,
        memory_mib: vcpus * 4 * 1024,
        task_enis: Some(7),
        usd_per_hour: Some(price),
    }
}

fn mps(memory: u32, cpu: u32) -> Shape {
    Shape {
        gpu: GpuRequest::Mps(vec![memory]),
        needs: Needs {
            cpu,
            memory_mib: 1024,
            ..Needs::default()
        },
        group: "service:a".into(),
    }
}

#[test]
fn tasks_are_packed_first_fit_into_as_few_new_instances_as_the_rules_allow() {
    let g6 = kind("g6.12xlarge", 4, 22_000, 48, 4.6);
    // Four GPUs of 22,000 MiB take eight tasks of 10,000 MiB: two to a GPU.
    assert_eq!(
        instances_needed(&g6, 0, &vec![mps(10_000, 1024); 8]),
        Some(1)
    );
    assert_eq!(
        instances_needed(&g6, 0, &vec![mps(10_000, 1024); 9]),
        Some(2)
    );
    // Instances already on their way take their share first.
    assert_eq!(
        instances_needed(&g6, 1, &vec![mps(10_000, 1024); 9]),
        Some(1)
    );
    // CPU binds before the GPUs do: 48 vCPUs take three tasks of 16 vCPUs.
    assert_eq!(
        instances_needed(&g6, 0, &vec![mps(1_000, 16_384); 4]),
        Some(2)
    );
    // A task larger than any GPU of the type fits no new instance.
    assert_eq!(instances_needed(&g6, 0, &[mps(30_000, 1024)]), None);
}

#[test]
fn distinct_instance_puts_one_task_of_the_service_on_each_new_instance() {
    let g6 = kind("g6.12xlarge", 4, 22_000, 48, 4.6);
    let mut one = mps(1_000, 1024);
    one.needs.distinct_instance = true;
    assert_eq!(instances_needed(&g6, 0, &vec![one; 3]), Some(3));
}

#[test]
fn the_cheapest_type_for_all_waiting_tasks_is_chosen_and_fractional_types_are_not() {
    let small = kind("g6.xlarge", 1, 22_000, 4, 0.805);
    let large = kind("g6.12xlarge", 4, 22_000, 48, 4.602);
    let fractional = kind("g6f.large", 1, 22_000, 48, 0.1);
    let candidates = [large.clone(), small.clone(), fractional];
    // One small task: one g6.xlarge is cheaper than one g6.12xlarge.
    let (chosen, count) = cheapest(&candidates, &[mps(10_000, 1024)]).expect("a type");
    assert_eq!((chosen.name.as_str(), count), ("g6.xlarge", 1));
    // Eight tasks need four g6.xlarge ($3.22) or one g6.12xlarge ($4.60): the four.
    let (chosen, count) = cheapest(&candidates, &vec![mps(10_000, 1024); 8]).expect("a type");
    assert_eq!((chosen.name.as_str(), count), ("g6.xlarge", 4));
    // A task of 8 vCPUs does not fit a g6.xlarge at all.
    let (chosen, count) = cheapest(&candidates, &[mps(10_000, 8192)]).expect("a type");
    assert_eq!((chosen.name.as_str(), count), ("g6.12xlarge", 1));
    assert!(cheapest(&[], &[mps(1, 1)]).is_none());
}

#[test]
fn requirements_match_gpu_types_by_name_maker_count_and_patterns() {
    let requirements = Requirements::from_json(&json!({
        "vCpuCount": {"min": 4, "max": 64},
        "memoryMiB": {"min": 16384},
        "acceleratorTypes": ["gpu"],
        "acceleratorManufacturers": ["nvidia"],
        "acceleratorNames": ["L4", "a10g"],
        "allowedInstanceTypes": ["g6.*", "g5*"],
        "excludedInstanceTypes": ["*.48xlarge"]
    }));
    assert_eq!(
        requirements.check(&kind("g6.12xlarge", 4, 22_000, 48, 4.6)),
        Ok(())
    );
    let why = |k: TypeFacts| requirements.check(&k).expect_err("a mismatch");
    assert!(why(kind("g6.48xlarge", 8, 22_000, 64, 13.0)).contains("excludedInstanceTypes"));
    assert!(why(kind("g6.48xlarge", 8, 22_000, 192, 13.0)).contains("vCpuCount"));
    assert!(why(kind("g6e.12xlarge", 4, 44_000, 48, 10.0)).contains("allowedInstanceTypes"));
    let mut h100 = kind("g6.2xlarge", 1, 80_000, 8, 5.0);
    h100.accelerator_name = "h100".into();
    assert!(why(h100).contains("acceleratorNames"));
    let mut amd = kind("g6.2xlarge", 1, 22_000, 8, 1.0);
    amd.manufacturer = "amd".into();
    assert!(why(amd).contains("acceleratorManufacturers"));
}

#[test]
fn type_patterns_take_stars_anywhere() {
    assert!(type_pattern_matches("g6.*", "g6.12xlarge"));
    assert!(!type_pattern_matches("g6.*", "g6e.12xlarge"));
    assert!(type_pattern_matches("g6*", "g6e.12xlarge"));
    assert!(type_pattern_matches("*.12xlarge", "g5.12xlarge"));
    assert!(type_pattern_matches("g*.*large", "g5.xlarge"));
    assert!(type_pattern_matches("P5.48XLARGE", "p5.48xlarge"));
    assert!(!type_pattern_matches("p5.48xlarge", "p5e.48xlarge"));
}

#[test]
fn an_auto_scaling_group_grows_by_its_steps_to_its_target_and_never_past_max_size() {
    let scaling = AsgScaling {
        target: 100,
        min_step: 1,
        max_step: 10_000,
        max_size: 10,
    };
    // Three busy instances of three, two more needed: two launched.
    assert_eq!(asg_step(&scaling, 3, 3, 2).launch, 2);
    // A target of 90 % keeps spare room: M = 5 wants ⌈500 / 90⌉ = 6 instances.
    let spare = AsgScaling {
        target: 90,
        ..scaling
    };
    let step = asg_step(&spare, 3, 3, 2);
    assert_eq!((step.wanted, step.launch), (6, 3));
    // The largest step holds a big need back, and says so.
    let stepped = AsgScaling {
        max_step: 2,
        ..scaling
    };
    let step = asg_step(&stepped, 3, 3, 5);
    assert_eq!((step.launch, step.held_by_step), (2, true));
    // The smallest step launches more than needed.
    let at_least = AsgScaling {
        min_step: 3,
        ..scaling
    };
    assert_eq!(asg_step(&at_least, 3, 3, 1).launch, 3);
    // MaxSize stops it: one left of the two needed, then none.
    let step = asg_step(
        &AsgScaling {
            max_size: 4,
            ..scaling
        },
        3,
        3,
        2,
    );
    assert_eq!((step.launch, step.held_by_max_size), (1, true));
    let step = asg_step(
        &AsgScaling {
            max_size: 3,
            ..scaling
        },
        3,
        3,
        2,
    );
    assert_eq!((step.launch, step.held_by_max_size), (0, true));
    // Nothing waits: nothing is launched, even under the target.
    assert_eq!(asg_step(&spare, 3, 3, 0).launch, 0);
}
