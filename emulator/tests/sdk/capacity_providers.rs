//! Capacity providers through the real SDK: the demo's providers read back, an Auto Scaling
//! group provider made, put on a cluster, updated and deleted, a Managed Instances provider
//! that belongs to its cluster, and the requests ECS refuses.

use aws_sdk_ecs::types::{
    AutoScalingGroupProvider, AutoScalingGroupProviderUpdate, CapacityProviderField,
    CapacityProviderStrategyItem, CapacityProviderType,
    CreateManagedInstancesProviderConfiguration, InstanceLaunchTemplate,
    ManagedInstancesNetworkConfiguration, ManagedScaling, ManagedScalingStatus,
};
use emulator::Scenario;

use crate::harness::*;

fn asg_arn(name: &str) -> String {
    format!("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0b6e1c2d-3f4a-4b5c-8d9e-0f1a2b3c4d5e:autoScalingGroupName/{name}")
}

fn asg(name: &str, target: i32) -> AutoScalingGroupProvider {
    AutoScalingGroupProvider::builder()
        .auto_scaling_group_arn(asg_arn(name))
        .managed_scaling(
            ManagedScaling::builder()
                .status(ManagedScalingStatus::Enabled)
                .target_capacity(target)
                .build(),
        )
        .build()
        .expect("an ASG provider")
}

fn strategy(provider: &str, weight: i32, base: i32) -> CapacityProviderStrategyItem {
    CapacityProviderStrategyItem::builder()
        .capacity_provider(provider)
        .weight(weight)
        .base(base)
        .build()
        .expect("a strategy item")
}

#[tokio::test]
async fn the_demo_has_a_managed_instances_provider_and_an_auto_scaling_group() {
    let h = start(Scenario::Demo, 1.0).await;
    let all = h
        .ecs
        .describe_capacity_providers()
        .send()
        .await
        .expect("describe");
    let names: Vec<&str> = all
        .capacity_providers()
        .iter()
        .filter_map(|p| p.name())
        .collect();
    assert_eq!(
        names,
        [
            "FARGATE",
            "FARGATE_SPOT",
            "batch-sim-gpu-asg",
            "gpu-sharing-mi"
        ]
    );
    let managed = &all.capacity_providers()[3];
    assert_eq!(
        managed.r#type(),
        Some(&CapacityProviderType::ManagedInstances)
    );
    assert_eq!(managed.cluster(), Some("inference-prod"));
    let settings = managed.managed_instances_provider().expect("its settings");
    assert_eq!(
        settings
            .auto_repair_configuration()
            .and_then(|r| r.actions_status())
            .map(|s| s.as_str()),
        Some("ENABLED")
    );
    // Only the cluster's own, when a cluster is named.
    let mine = h
        .ecs
        .describe_capacity_providers()
        .cluster("inference-prod")
        .send()
        .await
        .expect("describe the cluster's");
    let names: Vec<&str> = mine
        .capacity_providers()
        .iter()
        .filter_map(|p| p.name())
        .collect();
    assert_eq!(names, ["gpu-sharing-mi"]);
    // The instances it launched say so; the others name none.
    let arns = h
        .ecs
        .list_container_instances()
        .cluster("inference-prod")
        .send()
        .await
        .expect("list");
    let described = h
        .ecs
        .describe_container_instances()
        .cluster("inference-prod")
        .set_container_instances(Some(arns.container_instance_arns().to_vec()))
        .send()
        .await
        .expect("describe instances");
    let by_provider: Vec<(Option<&str>, Option<&str>)> = described
        .container_instances()
        .iter()
        .map(|i| {
            let kind = i
                .attributes()
                .iter()
                .find(|a| a.name() == "ecs.instance-type")
                .and_then(|a| a.value());
            (kind, i.capacity_provider_name())
        })
        .collect();
    assert!(by_provider.iter().all(|(kind, provider)| (matches!(
        kind,
        Some("g6.12xlarge" | "g6e.12xlarge")
    )) == (*provider == Some("gpu-sharing-mi"))));
    assert!(by_provider.iter().any(|(_, p)| p.is_none()));
    let cluster = h
        .ecs
        .describe_clusters()
        .clusters("batch-sim")
        .send()
        .await
        .expect("describe cluster");
    let cluster = &cluster.clusters()[0];
    assert_eq!(cluster.capacity_providers(), ["batch-sim-gpu-asg"]);
    assert_eq!(
        cluster.default_capacity_provider_strategy()[0].capacity_provider(),
        "batch-sim-gpu-asg"
    );
}

