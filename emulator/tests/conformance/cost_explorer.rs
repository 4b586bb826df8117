//! Cost Explorer against botocore's `ce` model: GetCostAndUsageWithResources' requests, its
//! answers (a period per day, a group per instance) and its refusals.

use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use serde_json::json;

use crate::{
    model::{botocore_data, load},
    pricing::call_json,
};

#[tokio::test]
async fn get_cost_and_usage_with_resources_matches_the_botocore_model() {
    let model = load("ce", &botocore_data());
    let now = Utc::now();
    let emulator = Emulator::new(
        Scenario::Demo.build_with_past(1, now, 3),
        "demo",
        1.0,
        Faults::default(),
    );
    emulator.advance_to(now);
    let addr = emulator
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let day = |ago: i64| {
        (now - chrono::Duration::days(ago))
            .format("%Y-%m-%d")
            .to_string()
    };
    let ask = |start: String, end: String| {
        json!({
            "TimePeriod": {"Start": start, "End": end},
            "Granularity": "DAILY",
            "Filter": {"Dimensions": {"Key": "SERVICE", "Values": ["Amazon Elastic Compute Cloud - Compute"]}},
            "Metrics": ["AmortizedCost"],
            "GroupBy": [{"Type": "DIMENSION", "Key": "RESOURCE_ID"}],
        })
    };
    let target = "AWSInsightsIndexService.";
    let operation = "GetCostAndUsageWithResources";
    let mut problems = Vec::new();
    let (status, answer) = call_json(
        &model,
        addr,
        target,
        operation,
        ask(day(2), day(1)),
        &mut problems,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let groups = answer["ResultsByTime"][0]["Groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(groups.len() > 20, "an instance a group: {answer}");
    assert!(groups
        .iter()
        .all(|g| g["Keys"][0].as_str().is_some_and(|k| k.starts_with("i-"))));
    // Too far back, and a filter without EC2 compute: refusals the model lists.
    let (status, refused) = call_json(
        &model,
        addr,
        target,
        operation,
        ask(day(20), day(19)),
        &mut problems,
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    let mut no_service = ask(day(2), day(1));
    no_service["Filter"] = json!({"Dimensions": {"Key": "REGION", "Values": ["us-east-1"]}});
    let (status, _) = call_json(&model, addr, target, operation, no_service, &mut problems).await;
    assert_eq!(status, 400);
    assert!(problems.is_empty(), "{problems:#?}");
}
