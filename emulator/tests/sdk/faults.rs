//! Faults and limits: throttling, server errors, dropped connections and delays, the admin endpoint
//! that sets them, and ECS's documented throttling by group of actions.

use aws_sdk_ecs::error::ProvideErrorMetadata;
use emulator::{Fault, Faults, Scenario};

use crate::harness::*;

#[tokio::test]
async fn faults_throttle_fail_drop_and_delay() {
    let h = start(Scenario::Empty, 1.0).await;
    let mut faults = Faults::default();
    faults.operations.insert(
        "ListClusters".into(),
        Fault {
            throttle_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "DescribeClusters".into(),
        Fault {
            error_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListServices".into(),
        Fault {
            drop_rate: 1.0,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListTaskDefinitions".into(),
        Fault {
            latency_ms: 300,
            ..Fault::default()
        },
    );
    faults.operations.insert(
        "ListMetrics".into(),
        Fault {
            throttle_rate: 1.0,
            ..Fault::default()
        },
    );
    h.emulator.set_faults(faults).expect("valid");

    let error = h.ecs.list_clusters().send().await.expect_err("throttled");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.code() == Some("ThrottlingException")),
        "{error:?}"
    );
    let error = h
        .ecs
        .describe_clusters()
        .clusters("x")
        .send()
        .await
        .expect_err("5xx");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_server_exception()),
        "{error:?}"
    );
    let error = h.ecs.list_services().send().await.expect_err("dropped");
    assert!(
        error.as_service_error().is_none(),
        "a dropped connection is not a service error: {error:?}"
    );
    let started = std::time::Instant::now();
    h.ecs
        .list_task_definitions()
        .send()
        .await
        .expect("slow but fine");
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    // CloudWatch is query-compatible: the SDK reports the query protocol's code.
    let error = h
        .cloudwatch
        .list_metrics()
        .send()
        .await
        .expect_err("throttled");
    assert_eq!(error.code(), Some("Throttling"), "{error:?}");
    // Each attempt that met a fault is counted by its kind, as the calls were received.
    let status = h.emulator.status();
    let received = |call: &str| status.received.get(call).copied().unwrap_or(0);
    let injected = |kind: &str| status.injected.get(kind).copied().unwrap_or(0);
    assert!(received("ecs:ListClusters") >= 1, "{:?}", status.received);
    assert_eq!(
        injected("throttled"),
        received("ecs:ListClusters") + received("cloudwatch:ListMetrics"),
        "{:?}",
        status.injected
    );
    assert_eq!(injected("server error"), received("ecs:DescribeClusters"));
    assert_eq!(
        injected("dropped before running"),
        received("ecs:ListServices")
    );
    assert_eq!(injected("rate limited"), 0);
}

#[tokio::test]
async fn the_admin_endpoint_takes_faults_and_refuses_bad_ones() {
    let h = start(Scenario::Empty, 1.0).await;
    let (status, body) = raw(
        h.addr,
        "PUT",
        "/_emulator/faults",
        r#"{"default": {"throttle_rate": 2}}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("between 0 and 1"), "{body}");
    let (status, _) = raw(
        h.addr,
        "PUT",
        "/_emulator/faults",
        r#"{"operations": {"ListClusters": {"error_rate": 1}}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        h.emulator.faults().for_operation("ListClusters").error_rate,
        1.0
    );
    let (status, body) = raw(h.addr, "GET", "/_emulator/status", "").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"scenario\":\"empty\""), "{body}");
}

#[tokio::test]
async fn ecs_throttles_by_group_of_actions_as_documented_when_the_limits_are_on() {
    let h = start(Scenario::Demo, 0.0).await;
    assert!(!h.emulator.rate_limits(), "off in demo unless asked");
    let mut faults = Faults::default();
    faults.add_spec("rate-limits=on").expect("valid");
    h.emulator.set_faults(faults).expect("valid");
    // Cluster read actions: a bucket of 50, shared by DescribeClusters and ListClusters. No
    // SDK retries here, so that each call is one request.
    let config = h
        .ecs
        .config()
        .to_builder()
        .retry_config(aws_sdk_ecs::config::retry::RetryConfig::disabled())
        .build();
    let ecs = aws_sdk_ecs::Client::from_conf(config);
    let mut answered: u64 = 0;
    let mut throttled = Vec::new();
    for n in 0..70 {
        let result: Result<(), (Option<String>, Option<String>)> = if n % 2 == 0 {
            ecs.list_clusters().send().await.map(|_| ()).map_err(|e| {
                (
                    e.code().map(str::to_string),
                    e.message().map(str::to_string),
                )
            })
        } else {
            ecs.describe_clusters()
                .clusters("batch-sim")
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (
                        e.code().map(str::to_string),
                        e.message().map(str::to_string),
                    )
                })
        };
        match result {
            Ok(()) => answered += 1,
            Err(error) => throttled.push(error),
        }
    }
    // The bucket refills at 20 a second while the calls go out: a few more than 50 pass.
    assert!((50..=60).contains(&answered), "{answered} answered");
    assert_eq!(
        throttled[0],
        (
            Some("ThrottlingException".to_string()),
            Some("Rate exceeded".to_string())
        )
    );
    // Another group has its own bucket.
    ecs.list_services()
        .cluster("batch-sim")
        .send()
        .await
        .expect("service reads are another bucket");
    let status = h.emulator.status();
    assert!(status.rate_limits);
    let reads = status
        .api_groups
        .iter()
        .find(|g| g.group == "Cluster read actions")
        .expect("counted");
    assert_eq!((reads.burst, reads.sustained), (50, 20));
    assert_eq!(reads.calls, answered);
    assert_eq!(reads.throttled as usize, throttled.len());
    assert_eq!(
        status.injected.get("rate limited").copied().unwrap_or(0) as usize,
        throttled.len()
    );
    // The same over HTTP, as `GET /_emulator/status` shows it.
    let body: serde_json::Value = reqwest_get(&format!("http://{}/_emulator/status", h.addr)).await;
    assert_eq!(body["rate_limits"], true);
    assert!(body["api_groups"]
        .as_array()
        .expect("groups")
        .iter()
        .any(|g| g["group"] == "Service read actions" && g["calls"] == 1));
}
