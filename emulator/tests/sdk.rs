//! Conformance: the real aws-sdk-ecs and aws-sdk-cloudwatch clients against the emulator over
//! HTTP, for every operation it serves, with errors, pagination, batch limits and faults.

use std::net::SocketAddr;

use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricDatum, MetricStat};
use aws_sdk_ecs::{
    config::{BehaviorVersion, Credentials, Region},
    error::ProvideErrorMetadata,
    types::{
        ContainerDefinition, ContainerInstanceField, DeploymentCircuitBreaker,
        DeploymentConfiguration, DesiredStatus, GpuSharingMode, InstanceHealthCheckState,
        InstanceHealthCheckType, KeyValuePair, NvidiaMpsAllocation, ResourceRequirement,
        ResourceType, SharingStrategy, Tag, TaskDefinitionFamilyStatus, TaskDefinitionField,
    },
};
use aws_smithy_types::DateTime as SmithyTime;
use chrono::Utc;
use emulator::{Emulator, Fault, Faults, Scenario};

struct Harness {
    emulator: Emulator,
    addr: SocketAddr,
    ecs: aws_sdk_ecs::Client,
    cloudwatch: aws_sdk_cloudwatch::Client,
    ec2: aws_sdk_ec2::Client,
}

async fn start(scenario: Scenario, clock_speed: f64) -> Harness {
    let emulator = Emulator::new(
        scenario.build(42, Utc::now()),
        scenario.name(),
        clock_speed,
        Faults::default(),
    );
    let addr = emulator
        .clone()
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let config = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "AKIDEMULATOR",
            "secret",
            None,
            None,
            "test",
        ))
        .endpoint_url(format!("http://{addr}"))
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(2))
        .load()
        .await;
    Harness {
        emulator,
        addr,
        ecs: aws_sdk_ecs::Client::new(&config),
        cloudwatch: aws_sdk_cloudwatch::Client::new(&config),
        ec2: aws_sdk_ec2::Client::new(&config),
    }
}

async fn all_instance_arns(ecs: &aws_sdk_ecs::Client, cluster: &str, page: i32) -> Vec<String> {
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let out = ecs
            .list_container_instances()
            .cluster(cluster)
            .max_results(page)
            .set_next_token(token)
            .send()
            .await
            .expect("list");
        arns.extend(out.container_instance_arns().iter().cloned());
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return arns;
        }
    }
}

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
async fn errors_come_back_typed() {
    let h = start(Scenario::Demo, 1.0).await;
    let error = h
        .ecs
        .list_services()
        .cluster("no-such-cluster")
        .send()
        .await
        .expect_err("unknown cluster");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_cluster_not_found_exception()),
        "{error:?}"
    );

    let error = h
        .ecs
        .update_service()
        .cluster("ml-dev")
        .service("no-such-service")
        .desired_count(1)
        .send()
        .await
        .expect_err("unknown service");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_service_not_found_exception()),
        "{error:?}"
    );

    let too_many: Vec<String> = (0..101).map(|i| format!("instance-{i}")).collect();
    let error = h
        .ecs
        .describe_container_instances()
        .cluster("ml-dev")
        .set_container_instances(Some(too_many))
        .send()
        .await
        .expect_err("101 ARNs");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{error:?}"
    );

    let eleven: Vec<String> = (0..11).map(|i| format!("svc-{i}")).collect();
    let error = h
        .ecs
        .describe_services()
        .cluster("ml-dev")
        .set_services(Some(eleven))
        .send()
        .await
        .expect_err("11 services");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{error:?}"
    );

    let error = h
        .ecs
        .list_clusters()
        .next_token("garbage")
        .send()
        .await
        .expect_err("bad token");
    assert_eq!(error.code(), Some("InvalidParameterException"));
}

