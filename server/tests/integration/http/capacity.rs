//! Capacity providers in the API: every cluster's providers with what ECS says of them and the
//! fleet's instances each launched; one cluster's; the fleet JSON naming each instance's
//! provider; and the queries refused.

use axum::http::StatusCode;

use super::support::*;

#[tokio::test]
async fn every_clusters_providers_are_read_with_the_instances_they_launched() {
    let (app, _) = test_app(false).await;
    let (_, fleet) = fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/capacity-providers")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let clusters = json(response).await;
    let of = |name: &str| {
        clusters
            .as_array()
            .expect("a list of clusters")
            .iter()
            .find(|c| c["cluster"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {clusters}"))
    };
    let inference = of("inference-prod");
    let managed = &inference["providers"][0];
    assert_eq!(managed["name"], "gpu-sharing-mi", "{inference}");
    assert_eq!(managed["type"], "MANAGED_INSTANCES");
    assert_eq!(managed["can_share_gpus"], true);
    assert_eq!(managed["managed_instances"]["auto_repair"], true);
    assert_eq!(managed["managed_instances"]["scale_in_after_seconds"], -1);
    assert_eq!(
        managed["managed_instances"]["accelerator_manufacturers"],
        serde_json::json!(["nvidia"])
    );
    // As many instances as the fleet JSON says carry its name, and their GPUs.
    let named: Vec<&serde_json::Value> = fleet["snapshot"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .filter(|c| c["name"] == "inference-prod")
        .flat_map(|c| c["instances"].as_array().expect("instances"))
        .filter(|i| i["capacity_provider"] == "gpu-sharing-mi")
        .collect();
    assert!(
        !named.is_empty(),
        "the fleet JSON names the provider: {fleet}"
    );
    assert_eq!(managed["instances"], named.len());
    let gpus: usize = named
        .iter()
        .map(|i| i["gpus"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(managed["gpus"], gpus);

    let batch = of("batch-sim");
    let group = &batch["providers"][0];
    assert_eq!(group["type"], "EC2_AUTOSCALING", "{batch}");
    assert_eq!(group["auto_scaling_group"]["managed_scaling"], true);
    assert_eq!(group["auto_scaling_group"]["target_capacity_percent"], 90);
    assert_eq!(group["auto_scaling_group"]["maximum_scaling_step_size"], 2);
    assert_eq!(
        batch["default_strategy"][0]["capacity_provider"],
        group["name"]
    );
    let dev = of("ml-dev");
    assert_eq!(dev["providers"], serde_json::json!([]), "{dev}");

    // One cluster's, and the queries that are refused.
    let one = json(send(&app, get("/api/v1/capacity-providers?cluster=batch-sim")).await).await;
    assert_eq!(one.as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one[0]["cluster"], "batch-sim");
    let unknown = send(&app, get("/api/v1/capacity-providers?cluster=nope")).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let wrong = send(&app, get("/api/v1/capacity-providers?clustr=batch-sim")).await;
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    let message = text(wrong).await;
    assert!(
        message.contains("cluster"),
        "says which parameters there are: {message}"
    );
}

/// A task definition body asking `memory` MiB of a GPU through MPS, for EC2 and Managed
/// Instances.
fn big_model(memory: u32) -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({
        "family": "big-model",
        "requiresCompatibilities": ["EC2", "MANAGED_INSTANCES"],
        "containerDefinitions": [{
            "name": "model", "image": "big/model:1", "cpu": 2048, "memory": 8192,
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": memory}}}]
        }]
    })
    .as_object()
    .cloned()
    .expect("an object")
}

#[tokio::test]
async fn a_rollout_on_a_managed_instances_provider_launches_where_a_fixed_fleet_stalls() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    // Someone creates a service on the Managed Instances provider outside the console: six
    // tasks of 30,000 MiB, one to each of six of the idle g6e GPUs (45,582 MiB).
    emulator.with_fleet(|fleet| {
        let now = fleet.now;
        let first = fleet
            .register_task_definition(big_model(30_000), now)
            .expect("registered")
            .arn
            .clone();
        fleet
            .register_task_definition(big_model(44_000), now)
            .expect("registered");
        fleet
            .create_service(
                "inference-prod",
                emulator::engine::NewService {
                    name: "big-model".into(),
                    task_definition: first,
                    desired_count: 6,
                    config: emulator::model::DeploymentConfig::default(),
                    placement_constraints: Vec::new(),
                    placement_strategy: Vec::new(),
                    capacity_provider_strategy: vec![emulator::capacity::StrategyItem {
                        capacity_provider: "gpu-sharing-mi".into(),
                        weight: 1,
                        base: 0,
                    }],
                },
            )
            .expect("created");
    });
    let pre_check = "/api/v1/services/inference-prod/big-model/pre-check?revision=2";
    let mut check = serde_json::Value::Null;
    for _ in 0..200 {
        let response = send(&app, get(pre_check)).await;
        if response.status() == StatusCode::OK {
            check = json(response).await;
            if check["rollout"]["plan"]["running"] == 6 {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        check["rollout"]["plan"]["running"], 6,
        "the console's snapshot did not show big-model's six tasks within 20 s: {check}"
    );
    // 44,000 MiB a task: the two free g6e GPUs take two, four wait for capacity, and the
    // provider launches one g6e.12xlarge (its requirements allow a10g, l4 and l40s with at most
    // 64 vCPUs; four tasks of 44,000 MiB fit neither an A10G nor an L4).
    assert_eq!(
        check["rollout"]["verdict"]["verdict"], "completes",
        "{check}"
    );
    let growth = &check["rollout"]["growth"];
    assert_eq!(growth["provider"], "gpu-sharing-mi", "{check}");
    assert_eq!(growth["launches"], serde_json::json!([["g6e.12xlarge", 1]]));
    assert_eq!(growth["seconds"], 180);
    assert_eq!(growth["cents_per_hour"], 1049, "priced from the price book");
    assert!(growth["assumed"][0]
        .as_str()
        .is_some_and(|a| a.contains("assumption")));
    // The plan names the provider's instances only: those of the g5 instances registered by
    // hand do not count.
    assert_eq!(
        check["rollout"]["plan"]["growth"]["source"]["type"],
        "managed_instances"
    );

    // The providers read: what the Managed Instances provider may launch, and the group's size.
    let read = json(send(&app, get("/api/v1/capacity-providers")).await).await;
    let provider = |cluster: &str| {
        read.as_array()
            .and_then(|list| list.iter().find(|c| c["cluster"] == cluster))
            .map(|c| c["providers"][0].clone())
            .unwrap_or_default()
    };
    let managed = provider("inference-prod");
    let option = |name: &str| {
        managed["may_launch"]
            .as_array()
            .and_then(|list| list.iter().find(|o| o["facts"]["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {managed}"))
    };
    assert!(option("g6e.12xlarge")["not_matched"].is_null());
    assert!(option("g6e.48xlarge")["not_matched"]
        .as_str()
        .is_some_and(|why| why.contains("vCpuCount")));
    // The H100 type: more vCPUs than the requirements allow (the first requirement it fails).
    assert!(option("p5.48xlarge")["not_matched"]
        .as_str()
        .is_some_and(|why| why.contains("vCpuCount")));
    let group = provider("batch-sim");
    assert_eq!(
        group["auto_scaling_group"]["group"],
        serde_json::json!({"name": "batch-sim-gpu", "min_size": 1, "max_size": 4, "desired_capacity": 3,
            "instance_types": ["g6e.12xlarge", "g5.12xlarge"]}),
        "{group}"
    );
}

#[tokio::test]
async fn the_fit_check_says_what_each_provider_would_launch_for_a_task_with_no_room() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let body = serde_json::Value::Object(big_model(30_000)).to_string();
    let check = |cluster: &'static str| {
        let (app, body) = (app.clone(), body.clone());
        async move {
            let response = send(
                &app,
                post_json(
                    &format!("/api/v1/task-definitions/fit-check?cluster={cluster}"),
                    &body,
                ),
            )
            .await;
            assert_eq!(response.status(), StatusCode::OK);
            json(response).await
        }
    };
    // The Managed Instances provider: the most cost-effective type whose GPU takes 30,000 MiB,
    // priced, up after the assumed three minutes.
    let report = check("inference-prod").await;
    let growth = report["growth"].as_array().expect("growth");
    assert_eq!(growth.len(), 1, "{report}");
    let managed = &growth[0];
    assert_eq!(managed["provider"], "gpu-sharing-mi", "{report}");
    let kind = managed["instance_type"].as_str().expect("a type");
    assert!(
        kind.starts_with("g6e."),
        "only L40S GPUs take 30,000 MiB: {report}"
    );
    assert!(managed["gpu_memory_mib"].as_u64() >= Some(30_000));
    assert_eq!(managed["seconds"], 180);
    assert!(managed["cents_per_hour"].as_u64() > Some(0), "{report}");
    assert!(managed["assumed"][0]
        .as_str()
        .is_some_and(|a| a.contains("assumption")));

    // The Auto Scaling group below its MaxSize: one of its own type, after the boot.
    let report = check("batch-sim").await;
    let group = &report["growth"][0];
    assert_eq!(group["seconds"], 90, "{report}");
    assert!(group["limit"].is_null(), "{report}");
    // A cluster without providers: no growth.
    let report = check("ml-dev").await;
    assert_eq!(report["growth"], serde_json::json!([]), "{report}");
    // Larger than any GPU ECS can launch: never, and every provider says why not.
    let body = serde_json::Value::Object(big_model(200_000)).to_string();
    let response = send(&app, post_json("/api/v1/task-definitions/fit-check", &body)).await;
    let report = json(response).await;
    assert!(report["never"].is_string(), "{report}");
    let growth = report["growth"].as_array().expect("growth");
    assert!(growth.len() >= 2, "{report}");
    assert!(
        growth
            .iter()
            .all(|g| g["instance_type"].is_null() && g["limit"].is_string()),
        "{report}"
    );
}

#[tokio::test]
async fn managed_instances_are_named_by_ec2_and_their_charge_is_said_in_the_cost() {
    let (app, _) = test_app(false).await;
    let (_, fleet) = fleet_json(&app, "").await;
    let instances: Vec<&serde_json::Value> = fleet["snapshot"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .flat_map(|c| c["instances"].as_array().expect("instances"))
        .collect();
    let managed: Vec<&&serde_json::Value> = instances
        .iter()
        .filter(|i| i["managed_instance"] == true)
        .collect();
    assert!(!managed.is_empty(), "EC2 names ECS as their operator");
    // Exactly the Managed Instances provider's: not the Auto Scaling group's, not by hand.
    assert!(managed
        .iter()
        .all(|i| i["capacity_provider"] == "gpu-sharing-mi"));
    assert_eq!(
        managed.len(),
        instances
            .iter()
            .filter(|i| i["capacity_provider"] == "gpu-sharing-mi")
            .count()
    );
    // The built-in prices give no Managed Instances charge: the cost says it left it out.
    let report = json(send(&app, get("/api/v1/cost?span=day")).await).await;
    assert_eq!(report["managed_instances_cents"], 0, "{report}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("ECS Managed Instances charge of")
            && notes.contains("managed_instances_usd_per_hour"),
        "{notes}"
    );
}
