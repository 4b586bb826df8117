//! Clusters, container instances and their GPUs, tasks' GPU ids, tags, and the smaller listing and
//! filtering rules of ECS's documents.

use aws_sdk_ecs::{
    error::ProvideErrorMetadata,
    types::{
        ContainerDefinition, ContainerInstanceField, DesiredStatus, GpuSharingMode,
        InstanceHealthCheckState, InstanceHealthCheckType, ResourceRequirement, ResourceType,
        SharingStrategy, Tag, TaskDefinitionFamilyStatus,
    },
};
use emulator::Scenario;

use crate::harness::*;

#[tokio::test]
async fn clusters_and_container_instances_with_gpu_devices() {
    let h = start(Scenario::Demo, 1.0).await;
    let clusters = h.ecs.list_clusters().send().await.expect("list clusters");
    assert_eq!(clusters.cluster_arns().len(), 3);

    let described = h
        .ecs
        .describe_clusters()
        .set_clusters(Some(vec!["inference-prod".into(), "nope".into()]))
        .send()
        .await
        .expect("describe clusters");
    assert_eq!(described.clusters().len(), 1);
    assert_eq!(
        described.clusters()[0].registered_container_instances_count(),
        12
    );
    assert_eq!(described.failures()[0].reason(), Some("MISSING"));

    // Pages of 5 collect the same 12 instances as one page.
    let paged = all_instance_arns(&h.ecs, "inference-prod", 5).await;
    assert_eq!(paged.len(), 12);
    assert_eq!(
        paged,
        all_instance_arns(&h.ecs, "inference-prod", 100).await
    );

    // As ECS: health only when the request asks for it.
    let plain = h
        .ecs
        .describe_container_instances()
        .cluster("inference-prod")
        .set_container_instances(Some(paged.clone()))
        .send()
        .await
        .expect("describe instances");
    assert!(
        plain
            .container_instances()
            .iter()
            .all(|i| i.health_status().is_none()),
        "no healthStatus without include CONTAINER_INSTANCE_HEALTH"
    );
    let out = h
        .ecs
        .describe_container_instances()
        .cluster("inference-prod")
        .set_container_instances(Some(paged))
        .include(ContainerInstanceField::ContainerInstanceHealth)
        .send()
        .await
        .expect("describe instances");
    let instances = out.container_instances();
    assert_eq!(instances.len(), 12);
    let mut impaired = 0;
    for instance in instances {
        let attributes: Vec<&str> = instance.attributes().iter().map(|a| a.name()).collect();
        assert!(attributes.contains(&"ecs.instance-type"));
        assert!(attributes.contains(&"ecs.capability.gpu-sharing-mps"));
        let devices = instance.gpu_devices();
        assert!(!devices.is_empty());
        for gpu in devices {
            assert!(gpu.gpu_id().unwrap_or_default().starts_with("GPU-"));
            let total = gpu.total_memory_in_mib().unwrap_or_default();
            let remaining = gpu.remaining_memory_in_mib().unwrap_or_default();
            assert!(remaining <= total);
            match gpu.sharing_mode() {
                Some(GpuSharingMode::Idle) => {
                    assert_eq!((remaining, gpu.container_count()), (total, Some(0)))
                }
                Some(GpuSharingMode::NvidiaMps) => {
                    assert!(gpu.container_count().unwrap_or_default() >= 1)
                }
                Some(GpuSharingMode::Dedicated) => assert_eq!(gpu.container_count(), Some(1)),
                other => panic!("unexpected sharing mode {other:?}"),
            }
        }
        let health = instance.health_status().expect("health status");
        if let Some(check) = health
            .details()
            .iter()
            .find(|d| d.r#type() == Some(&InstanceHealthCheckType::AcceleratedCompute))
        {
            if check.status() == Some(&InstanceHealthCheckState::Impaired) {
                impaired += 1;
            }
        }
    }
    assert_eq!(impaired, 0, "inference-prod's MPS daemons answer");
    // batch-sim's g5.12xlarge has the impaired daemon: IMPAIRED with no reason text, as the
    // agent reports it, and its tasks still running.
    let arns = all_instance_arns(&h.ecs, "batch-sim", 100).await;
    let out = h
        .ecs
        .describe_container_instances()
        .cluster("batch-sim")
        .set_container_instances(Some(arns))
        .include(ContainerInstanceField::ContainerInstanceHealth)
        .send()
        .await
        .expect("describe instances");
    let impaired: Vec<_> = out
        .container_instances()
        .iter()
        .filter_map(|i| {
            let check = i.health_status()?.details().iter().find(|d| {
                d.r#type() == Some(&InstanceHealthCheckType::AcceleratedCompute)
                    && d.status() == Some(&InstanceHealthCheckState::Impaired)
            })?;
            Some((i, check))
        })
        .collect();
    assert_eq!(impaired.len(), 1);
    assert_eq!(impaired[0].1.status_reason(), None);
    assert!(
        impaired[0].0.running_tasks_count() > 0,
        "its tasks keep running"
    );
}

#[tokio::test]
async fn gpu_ids_of_tasks_add_up_to_each_gpus_allocation() {
    let h = start(Scenario::Demo, 1.0).await;
    let arns = all_instance_arns(&h.ecs, "inference-prod", 100).await;
    let instances = h
        .ecs
        .describe_container_instances()
        .cluster("inference-prod")
        .set_container_instances(Some(arns))
        .send()
        .await
        .expect("describe");
    let tasks = h
        .ecs
        .list_tasks()
        .cluster("inference-prod")
        .send()
        .await
        .expect("list tasks");
    let described = h
        .ecs
        .describe_tasks()
        .cluster("inference-prod")
        .set_tasks(Some(tasks.task_arns().to_vec()))
        .send()
        .await
        .expect("describe tasks");
    // Memory requested per GPU, from the task definitions of the tasks on it.
    let mut requested: std::collections::HashMap<String, i32> = Default::default();
    for task in described.tasks() {
        assert!(task.group().unwrap_or_default().starts_with("service:"));
        let td = h
            .ecs
            .describe_task_definition()
            .task_definition(task.task_definition_arn().unwrap_or_default())
            .send()
            .await
            .expect("td");
        let td = td.task_definition().expect("td");
        for container in task.containers() {
            let definition = td
                .container_definitions()
                .iter()
                .find(|c| c.name() == container.name())
                .expect("container");
            for gpu in container.gpu_ids() {
                let memory = definition
                    .resource_requirements()
                    .iter()
                    .find_map(|r| match r.sharing_strategy() {
                        Some(SharingStrategy::NvidiaMps(mps)) => Some(mps.memory()),
                        _ => None,
                    })
                    .unwrap_or(i32::MAX);
                *requested.entry(gpu.clone()).or_default() += memory.min(100_000_000);
            }
        }
    }
    for instance in instances.container_instances() {
        for gpu in instance.gpu_devices() {
            if gpu.sharing_mode() == Some(&GpuSharingMode::NvidiaMps) {
                let allocated = gpu.total_memory_in_mib().unwrap_or_default()
                    - gpu.remaining_memory_in_mib().unwrap_or_default();
                assert_eq!(
                    requested
                        .get(gpu.gpu_id().unwrap_or_default())
                        .copied()
                        .unwrap_or_default(),
                    allocated,
                    "{:?}",
                    gpu.gpu_id()
                );
            }
        }
    }
}

#[tokio::test]
async fn tags_can_be_added_listed_and_removed() {
    let h = start(Scenario::Demo, 1.0).await;
    let arn = h
        .ecs
        .describe_clusters()
        .clusters("ml-dev")
        .send()
        .await
        .expect("describe")
        .clusters()[0]
        .cluster_arn()
        .unwrap_or_default()
        .to_string();
    h.ecs
        .tag_resource()
        .resource_arn(&arn)
        .tags(Tag::builder().key("owner").value("platform").build())
        .send()
        .await
        .expect("tag");
    let tags = h
        .ecs
        .list_tags_for_resource()
        .resource_arn(&arn)
        .send()
        .await
        .expect("list tags");
    assert_eq!(tags.tags()[0].key(), Some("owner"));
    h.ecs
        .untag_resource()
        .resource_arn(&arn)
        .tag_keys("owner")
        .send()
        .await
        .expect("untag");
    assert!(h
        .ecs
        .list_tags_for_resource()
        .resource_arn(&arn)
        .send()
        .await
        .expect("list")
        .tags()
        .is_empty());
    let error = h
        .ecs
        .list_tags_for_resource()
        .resource_arn("arn:aws:ecs:us-east-1:123456789012:cluster/none")
        .send()
        .await
        .expect_err("unknown");
    assert_code(&error, "InvalidParameterException");
}

#[tokio::test]
async fn clusters_can_be_created() {
    let h = start(Scenario::Empty, 1.0).await;
    let created = h
        .ecs
        .create_cluster()
        .cluster_name("gpu-new")
        .send()
        .await
        .expect("create");
    assert_eq!(
        created.cluster().and_then(|c| c.cluster_name()),
        Some("gpu-new")
    );
    let listed = h.ecs.list_clusters().send().await.expect("list");
    assert_eq!(listed.cluster_arns().len(), 1);
    let error = h
        .ecs
        .create_cluster()
        .cluster_name("bad name!")
        .send()
        .await
        .expect_err("bad name");
    assert_code(&error, "InvalidParameterException");
}

/// Smaller points where ECS's documents and the emulator once disagreed: the families' list
/// has inactive families by default, no running task is listed as PENDING, startedBy is the
/// only filter, failures name full ARNs, at most 50 tags, and NeuronDevice is a requirement
/// type.
#[tokio::test]
async fn listing_filtering_and_failures_as_ecs_documents_them() {
    let h = start(Scenario::Demo, 1.0).await;
    let ecs = &h.ecs;

    // A family whose only revision is deregistered is INACTIVE, and listed by default.
    let gone = ecs
        .register_task_definition()
        .family("gone")
        .container_definitions(ContainerDefinition::builder().name("c").image("i").build())
        .send()
        .await
        .expect("registered");
    let arn = gone
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("an ARN")
        .to_string();
    ecs.deregister_task_definition()
        .task_definition(&arn)
        .send()
        .await
        .expect("deregistered");
    let listed = |status: Option<TaskDefinitionFamilyStatus>| async move {
        ecs.list_task_definition_families()
            .family_prefix("gone")
            .set_status(status)
            .send()
            .await
            .expect("families")
            .families()
            .to_vec()
    };
    assert_eq!(listed(None).await, vec!["gone".to_string()]);
    assert!(listed(Some(TaskDefinitionFamilyStatus::Active))
        .await
        .is_empty());

    // Every demo task wants to run: none is listed as PENDING.
    let pending = ecs
        .list_tasks()
        .cluster("inference-prod")
        .desired_status(DesiredStatus::Pending)
        .send()
        .await
        .expect("tasks");
    assert!(pending.task_arns().is_empty(), "{:?}", pending.task_arns());
    let refused = ecs
        .list_tasks()
        .cluster("inference-prod")
        .started_by("ecs-svc/1")
        .family("embed-api")
        .send()
        .await
        .expect_err("startedBy with another filter");
    assert!(
        refused
            .message()
            .unwrap_or_default()
            .contains("only filter"),
        "{refused:?}"
    );

    // Failures name the full ARN of what was asked for by name or ID.
    let services = ecs
        .describe_services()
        .cluster("inference-prod")
        .services("no-such-service")
        .send()
        .await
        .expect("described");
    assert_eq!(
        services.failures()[0].arn(),
        Some("arn:aws:ecs:us-east-1:123456789012:service/inference-prod/no-such-service")
    );
    let tasks = ecs
        .describe_tasks()
        .cluster("inference-prod")
        .tasks("0123456789abcdef")
        .send()
        .await
        .expect("described");
    let failed = tasks.failures()[0].arn().unwrap_or_default();
    assert!(
        failed.starts_with("arn:aws:ecs:") && failed.ends_with("/inference-prod/0123456789abcdef"),
        "{failed}"
    );

    // At most 50 tags; NeuronDevice is a resource requirement type.
    let too_many: Vec<Tag> = (0..51)
        .map(|n| Tag::builder().key(format!("k{n}")).value("v").build())
        .collect();
    let refused = ecs
        .register_task_definition()
        .family("tagged")
        .container_definitions(ContainerDefinition::builder().name("c").image("i").build())
        .set_tags(Some(too_many))
        .send()
        .await
        .expect_err("51 tags");
    assert!(
        refused.message().unwrap_or_default().contains("at most 50"),
        "{refused:?}"
    );
    ecs.register_task_definition()
        .family("neuron")
        .container_definitions(
            ContainerDefinition::builder()
                .name("c")
                .image("i")
                .resource_requirements(
                    ResourceRequirement::builder()
                        .r#type(ResourceType::NeuronDevice)
                        .value("1")
                        .build()
                        .expect("requirement"),
                )
                .build(),
        )
        .send()
        .await
        .expect("a NeuronDevice requirement is valid");
}
