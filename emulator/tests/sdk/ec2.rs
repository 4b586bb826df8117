//! EC2: the instances behind the container instances, instance types, and the network interfaces
//! awsvpc tasks hold.

use emulator::Scenario;

use crate::harness::*;

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
    assert_eq!(
        all,
        emulator::instance_types::ALL.len() + emulator::instance_types::DESCRIBED_ONLY.len()
    );
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
