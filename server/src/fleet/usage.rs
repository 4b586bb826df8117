//! GPU usage through aws-sdk-cloudwatch: the CloudWatch agent's `nvidia_smi_utilization_gpu`
//! and `nvidia_smi_memory_used` per host and GPU index, over the last 15 minutes.
//!
//! The agent publishes each GPU under four dimensions (`host`, `index`, `name`, `arch`), and
//! GetMetricData wants all of them, so the GPUs' dimension sets come from ListMetrics first
//! (kept for ten minutes). Then GetMetricData reads both metrics of every GPU, 500 queries a
//! call, the calls concurrent.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use app::model::{GpuUsage, Reading};
use aws_sdk_cloudwatch::{
    primitives::DateTime,
    types::{Dimension, Metric, MetricDataQuery, MetricStat, RecentlyActive},
};
use futures::{stream, StreamExt, TryStreamExt};

use super::{cloudwatch_failed as failed, ReadError};

/// The agent's namespace and the metrics read from it.
pub const NAMESPACE: &str = "CWAgent";
pub const UTILIZATION: &str = "nvidia_smi_utilization_gpu";
pub const MEMORY_USED: &str = "nvidia_smi_memory_used";
/// GetMetricData's limit of queries per call.
pub const QUERIES_PER_CALL: usize = 500;
/// The window usage is read over.
pub const WINDOW: chrono::TimeDelta = chrono::TimeDelta::minutes(15);
/// GetMetricData calls in flight at once. Usage has slack — the ECS walk beside it takes longer —
/// so its calls trickle rather than burst, leaving the CPU to the ECS chain.
pub const CONCURRENCY: usize = 2;
/// How long the list of GPU metrics is kept before it is listed again.
const LIST_TTL: Duration = Duration::from_secs(600);

/// One GPU the agent reports: where it is, and the dimensions its metrics carry.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuMetric {
    /// The value of the host dimension: the EC2 instance ID when the agent is set up so.
    pub host: String,
    pub index: u32,
    /// The agent's `name` dimension: the GPU model.
    pub model: Option<String>,
    pub dimensions: Vec<Dimension>,
}

/// Usage per (host, GPU index), the GPU models per host, and the calls it took.
#[derive(Clone, Debug, Default)]
pub struct UsageMap {
    pub by_gpu: HashMap<(String, u32), GpuUsage>,
    pub models: HashMap<String, String>,
    pub calls: u32,
}

/// Reads usage; keeps the list of GPU metrics between reads.
pub struct UsageReader {
    cloudwatch: aws_sdk_cloudwatch::Client,
    host_dimension: String,
    concurrency: usize,
    listed: Mutex<Option<(Instant, Arc<Vec<GpuMetric>>)>>,
}

impl UsageReader {
    /// A reader that finds the EC2 instance ID in the dimension `host_dimension`.
    pub fn new(
        cloudwatch: aws_sdk_cloudwatch::Client,
        host_dimension: &str,
        concurrency: usize,
    ) -> UsageReader {
        UsageReader {
            cloudwatch,
            host_dimension: host_dimension.to_string(),
            concurrency: concurrency.max(1),
            listed: Mutex::new(None),
        }
    }

    /// Usage of every GPU the agent reports, over the `WINDOW` before `now`.
    pub async fn read(&self, now: chrono::DateTime<chrono::Utc>) -> Result<UsageMap, ReadError> {
        let calls = AtomicU32::new(0);
        let metrics = self.gpu_metrics(&calls).await?;
        let start = DateTime::from_secs((now - WINDOW).timestamp());
        let end = DateTime::from_secs(now.timestamp());
        let queries: Vec<MetricDataQuery> = metrics
            .iter()
            .enumerate()
            .flat_map(|(i, gpu)| {
                [
                    query(format!("u{i}"), UTILIZATION, &gpu.dimensions),
                    query(format!("m{i}"), MEMORY_USED, &gpu.dimensions),
                ]
            })
            .collect();
        let batches: Vec<_> = queries
            .chunks(QUERIES_PER_CALL)
            .map(|batch| self.get_metric_data(batch.to_vec(), start, end, &calls))
            .collect();
        let results: Vec<Vec<(String, Reading)>> = stream::iter(batches)
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        let mut usage = UsageMap {
            calls: calls.load(Ordering::Relaxed),
            ..UsageMap::default()
        };
        for (id, reading) in results.into_iter().flatten() {
            let (kind, number) = id.split_at(1);
            let Some(gpu) = number.parse::<usize>().ok().and_then(|i| metrics.get(i)) else {
                continue;
            };
            let entry = usage
                .by_gpu
                .entry((gpu.host.clone(), gpu.index))
                .or_default();
            match kind {
                "u" => entry.utilization_percent = Some(reading),
                _ => entry.memory_used_mib = Some(reading),
            }
        }
        for gpu in metrics.iter() {
            if let Some(model) = &gpu.model {
                usage.models.insert(gpu.host.clone(), model.clone());
            }
        }
        Ok(usage)
    }

