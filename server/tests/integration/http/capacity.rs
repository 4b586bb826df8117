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
    assert_eq!(managed["managed_instances"]["scale_in_after_seconds"], 1800);
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
