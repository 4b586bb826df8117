//! The harness: an emulator on a free port with the real SDK clients pointed at it, and the
//! helpers the areas share (paging, a GPU requirement as the console writes it, raw HTTP).

use std::net::SocketAddr;

use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat};
use aws_sdk_ecs::{
    config::{BehaviorVersion, Credentials, Region},
    error::ProvideErrorMetadata,
    types::{
        ContainerDefinition, NvidiaMpsAllocation, ResourceRequirement, ResourceType,
        SharingStrategy,
    },
};
use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};

pub(crate) struct Harness {
    pub(crate) emulator: Emulator,
    pub(crate) addr: SocketAddr,
    pub(crate) ecs: aws_sdk_ecs::Client,
    pub(crate) cloudwatch: aws_sdk_cloudwatch::Client,
    pub(crate) ec2: aws_sdk_ec2::Client,
    pub(crate) autoscaling: aws_sdk_autoscaling::Client,
}

impl Harness {
    /// Registers `container` as family `family`'s next revision, as the console sends it
    /// (without the SDK's empty `value` beside a sharing strategy); its ARN.
    pub(crate) async fn register(&self, family: &str, container: ContainerDefinition) -> String {
        self.ecs
            .register_task_definition()
            .family(family)
            .container_definitions(container)
            .customize()
            .mutate_request(without_empty_value)
            .send()
            .await
            .expect("register")
            .task_definition()
            .and_then(|t| t.task_definition_arn())
            .expect("the new revision's ARN")
            .to_string()
    }
}

/// Asserts that `error` is ECS's (or CloudWatch's) `code`, as the SDK read it.
#[track_caller]
pub(crate) fn assert_code<E: ProvideErrorMetadata + std::fmt::Debug>(error: &E, code: &str) {
    assert_eq!(error.code(), Some(code), "{error:?}");
}

pub(crate) async fn start(scenario: Scenario, clock_speed: f64) -> Harness {
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
        autoscaling: aws_sdk_autoscaling::Client::new(&config),
    }
}

pub(crate) async fn all_instance_arns(
    ecs: &aws_sdk_ecs::Client,
    cluster: &str,
    page: i32,
) -> Vec<String> {
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

/// The SDK models `value` as required and writes `"value":""` beside a sharing strategy; ECS's
/// model takes one or the other, so the request goes out without it, as the console sends it.
pub(crate) fn without_empty_value(
    request: &mut aws_smithy_runtime_api::client::orchestrator::HttpRequest,
) {
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

pub(crate) fn mps_requirement(memory: i32, compute: Option<i32>) -> ResourceRequirement {
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

pub(crate) fn gpu_query(id: &str, metric: &str, dims: &[Dimension]) -> MetricDataQuery {
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

/// A minimal HTTP/1.1 exchange, to call the emulator without another client crate.
pub(crate) async fn exchange(
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
pub(crate) async fn raw(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
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
pub(crate) async fn raw_with_target(addr: SocketAddr, target: &str, body: &str) -> (u16, String) {
    let headers = format!("X-Amz-Target: {target}\r\nContent-Type: application/x-amz-json-1.0\r\n");
    exchange(addr, "POST", "/", &headers, body).await
}

/// A GET of a JSON document over plain HTTP/1.0.
pub(crate) async fn reqwest_get(url: &str) -> serde_json::Value {
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
