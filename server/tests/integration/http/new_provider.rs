//! A capacity provider for GPU sharing through the JSON API against the emulator: checked (the
//! types its requirements take and which share GPUs; every refusal by field, before anything is
//! created), created as checked, and a refusal half-way said and recorded.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::support::*;

const CHECK: &str = "/api/v1/clusters/batch-sim/capacity-providers/check";
const CREATE: &str = "/api/v1/clusters/batch-sim/capacity-providers";

/// A Managed Instances provider for batch-sim of NVIDIA instances the types `allowed` take.
fn managed(name: &str, names: Value, allowed: Value) -> String {
    json!({
        "name": name,
        "cluster": "batch-sim",
        "managedInstancesProvider": {
            "infrastructureRoleArn": "arn:aws:iam::123456789012:role/ecsInfrastructureRole",
            "instanceLaunchTemplate": {
                "ec2InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/ecsInstanceRole",
                "networkConfiguration": {"subnets": ["subnet-0a1b2c3d4e5f60001"], "securityGroups": ["sg-0a1b2c3d4e5f60001"]},
                "capacityOptionType": "ON_DEMAND",
                "instanceRequirements": {
                    "vCpuCount": {"min": 4},
                    "memoryMiB": {"min": 16384},
                    "acceleratorTypes": ["gpu"],
                    "acceleratorManufacturers": ["nvidia"],
                    "acceleratorNames": names,
                    "allowedInstanceTypes": allowed,
                },
            },
            "autoRepairConfiguration": {"actionsStatus": "ENABLED"},
        },
    })
    .to_string()
}

#[tokio::test]
async fn a_provider_is_checked_created_as_checked_and_joins_its_cluster() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let body = managed("batch-l40s", json!(["l40s"]), json!(["g6e.*"]));
    let check = json(send(&app, post_json(CHECK, &body)).await).await;
    let sharing: Vec<&str> = check["sharing"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["facts"]["name"].as_str())
        .collect();
    assert!(
        !sharing.is_empty() && sharing.iter().all(|t| t.starts_with("g6e.")),
        "{check}"
    );
    assert_eq!(check["associate"], false);
    assert!(check["providers_after"]
        .as_array()
        .is_some_and(|l| l.iter().any(|p| p == "batch-l40s")));
    let response = send(
        &app,
        post_json(
            &format!("{CREATE}?description=L40S%20for%20simulation"),
            &body,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let sent: Vec<Value> = emulator
        .writes()
        .into_iter()
        .filter(|w| w.operation == "CreateCapacityProvider" && w.error.is_none())
        .map(|w| w.request)
        .collect();
    assert_eq!(
        sent,
        [check["create"].clone()],
        "the request checked is the one sent"
    );
    let capacity =
        json(send(&app, get("/api/v1/capacity-providers?cluster=batch-sim")).await).await;
    assert!(
        capacity[0]["providers"].as_array().is_some_and(|l| l
            .iter()
            .any(|p| p["name"] == "batch-l40s" && p["type"] == "MANAGED_INSTANCES")),
        "{capacity}"
    );
    let records = audit_records(&app, "add-provider").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "succeeded");
    assert_eq!(
        records[0]["resource"],
        "batch-sim/capacity-provider/batch-l40s"
    );
    // The same name again is refused by field.
    let again = send(&app, post_json(CHECK, &body)).await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_provider_ecs_would_refuse_or_that_cannot_share_gpus_is_refused_by_field() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let long = "g".repeat(256);
    let cases = [
        (managed("Fargate-gpu", json!(["l40s"]), json!(["g6e.*"])), "name: ECS refuses"),
        (managed("awsGpu", json!(["l40s"]), json!(["g6e.*"])), "name: ECS refuses"),
        (managed(&long, json!(["l40s"]), json!(["g6e.*"])), "255"),
        (managed("fractional", json!(["l4"]), json!(["g6f.*"])), "cannot share GPUs"),
        (managed("nothing", json!(["zz9"]), json!(["g6e.*"])), "take no GPU instance type"),
        (
            json!({"name": "no-group", "autoScalingGroupProvider": {"autoScalingGroupArn": "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0:autoScalingGroupName/none"}}).to_string(),
            "autoScalingGroupArn",
        ),
        (json!({"name": "typo", "managedInstanceProvider": {}}).to_string(), "managedInstanceProvider"),
        (managed("other-cluster", json!(["l40s"]), json!(["g6e.*"])).replace("\"batch-sim\"", "\"ml-dev\""), "cluster"),
    ];
    for (body, expected) in cases {
        let response = send(&app, post_json(CREATE, &body)).await;
        let status = response.status();
        let text = text(response).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        assert!(text.contains(expected), "{body}: {text}");
    }
    assert!(emulator
        .writes()
        .iter()
        .all(|w| w.operation != "CreateCapacityProvider"));
}

/// ECS refusing PutClusterCapacityProviders after the provider was made: the answer and the
/// record say that it exists and is not in the cluster's list.
#[tokio::test]
async fn a_refusal_half_way_says_what_exists_now() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let mut faults = emulator.faults();
    faults.operations.insert(
        "PutClusterCapacityProviders".into(),
        emulator::Fault {
            error_rate: 1.0,
            ..emulator::Fault::default()
        },
    );
    emulator.set_faults(faults).expect("valid faults");
    let body = managed("batch-default", json!(["l40s"]), json!(["g6e.*"]));
    let response = send(&app, post_json(&format!("{CREATE}?default=true"), &body)).await;
    let status = response.status();
    let text = text(response).await;
    assert!(status.is_server_error(), "{status}: {text}");
    assert!(
        text.contains("batch-default was created") && text.contains("PutClusterCapacityProviders"),
        "{text}"
    );
    let records = audit_records(&app, "add-provider").await;
    assert_eq!(records[0]["outcome"], "failed", "{records:?}");
    assert!(records[0]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("was created")));
}
