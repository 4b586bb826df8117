//! Capacity providers against the ECS model: the demo's read, one made, put on a cluster,
//! updated, taken off and deleted, and a service on a Managed Instances provider.

use serde_json::json;

use crate::run::Run;

/// Capacity providers: the demo's read, one made, put on a cluster, updated, taken off and
/// deleted, and a name ECS refuses.
pub(crate) async fn capacity_providers(run: &mut Run) {
    let group = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0b6e1c2d-3f4a-4b5c-8d9e-0f1a2b3c4d5e:autoScalingGroupName/conformance";
    run.ecs("DescribeCapacityProviders", json!({"include": ["TAGS"]}))
        .await;
    run.ecs(
        "DescribeCapacityProviders",
        json!({"cluster": "inference-prod", "maxResults": 1}),
    )
    .await;
    run.ecs(
        "CreateCapacityProvider",
        json!({
            "name": "conformance-asg",
            "autoScalingGroupProvider": {
                "autoScalingGroupArn": group,
                "managedScaling": {"status": "ENABLED", "targetCapacity": 75},
                "managedTerminationProtection": "DISABLED",
                "managedDraining": "ENABLED"
            },
            "tags": [{"key": "team", "value": "research"}]
        }),
    )
    .await;
    run.ecs(
        "PutClusterCapacityProviders",
        json!({
            "cluster": "ml-dev",
            "capacityProviders": ["conformance-asg", "FARGATE"],
            "defaultCapacityProviderStrategy": [{"capacityProvider": "conformance-asg", "weight": 1, "base": 1}]
        }),
    )
    .await;
    run.ecs(
        "UpdateCapacityProvider",
        json!({"name": "conformance-asg", "autoScalingGroupProvider": {"managedScaling": {"targetCapacity": 100}}}),
    )
    .await;
    run.ecs(
        "DescribeCapacityProviders",
        json!({"capacityProviders": ["conformance-asg", "FARGATE", "missing-one"], "include": ["TAGS"]}),
    )
    .await;
    run.ecs(
        "PutClusterCapacityProviders",
        json!({"cluster": "ml-dev", "capacityProviders": [], "defaultCapacityProviderStrategy": []}),
    )
    .await;
    run.ecs(
        "DeleteCapacityProvider",
        json!({"capacityProvider": "conformance-asg"}),
    )
    .await;
    let (status, answer) = run
        .call(
            false,
            "CreateCapacityProvider",
            json!({"name": "fargate-gpu", "autoScalingGroupProvider": {"autoScalingGroupArn": group}}),
        )
        .await;
    assert_eq!(status, 400, "a reserved prefix: {answer}");
    service_on_a_provider(run).await;
}

/// A service on a Managed Instances provider: its strategy in the answers, and a task that
/// waits for capacity (no instance, its provider named) walked like any other.
async fn service_on_a_provider(run: &mut Run) {
    let td = run
        .ecs(
            "RegisterTaskDefinition",
            json!({
                "family": "conformance-mi",
                "requiresCompatibilities": ["EC2", "MANAGED_INSTANCES"],
                "containerDefinitions": [{
                    "name": "model", "image": "model:1", "cpu": 1024, "memory": 4096,
                    "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 40000}}}]
                }]
            }),
        )
        .await["taskDefinition"]["taskDefinitionArn"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let strategy = json!([{"capacityProvider": "gpu-sharing-mi", "weight": 1, "base": 0}]);
    run.ecs(
        "CreateService",
        json!({"cluster": "inference-prod", "serviceName": "conformance-mi", "taskDefinition": td,
               "desiredCount": 10, "capacityProviderStrategy": strategy}),
    )
    .await;
    run.ecs(
        "UpdateService",
        json!({"cluster": "inference-prod", "service": "conformance-mi", "capacityProviderStrategy": strategy,
               "forceNewDeployment": true}),
    )
    .await;
    run.ecs(
        "DescribeServices",
        json!({"cluster": "inference-prod", "services": ["conformance-mi"]}),
    )
    .await;
    let arns = run
        .ecs(
            "ListTasks",
            json!({"cluster": "inference-prod", "serviceName": "conformance-mi"}),
        )
        .await;
    let described = run
        .ecs(
            "DescribeTasks",
            json!({"cluster": "inference-prod", "tasks": arns["taskArns"]}),
        )
        .await;
    let waiting = described["tasks"]
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .filter(|t| t.get("containerInstanceArn").is_none())
                .count()
        })
        .unwrap_or(0);
    assert!(waiting > 0, "some tasks wait for capacity: {described}");
    // Deleted (forced, as it is scaled above 0): the answer and a description of it after.
    let deleted = run
        .ecs(
            "DeleteService",
            json!({"cluster": "inference-prod", "service": "conformance-mi", "force": true}),
        )
        .await;
    assert_ne!(deleted["service"]["status"], "ACTIVE", "{deleted}");
    run.ecs(
        "DescribeServices",
        json!({"cluster": "inference-prod", "services": ["conformance-mi"]}),
    )
    .await;
}
