//! The console's view of itself: version, uptime and where its fleet comes from.

use serde::{Deserialize, Serialize};

/// Where the console reads its fleet from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FleetSource {
    /// The embedded emulator, with the scenario it simulates.
    Emulator { endpoint: String, scenario: String },
    /// Amazon ECS and CloudWatch in an AWS account.
    Aws { region: String },
}

impl FleetSource {
    /// Whether the fleet is the embedded emulator's simulation.
    pub fn is_simulated(&self) -> bool {
        matches!(self, FleetSource::Emulator { .. })
    }

    /// A short phrase for the header and the status card.
    pub fn label(&self) -> String {
        match self {
            FleetSource::Emulator { scenario, .. } => {
                format!("Simulated fleet ({scenario})")
            }
            FleetSource::Aws { region } => format!("AWS {region}"),
        }
    }
}

/// One cluster of the fleet with its counts, as DescribeClusters reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSummary {
    pub name: String,
    pub container_instances: u32,
    pub running_tasks: u32,
    pub pending_tasks: u32,
    pub services: u32,
}

/// The server's status, as the status card shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleStatus {
    /// The server's version.
    pub version: String,
    /// Where the fleet comes from.
    pub fleet_source: FleetSource,
    /// Whole seconds since the server started.
    pub uptime_seconds: u64,
    /// The server's clock when it answered, RFC 3339 in UTC.
    pub server_time: String,
    /// Who is asking, as the sign-in says.
    #[serde(default)]
    pub actor: Option<crate::model::identity::Actor>,
    /// Whether pages lately showed ECS answers older than they asked for, because ECS was
    /// slow, throttling or failing.
    #[serde(default)]
    pub stale_reads: Option<StaleReads>,
}

/// Pages that read ECS on demand showed a kept answer instead of a new one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleReads {
    /// Age of the oldest answer shown so, in whole seconds.
    pub age_seconds: u64,
    /// Why ECS did not answer in time, in words: "ECS is throttling requests (Rate
    /// exceeded)…", or that it took longer than a page waits.
    pub reason: String,
}

impl StaleReads {
    /// "ECS is throttling requests (Rate exceeded); showing data from 61 s ago."
    pub fn sentence(&self) -> String {
        let reason = self.reason.trim_end_matches('.');
        format!(
            "{reason}; showing data from {} s ago. It is read again in the background.",
            self.age_seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_source() {
        let emulator = FleetSource::Emulator {
            endpoint: "http://127.0.0.1:4566".into(),
            scenario: "demo".into(),
        };
        assert_eq!(emulator.label(), "Simulated fleet (demo)");
        assert_eq!(
            FleetSource::Aws {
                region: "eu-west-1".into()
            }
            .label(),
            "AWS eu-west-1"
        );
    }

    #[test]
    fn fleet_source_serializes_with_a_kind_tag() {
        let json = serde_json::to_string(&FleetSource::Aws {
            region: "us-east-1".into(),
        })
        .expect("serializes");
        assert_eq!(json, r#"{"kind":"aws","region":"us-east-1"}"#);
        let back: FleetSource = serde_json::from_str(
            r#"{"kind":"emulator","endpoint":"http://127.0.0.1:1","scenario":"demo"}"#,
        )
        .expect("parses");
        assert!(back.is_simulated());
    }
}
