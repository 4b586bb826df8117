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

/// What the overview groups instance blocks by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grouping {
    #[default]
    Cluster,
    InstanceType,
    /// A GPU's team is the team holding most of its memory; an instance's GPUs of different
    /// teams sit in different groups.
    Team,
    /// The instance's availability zone, when EC2 could be read.
    Zone,
    /// The capacity provider that launched the instance; instances registered by hand apart.
    CapacityProvider,
}

impl Grouping {
    pub const ALL: [Grouping; 5] = [
        Grouping::Cluster,
        Grouping::InstanceType,
        Grouping::Team,
        Grouping::Zone,
        Grouping::CapacityProvider,
    ];

    /// Its spelling in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            Grouping::Cluster => "cluster",
            Grouping::InstanceType => "instance-type",
            Grouping::Team => "team",
            Grouping::Zone => "zone",
            Grouping::CapacityProvider => "capacity-provider",
        }
    }

    /// What the form calls it.
    pub fn label(self) -> &'static str {
        match self {
            Grouping::Cluster => "Cluster",
            Grouping::InstanceType => "Instance type",
            Grouping::Team => "Team",
            Grouping::Zone => "Availability zone",
            Grouping::CapacityProvider => "Capacity provider",
        }
    }

    pub fn parse(value: &str) -> Option<Grouping> {
        Grouping::ALL.into_iter().find(|g| g.as_str() == value)
    }
}

/// The order of the instance blocks within a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SortKey {
    /// EC2 instance ID: blocks stay put as the fleet changes.
    #[default]
    Name,
    /// Memory allocated, highest first.
    Allocation,
    /// GPU utilisation over the window, busiest first; no data last.
    Utilization,
    /// Memory allocated but not in use, most first; no data last.
    Unused,
    /// Unallocated memory, most first.
    Free,
}

impl SortKey {
    pub const ALL: [SortKey; 5] = [
        SortKey::Name,
        SortKey::Allocation,
        SortKey::Utilization,
        SortKey::Unused,
        SortKey::Free,
    ];

    /// Its spelling in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Allocation => "allocation",
            SortKey::Utilization => "utilization",
            SortKey::Unused => "unused",
            SortKey::Free => "free",
        }
    }

    /// What the form calls it.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Name => "Instance ID",
            SortKey::Allocation => "Memory allocated",
            SortKey::Utilization => "Utilisation",
            SortKey::Unused => "Allocated but unused",
            SortKey::Free => "Free memory",
        }
    }

    /// How a sentence says it: "sorted by …".
    pub fn phrase(self) -> &'static str {
        match self {
            SortKey::Name => "instance ID",
            SortKey::Allocation => "memory allocated",
            SortKey::Utilization => "utilisation",
            SortKey::Unused => "memory allocated but unused",
            SortKey::Free => "free memory",
        }
    }

    pub fn parse(value: &str) -> Option<SortKey> {
        SortKey::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// The part of the fleet the heatmap shows in detail, one row per instance: a group of the
/// overview, one instance, or a range of instances brushed in the overview. Spelled
/// `cluster:prod-a`, `team:search`, `team:` (GPUs of no team), `instance-type:g5.12xlarge`,
/// `zone:us-east-1a`, `zone:` (zone unknown), `instance:i-0abc…` or `instances:i-0abc…,i-0def…`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Zoom {
    Group(Grouping, String),
    Instance(String),
    Instances(Vec<String>),
}

/// The most instances a brushed range names (its URL stays under about 25 KB).
pub const MAX_BRUSHED: usize = 1_000;

impl Zoom {
    /// Its spelling in the URL.
    pub fn spelled(&self) -> String {
        match self {
            Zoom::Group(grouping, value) => format!("{}:{value}", grouping.as_str()),
            Zoom::Instance(id) => format!("instance:{id}"),
            Zoom::Instances(ids) => format!("instances:{}", ids.join(",")),
        }
    }

    pub fn parse(value: &str) -> Option<Zoom> {
        let (kind, rest) = value.split_once(':')?;
        if kind == "instance" {
            return (!rest.is_empty()).then(|| Zoom::Instance(rest.to_string()));
        }
        if kind == "instances" {
            let ids: Vec<String> = rest
                .split(',')
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect();
            return (!ids.is_empty() && ids.len() <= MAX_BRUSHED).then_some(Zoom::Instances(ids));
        }
        Some(Zoom::Group(Grouping::parse(kind)?, rest.to_string()))
    }

    /// "cluster prod-a", "instance i-0abc", "no team".
    pub fn label(&self) -> String {
        match self {
            Zoom::Group(Grouping::Team, value) if value.is_empty() => "GPUs of no team".into(),
            Zoom::Group(Grouping::Zone, value) if value.is_empty() => {
                "instances in an unknown zone".into()
            }
            Zoom::Group(grouping, value) => {
                format!("{} {value}", grouping.label().to_lowercase())
            }
            Zoom::Instance(id) => format!("instance {id}"),
            Zoom::Instances(ids) => format!("{} selected instances", ids.len()),
        }
    }
}

