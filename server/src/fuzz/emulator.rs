//! The emulator's three wire protocols, fed: ECS's JSON (awsJson1.1) with an operation of its
//! own or another, CloudWatch's CBOR (rpc-v2-cbor), and EC2's and Auto Scaling's query.

use axum::{
    body::Body,
    http::{header, Request},
};
use rand::{rngs::StdRng, seq::IndexedRandom, Rng};
use serde_json::Value;

use super::{generate, Target};

/// The fields ECS's and CloudWatch's requests take.
const FIELDS: [&str; 20] = [
    "cluster",
    "services",
    "service",
    "taskDefinition",
    "desiredCount",
    "containerInstances",
    "include",
    "nextToken",
    "maxResults",
    "family",
    "tasks",
    "capacityProviders",
    "MetricDataQueries",
    "StartTime",
    "EndTime",
    "Namespace",
    "MetricName",
    "Dimensions",
    "Id",
    "MetricStat",
];

/// The actions and parameters of EC2's and Auto Scaling's query protocol.
const ACTIONS: [&str; 6] = [
    "DescribeInstances",
    "DescribeInstanceTypes",
    "DescribeSpotPriceHistory",
    "DescribeAutoScalingGroups",
    "SetDesiredCapacity",
    "Nope",
];
const PARAMETERS: [&str; 11] = [
    "InstanceId.1",
    "InstanceType.1",
    "Filter.1.Name",
    "Filter.1.Value.1",
    "MaxResults",
    "NextToken",
    "AutoScalingGroupNames.member.1",
    "DesiredCapacity",
    "AutoScalingGroupName",
    "StartTime",
    "Version",
];

/// A request of the emulator's for `target`.
pub(super) fn request(rng: &mut StdRng, target: Target) -> Request<Body> {
    match target {
        Target::EmulatorJson => ecs_json(rng),
        Target::EmulatorCbor => cloudwatch_cbor(rng),
        _ => query(rng),
    }
}

/// An ECS operation (or another name) with a JSON body of ECS's fields, or text.
fn ecs_json(rng: &mut StdRng) -> Request<Body> {
    let operation = if rng.random_bool(0.9) {
        let operations = emulator::ecs_api::OPERATIONS;
        operations
            .choose(rng)
            .copied()
            .unwrap_or("ListClusters")
            .to_string()
    } else {
        generate::text(rng)
    };
    let body = if rng.random_bool(0.1) {
        generate::text(rng)
    } else {
        Value::Object(generate::object(rng, &FIELDS, 3)).to_string()
    };
    let target = format!("AmazonEC2ContainerServiceV20141113.{operation}");
    Request::post("/")
        .header("x-amz-target", target.replace(|c: char| c.is_control(), ""))
        .header(header::CONTENT_TYPE, "application/x-amz-json-1.1")
        .body(Body::from(body))
        .unwrap_or_default()
}

/// A CloudWatch operation with a CBOR body, well-formed or not.
fn cloudwatch_cbor(rng: &mut StdRng) -> Request<Body> {
    let operation = ["GetMetricData", "ListMetrics", "PutMetricData", "Nope"]
        .choose(rng)
        .copied()
        .unwrap_or("ListMetrics");
    Request::post(format!(
        "/service/GraniteServiceVersion20100801/operation/{operation}"
    ))
    .header(header::CONTENT_TYPE, "application/cbor")
    .header("smithy-protocol", "rpc-v2-cbor")
    .body(Body::from(generate::cbor(rng, &FIELDS)))
    .unwrap_or_default()
}

/// An EC2 or Auto Scaling action with generated parameters.
fn query(rng: &mut StdRng) -> Request<Body> {
    let action = ACTIONS.choose(rng).copied().unwrap_or("DescribeInstances");
    let parameters = generate::query(rng, &PARAMETERS);
    let body = format!("Action={action}&{}", parameters.trim_start_matches('?'));
    Request::post("/")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap_or_default()
}
