//! CloudWatch: the CloudWatch agent's `nvidia_smi_*` metrics for every GPU, generated from its
//! allocations, plus whatever PutMetricData stores; GetMetricData and ListMetrics over them.
//!
//! Generated values are a pure function of the GPU, the minute and its allocation now: a daily
//! cycle, deterministic noise, and a few GPUs that are allocated but sit idle, so that usage
//! differs from allocation in ways worth seeing.

use std::collections::HashMap;

use chrono::{DateTime, Duration, DurationRound, Utc};

use crate::{
    metric_store::MetricId,
    model::{splitmix, ContainerInstance, Fleet},
    placement::{GpuSlot, SharingMode},
};

/// The namespace of the CloudWatch agent.
pub const NAMESPACE: &str = "CWAgent";
/// The agent's GPU metrics the emulator serves.
pub const GPU_METRICS: [&str; 7] = [
    "nvidia_smi_utilization_gpu",
    "nvidia_smi_utilization_memory",
    "nvidia_smi_memory_total",
    "nvidia_smi_memory_used",
    "nvidia_smi_memory_free",
    "nvidia_smi_temperature_gpu",
    "nvidia_smi_power_draw",
];
/// How far back data exists at one-minute resolution.
pub const RETENTION_DAYS: i64 = 14;
/// Most queries in one GetMetricData call.
pub const MAX_QUERIES: usize = 500;
/// Most data points one GetMetricData call returns before it pages.
pub const MAX_DATAPOINTS: usize = 100_800;

/// A CloudWatch error, with the code the SDK maps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloudWatchError {
    #[error("{0}")]
    InvalidParameterValue(String),
    #[error("{0}")]
    MissingParameter(String),
    #[error("The service cannot find the next token.")]
    InvalidNextToken,
    #[error("{0}")]
    InternalService(String),
    #[error("Rate exceeded")]
    Throttling,
}

impl CloudWatchError {
    /// `__type`, and the `x-amzn-query-error` code of the query-compatible protocol.
    pub fn codes(&self) -> (&'static str, &'static str) {
        match self {
            CloudWatchError::InvalidParameterValue(_) => (
                "InvalidParameterValueException",
                "InvalidParameterValue;Sender",
            ),
            CloudWatchError::MissingParameter(_) => (
                "MissingRequiredParameterException",
                "MissingParameter;Sender",
            ),
            CloudWatchError::InvalidNextToken => ("InvalidNextToken", "InvalidNextToken;Sender"),
            CloudWatchError::InternalService(_) => {
                ("InternalServiceFault", "InternalServiceError;Receiver")
            }
            CloudWatchError::Throttling => ("ThrottlingException", "Throttling;Sender"),
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            CloudWatchError::InternalService(_) => 500,
            _ => 400,
        }
    }
}

/// One query of a GetMetricData call.
#[derive(Clone, Debug)]
pub struct MetricQuery {
    pub id: String,
    pub label: Option<String>,
    pub metric: MetricId,
    pub period_seconds: i64,
    pub stat: String,
    pub return_data: bool,
}

/// One result of a GetMetricData call.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricResult {
    pub id: String,
    pub label: String,
    pub timestamps: Vec<DateTime<Utc>>,
    pub values: Vec<f64>,
    pub complete: bool,
}

/// Where a generated GPU metric comes from.
struct GpuSource<'a> {
    instance: &'a ContainerInstance,
    index: usize,
    slot: &'a GpuSlot,
    /// The minute from which its only holders are services left idle.
    idle_from: Option<i64>,
}

/// The GPU architecture the `arch` dimension names, from the model.
pub fn gpu_architecture(model: &str) -> &'static str {
    if model.contains("H100") || model.contains("H200") {
        "Hopper"
    } else if model.contains("L4") || model.contains("L40S") {
        "Ada Lovelace"
    } else if model.contains("T4") {
        "Turing"
    } else {
        "Ampere"
    }
}

