//! Conformance against an independent description of ECS and CloudWatch: the service models
//! that botocore ships (in the virtual environment `scripts/setup.sh` makes). Every request
//! this test sends is first checked against its operation's input shape; every answer of the
//! emulator, over HTTP as a client sees it, is walked against the output shape: every field a
//! member of its structure, every value of its type, every enum value in its enum, every error
//! code one the operation lists. The `include` options are checked both ways: what a request
//! does not ask for is not in the answer.

mod capacity;
mod cost_explorer;
mod model;
mod pricing;
mod run;
use std::collections::BTreeSet;

use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use serde_json::json;

use self::{
    model::{botocore_data, load, Walker},
    run::{post, strings, Run},
};

#[tokio::test]
async fn every_answer_of_every_operation_matches_the_botocore_models() {
    let data = botocore_data();
    let ecs = load("ecs", &data);
    let cloudwatch = load("cloudwatch", &data);
    let scenario = Scenario::Demo;
    let emulator = Emulator::new(
        scenario.build(7, Utc::now()),
        scenario.name(),
        1.0,
        Faults::default(),
    );
    let addr = emulator
        .clone()
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let mut run = Run {
        addr,
        ecs,
        cloudwatch,
        operations: BTreeSet::new(),
        fields: 0,
        problems: Vec::new(),
    };
    let cluster = "inference-prod";

    // Clusters.
    let clusters = run.ecs("ListClusters", json!({})).await;
    assert!(!strings(&clusters["clusterArns"]).is_empty());
    let plain = run
        .ecs("DescribeClusters", json!({"clusters": [cluster, "nope"]}))
        .await;
    for field in [
        "statistics",
        "tags",
        "settings",
        "configuration",
        "attachments",
    ] {
        assert!(
            plain["clusters"][0].get(field).is_none(),
            "DescribeClusters without include has no {field}"
        );
    }
    run.ecs(
        "DescribeClusters",
        json!({"clusters": [cluster], "include": ["TAGS", "STATISTICS", "SETTINGS"]}),
    )
    .await;
    run.ecs("CreateCluster", json!({"clusterName": "conformance"}))
        .await;

    // Container instances.
    let instances = run
        .ecs(
            "ListContainerInstances",
            json!({"cluster": cluster, "maxResults": 5}),
        )
        .await;
    let instance_arns = strings(&instances["containerInstanceArns"]);
    assert!(!instance_arns.is_empty());
    run.ecs(
        "ListContainerInstances",
        json!({"cluster": cluster, "status": "ACTIVE", "nextToken": instances["nextToken"]}),
    )
    .await;
    let mut everything = instance_arns.clone();
    everything
        .push("arn:aws:ecs:us-east-1:123456789012:container-instance/inference-prod/0000".into());
    let plain = run
        .ecs(
            "DescribeContainerInstances",
            json!({"cluster": cluster, "containerInstances": everything}),
        )
        .await;
    for instance in plain["containerInstances"].as_array().expect("instances") {
        assert!(
            instance.get("healthStatus").is_none() && instance.get("tags").is_none(),
            "healthStatus and tags only when asked for"
        );
    }
    let full = run
        .ecs(
            "DescribeContainerInstances",
            json!({"cluster": cluster, "containerInstances": instance_arns, "include": ["CONTAINER_INSTANCE_HEALTH", "TAGS"]}),
        )
        .await;
    assert!(
        full["containerInstances"][0].get("healthStatus").is_some(),
        "healthStatus when asked for"
    );
    // Set ACTIVE (as it is), with an instance that is not there: the instance and a failure.
    let updated = run
        .ecs(
            "UpdateContainerInstancesState",
            json!({"cluster": cluster, "containerInstances": [instance_arns[0].clone(), "arn:aws:ecs:us-east-1:123456789012:container-instance/inference-prod/0000"], "status": "ACTIVE"}),
        )
        .await;
    assert_eq!(updated["containerInstances"][0]["status"], "ACTIVE");
    assert_eq!(updated["failures"][0]["reason"], "MISSING");

    // Every instance of every cluster, with everything it can carry: the impaired daemon, the
    // GPUs of an instance that does not share them.
    for other in ["batch-sim", "ml-dev"] {
        let arns = strings(
            &run.ecs("ListContainerInstances", json!({"cluster": other}))
                .await["containerInstanceArns"],
        );
        run.ecs(
            "DescribeContainerInstances",
            json!({"cluster": other, "containerInstances": arns, "include": ["CONTAINER_INSTANCE_HEALTH"]}),
        )
        .await;
        let tasks = strings(&run.ecs("ListTasks", json!({"cluster": other})).await["taskArns"]);
        for chunk in tasks.chunks(100) {
            run.ecs("DescribeTasks", json!({"cluster": other, "tasks": chunk}))
                .await;
        }
        let services =
            strings(&run.ecs("ListServices", json!({"cluster": other})).await["serviceArns"]);
        for chunk in services.chunks(10) {
            run.ecs(
                "DescribeServices",
                json!({"cluster": other, "services": chunk}),
            )
            .await;
        }
    }

    // Task definitions.
    let families = run
        .ecs("ListTaskDefinitionFamilies", json!({"maxResults": 100}))
        .await;
    assert!(!strings(&families["families"]).is_empty());
    run.ecs(
        "ListTaskDefinitionFamilies",
        json!({"status": "ACTIVE", "familyPrefix": "e"}),
    )
    .await;
    let definitions = run
        .ecs(
            "ListTaskDefinitions",
            json!({"sort": "DESC", "status": "ACTIVE", "maxResults": 10}),
        )
        .await;
    let definition_arn = strings(&definitions["taskDefinitionArns"])
        .into_iter()
        .next()
        .expect("a task definition");
    let plain = run
        .ecs(
            "DescribeTaskDefinition",
            json!({"taskDefinition": definition_arn}),
        )
        .await;
    assert!(plain.get("tags").is_none(), "tags only when asked for");
    run.ecs(
        "DescribeTaskDefinition",
        json!({"taskDefinition": definition_arn, "include": ["TAGS"]}),
    )
    .await;
    let registered = run
        .ecs(
            "RegisterTaskDefinition",
            json!({
                "family": "conformance",
                "requiresCompatibilities": ["EC2"],
                "networkMode": "bridge",
                "containerDefinitions": [{
                    "name": "model",
                    "image": "public.ecr.aws/docker/library/busybox:latest",
                    "cpu": 1024,
                    "memory": 2048,
                    "essential": true,
                    "portMappings": [{"containerPort": 8080, "protocol": "tcp"}],
                    "environment": [{"name": "MODE", "value": "serve"}],
                    "resourceRequirements": [{
                        "type": "GPU",
                        "sharingStrategy": {"nvidiaMps": {"memory": 4096, "maxComputePercent": 40}}
                    }]
                }],
                "tags": [{"key": "team", "value": "search"}]
            }),
        )
        .await;
    let new_arn = registered["taskDefinition"]["taskDefinitionArn"]
        .as_str()
        .expect("an ARN")
        .to_string();
    // A request ECS refuses: a value beside a sharing strategy.
    let (status, _) = run
        .call(
            false,
            "RegisterTaskDefinition",
            json!({
                "family": "conformance",
                "containerDefinitions": [{
                    "name": "model", "image": "busybox", "memory": 512,
                    "resourceRequirements": [{"type": "GPU", "value": "", "sharingStrategy": {"nvidiaMps": {"memory": 1024}}}]
                }]
            }),
        )
        .await;
    assert_eq!(status, 400);

    // Tags.
    run.ecs(
        "TagResource",
        json!({"resourceArn": new_arn, "tags": [{"key": "owner", "value": "conformance"}]}),
    )
    .await;
    run.ecs("ListTagsForResource", json!({"resourceArn": new_arn}))
        .await;
    run.ecs(
        "UntagResource",
        json!({"resourceArn": new_arn, "tagKeys": ["owner"]}),
    )
    .await;

    // Services.
    let services = run
        .ecs("ListServices", json!({"cluster": cluster, "maxResults": 3}))
        .await;
    let service_arns = strings(&services["serviceArns"]);
    assert!(!service_arns.is_empty());
    let plain = run
        .ecs(
            "DescribeServices",
            json!({"cluster": cluster, "services": [service_arns[0], "nope"]}),
        )
        .await;
    assert!(
        plain["services"][0].get("tags").is_none(),
        "tags only when asked for"
    );
    run.ecs(
        "DescribeServices",
        json!({"cluster": cluster, "services": service_arns, "include": ["TAGS"]}),
    )
    .await;
    run.ecs(
        "CreateService",
        json!({
            "cluster": cluster,
            "serviceName": "conformance",
            "taskDefinition": new_arn,
            "desiredCount": 1,
            "launchType": "EC2",
            "deploymentConfiguration": {
                "maximumPercent": 200, "minimumHealthyPercent": 100,
                "deploymentCircuitBreaker": {"enable": true, "rollback": true}
            },
            "tags": [{"key": "team", "value": "search"}]
        }),
    )
    .await;
    run.ecs(
        "UpdateService",
        json!({"cluster": cluster, "service": "conformance", "desiredCount": 2}),
    )
    .await;
    let (status, _) = run
        .call(
            false,
            "UpdateService",
            json!({"cluster": cluster, "service": "no-such-service", "desiredCount": 1}),
        )
        .await;
    assert_eq!(status, 400);

    // Tasks.
    let tasks = run
        .ecs(
            "ListTasks",
            json!({"cluster": cluster, "desiredStatus": "RUNNING", "maxResults": 20}),
        )
        .await;
    let task_arns = strings(&tasks["taskArns"]);
    assert!(!task_arns.is_empty());
    run.ecs(
        "ListTasks",
        json!({"cluster": cluster, "containerInstance": instance_arns[0]}),
    )
    .await;
    let plain = run
        .ecs(
            "DescribeTasks",
            json!({"cluster": cluster, "tasks": task_arns}),
        )
        .await;
    assert!(
        plain["tasks"][0].get("tags").is_none(),
        "tags only when asked for"
    );
    assert!(
        plain["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["containers"].as_array().into_iter().flatten())
            .any(|c| c["gpuSharingStrategy"]["nvidiaMps"]["memory"].is_u64()),
        "MPS containers carry their gpuSharingStrategy"
    );
    run.ecs(
        "DescribeTasks",
        json!({"cluster": cluster, "tasks": [task_arns[0]], "include": ["TAGS"]}),
    )
    .await;
    // Stopped tasks carry their stop code and reasons.
    let stopped = strings(
        &run.ecs(
            "ListTasks",
            json!({"cluster": cluster, "desiredStatus": "STOPPED"}),
        )
        .await["taskArns"],
    );
    if !stopped.is_empty() {
        run.ecs(
            "DescribeTasks",
            json!({"cluster": cluster, "tasks": stopped.iter().take(100).collect::<Vec<_>>()}),
        )
        .await;
    }
    run.ecs(
        "DeregisterTaskDefinition",
        json!({"taskDefinition": new_arn}),
    )
    .await;
    capacity::capacity_providers(&mut run).await;
    // An unknown operation gets a JSON error, not a crash.
    let (status, answer) = post(
        addr,
        "AmazonEC2ContainerServiceV20141113.DeleteCluster",
        &json!({}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");

    // CloudWatch over JSON, as botocore speaks it.
    let now = Utc::now().timestamp();
    let metrics = run
        .call(
            true,
            "ListMetrics",
            json!({"Namespace": "CWAgent", "MetricName": "nvidia_smi_utilization_gpu"}),
        )
        .await
        .1;
    let metric = metrics["Metrics"][0].clone();
    assert!(metric.is_object(), "the agent publishes GPU metrics");
    let (status, data) = run
        .call(
            true,
            "GetMetricData",
            json!({
                "MetricDataQueries": [{"Id": "u0", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Average"}}],
                "StartTime": now - 900,
                "EndTime": now,
                "ScanBy": "TimestampDescending"
            }),
        )
        .await;
    assert_eq!(status, 200, "{data}");
    let (status, put) = run
        .call(
            true,
            "PutMetricData",
            json!({"Namespace": "CWAgent", "MetricData": [{"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": [{"Name": "host", "Value": "ip-10-0-0-1.ec2.internal"}, {"Name": "index", "Value": "0"}], "Value": 12.0, "Timestamp": now}]}),
        )
        .await;
    assert_eq!(status, 200, "{put}");

    let served: BTreeSet<String> = emulator::ecs_api::OPERATIONS
        .iter()
        .map(|op| format!("ecs:{op}"))
        .chain(
            emulator::cbor::OPERATIONS
                .iter()
                .map(|op| format!("cloudwatch:{op}")),
        )
        .collect();
    let missing: Vec<&String> = served.difference(&run.operations).collect();
    assert!(
        missing.is_empty(),
        "every operation the emulator serves is checked; not yet: {missing:?}"
    );
    println!(
        "conformance: {} operations, {} values checked against botocore's models",
        run.operations.len(),
        run.fields
    );
    assert!(
        run.problems.is_empty(),
        "{} answers do not match the models:\n{}",
        run.problems.len(),
        run.problems.join("\n")
    );
}

/// The walker finds what it is for: a field the shape does not have, a value of the wrong
/// type, a value outside its enum, a missing required member.
#[test]
fn the_walker_finds_answers_that_do_not_match() {
    let model = load("ecs", &botocore_data());
    let mut walker = Walker {
        model: &model,
        checked: 0,
        problems: Vec::new(),
    };
    walker.walk(
        "GpuDevice",
        &json!({"gpuId": "GPU-1", "sharingMode": "SHARED", "totalMemoryInMiB": "22563", "memoryInMiB": 1}),
        "gpu",
    );
    walker.walk(
        "NvidiaMpsAllocation",
        &json!({"maxComputePercent": 50}),
        "mps",
    );
    let problems = walker.problems.join("\n");
    assert!(
        problems.contains("gpu.sharingMode: not a value of the enum"),
        "{problems}"
    );
    assert!(
        problems.contains("gpu.totalMemoryInMiB: expected an integer"),
        "{problems}"
    );
    assert!(
        problems.contains("gpu.memoryInMiB: not a member of GpuDevice"),
        "{problems}"
    );
    assert!(
        problems.contains("required member memory of NvidiaMpsAllocation"),
        "{problems}"
    );
    assert_eq!(walker.problems.len(), 4, "{problems}");
}
