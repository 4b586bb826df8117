//! Elastic capacity through the real SDKs: the demo's Auto Scaling group read with
//! aws-sdk-autoscaling, a service on a Managed Instances provider whose tasks wait in
//! PROVISIONING until the provider launches an instance, and the strategies ECS refuses.

use aws_sdk_ecs::types::{
    CapacityProviderStrategyItem, Compatibility, ContainerDefinition, LaunchType,
};
use emulator::Scenario;

use crate::harness::*;

fn strategy(provider: &str, weight: i32, base: i32) -> CapacityProviderStrategyItem {
    CapacityProviderStrategyItem::builder()
        .capacity_provider(provider)
        .weight(weight)
        .base(base)
        .build()
        .expect("a strategy item")
}

/// Registers a family asking `memory` MiB of a GPU through MPS, for `compatibilities`.
async fn family(h: &Harness, name: &str, memory: i32, compatibilities: &[Compatibility]) -> String {
    h.ecs
        .register_task_definition()
        .family(name)
        .set_requires_compatibilities(Some(compatibilities.to_vec()))
        .container_definitions(
            ContainerDefinition::builder()
                .name("model")
                .image("model:1")
                .cpu(1024)
                .memory(4096)
                .resource_requirements(mps_requirement(memory, Some(50)))
                .build(),
        )
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register")
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("an ARN")
        .to_string()
}