/// The SDK models `value` as required and writes `"value":""` beside a sharing strategy; ECS's
/// model takes one or the other, so the request goes out without it, as the console sends it.
fn without_empty_value(request: &mut aws_smithy_runtime_api::client::orchestrator::HttpRequest) {
    let Some(text) = request
        .body()
        .bytes()
        .and_then(|b| std::str::from_utf8(b).ok())
    else {
        return;
    };
    let body = text
        .replace(r#""value":"","#, "")
        .replace(r#","value":"""#, "");
    if body.len() != text.len() {
        request
            .headers_mut()
            .insert("content-length", body.len().to_string());
        *request.body_mut() = aws_smithy_types::body::SdkBody::from(body);
    }
}

fn mps_requirement(memory: i32, compute: Option<i32>) -> ResourceRequirement {
    let mps = NvidiaMpsAllocation::builder()
        .memory(memory)
        .set_max_compute_percent(compute)
        .build()
        .expect("mps");
    // The SDK models `value` as required: it goes out as "" unless `without_empty_value`.
    ResourceRequirement::builder()
        .r#type(ResourceType::Gpu)
        .value("")
        .sharing_strategy(SharingStrategy::NvidiaMps(mps))
        .build()
        .expect("requirement")
}

#[tokio::test]
async fn task_definitions_register_describe_list_and_deregister() {
    let h = start(Scenario::Empty, 1.0).await;
    let container = ContainerDefinition::builder()
        .name("model")
        .image("example/model:1")
        .memory(2048)
        .environment(KeyValuePair::builder().name("MODEL").value("small").build())
        .resource_requirements(mps_requirement(8192, Some(50)))
        .build();
    let registered = h
        .ecs
        .register_task_definition()
        .family("embedder")
        .container_definitions(container.clone())
        .tags(Tag::builder().key("team").value("search").build())
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register");
    let td = registered.task_definition().expect("td");
    assert_eq!(td.revision(), 1);
    let again = h
        .ecs
        .register_task_definition()
        .family("embedder")
        .container_definitions(container)
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register 2");
    assert_eq!(again.task_definition().map(|t| t.revision()), Some(2));

    let described = h
        .ecs
        .describe_task_definition()
        .task_definition("embedder:1")
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe");
    assert_eq!(described.tags()[0].value(), Some("search"));
    let requirement = &described
        .task_definition()
        .expect("td")
        .container_definitions()[0]
        .resource_requirements()[0];
    match requirement.sharing_strategy() {
        Some(SharingStrategy::NvidiaMps(mps)) => {
            assert_eq!((mps.memory(), mps.max_compute_percent()), (8192, Some(50)))
        }
        other => panic!("sharing strategy lost: {other:?}"),
    }
    assert_eq!(
        requirement.value(),
        "",
        "the value is returned exactly as given"
    );

    let families = h
        .ecs
        .list_task_definition_families()
        .send()
        .await
        .expect("families");
    assert_eq!(families.families(), ["embedder"]);
    let revisions = h
        .ecs
        .list_task_definitions()
        .family_prefix("embedder")
        .send()
        .await
        .expect("revisions");
    assert_eq!(revisions.task_definition_arns().len(), 2);

    h.ecs
        .deregister_task_definition()
        .task_definition("embedder:2")
        .send()
        .await
        .expect("deregister");
    let active = h
        .ecs
        .list_task_definitions()
        .family_prefix("embedder")
        .send()
        .await
        .expect("revisions");
    assert_eq!(active.task_definition_arns().len(), 1);

    // ECS's rules: value and sharingStrategy together are refused.
    let both = ResourceRequirement::builder()
        .r#type(ResourceType::Gpu)
        .value("1")
        .sharing_strategy(SharingStrategy::NvidiaMps(
            NvidiaMpsAllocation::builder()
                .memory(1)
                .build()
                .expect("mps"),
        ))
        .build()
        .expect("requirement");
    let error = h
        .ecs
        .register_task_definition()
        .family("bad")
        .container_definitions(
            ContainerDefinition::builder()
                .name("c")
                .image("i")
                .resource_requirements(both)
                .build(),
        )
        .send()
        .await
        .expect_err("both");
    assert!(
        error.message().unwrap_or_default().contains("not both"),
        "{error:?}"
    );
    // The SDK's own request, with its `"value":""` beside the strategy, is refused the same way.
    let error = h
        .ecs
        .register_task_definition()
        .family("bad")
        .container_definitions(
            ContainerDefinition::builder()
                .name("c")
                .image("i")
                .resource_requirements(mps_requirement(1024, None))
                .build(),
        )
        .send()
        .await
        .expect_err("an empty value beside the strategy");
    assert!(
        error
            .message()
            .unwrap_or_default()
            .contains("even an empty one"),
        "{error:?}"
    );
}

#[tokio::test]
async fn services_roll_out_and_a_broken_revision_rolls_back() {
    let h = start(Scenario::Demo, 1.0).await;
    let services = h
        .ecs
        .list_services()
        .cluster("inference-prod")
        .send()
        .await
        .expect("list services");
    assert_eq!(services.service_arns().len(), 7);

    let before = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .include(aws_sdk_ecs::types::ServiceField::Tags)
        .send()
        .await
        .expect("describe");
    let service = &before.services()[0];
    assert_eq!(service.running_count(), 4);
    assert_eq!(service.tags()[0].value(), Some("search"));
    let td = h
        .ecs
        .describe_task_definition()
        .task_definition(service.task_definition().unwrap_or_default())
        .send()
        .await
        .expect("td");
    let mut container = td.task_definition().expect("td").container_definitions()[0].clone();
    container.resource_requirements = Some(vec![mps_requirement(6_144, Some(50))]);
    let new = h
        .ecs
        .register_task_definition()
        .family("rerank")
        .container_definitions(container.clone())
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register");
    let new_arn = new
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .unwrap_or_default()
        .to_string();

    let updated = h
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("rerank")
        .task_definition(&new_arn)
        .deployment_configuration(
            DeploymentConfiguration::builder()
                .maximum_percent(200)
                .minimum_healthy_percent(100)
                .deployment_circuit_breaker(
                    DeploymentCircuitBreaker::builder()
                        .enable(true)
                        .rollback(true)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("update");
    let deployments = updated.service().expect("service").deployments();
    assert_eq!(deployments.len(), 2);
    assert_eq!(deployments[0].status(), Some("PRIMARY"));
    assert_eq!(
        deployments[0].rollout_state().map(|s| s.as_str()),
        Some("IN_PROGRESS")
    );

    h.emulator.advance(120);
    let after = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .send()
        .await
        .expect("describe");
    let service = &after.services()[0];
    assert_eq!(service.deployments().len(), 1);
    assert_eq!(
        service.deployments()[0].rollout_state().map(|s| s.as_str()),
        Some("COMPLETED")
    );
    assert_eq!(service.task_definition(), Some(new_arn.as_str()));
    assert_eq!(service.running_count(), 4);
    assert!(service.events().iter().any(|e| e
        .message()
        .unwrap_or_default()
        .contains("deployment completed")));

    // A revision whose container exits on start: the circuit breaker fails it and rolls back.
    container.environment = Some(vec![KeyValuePair::builder()
        .name("EMULATOR_EXIT_CODE")
        .value("1")
        .build()]);
    let broken = h
        .ecs
        .register_task_definition()
        .family("rerank")
        .container_definitions(container)
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register");
    let broken_arn = broken
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .unwrap_or_default()
        .to_string();
    h.ecs
        .update_service()
        .cluster("inference-prod")
        .service("rerank")
        .task_definition(&broken_arn)
        .send()
        .await
        .expect("update");
    h.emulator.advance(300);
    let after = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .send()
        .await
        .expect("describe");
    let service = &after.services()[0];
    assert_eq!(
        service.task_definition(),
        Some(new_arn.as_str()),
        "rolled back to the last good revision"
    );
    let messages: Vec<&str> = service
        .events()
        .iter()
        .filter_map(|e| e.message())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("deployment failed: tasks failed to start")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("rolling back")),
        "{messages:?}"
    );
    assert_eq!(service.running_count(), 4);

    let stopped = h
        .ecs
        .list_tasks()
        .cluster("inference-prod")
        .service_name("rerank")
        .desired_status(aws_sdk_ecs::types::DesiredStatus::Stopped)
        .send()
        .await
        .expect("stopped");
    let stopped = h
        .ecs
        .describe_tasks()
        .cluster("inference-prod")
        .set_tasks(Some(stopped.task_arns().to_vec()))
        .send()
        .await
        .expect("describe stopped");
    assert!(stopped
        .tasks()
        .iter()
        .any(|t| t.stopped_reason() == Some("Essential container in task exited")));
}

#[tokio::test]
async fn a_service_that_cannot_be_placed_reports_it() {
    let h = start(Scenario::Demo, 1.0).await;
    let huge = ContainerDefinition::builder()
        .name("huge")
        .image("i")
        .resource_requirements(mps_requirement(200_000, None))
        .build();
    let td = h
        .ecs
        .register_task_definition()
        .family("huge")
        .container_definitions(huge)
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register");
    let arn = td
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .unwrap_or_default()
        .to_string();
    let created = h
        .ecs
        .create_service()
        .cluster("ml-dev")
        .service_name("huge")
        .task_definition(arn)
        .desired_count(1)
        .deployment_configuration(
            DeploymentConfiguration::builder()
                .deployment_circuit_breaker(
                    DeploymentCircuitBreaker::builder()
                        .enable(true)
                        .rollback(false)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("create");
    let service = created.service().expect("service");
    assert_eq!(service.running_count(), 0);
    assert!(service.events().iter().any(|e| e
        .message()
        .unwrap_or_default()
        .contains("unable to place a task")));
    h.emulator.advance(120);
    let after = h
        .ecs
        .describe_services()
        .cluster("ml-dev")
        .services("huge")
        .send()
        .await
        .expect("describe");
    assert_eq!(
        after.services()[0].deployments()[0]
            .rollout_state()
            .map(|s| s.as_str()),
        Some("FAILED")
    );
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
    assert_eq!(error.code(), Some("InvalidParameterException"));
}

fn gpu_query(id: &str, metric: &str, dims: &[Dimension]) -> MetricDataQuery {
    MetricDataQuery::builder()
        .id(id)
        .metric_stat(
            MetricStat::builder()
                .metric(
                    Metric::builder()
                        .namespace("CWAgent")
                        .metric_name(metric)
                        .set_dimensions(Some(dims.to_vec()))
                        .build(),
                )
                .period(60)
                .stat("Average")
                .build(),
        )
        .build()
}

#[tokio::test]
async fn cloudwatch_serves_gpu_metrics_over_cbor() {
    let h = start(Scenario::Demo, 1.0).await;
    let listed = h
        .cloudwatch
        .list_metrics()
        .namespace("CWAgent")
        .metric_name("nvidia_smi_utilization_gpu")
        .send()
        .await
        .expect("list metrics");
    let (gpus, reporting): (usize, usize) = h.emulator.with_fleet(|fleet| {
        let instances = || fleet.clusters.values().flat_map(|c| c.instances.iter());
        (
            instances().map(|i| i.gpus.len()).sum(),
            instances()
                .filter(|i| i.cloudwatch_agent)
                .map(|i| i.gpus.len())
                .sum(),
        )
    });
    assert!(
        reporting < gpus,
        "the demo has an instance without the agent"
    );
    assert_eq!(listed.metrics().len(), reporting);
    let dims = listed.metrics()[0].dimensions().to_vec();
    let names: Vec<&str> = dims.iter().filter_map(|d| d.name()).collect();
    assert_eq!(names, ["arch", "host", "index", "name"]);

    let now = h.emulator.now().timestamp();
    let out = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(gpu_query("util", "nvidia_smi_utilization_gpu", &dims))
        .metric_data_queries(gpu_query("mem", "nvidia_smi_memory_used", &dims))
        .start_time(SmithyTime::from_secs(now - 15 * 60))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get metric data");
    let results = out.metric_data_results();
    assert_eq!(results.len(), 2);
    assert!(
        (14..=16).contains(&results[0].values().len()),
        "{:?}",
        results[0].values()
    );
    assert_eq!(results[0].timestamps().len(), results[0].values().len());
    assert!(results[0]
        .values()
        .iter()
        .all(|v| (0.0..=100.0).contains(v)));

    // A GPU that does not exist has no data, not zeros.
    let mut missing = dims.clone();
    missing[2] = Dimension::builder().name("index").value("99").build();
    let none = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(gpu_query("x", "nvidia_smi_utilization_gpu", &missing))
        .start_time(SmithyTime::from_secs(now - 600))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get");
    assert!(none.metric_data_results()[0].values().is_empty());

    // At most 500 queries a call.
    let mut request = h
        .cloudwatch
        .get_metric_data()
        .start_time(SmithyTime::from_secs(now - 600))
        .end_time(SmithyTime::from_secs(now));
    for i in 0..501 {
        request = request.metric_data_queries(gpu_query(
            &format!("q{i}"),
            "nvidia_smi_utilization_gpu",
            &dims,
        ));
    }
    let error = request.send().await.expect_err("501 queries");
    assert!(
        error.message().unwrap_or_default().contains("500"),
        "{error:?}"
    );

    // PutMetricData, then read it back.
    let dim = Dimension::builder()
        .name("service")
        .value("embed-api")
        .build();
    h.cloudwatch
        .put_metric_data()
        .namespace("gpushare/test")
        .metric_data(
            MetricDatum::builder()
                .metric_name("latency")
                .dimensions(dim.clone())
                .value(42.0)
                .timestamp(SmithyTime::from_secs(now - 120))
                .build(),
        )
        .send()
        .await
        .expect("put");
    let back = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(
            MetricDataQuery::builder()
                .id("l")
                .metric_stat(
                    MetricStat::builder()
                        .metric(
                            Metric::builder()
                                .namespace("gpushare/test")
                                .metric_name("latency")
                                .dimensions(dim)
                                .build(),
                        )
                        .period(300)
                        .stat("Maximum")
                        .build(),
                )
                .build(),
        )
        .start_time(SmithyTime::from_secs(now - 900))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get");
    assert_eq!(back.metric_data_results()[0].values(), [42.0]);
}

#[tokio::test]
async fn faults_throttle_fail_drop_and_delay() {
    let h = start(Scenario::Empty, 1.0).await;
    let mut faults = Faults::default();
    faults.operations.insert(
        "ListClusters".into(),
        Fault {
            throttle_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "DescribeClusters".into(),
        Fault {
            error_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListServices".into(),
        Fault {
            drop_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListTaskDefinitions".into(),
        Fault {
            latency_ms: 300,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListMetrics".into(),
        Fault {
            throttle_rate: 1.0,
            ..Fault::default()
        },
    );
    h.emulator.set_faults(faults).expect("valid");

    let error = h.ecs.list_clusters().send().await.expect_err("throttled");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.code() == Some("ThrottlingException")),
        "{error:?}"
    );
    let error = h
        .ecs
        .describe_clusters()
        .clusters("x")
        .send()
        .await
        .expect_err("5xx");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_server_exception()),
        "{error:?}"
    );
    let error = h.ecs.list_services().send().await.expect_err("dropped");
    assert!(
        error.as_service_error().is_none(),
        "a dropped connection is not a service error: {error:?}"
    );
    let started = std::time::Instant::now();
    h.ecs
        .list_task_definitions()
        .send()
        .await
        .expect("slow but fine");
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    // CloudWatch is query-compatible: the SDK reports the query protocol's code.
    let error = h
        .cloudwatch
        .list_metrics()
        .send()
        .await
        .expect_err("throttled");
    assert_eq!(error.code(), Some("Throttling"), "{error:?}");
}

#[tokio::test]
async fn the_admin_endpoint_takes_faults_and_refuses_bad_ones() {
    let h = start(Scenario::Empty, 1.0).await;
    let (status, body) = raw(
        h.addr,
        "PUT",
        "/_emulator/faults",
        r#"{"default": {"throttle_rate": 2}}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("between 0 and 1"), "{body}");
    let (status, _) = raw(
        h.addr,
        "PUT",
        "/_emulator/faults",
        r#"{"operations": {"ListClusters": {"error_rate": 1}}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        h.emulator.faults().for_operation("ListClusters").error_rate,
        1.0
    );
    let (status, body) = raw(h.addr, "GET", "/_emulator/status", "").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"scenario\":\"empty\""), "{body}");
}

/// A minimal HTTP/1.1 exchange, to call the emulator without another client crate.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The admin endpoint, with a JSON body.
async fn raw(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    exchange(
        addr,
        method,
        path,
        "Content-Type: application/json\r\n",
        body,
    )
    .await
}

/// An operation over `awsJson1_0`, as botocore sends it.
async fn raw_with_target(addr: SocketAddr, target: &str, body: &str) -> (u16, String) {
    let headers = format!("X-Amz-Target: {target}\r\nContent-Type: application/x-amz-json-1.0\r\n");
    exchange(addr, "POST", "/", &headers, body).await
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
    assert_eq!(error.code(), Some("InvalidParameterException"));
}

#[tokio::test]
async fn cloudwatch_also_answers_botocores_json_protocol() {
    let h = start(Scenario::Demo, 1.0).await;
    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.ListMetrics",
        r#"{"Namespace": "CWAgent", "MetricName": "nvidia_smi_memory_used"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("json");
    let reporting: usize = h.emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .filter(|i| i.cloudwatch_agent)
            .map(|i| i.gpus.len())
            .sum()
    });
    assert_eq!(json["Metrics"].as_array().map(Vec::len), Some(reporting));
    let host = json["Metrics"][0]["Dimensions"]
        .as_array()
        .expect("dims")
        .iter()
        .find(|d| d["Name"] == "host")
        .expect("host")["Value"]
        .clone();
    let dims = json["Metrics"][0]["Dimensions"].clone();
    let now = h.emulator.now().timestamp();
    let request = serde_json::json!({
        "MetricDataQueries": [{"Id": "m", "MetricStat": {"Metric": {"Namespace": "CWAgent", "MetricName": "nvidia_smi_memory_used", "Dimensions": dims}, "Period": 300, "Stat": "Average"}}],
        "StartTime": now - 3600, "EndTime": now,
    });
    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.GetMetricData",
        &request.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("json");
    let values = json["MetricDataResults"][0]["Values"]
        .as_array()
        .expect("values");
    assert!((12..=13).contains(&values.len()), "{body}");
    assert!(
        json["MetricDataResults"][0]["Timestamps"][0].is_number(),
        "timestamps are epoch seconds"
    );
    assert!(host.is_string());

    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.GetMetricData",
        r#"{"MetricDataQueries": []}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert!(body.contains("__type"), "{body}");
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

#[tokio::test]
async fn ec2_describes_the_instances_behind_the_container_instances() {
    use aws_sdk_ec2::types::{Filter, InstanceLifecycleType};
    let h = start(Scenario::Demo, 1.0).await;
    // Every container instance's EC2 ID, from ECS.
    let mut ids = Vec::new();
    for cluster in ["inference-prod", "batch-sim", "ml-dev"] {
        let arns = all_instance_arns(&h.ecs, cluster, 100).await;
        let out = h
            .ecs
            .describe_container_instances()
            .cluster(cluster)
            .set_container_instances(Some(arns))
            .send()
            .await
            .expect("describe");
        ids.extend(
            out.container_instances()
                .iter()
                .filter_map(|i| i.ec2_instance_id().map(str::to_string)),
        );
    }
    assert_eq!(ids.len(), 26);
    let out = h
        .ec2
        .describe_instances()
        .filters(
            Filter::builder()
                .name("instance-id")
                .set_values(Some(ids.clone()))
                .build(),
        )
        .send()
        .await
        .expect("describe instances");
    let instances: Vec<_> = out
        .reservations()
        .iter()
        .flat_map(|r| r.instances())
        .collect();
    assert_eq!(instances.len(), 26);
    for instance in &instances {
        let dns = instance.private_dns_name().unwrap_or_default();
        let ip = instance.private_ip_address().unwrap_or_default();
        assert!(
            dns.starts_with("ip-10-") && dns.ends_with(".ec2.internal"),
            "{dns}"
        );
        assert_eq!(dns, format!("ip-{}.ec2.internal", ip.replace('.', "-")));
        assert!(instance
            .placement()
            .and_then(|p| p.availability_zone())
            .is_some_and(|z| z.starts_with("us-east-1")));
    }
    let spot = instances
        .iter()
        .filter(|i| i.instance_lifecycle() == Some(&InstanceLifecycleType::Spot))
        .count();
    assert!(spot > 0 && spot < 26, "ml-dev runs on spot: {spot}");
    // Pages of MaxResults.
    let first = h
        .ec2
        .describe_instances()
        .max_results(10)
        .send()
        .await
        .expect("page");
    assert_eq!(first.reservations().len(), 10);
    assert!(first.next_token().is_some());
    // An unknown ID fails the whole request, as EC2 does.
    let error = h
        .ec2
        .describe_instances()
        .instance_ids("i-0000000000000000")
        .send()
        .await
        .expect_err("unknown");
    assert_eq!(
        aws_sdk_ec2::error::ProvideErrorMetadata::code(&error),
        Some("InvalidInstanceID.NotFound")
    );
    // The CloudWatch agent publishes the hostname as `host`; the p5's agent also InstanceId.
    let metrics = h
        .cloudwatch
        .list_metrics()
        .namespace("CWAgent")
        .metric_name("nvidia_smi_utilization_gpu")
        .send()
        .await
        .expect("list metrics");
    let hosts: std::collections::BTreeSet<&str> = metrics
        .metrics()
        .iter()
        .filter_map(|m| m.dimensions().iter().find(|d| d.name() == Some("host")))
        .filter_map(|d| d.value())
        .collect();
    assert!(hosts.iter().all(|h| h.starts_with("ip-10-")), "{hosts:?}");
    assert!(metrics.metrics().iter().any(|m| m
        .dimensions()
        .iter()
        .any(|d| d.name() == Some("InstanceId"))));
}

#[tokio::test]
async fn ec2_describes_instance_types_and_awsvpc_tasks_hold_an_eni() {
    use aws_sdk_ec2::types::InstanceType;
    let h = start(Scenario::Demo, 1.0).await;
    let out = h
        .ec2
        .describe_instance_types()
        .instance_types(InstanceType::from("g5.xlarge"))
        .instance_types(InstanceType::from("p4d.24xlarge"))
        .send()
        .await
        .expect("describe instance types");
    let types = out.instance_types();
    assert_eq!(types.len(), 2);
    let g5 = types
        .iter()
        .find(|t| t.instance_type().map(|t| t.as_str()) == Some("g5.xlarge"))
        .expect("g5.xlarge");
    assert_eq!(
        g5.network_info()
            .and_then(|n| n.maximum_network_interfaces()),
        Some(4)
    );
    assert_eq!(g5.v_cpu_info().and_then(|v| v.default_v_cpus()), Some(4));
    assert_eq!(g5.memory_info().and_then(|m| m.size_in_mib()), Some(16_384));
    let gpu = &g5.gpu_info().expect("GPUs").gpus()[0];
    assert_eq!(
        (gpu.name(), gpu.manufacturer(), gpu.count()),
        (Some("A10G"), Some("NVIDIA"), Some(1))
    );
    // Every type, a page at a time.
    let mut pages = h
        .ec2
        .describe_instance_types()
        .max_results(5)
        .into_paginator()
        .send();
    let mut all = 0;
    while let Some(page) = pages.next().await {
        all += page.expect("page").instance_types().len();
    }
    assert_eq!(all, emulator::instance_types::ALL.len());
    // A type EC2 does not have fails the call.
    let error = h
        .ec2
        .describe_instance_types()
        .instance_types(InstanceType::from("g9.mega"))
        .send()
        .await
        .expect_err("unknown type");
    assert_eq!(
        aws_sdk_ec2::error::ProvideErrorMetadata::code(&error),
        Some("InvalidInstanceType")
    );
    // speech-align runs in awsvpc mode: each of its tasks lists its ENI, attached.
    let arns = h
        .ecs
        .list_tasks()
        .cluster("ml-dev")
        .service_name("speech-align")
        .send()
        .await
        .expect("list")
        .task_arns()
        .to_vec();
    assert!(!arns.is_empty());
    let tasks = h
        .ecs
        .describe_tasks()
        .cluster("ml-dev")
        .set_tasks(Some(arns))
        .send()
        .await
        .expect("describe");
    for task in tasks.tasks() {
        let eni = task
            .attachments()
            .iter()
            .find(|a| a.r#type() == Some("ElasticNetworkInterface"))
            .expect("an ENI attachment");
        assert_eq!(eni.status(), Some("ATTACHED"));
        let detail = |name: &str| {
            eni.details()
                .iter()
                .find(|d| d.name() == Some(name))
                .and_then(|d| d.value())
                .map(str::to_string)
        };
        assert!(detail("networkInterfaceId").is_some_and(|id| id.starts_with("eni-")));
        assert!(detail("privateIPv4Address").is_some_and(|ip| ip.starts_with("10.")));
    }
    // A bridge task has none.
    let bridge = h
        .ecs
        .list_tasks()
        .cluster("ml-dev")
        .service_name("notebook-gpu")
        .send()
        .await
        .expect("list")
        .task_arns()
        .to_vec();
    let bridge = h
        .ecs
        .describe_tasks()
        .cluster("ml-dev")
        .set_tasks(Some(bridge))
        .send()
        .await
        .expect("describe");
    assert!(bridge.tasks().iter().all(|t| t.attachments().is_empty()));
}

#[tokio::test]
async fn ecs_throttles_by_group_of_actions_as_documented_when_the_limits_are_on() {
    let h = start(Scenario::Demo, 0.0).await;
    assert!(!h.emulator.rate_limits(), "off in demo unless asked");
    let mut faults = Faults::default();
    faults.add_spec("rate-limits=on").expect("valid");
    h.emulator.set_faults(faults).expect("valid");
    // Cluster read actions: a bucket of 50, shared by DescribeClusters and ListClusters. No
    // SDK retries here, so that each call is one request.
    let config = h
        .ecs
        .config()
        .to_builder()
        .retry_config(aws_sdk_ecs::config::retry::RetryConfig::disabled())
        .build();
    let ecs = aws_sdk_ecs::Client::from_conf(config);
    let mut answered: u64 = 0;
    let mut throttled = Vec::new();
    for n in 0..70 {
        let result: Result<(), (Option<String>, Option<String>)> = if n % 2 == 0 {
            ecs.list_clusters().send().await.map(|_| ()).map_err(|e| {
                (
                    e.code().map(str::to_string),
                    e.message().map(str::to_string),
                )
            })
        } else {
            ecs.describe_clusters()
                .clusters("batch-sim")
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (
                        e.code().map(str::to_string),
                        e.message().map(str::to_string),
                    )
                })
        };
        match result {
            Ok(()) => answered += 1,
            Err(error) => throttled.push(error),
        }
    }
    // The bucket refills at 20 a second while the calls go out: a few more than 50 pass.
    assert!((50..=60).contains(&answered), "{answered} answered");
    assert_eq!(
        throttled[0],
        (
            Some("ThrottlingException".to_string()),
            Some("Rate exceeded".to_string())
        )
    );
    // Another group has its own bucket.
    ecs.list_services()
        .cluster("batch-sim")
        .send()
        .await
        .expect("service reads are another bucket");
    let status = h.emulator.status();
    assert!(status.rate_limits);
    let reads = status
        .api_groups
        .iter()
        .find(|g| g.group == "Cluster read actions")
        .expect("counted");
    assert_eq!((reads.burst, reads.sustained), (50, 20));
    assert_eq!(reads.calls, answered);
    assert_eq!(reads.throttled as usize, throttled.len());
    // The same over HTTP, as `GET /_emulator/status` shows it.
    let body: serde_json::Value = reqwest_get(&format!("http://{}/_emulator/status", h.addr)).await;
    assert_eq!(body["rate_limits"], true);
    assert!(body["api_groups"]
        .as_array()
        .expect("groups")
        .iter()
        .any(|g| g["group"] == "Service read actions" && g["calls"] == 1));
}

/// A GET of a JSON document over plain HTTP/1.0.
async fn reqwest_get(url: &str) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    stream
        .write_all(format!("GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8_lossy(&answer);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).expect("JSON")
}