/// The fleet page's view: filters, colour mode, grouping, order, zoom and the selected GPU, as
/// its URL carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FleetQuery {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    pub mode: Option<SharingMode>,
    #[serde(default)]
    pub colour: ColourMode,
    #[serde(default)]
    pub group: Grouping,
    #[serde(default)]
    pub sort: SortKey,
    /// The part shown in detail; the whole fleet as an overview when `None`.
    #[serde(default)]
    pub zoom: Option<Zoom>,
    /// The selected GPU: `<EC2 instance ID>:<index>` or its UUID.
    pub gpu: Option<String>,
}

/// The URL parameters the fleet page reads.
pub const QUERY_PARAMETERS: [&str; 10] = [
    "cluster",
    "team",
    "service",
    "instance_type",
    "mode",
    "colour",
    "group",
    "sort",
    "zoom",
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
        let group = match text("group") {
            None => Grouping::default(),
            Some(value) => Grouping::parse(&value).unwrap_or_else(|| {
                notes.push(format!(
                    "Grouping {value:?} does not exist; grouping by cluster. Use {}.",
                    Grouping::ALL.map(Grouping::as_str).join(", ")
                ));
                Grouping::default()
            }),
        };
        let sort = match text("sort") {
            None => SortKey::default(),
            Some(value) => SortKey::parse(&value).unwrap_or_else(|| {
                notes.push(format!(
                    "Sort key {value:?} does not exist; sorting by instance ID. Use {}.",
                    SortKey::ALL.map(SortKey::as_str).join(", ")
                ));
                SortKey::default()
            }),
        };
        // The zoom keeps its value's spaces: an empty team or zone is "none".
        let zoom = get("zoom").filter(|v| !v.trim().is_empty()).and_then(|value| {
            let zoom = Zoom::parse(value.trim());
            if zoom.is_none() {
                notes.push(format!(
                    "Zoom {value:?} is not a part of the fleet; showing the whole fleet. Use instance:<EC2 instance ID>, instances:<ID>,<ID>,… (at most {MAX_BRUSHED}) or <grouping>:<value>, e.g. cluster:prod-a."
                ));
            }
            zoom
        });
        let query = FleetQuery {
            cluster: text("cluster"),
            team: text("team"),
            service: text("service"),
            instance_type: text("instance_type"),
            mode,
            colour,
            group,
            sort,
            zoom,
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
        if self.group != Grouping::default() {
            pairs.push(("group", self.group.as_str()));
        }
        if self.sort != SortKey::default() {
            pairs.push(("sort", self.sort.as_str()));
        }
        let zoom = self.zoom.as_ref().map(Zoom::spelled);
        if let Some(zoom) = &zoom {
            pairs.push(("zoom", zoom));
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
#[allow(clippy::unwrap_used)]
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

    #[test]
    fn grouping_sort_and_zoom_round_trip_and_bad_ones_are_noted() {
        for zoom in [
            Zoom::Group(Grouping::Cluster, "prod a".into()),
            Zoom::Group(Grouping::Team, String::new()),
            Zoom::Group(Grouping::InstanceType, "g5.12xlarge".into()),
            Zoom::Instance("i-0abc".into()),
            Zoom::Instances(vec!["i-0abc".into(), "i-0def".into()]),
        ] {
            let query = FleetQuery {
                group: Grouping::Team,
                sort: SortKey::Unused,
                zoom: Some(zoom),
                ..FleetQuery::default()
            };
            let url = query.to_query_string();
            let pairs: Vec<(String, String)> = url
                .trim_start_matches('?')
                .split('&')
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap();
                    (name.to_string(), decode(value))
                })
                .collect();
            let (back, notes) = FleetQuery::from_params(|name| {
                pairs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            });
            assert_eq!(back, query, "{url}");
            assert!(notes.is_empty(), "{notes:?}");
        }
        let (query, notes) = FleetQuery::from_params(|name| match name {
            "group" => Some("rack".into()),
            "sort" => Some("price".into()),
            "zoom" => Some("galaxy:far".into()),
            _ => None,
        });
        assert_eq!(
            (query.group, query.sort, query.zoom),
            (Grouping::Cluster, SortKey::Name, None)
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("instance-type"), "{notes:?}");
        assert!(notes[1].contains("utilization"), "{notes:?}");
        assert!(notes[2].contains("instance:"), "{notes:?}");
        assert_eq!(Zoom::parse("instances:,"), None, "no instances named");
        let too_many = format!("instances:{}", vec!["i-1"; MAX_BRUSHED + 1].join(","));
        assert_eq!(Zoom::parse(&too_many), None);
    }

    fn decode(value: &str) -> String {
        let bytes = value.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                out.push(u8::from_str_radix(&value[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }
}