#[tokio::test]
async fn the_demos_auto_scaling_group_is_read_with_the_auto_scaling_sdk() {
    let h = start(Scenario::Demo, 1.0).await;
    let out = h
        .autoscaling
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("batch-sim-gpu")
        .send()
        .await
        .expect("describe");
    let groups = out.auto_scaling_groups();
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    assert_eq!(group.auto_scaling_group_name(), Some("batch-sim-gpu"));
    assert_eq!(
        (group.min_size(), group.max_size(), group.desired_capacity()),
        (Some(1), Some(4), Some(3))
    );
    assert_eq!(group.instances().len(), 3, "{group:?}");
    let overrides: Vec<&str> = group
        .mixed_instances_policy()
        .and_then(|p| p.launch_template())
        .map(|t| {
            t.overrides()
                .iter()
                .filter_map(|o| o.instance_type())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(overrides, ["g6e.12xlarge", "g5.12xlarge"]);
    // An unknown group is no group; a bad page size is refused with Auto Scaling's words.
    let none = h
        .autoscaling
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("nope")
        .send()
        .await
        .expect("describe");
    assert!(none.auto_scaling_groups().is_empty());
    let bad = h
        .autoscaling
        .describe_auto_scaling_groups()
        .max_records(1000)
        .send()
        .await
        .expect_err("MaxRecords is at most 100");
    assert_code(&bad, "ValidationError");
}

#[tokio::test]
async fn tasks_on_a_managed_instances_provider_wait_then_run_on_the_instance_it_launches() {
    let h = start(Scenario::Demo, 200.0).await;
    let td = family(
        &h,
        "big-model",
        40_000,
        &[Compatibility::Ec2, Compatibility::ManagedInstances],
    )
    .await;
    // The two idle g6e.12xlarge take eight tasks of 40,000 MiB; two more wait.
    let created = h
        .ecs
        .create_service()
        .cluster("inference-prod")
        .service_name("big-model")
        .task_definition(&td)
        .desired_count(10)
        .capacity_provider_strategy(strategy("gpu-sharing-mi", 1, 0))
        .send()
        .await
        .expect("created");
    let service = created.service().expect("a service");
    assert!(service.launch_type().is_none());
    assert_eq!(
        service.capacity_provider_strategy()[0].capacity_provider(),
        "gpu-sharing-mi"
    );
    let tasks = || async {
        let arns = h
            .ecs
            .list_tasks()
            .cluster("inference-prod")
            .service_name("big-model")
            .send()
            .await
            .expect("list")
            .task_arns()
            .to_vec();
        h.ecs
            .describe_tasks()
            .cluster("inference-prod")
            .set_tasks(Some(arns))
            .send()
            .await
            .expect("describe")
            .tasks()
            .to_vec()
    };
    let first = tasks().await;
    assert_eq!(first.len(), 10);
    let waiting: Vec<_> = first
        .iter()
        .filter(|t| t.container_instance_arn().is_none())
        .collect();
    assert_eq!(waiting.len(), 2, "two wait for capacity");
    assert!(waiting
        .iter()
        .all(|t| t.last_status() == Some("PROVISIONING")
            && t.capacity_provider_name() == Some("gpu-sharing-mi")));
    // The provider launches one g6e.12xlarge (three minutes, simulated); the two run there.
    let mut running = 0;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        running = tasks()
            .await
            .iter()
            .filter(|t| t.last_status() == Some("RUNNING"))
            .count();
        if running == 10 {
            break;
        }
    }
    assert_eq!(running, 10, "all ten run once the instance is up");
    let launched: Vec<(String, String)> = h.emulator.with_fleet(|fleet| {
        fleet.clusters["inference-prod"]
            .instances
            .iter()
            .filter(|i| i.capacity_provider.as_deref() == Some("gpu-sharing-mi"))
            .filter(|i| i.registered_at > fleet.now - chrono::Duration::minutes(10))
            .map(|i| (i.instance_type.clone(), i.ec2_instance_id.clone()))
            .collect()
    });
    assert_eq!(launched.len(), 1);
    assert_eq!(launched[0].0, "g6e.12xlarge");
    // EC2 names ECS as the operator of a Managed Instance, and of no instance registered by
    // hand.
    let operator = |id: String| {
        let ec2 = h.ec2.clone();
        async move {
            let out = ec2
                .describe_instances()
                .instance_ids(id)
                .send()
                .await
                .expect("described");
            out.reservations()[0].instances()[0]
                .operator()
                .map(|o| (o.managed(), o.principal().map(str::to_string)))
        }
    };
    assert_eq!(
        operator(launched[0].1.clone()).await,
        Some((Some(true), Some("ecs.amazonaws.com".to_string())))
    );
    let by_hand = h.emulator.with_fleet(|fleet| {
        fleet.clusters["ml-dev"].instances[0]
            .ec2_instance_id
            .clone()
    });
    assert_eq!(operator(by_hand).await, None);
}

#[tokio::test]
async fn strategies_ecs_refuses_are_refused_with_its_words() {
    let h = start(Scenario::Demo, 1.0).await;
    let ec2_only = family(&h, "ec2-only", 4_096, &[Compatibility::Ec2]).await;
    let both = family(
        &h,
        "both",
        4_096,
        &[Compatibility::Ec2, Compatibility::ManagedInstances],
    )
    .await;
    let create = |name: &'static str, td: String| {
        h.ecs
            .create_service()
            .cluster("inference-prod")
            .service_name(name)
            .task_definition(td)
            .desired_count(1)
    };
    // A provider the cluster does not have.
    let error = create("a", both.clone())
        .capacity_provider_strategy(strategy("batch-sim-gpu-asg", 1, 0))
        .send()
        .await
        .expect_err("not the cluster's provider");
    assert_code(&error, "InvalidParameterException");
    assert!(format!("{error:?}").contains("not associated with the cluster"));
    // A launch type and a strategy together.
    let error = create("b", both.clone())
        .launch_type(LaunchType::Ec2)
        .capacity_provider_strategy(strategy("gpu-sharing-mi", 1, 0))
        .send()
        .await
        .expect_err("both");
    assert_code(&error, "InvalidParameterException");
    // A Managed Instances provider for a task definition without MANAGED_INSTANCES.
    let error = create("c", ec2_only.clone())
        .capacity_provider_strategy(strategy("gpu-sharing-mi", 1, 0))
        .send()
        .await
        .expect_err("not compatible");
    assert!(format!("{error:?}").contains("requiresCompatibilities"));
    // Fargate does not run GPU tasks.
    let error = create("d", both.clone())
        .capacity_provider_strategy(strategy("FARGATE", 1, 0))
        .send()
        .await
        .expect_err("Fargate");
    assert_code(&error, "InvalidParameterException");
    // Changing a running service's strategy needs a new deployment.
    create("e", both.clone())
        .send()
        .await
        .expect("on the EC2 launch type");
    let error = h
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("e")
        .capacity_provider_strategy(strategy("gpu-sharing-mi", 1, 0))
        .send()
        .await
        .expect_err("needs forceNewDeployment");
    assert!(format!("{error:?}").contains("forceNewDeployment"));
    let moved = h
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("e")
        .capacity_provider_strategy(strategy("gpu-sharing-mi", 1, 0))
        .force_new_deployment(true)
        .send()
        .await
        .expect("moved to the provider");
    assert_eq!(
        moved
            .service()
            .map(|s| s.capacity_provider_strategy().len()),
        Some(1)
    );
}
