//! The consolidation plan through the router, on the demo.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use axum::http::StatusCode;

use super::{
    cost::block_rate_file,
    support::{fleet_json, get, json, send, test_app_configured, text},
};

/// The consolidation plan on the demo: every instance it drains is one of the fleet's, its tasks
/// go to instances of the same cluster that are kept, the instances kept hold all the GPU memory
/// allocated now with the spare left, the saving is the drained instances' price, and the CSV
/// is the table; the page renders it without JavaScript.
#[tokio::test]
async fn the_consolidation_plan_moves_tasks_onto_instances_kept_and_its_csv_is_its_table() {
    let prices = block_rate_file();
    let (app, _) = test_app_configured(false, Vec::new(), None, |args| {
        args.prices = Some(prices.clone());
    })
    .await;
    let (_, fleet) = fleet_json(&app, "").await;
    // Spot instances are priced once the spot prices are read: wait, so that the plan holds still.
    let mut unpriced = serde_json::Value::Null;
    for _ in 0..100 {
        let report = json(send(&app, get("/api/v1/cost?span=day")).await).await;
        unpriced = report["unpriced"].clone();
        if unpriced.as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        unpriced,
        serde_json::json!([]),
        "every instance priced within 10 s (spot prices read)"
    );
    let response = send(&app, get("/api/v1/cost/plan?spare=10")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let plan = json(response).await;
    let drains = plan["drains"].as_array().unwrap();
    assert!(!drains.is_empty(), "the demo has thin instances: {plan}");
    // The fleet's instances by ID: cluster, GPU memory allocated and in all.
    let mut instances: BTreeMap<String, (String, u64, u64)> = BTreeMap::new();
    for cluster in fleet["snapshot"]["clusters"].as_array().unwrap() {
        for instance in cluster["instances"].as_array().unwrap() {
            let gpus = instance["gpus"].as_array().unwrap();
            let total: u64 = gpus
                .iter()
                .map(|g| g["total_memory_mib"].as_u64().unwrap())
                .sum();
            let free: u64 = gpus
                .iter()
                .map(|g| g["remaining_memory_mib"].as_u64().unwrap())
                .sum();
            instances.insert(
                instance["ec2_instance_id"].as_str().unwrap().to_string(),
                (
                    cluster["name"].as_str().unwrap().to_string(),
                    total - free,
                    total,
                ),
            );
        }
    }
    let drained: Vec<&str> = drains
        .iter()
        .map(|d| d["ec2_instance_id"].as_str().unwrap())
        .collect();
    let mut moves = 0;
    let mut saving = 0;
    for drain in drains {
        let (cluster, _, _) = &instances[drain["ec2_instance_id"].as_str().unwrap()];
        assert_eq!(drain["cluster"].as_str().unwrap(), cluster);
        saving += drain["monthly_cents"].as_i64().unwrap();
        assert!(
            !drain["who_acts"].as_str().unwrap().is_empty(),
            "each drain says who retires the instance: {drain}"
        );
        moves += drain["moves"].as_array().unwrap().len().max(1);
        for step in drain["moves"].as_array().unwrap() {
            for to in step["to"].as_array().unwrap() {
                let to = to.as_str().unwrap();
                assert!(!drained.contains(&to), "{to} is drained too");
                assert_eq!(&instances[to].0, cluster, "tasks stay in their cluster");
            }
        }
    }
    assert_eq!(plan["saving_cents_per_month"].as_i64().unwrap(), saving);
    // Per cluster, the instances kept hold what is allocated now, with 10 % spare.
    for cluster in plan["clusters"].as_array().unwrap() {
        let name = cluster["name"].as_str().unwrap();
        let (allocated, kept) = instances.iter().filter(|(_, (c, _, _))| c == name).fold(
            (0u64, 0u64),
            |(a, k), (id, (_, used, total))| {
                (
                    a + used,
                    k + if drained.contains(&id.as_str()) {
                        0
                    } else {
                        *total
                    },
                )
            },
        );
        assert!(
            allocated as f64 <= kept as f64 * 0.9,
            "{name}: {allocated} of {kept}"
        );
    }

    let response = send(&app, get("/api/v1/cost/plan?spare=10&format=csv")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let csv = text(response).await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), moves + 4, "{csv}");
    assert!(lines[0].starts_with("cluster,instance,instance_type"));
    assert!(lines[moves + 1].starts_with(&format!("total,{} instances", drains.len())));
    // Nothing in the demo is under a commitment: the net saving is the gross.
    let gross = plan["saving_cents_per_month"].as_i64().unwrap();
    assert_eq!(plan["still_billed_cents_per_month"], 0);
    assert_eq!(plan["net_saving_cents_per_month"].as_i64(), Some(gross));
    assert_eq!(
        lines[moves + 3],
        format!("net saving,,,,{}.{:02},,,,,,", gross / 100, gross % 100)
    );

    let page = text(send(&app, get("/cost/plan")).await).await;
    assert!(
        page.contains("Consolidation plan") && page.contains(drained[0]),
        "the page lists the instances to drain"
    );

    for (query, says) in [
        ("spare=95", "0 to 90"),
        ("spare=x", "spare=10"),
        ("cluster=nope", "inference-prod"),
        ("format=pdf", "json or csv"),
        ("group=team", "cluster, spare and format"),
    ] {
        let response = send(&app, get(&format!("/api/v1/cost/plan?{query}"))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = text(response).await;
        assert!(body.contains(says), "{query}: {body}");
    }
}
