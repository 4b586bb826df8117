//! Task definitions as the console lists them: families with their GPU use, team and services;
//! revisions; a revision's containers with their GPU settings.

use serde::{Deserialize, Serialize};

/// How one container uses GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuSetting {
    /// No GPU.
    None,
    /// Whole GPUs to itself.
    Whole { count: u32 },
    /// A share of one GPU through MPS: memory it may allocate, and a compute limit.
    Mps {
        memory_mib: u32,
        max_compute_percent: Option<u32>,
    },
}

impl GpuSetting {
    /// `none`, `2 whole GPUs`, `MPS 8,192 MiB (8.0 GiB), ≤ 50 % compute`.
    pub fn describe(&self) -> String {
        match self {
            GpuSetting::None => "no GPU".into(),
            GpuSetting::Whole { count: 1 } => "1 whole GPU".into(),
            GpuSetting::Whole { count } if *count == u32::MAX => "ALL GPUs".into(),
            GpuSetting::Whole { count } => format!("{count} whole GPUs"),
            GpuSetting::Mps {
                memory_mib,
                max_compute_percent,
            } => format!(
                "MPS {memory_mib} MiB ({:.1} GiB), {}",
                f64::from(*memory_mib) / 1024.0,
                match max_compute_percent {
                    Some(p) => format!("compute limit {p} %"),
                    None => "no compute limit (100 %)".into(),
                }
            ),
        }
    }

    pub fn uses_gpu(&self) -> bool {
        *self != GpuSetting::None
    }
}

/// One family, described by its latest active revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilySummary {
    pub family: String,
    pub latest_revision: u32,
    /// The GPU settings of the latest revision's GPU containers, in words; empty without GPUs.
    pub gpu: Vec<String>,
    pub team: Option<String>,
    /// Services that run a revision of this family, `cluster/service`.
    pub services: Vec<String>,
}

/// One container of a revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSummary {
    pub name: String,
    pub image: String,
    pub cpu: u32,
    pub memory_mib: Option<u32>,
    pub gpu: GpuSetting,
}

/// One revision with its containers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionDetail {
    pub family: String,
    pub revision: u32,
    pub arn: String,
    pub active: bool,
    pub registered_at: Option<String>,
    pub compatibilities: Vec<String>,
    pub network_mode: Option<String>,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub containers: Vec<ContainerSummary>,
    pub team: Option<String>,
    /// The change description kept with the revision (tag `gpushare:change`).
    pub change: Option<String>,
}

/// A family with its revisions, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyDetail {
    pub family: String,
    pub revisions: Vec<RevisionDetail>,
    pub services: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::GpuSetting;

    #[test]
    fn settings_read_as_words() {
        assert_eq!(GpuSetting::None.describe(), "no GPU");
        assert_eq!(GpuSetting::Whole { count: 1 }.describe(), "1 whole GPU");
        assert_eq!(GpuSetting::Whole { count: 4 }.describe(), "4 whole GPUs");
        assert_eq!(
            GpuSetting::Mps {
                memory_mib: 8_192,
                max_compute_percent: Some(50)
            }
            .describe(),
            "MPS 8192 MiB (8.0 GiB), compute limit 50 %"
        );
        assert!(GpuSetting::Mps {
            memory_mib: 1,
            max_compute_percent: None
        }
        .describe()
        .ends_with("no compute limit (100 %)"));
    }
}