    /// The GPUs the agent reported in the last three hours, listed again every ten minutes.
    async fn gpu_metrics(&self, calls: &AtomicU32) -> Result<Arc<Vec<GpuMetric>>, ReadError> {
        if let Some((at, metrics)) = &*self.listed.lock().unwrap_or_else(|p| p.into_inner()) {
            if at.elapsed() < LIST_TTL {
                return Ok(metrics.clone());
            }
        }
        let mut metrics = Vec::new();
        let mut pages = self
            .cloudwatch
            .list_metrics()
            .namespace(NAMESPACE)
            .metric_name(UTILIZATION)
            .recently_active(RecentlyActive::Pt3H)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(failed("ListMetrics"))?;
            calls.fetch_add(1, Ordering::Relaxed);
            metrics.extend(
                page.metrics()
                    .iter()
                    .filter_map(|m| gpu_metric(m, &self.host_dimension)),
            );
        }
        metrics.sort_by(|a, b| (&a.host, a.index).cmp(&(&b.host, b.index)));
        metrics.dedup_by(|a, b| a.host == b.host && a.index == b.index);
        let metrics = Arc::new(metrics);
        *self.listed.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), metrics.clone()));
        Ok(metrics)
    }

    /// One GetMetricData call and its further pages.
    async fn get_metric_data(
        &self,
        batch: Vec<MetricDataQuery>,
        start: DateTime,
        end: DateTime,
        calls: &AtomicU32,
    ) -> Result<Vec<(String, Reading)>, ReadError> {
        let mut points: HashMap<String, Vec<(DateTime, f64)>> = HashMap::new();
        let mut pages = self
            .cloudwatch
            .get_metric_data()
            .set_metric_data_queries(Some(batch))
            .start_time(start)
            .end_time(end)
            .into_paginator()
            .send();
        while let Some(out) = pages.next().await {
            let out = out.map_err(failed("GetMetricData"))?;
            calls.fetch_add(1, Ordering::Relaxed);
            for result in out.metric_data_results() {
                let Some(id) = result.id() else { continue };
                points.entry(id.to_string()).or_default().extend(
                    result
                        .timestamps()
                        .iter()
                        .copied()
                        .zip(result.values().iter().copied()),
                );
            }
        }
        Ok(points
            .into_iter()
            .filter_map(|(id, points)| Some((id, reading(&points)?)))
            .collect())
    }
}

fn query(id: String, metric: &str, dimensions: &[Dimension]) -> MetricDataQuery {
    MetricDataQuery::builder()
        .id(id)
        .metric_stat(
            MetricStat::builder()
                .metric(
                    Metric::builder()
                        .namespace(NAMESPACE)
                        .metric_name(metric)
                        .set_dimensions(Some(dimensions.to_vec()))
                        .build(),
                )
                .period(60)
                .stat("Average")
                .build(),
        )
        .return_data(true)
        .build()
}

/// A listed metric as a GPU, when it names its host and index.
fn gpu_metric(metric: &Metric, host_dimension: &str) -> Option<GpuMetric> {
    let dimension = |name: &str| {
        metric
            .dimensions()
            .iter()
            .find(|d| d.name() == Some(name))
            .and_then(|d| d.value())
    };
    // An agent configured with `append_dimensions` `InstanceId` names the instance outright;
    // otherwise `host` is its hostname (or what `--usage-host-dimension` names).
    let host = match host_dimension {
        "host" => dimension("InstanceId").or_else(|| dimension("host"))?,
        other => dimension(other)?,
    };
    Some(GpuMetric {
        host: host.to_string(),
        index: dimension("index")?.parse().ok()?,
        model: dimension("name").map(str::to_string),
        dimensions: metric.dimensions().to_vec(),
    })
}

/// The newest value and the average of a series; `None` when it has no points.
pub fn reading(points: &[(DateTime, f64)]) -> Option<Reading> {
    let latest = points.iter().max_by_key(|(at, _)| *at)?.1;
    let average = points.iter().map(|(_, v)| v).sum::<f64>() / points.len() as f64;
    Some(Reading { latest, average })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_the_newest_value_and_the_mean() {
        let points = [
            (DateTime::from_secs(120), 30.0),
            (DateTime::from_secs(180), 60.0),
            (DateTime::from_secs(60), 0.0),
        ];
        assert_eq!(
            reading(&points),
            Some(Reading {
                latest: 60.0,
                average: 30.0
            })
        );
        assert_eq!(reading(&[]), None, "no points is no data, never zero");
    }

    #[test]
    fn a_listed_metric_names_its_gpu() {
        let dimension = |n: &str, v: &str| Dimension::builder().name(n).value(v).build();
        let metric = Metric::builder()
            .namespace(NAMESPACE)
            .metric_name(UTILIZATION)
            .dimensions(dimension("host", "ip-10-1-2-3.ec2.internal"))
            .dimensions(dimension("index", "3"))
            .dimensions(dimension("name", "NVIDIA L4"))
            .build();
        let gpu = gpu_metric(&metric, "host").expect("a GPU");
        assert_eq!(
            (gpu.host.as_str(), gpu.index),
            ("ip-10-1-2-3.ec2.internal", 3),
            "the hostname, joined later through EC2"
        );
        assert_eq!(gpu.model.as_deref(), Some("NVIDIA L4"));
        assert_eq!(gpu.dimensions.len(), 3);
        // An agent that appends InstanceId names the instance outright.
        let with_id = Metric::builder()
            .set_dimensions(Some(
                [metric.dimensions(), &[dimension("InstanceId", "i-0def")]].concat(),
            ))
            .build();
        assert_eq!(gpu_metric(&with_id, "host").expect("a GPU").host, "i-0def");
        assert_eq!(
            gpu_metric(&with_id, "host")
                .expect("a GPU")
                .dimensions
                .len(),
            4
        );
        assert!(gpu_metric(&metric, "hostname").is_none());
    }
}
