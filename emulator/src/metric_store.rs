//! What PutMetricData stored: data points by metric identity and minute. The emulated fleet
//! holds one store; [`crate::cloudwatch`] answers GetMetricData and ListMetrics over it and over
//! the metrics it generates.

use std::collections::{BTreeMap, HashMap};

/// A metric's identity: namespace, name, and dimensions sorted by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricId {
    pub namespace: String,
    pub name: String,
    pub dimensions: Vec<(String, String)>,
}

impl MetricId {
    pub fn new(namespace: &str, name: &str, mut dimensions: Vec<(String, String)>) -> MetricId {
        dimensions.sort();
        MetricId {
            namespace: namespace.to_string(),
            name: name.to_string(),
            dimensions,
        }
    }

    pub(crate) fn dimension(&self, name: &str) -> Option<&str> {
        self.dimensions
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Data points stored by PutMetricData: metric → minute → values.
#[derive(Clone, Debug, Default)]
pub struct MetricStore {
    pub points: HashMap<MetricId, BTreeMap<i64, Vec<f64>>>,
}
