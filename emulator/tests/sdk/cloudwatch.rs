//! CloudWatch's GPU metrics, over CBOR as the SDK sends and over botocore's JSON protocol.

use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricDatum, MetricStat};
use aws_sdk_ecs::error::ProvideErrorMetadata;
use aws_smithy_types::DateTime as SmithyTime;
use emulator::Scenario;

use crate::harness::*;

#[tokio::test]
async fn cloudwatch_serves_gpu_metrics_over_cbor() {
    let h = start(Scenario::Demo, 1.0).await;
    let listed = h
        .cloudwatch
        .list_metrics()
        .namespace("CWAgent")
        .metric_name("nvidia_smi_utilization_gpu")
        .send()
        .await
        .expect("list metrics");
    let (gpus, reporting): (usize, usize) = h.emulator.with_fleet(|fleet| {
        let instances = || fleet.clusters.values().flat_map(|c| c.instances.iter());
        (
            instances().map(|i| i.gpus.len()).sum(),
            instances()
                .filter(|i| i.cloudwatch_agent)
                .map(|i| i.gpus.len())
                .sum(),
        )
    });
    assert!(
        reporting < gpus,
        "the demo has an instance without the agent"
    );
    assert_eq!(listed.metrics().len(), reporting);
    let dims = listed.metrics()[0].dimensions().to_vec();
    let names: Vec<&str> = dims.iter().filter_map(|d| d.name()).collect();
    assert_eq!(names, ["arch", "host", "index", "name"]);

    let now = h.emulator.now().timestamp();
    let out = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(gpu_query("util", "nvidia_smi_utilization_gpu", &dims))
        .metric_data_queries(gpu_query("mem", "nvidia_smi_memory_used", &dims))
        .start_time(SmithyTime::from_secs(now - 15 * 60))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get metric data");
    let results = out.metric_data_results();
    assert_eq!(results.len(), 2);
    assert!(
        (14..=16).contains(&results[0].values().len()),
        "{:?}",
        results[0].values()
    );
    assert_eq!(results[0].timestamps().len(), results[0].values().len());
    assert!(results[0]
        .values()
        .iter()
        .all(|v| (0.0..=100.0).contains(v)));

    // A GPU that does not exist has no data, not zeros.
    let mut missing = dims.clone();
    missing[2] = Dimension::builder().name("index").value("99").build();
    let none = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(gpu_query("x", "nvidia_smi_utilization_gpu", &missing))
        .start_time(SmithyTime::from_secs(now - 600))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get");
    assert!(none.metric_data_results()[0].values().is_empty());

    // At most 500 queries a call.
    let mut request = h
        .cloudwatch
        .get_metric_data()
        .start_time(SmithyTime::from_secs(now - 600))
        .end_time(SmithyTime::from_secs(now));
    for i in 0..501 {
        request = request.metric_data_queries(gpu_query(
            &format!("q{i}"),
            "nvidia_smi_utilization_gpu",
            &dims,
        ));
    }
    let error = request.send().await.expect_err("501 queries");
    assert!(
        error.message().unwrap_or_default().contains("500"),
        "{error:?}"
    );

    // PutMetricData, then read it back.
    let dim = Dimension::builder()
        .name("service")
        .value("embed-api")
        .build();
    h.cloudwatch
        .put_metric_data()
        .namespace("gpushare/test")
        .metric_data(
            MetricDatum::builder()
                .metric_name("latency")
                .dimensions(dim.clone())
                .value(42.0)
                .timestamp(SmithyTime::from_secs(now - 120))
                .build(),
        )
        .send()
        .await
        .expect("put");
    let back = h
        .cloudwatch
        .get_metric_data()
        .metric_data_queries(
            MetricDataQuery::builder()
                .id("l")
                .metric_stat(
                    MetricStat::builder()
                        .metric(
                            Metric::builder()
                                .namespace("gpushare/test")
                                .metric_name("latency")
                                .dimensions(dim)
                                .build(),
                        )
                        .period(300)
                        .stat("Maximum")
                        .build(),
                )
                .build(),
        )
        .start_time(SmithyTime::from_secs(now - 900))
        .end_time(SmithyTime::from_secs(now))
        .send()
        .await
        .expect("get");
    assert_eq!(back.metric_data_results()[0].values(), [42.0]);
}

#[tokio::test]
async fn cloudwatch_also_answers_botocores_json_protocol() {
    let h = start(Scenario::Demo, 1.0).await;
    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.ListMetrics",
        r#"{"Namespace": "CWAgent", "MetricName": "nvidia_smi_memory_used"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("json");
    let reporting: usize = h.emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .filter(|i| i.cloudwatch_agent)
            .map(|i| i.gpus.len())
            .sum()
    });
    assert_eq!(json["Metrics"].as_array().map(Vec::len), Some(reporting));
    let host = json["Metrics"][0]["Dimensions"]
        .as_array()
        .expect("dims")
        .iter()
        .find(|d| d["Name"] == "host")
        .expect("host")["Value"]
        .clone();
    let dims = json["Metrics"][0]["Dimensions"].clone();
    let now = h.emulator.now().timestamp();
    let request = serde_json::json!({
        "MetricDataQueries": [{"Id": "m", "MetricStat": {"Metric": {"Namespace": "CWAgent", "MetricName": "nvidia_smi_memory_used", "Dimensions": dims}, "Period": 300, "Stat": "Average"}}],
        "StartTime": now - 3600, "EndTime": now,
    });
    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.GetMetricData",
        &request.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("json");
    let values = json["MetricDataResults"][0]["Values"]
        .as_array()
        .expect("values");
    assert!((12..=13).contains(&values.len()), "{body}");
    assert!(
        json["MetricDataResults"][0]["Timestamps"][0].is_number(),
        "timestamps are epoch seconds"
    );
    assert!(host.is_string());

    let (status, body) = raw_with_target(
        h.addr,
        "GraniteServiceVersion20100801.GetMetricData",
        r#"{"MetricDataQueries": []}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert!(body.contains("__type"), "{body}");
}
