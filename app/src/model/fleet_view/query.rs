//! The fleet page's view as its URL carries it: filters, colour mode and the selected GPU, read
//! leniently (a malformed value is dropped with a note) and written back.

use serde::{Deserialize, Serialize};

use crate::model::SharingMode;

/// How the heatmap colours a GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColourMode {
    /// GPU memory ECS allocated, % of the GPU's memory.
    #[default]
    Memory,
    /// Σ `maxComputePercent` of the GPU's containers (unset counts 100); past 100 % is
    /// oversubscribed.
    Compute,
    /// GPU utilisation from CloudWatch, latest minute.
    Utilization,
    /// GPU memory in use from CloudWatch, % of the GPU's memory.
    MemoryUsed,
    /// Memory allocated but not in use, % of the GPU's memory.
    Unused,
}

impl ColourMode {
    pub const ALL: [ColourMode; 5] = [
        ColourMode::Memory,
        ColourMode::Compute,
        ColourMode::Utilization,
        ColourMode::MemoryUsed,
        ColourMode::Unused,
    ];

    /// Its spelling in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            ColourMode::Memory => "memory",
            ColourMode::Compute => "compute",
            ColourMode::Utilization => "utilization",
            ColourMode::MemoryUsed => "memory-used",
            ColourMode::Unused => "unused",
        }
    }

    /// What the legend calls it.
    pub fn label(self) -> &'static str {
        match self {
            ColourMode::Memory => "Memory allocated %",
            ColourMode::Compute => "Compute allocated % (Σ maxComputePercent)",
            ColourMode::Utilization => "GPU utilisation % (CloudWatch)",
            ColourMode::MemoryUsed => "Memory used % (CloudWatch)",
            ColourMode::Unused => "Allocated but unused memory %",
        }
    }

    pub fn parse(value: &str) -> Option<ColourMode> {
        ColourMode::ALL.into_iter().find(|m| m.as_str() == value)
    }
}

/// The fleet page's view: filters, colour mode and the selected GPU, as its URL carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FleetQuery {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    pub mode: Option<SharingMode>,
    #[serde(default)]
    pub colour: ColourMode,
    /// The selected GPU: `<EC2 instance ID>:<index>` or its UUID.
    pub gpu: Option<String>,
}

/// The URL parameters the fleet page reads.
pub const QUERY_PARAMETERS: [&str; 7] = [
    "cluster",
    "team",
    "service",
    "instance_type",
    "mode",
    "colour",
    "gpu",
];

impl FleetQuery {
    /// Reads the URL's parameters leniently: a malformed value is dropped, and a note says
    /// what was wrong, so the page shows a corrected view rather than an error.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> (FleetQuery, Vec<String>) {
        let mut notes = Vec::new();
        let text = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mode = text("mode").and_then(|value| {
            let mode = SharingMode::parse(&value);
            if mode.is_none() {
                notes.push(format!(
                    "Sharing mode {value:?} does not exist; showing every mode. Use IDLE, NVIDIA_MPS or DEDICATED."
                ));
            }
            mode
        });
        let colour = match text("colour") {
            None => ColourMode::default(),
            Some(value) => ColourMode::parse(&value).unwrap_or_else(|| {
                notes.push(format!(
                    "Colour mode {value:?} does not exist; showing memory allocated. Use {}.",
                    ColourMode::ALL.map(ColourMode::as_str).join(", ")
                ));
                ColourMode::default()
            }),
        };
        let query = FleetQuery {
            cluster: text("cluster"),
            team: text("team"),
            service: text("service"),
            instance_type: text("instance_type"),
            mode,
            colour,
            gpu: text("gpu"),
        };
        (query, notes)
    }

    /// The URL query string for this view, `?` included, or empty.
    pub fn to_query_string(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (name, value) in [
            ("cluster", &self.cluster),
            ("team", &self.team),
            ("service", &self.service),
            ("instance_type", &self.instance_type),
        ] {
            if let Some(value) = value {
                pairs.push((name, value));
            }
        }
        if let Some(mode) = self.mode {
            pairs.push(("mode", mode.as_str()));
        }
        if self.colour != ColourMode::default() {
            pairs.push(("colour", self.colour.as_str()));
        }
        if let Some(gpu) = &self.gpu {
            pairs.push(("gpu", gpu));
        }
        if pairs.is_empty() {
            return String::new();
        }
        let encoded: Vec<String> = pairs
            .into_iter()
            .map(|(name, value)| format!("{name}={}", encode(value)))
            .collect();
        format!("?{}", encoded.join("&"))
    }

    /// Whether any filter narrows the fleet.
    pub fn filters(&self) -> bool {
        self.cluster.is_some()
            || self.team.is_some()
            || self.service.is_some()
            || self.instance_type.is_some()
            || self.mode.is_some()
    }
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_parameters_are_corrected_with_a_note() {
        let params = |name: &str| match name {
            "mode" => Some("SHARED".to_string()),
            "colour" => Some("rainbow".to_string()),
            "cluster" => Some("  ".to_string()),
            "team" => Some("search".to_string()),
            _ => None,
        };
        let (query, notes) = FleetQuery::from_params(params);
        assert_eq!(query.mode, None);
        assert_eq!(query.colour, ColourMode::Memory);
        assert_eq!(query.cluster, None, "blank is no filter");
        assert_eq!(query.team.as_deref(), Some("search"));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("NVIDIA_MPS"));
        assert!(notes[1].contains("memory-used"));
    }

    #[test]
    fn a_query_round_trips_through_its_url() {
        let query = FleetQuery {
            cluster: Some("prod a&b".into()),
            mode: Some(SharingMode::NvidiaMps),
            colour: ColourMode::Compute,
            gpu: Some("i-1:3".into()),
            ..FleetQuery::default()
        };
        let url = query.to_query_string();
        assert_eq!(
            url,
            "?cluster=prod%20a%26b&mode=NVIDIA_MPS&colour=compute&gpu=i-1%3A3"
        );
        assert_eq!(FleetQuery::default().to_query_string(), "");
    }
}