#[tokio::test]
async fn an_auto_scaling_group_provider_is_made_used_updated_and_deleted() {
    let h = start(Scenario::Demo, 1.0).await;
    let made = h
        .ecs
        .create_capacity_provider()
        .name("dev-gpu")
        .auto_scaling_group_provider(asg("dev-gpu", 80))
        .tags(
            aws_sdk_ecs::types::Tag::builder()
                .key("team")
                .value("research")
                .build(),
        )
        .send()
        .await
        .expect("create");
    let made = made.capacity_provider().expect("the provider");
    assert_eq!(made.status().map(|s| s.as_str()), Some("ACTIVE"));
    let scaling = made
        .auto_scaling_group_provider()
        .and_then(|a| a.managed_scaling())
        .expect("managed scaling");
    // What the request left out, at ECS's documented defaults.
    assert_eq!(
        (
            scaling.target_capacity(),
            scaling.maximum_scaling_step_size(),
            scaling.instance_warmup_period()
        ),
        (Some(80), Some(10_000), Some(300))
    );
    // The same group for a second provider, and a reserved prefix: refused.
    let again = h
        .ecs
        .create_capacity_provider()
        .name("dev-gpu-2")
        .auto_scaling_group_provider(asg("dev-gpu", 80))
        .send()
        .await
        .expect_err("one group, one provider");
    assert_code(&again, "ClientException");
    let reserved = h
        .ecs
        .create_capacity_provider()
        .name("ecs-gpu")
        .auto_scaling_group_provider(asg("other", 80))
        .send()
        .await
        .expect_err("a reserved prefix");
    assert_code(&reserved, "InvalidParameterException");

    // On the cluster, as its default strategy.
    let put = h
        .ecs
        .put_cluster_capacity_providers()
        .cluster("ml-dev")
        .capacity_providers("dev-gpu")
        .default_capacity_provider_strategy(strategy("dev-gpu", 1, 2))
        .send()
        .await
        .expect("put");
    let cluster = put.cluster().expect("the cluster");
    assert_eq!(cluster.capacity_providers(), ["dev-gpu"]);
    assert_eq!(cluster.default_capacity_provider_strategy()[0].base(), 2);
    // A strategy naming a provider the cluster does not have, or two bases: refused.
    for wrong in [
        vec![strategy("batch-sim-gpu-asg", 1, 0)],
        vec![strategy("dev-gpu", 1, 1), strategy("FARGATE", 1, 1)],
    ] {
        let refused = h
            .ecs
            .put_cluster_capacity_providers()
            .cluster("ml-dev")
            .capacity_providers("dev-gpu")
            .capacity_providers("FARGATE")
            .set_default_capacity_provider_strategy(Some(wrong))
            .send()
            .await
            .expect_err("a strategy ECS refuses");
        assert_code(&refused, "InvalidParameterException");
    }
    // Another cluster's Auto Scaling group provider cannot be taken.
    let taken = h
        .ecs
        .put_cluster_capacity_providers()
        .cluster("ml-dev")
        .capacity_providers("batch-sim-gpu-asg")
        .set_default_capacity_provider_strategy(Some(Vec::new()))
        .send()
        .await
        .expect_err("in batch-sim's list");
    assert_code(&taken, "InvalidParameterException");

    let updated = h
        .ecs
        .update_capacity_provider()
        .name("dev-gpu")
        .auto_scaling_group_provider(
            AutoScalingGroupProviderUpdate::builder()
                .managed_scaling(ManagedScaling::builder().target_capacity(100).build())
                .build(),
        )
        .send()
        .await
        .expect("update");
    assert_eq!(
        updated
            .capacity_provider()
            .and_then(|p| p.update_status())
            .map(|s| s.as_str()),
        Some("UPDATE_IN_PROGRESS")
    );
    let read = h
        .ecs
        .describe_capacity_providers()
        .capacity_providers("dev-gpu")
        .include(CapacityProviderField::Tags)
        .send()
        .await
        .expect("describe");
    let read = &read.capacity_providers()[0];
    assert_eq!(
        read.update_status().map(|s| s.as_str()),
        Some("UPDATE_COMPLETE")
    );
    assert_eq!(read.tags()[0].value(), Some("research"));

    // Associated with a cluster: not deleted until it is taken off.
    let in_use = h
        .ecs
        .delete_capacity_provider()
        .capacity_provider("dev-gpu")
        .send()
        .await
        .expect_err("still on ml-dev");
    assert_code(&in_use, "ClientException");
    h.ecs
        .put_cluster_capacity_providers()
        .cluster("ml-dev")
        .set_capacity_providers(Some(Vec::new()))
        .set_default_capacity_provider_strategy(Some(Vec::new()))
        .send()
        .await
        .expect("taken off");
    let deleted = h
        .ecs
        .delete_capacity_provider()
        .capacity_provider("dev-gpu")
        .send()
        .await
        .expect("delete");
    assert_eq!(
        deleted
            .capacity_provider()
            .and_then(|p| p.status())
            .map(|s| s.as_str()),
        Some("INACTIVE")
    );
}