/// The dimensions the agent publishes for one GPU: `host` (the instance ID), `index`, `name`,
/// `arch`.
pub fn gpu_dimensions(
    instance: &ContainerInstance,
    region: &str,
    index: usize,
) -> Vec<(String, String)> {
    // The agent's `host` is the hostname unless its configuration says otherwise.
    let mut dimensions = vec![
        ("arch".into(), gpu_architecture(&instance.gpu_model).into()),
        ("host".into(), instance.private_dns_name(region)),
        ("index".into(), index.to_string()),
        ("name".into(), instance.gpu_model.clone()),
    ];
    if instance.agent_instance_id_dimension {
        dimensions.insert(0, ("InstanceId".into(), instance.ec2_instance_id.clone()));
    }
    dimensions
}

impl Fleet {
    /// The instances that run the agent, by the hostname their agent publishes.
    fn reporting_hosts(&self) -> HashMap<String, &ContainerInstance> {
        self.clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .filter(|i| i.cloudwatch_agent)
            .map(|i| (i.private_dns_name(&self.region), i))
            .collect()
    }

    fn find_gpu<'a>(
        &'a self,
        hosts: &HashMap<String, &'a ContainerInstance>,
        metric: &MetricId,
    ) -> Option<GpuSource<'a>> {
        if metric.namespace != NAMESPACE || !(4..=5).contains(&metric.dimensions.len()) {
            return None;
        }
        let host = metric.dimension("host")?;
        let index: usize = metric.dimension("index")?.parse().ok()?;
        let instance = *hosts.get(host)?;
        let slot = instance.gpus.get(index)?;
        (gpu_dimensions(instance, &self.region, index) == metric.dimensions).then(|| GpuSource {
            instance,
            index,
            slot,
            idle_from: self.idle_from(instance, index),
        })
    }

    /// When every live task holding GPU `index` of `instance` belongs to a service left idle,
    /// the minute from which all of them are.
    fn idle_from(&self, instance: &ContainerInstance, index: usize) -> Option<i64> {
        if self.idle_services.is_empty() {
            return None;
        }
        let cluster = self
            .clusters
            .values()
            .find(|c| c.instance_index.contains_key(&instance.arn))?;
        let mut from: Option<i64> = None;
        for task in cluster.tasks.values() {
            if !task.is_live()
                || task.instance_arn != instance.arn
                || !task
                    .assignment
                    .per_container
                    .iter()
                    .any(|gpus| gpus.contains(&index))
            {
                continue;
            }
            let service = task.group.strip_prefix("service:")?;
            let since = self
                .idle_services
                .get(&format!("{}/{service}", cluster.name))?;
            from = Some(from.unwrap_or(i64::MIN).max(since.timestamp() / 60));
        }
        from
    }

    /// ListMetrics: every GPU metric and every stored one, filtered.
    pub fn list_metrics(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        dimension_filters: &[(String, Option<String>)],
    ) -> Vec<MetricId> {
        let mut out = Vec::new();
        if namespace.is_none_or(|ns| ns == NAMESPACE) {
            for instance in self
                .clusters
                .values()
                .flat_map(|c| c.instances.iter())
                .filter(|i| i.cloudwatch_agent)
            {
                for index in 0..instance.gpus.len() {
                    let dimensions = gpu_dimensions(instance, &self.region, index);
                    for metric in GPU_METRICS {
                        if name.is_none_or(|n| n == metric) {
                            out.push(MetricId {
                                namespace: NAMESPACE.into(),
                                name: metric.into(),
                                dimensions: dimensions.clone(),
                            });
                        }
                    }
                }
            }
        }
        let mut stored: Vec<&MetricId> = self
            .metrics
            .points
            .keys()
            .filter(|m| {
                namespace.is_none_or(|ns| ns == m.namespace) && name.is_none_or(|n| n == m.name)
            })
            .collect();
        stored.sort();
        out.extend(stored.into_iter().cloned());
        out.retain(|m| {
            dimension_filters.iter().all(|(filter_name, filter_value)| {
                m.dimension(filter_name)
                    .is_some_and(|v| filter_value.as_deref().is_none_or(|want| want == v))
            })
        });
        out
    }

    /// GetMetricData for the given queries between `start` and `end`.
    pub fn get_metric_data(
        &self,
        queries: &[MetricQuery],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Vec<MetricResult>, CloudWatchError> {
        if queries.is_empty() {
            return Err(CloudWatchError::MissingParameter(
                "MetricDataQueries must have at least one query.".into(),
            ));
        }
        if queries.len() > MAX_QUERIES {
            return Err(CloudWatchError::InvalidParameterValue(format!(
                "The collection MetricDataQueries must not have a size greater than {MAX_QUERIES}."
            )));
        }
        if end <= start {
            return Err(CloudWatchError::InvalidParameterValue(
                "The parameter StartTime must be less than the parameter EndTime.".into(),
            ));
        }
        let mut ids = std::collections::HashSet::new();
        for query in queries {
            if query.period_seconds < 60 || query.period_seconds % 60 != 0 {
                return Err(CloudWatchError::InvalidParameterValue(format!(
                    "The parameter Period of query {} must be a multiple of 60.",
                    query.id
                )));
            }
            if !ids.insert(&query.id) {
                return Err(CloudWatchError::InvalidParameterValue(format!(
                    "The Id {} is used more than once.",
                    query.id
                )));
            }
            if !matches!(
                query.stat.as_str(),
                "Average" | "Maximum" | "Minimum" | "Sum" | "SampleCount"
            ) {
                return Err(CloudWatchError::InvalidParameterValue(format!(
                    "The statistic {} of query {} is not supported; use Average, Maximum, Minimum, Sum or SampleCount.",
                    query.stat, query.id
                )));
            }
        }
        let oldest = now - Duration::days(RETENTION_DAYS);
        let hosts = self.reporting_hosts();
        Ok(queries
            .iter()
            .filter(|q| q.return_data)
            .map(|query| self.run_query(&hosts, query, start.max(oldest), end.min(now)))
            .collect())
    }

    fn run_query(
        &self,
        hosts: &HashMap<String, &ContainerInstance>,
        query: &MetricQuery,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> MetricResult {
        let period = Duration::seconds(query.period_seconds);
        let mut result = MetricResult {
            id: query.id.clone(),
            label: query
                .label
                .clone()
                .unwrap_or_else(|| query.metric.name.clone()),
            timestamps: Vec::new(),
            values: Vec::new(),
            complete: true,
        };
        if end <= start {
            return result;
        }
        let first = start.duration_trunc(period).unwrap_or(start);
        let gpu = self.find_gpu(hosts, &query.metric);
        let stored = self.metrics.points.get(&query.metric);
        if gpu.is_none() && stored.is_none() {
            return result;
        }
        // Newest first, as GetMetricData answers by default (ScanBy TimestampDescending).
        let mut bucket = first;
        let mut buckets = Vec::new();
        while bucket < end {
            buckets.push(bucket);
            bucket += period;
        }
        for bucket in buckets.into_iter().rev() {
            let from = bucket.max(start).timestamp() / 60;
            let to = ((bucket + period).min(end).timestamp() + 59).div_euclid(60);
            let mut samples = Vec::new();
            for minute in from..to {
                if let Some(gpu) = &gpu {
                    samples.push(gpu_value(gpu, &query.metric.name, minute));
                }
                if let Some(values) = stored.and_then(|s| s.get(&minute)) {
                    samples.extend(values.iter().copied());
                }
            }
            if samples.is_empty() {
                continue;
            }
            result.timestamps.push(bucket);
            result.values.push(aggregate(&query.stat, &samples));
        }
        result
    }

    /// PutMetricData: stores values at their minutes.
    pub fn put_metric_data(&mut self, metric: MetricId, at: DateTime<Utc>, values: Vec<f64>) {
        let minute = at.timestamp() / 60;
        self.metrics
            .points
            .entry(metric)
            .or_default()
            .entry(minute)
            .or_default()
            .extend(values);
    }
}

fn aggregate(stat: &str, samples: &[f64]) -> f64 {
    match stat {
        "Maximum" => samples.iter().copied().fold(f64::MIN, f64::max),
        "Minimum" => samples.iter().copied().fold(f64::MAX, f64::min),
        "Sum" => samples.iter().sum(),
        "SampleCount" => samples.len() as f64,
        _ => samples.iter().sum::<f64>() / samples.len() as f64,
    }
}

/// A number in [0, 1) from a seed, deterministic.
fn unit(seed: u64) -> f64 {
    (splitmix(seed) >> 11) as f64 / (1_u64 << 53) as f64
}

fn gpu_seed(gpu: &GpuSource<'_>) -> u64 {
    gpu.instance
        .ec2_instance_id
        .bytes()
        .fold(gpu.index as u64 + 1, |h, b| splitmix(h ^ u64::from(b)))
}

/// The value the agent would have reported for one GPU metric at one minute.
fn gpu_value(gpu: &GpuSource<'_>, metric: &str, minute: i64) -> f64 {
    let seed = gpu_seed(gpu);
    let slot = gpu.slot;
    let allocated =
        f64::from(slot.total_memory_mib - slot.remaining_memory_mib.min(slot.total_memory_mib))
            / f64::from(slot.total_memory_mib.max(1));
    // One GPU in eight that has work on it sits idle: allocated, not used.
    // So do the GPUs of services whose work moved elsewhere.
    let idle_but_allocated = slot.mode != SharingMode::Idle
        && (seed.is_multiple_of(8) || gpu.idle_from.is_some_and(|from| minute >= from));
    let hour_of_day = (minute.rem_euclid(1440)) as f64 / 60.0;
    let daily = 0.65 + 0.35 * ((hour_of_day - 15.0) / 24.0 * std::f64::consts::TAU).cos();
    let noise = unit(seed ^ (minute as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)) - 0.5;
    let busy = match slot.mode {
        SharingMode::Idle => 0.0,
        _ if idle_but_allocated => 0.01 + 0.01 * noise.abs(),
        SharingMode::Dedicated => (0.55 + 0.35 * unit(seed)) * daily + 0.08 * noise,
        SharingMode::NvidiaMps => {
            (0.25 + 0.6 * allocated) * daily * (0.6 + 0.5 * unit(seed ^ 7)) + 0.08 * noise
        }
    }
    .clamp(0.0, 1.0);
    let total_nvml = f64::from(slot.total_memory_mib) + 465.0;
    let used = match slot.mode {
        SharingMode::Idle => 0.0,
        SharingMode::Dedicated => total_nvml * (0.5 + 0.4 * unit(seed ^ 3)),
        SharingMode::NvidiaMps => {
            let allocated_mib = f64::from(slot.total_memory_mib - slot.remaining_memory_mib);
            allocated_mib
                * if idle_but_allocated {
                    0.15
                } else {
                    0.55 + 0.4 * unit(seed ^ 5)
                }
                * (0.95 + 0.1 * noise)
        }
    } + 1.0;
    match metric {
        "nvidia_smi_utilization_gpu" => (busy * 100.0).round(),
        "nvidia_smi_utilization_memory" => (busy * 70.0).round(),
        "nvidia_smi_memory_total" => total_nvml,
        "nvidia_smi_memory_used" => used.round(),
        "nvidia_smi_memory_free" => (total_nvml - used).round(),
        "nvidia_smi_temperature_gpu" => (34.0 + 45.0 * busy + 2.0 * noise).round(),
        "nvidia_smi_power_draw" => ((60.0 + 240.0 * busy + 10.0 * noise) * 100.0).round() / 100.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests;