#[tokio::test]
async fn a_managed_instances_provider_belongs_to_its_cluster() {
    let h = start(Scenario::Demo, 1.0).await;
    let settings = |role: &str| {
        CreateManagedInstancesProviderConfiguration::builder()
            .infrastructure_role_arn(role)
            .instance_launch_template(
                InstanceLaunchTemplate::builder()
                    .ec2_instance_profile_arn(
                        "arn:aws:iam::123456789012:instance-profile/ecsInstanceRole",
                    )
                    .network_configuration(
                        ManagedInstancesNetworkConfiguration::builder()
                            .subnets("subnet-0a1b2c3d4e5f60001")
                            .build(),
                    )
                    .build()
                    .expect("a launch template"),
            )
            .build()
            .expect("settings")
    };
    // Without its cluster, or its role: refused.
    let no_cluster = h
        .ecs
        .create_capacity_provider()
        .name("dev-mi")
        .managed_instances_provider(settings(
            "arn:aws:iam::123456789012:role/ecsInfrastructureRole",
        ))
        .send()
        .await
        .expect_err("a Managed Instances provider needs its cluster");
    assert_code(&no_cluster, "InvalidParameterException");
    let no_role = h
        .ecs
        .create_capacity_provider()
        .name("dev-mi")
        .cluster("ml-dev")
        .managed_instances_provider(settings(""))
        .send()
        .await
        .expect_err("no role");
    assert_code(&no_role, "InvalidParameterException");
    h.ecs
        .create_capacity_provider()
        .name("dev-mi")
        .cluster("ml-dev")
        .managed_instances_provider(settings(
            "arn:aws:iam::123456789012:role/ecsInfrastructureRole",
        ))
        .send()
        .await
        .expect("create");
    // It is the cluster's at once, and no other cluster may take it.
    let cluster = h
        .ecs
        .describe_clusters()
        .clusters("ml-dev")
        .send()
        .await
        .expect("describe");
    assert_eq!(cluster.clusters()[0].capacity_providers(), ["dev-mi"]);
    let elsewhere = h
        .ecs
        .put_cluster_capacity_providers()
        .cluster("batch-sim")
        .capacity_providers("batch-sim-gpu-asg")
        .capacity_providers("dev-mi")
        .set_default_capacity_provider_strategy(Some(Vec::new()))
        .send()
        .await
        .expect_err("ml-dev's own");
    assert_code(&elsewhere, "InvalidParameterException");
    // Deleted only within its cluster.
    let wrong_cluster = h
        .ecs
        .delete_capacity_provider()
        .capacity_provider("dev-mi")
        .send()
        .await
        .expect_err("name its cluster");
    assert_code(&wrong_cluster, "InvalidParameterException");
    h.ecs
        .delete_capacity_provider()
        .capacity_provider("dev-mi")
        .cluster("ml-dev")
        .send()
        .await
        .expect("delete");
    let cluster = h
        .ecs
        .describe_clusters()
        .clusters("ml-dev")
        .send()
        .await
        .expect("describe");
    assert!(cluster.clusters()[0].capacity_providers().is_empty());
}
