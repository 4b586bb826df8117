//! Task definitions as the console lists, edits and compares them: families with their GPU
//! use, team and services; revisions with their containers' GPU settings; and the answers of
//! the pages and the API about them. The JSON of a revision (the RegisterTaskDefinition
//! request, as `aws ecs register-task-definition --cli-input-json` takes it) is edited, masked,
//! compared and exported by the modules below.

mod diff;
mod edit;
mod export;
mod guard;
pub mod limits;
mod locate;
mod secrets;

pub use diff::{diff, DiffChange, DiffEntry};
pub use edit::{
    apply_gpu_edits, check_edit, gpu_changes, gpu_requirement, gpu_settings, parse_inputs,
    CheckedEdit, EditInput, FieldError, SettingChange,
};
pub use export::{
    check_description, cli_json, cloudformation_yaml, set_audit_tag, set_change_tag, AUDIT_TAG,
    CHANGE_TAG, DESCRIBE_ONLY_FIELDS, TAG_VALUE_LIMIT,
};
pub use guard::{
    allowed_by, duplicate_tag_keys, gpu_variables_set, is_gpu_variable, tag_value,
    GPU_VARIABLE_PREFIXES,
};
pub use locate::{line_column, locate, locate_all};
pub use secrets::{
    carries_password, looks_secret, mask_at, mask_pair, mask_pair_at, mask_secrets, unmask_secrets,
    MaskLevel, MASK,
};

use serde::{Deserialize, Serialize};

use crate::model::{fit::FitReport, identity::Permission};

/// The kind of a container's GPU use, as the form and the API name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    /// No GPU.
    None,
    /// Whole GPUs to itself.
    Whole,
    /// A share of one GPU through MPS.
    Mps,
}

impl GpuKind {
    /// The word the form and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuKind::None => "none",
            GpuKind::Whole => "whole",
            GpuKind::Mps => "mps",
        }
    }

    /// The kind a word names, if any.
    pub fn parse(word: &str) -> Option<GpuKind> {
        [GpuKind::None, GpuKind::Whole, GpuKind::Mps]
            .into_iter()
            .find(|kind| kind.as_str() == word)
    }
}

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
    /// The audit record of the registration that made the revision (tag `gpushare:audit-id`).
    #[serde(default)]
    pub audit_id: Option<String>,
}

/// A revision with its JSON: the RegisterTaskDefinition request that would register it again,
/// tags included (unmasked: mask it before showing it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceRevision {
    pub detail: RevisionDetail,
    pub task: serde_json::Map<String, serde_json::Value>,
}

/// A family with its revisions, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyDetail {
    pub family: String,
    pub revisions: Vec<RevisionDetail>,
    pub services: Vec<String>,
}

/// Whether `family` is a family name ECS would accept: up to 255 letters, digits, hyphens and
/// underscores.
pub fn valid_family(family: &str) -> bool {
    !family.is_empty()
        && family.len() <= 255
        && family
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What to say of a family name ECS would refuse.
pub fn invalid_family(family: &str) -> String {
    format!(
        "{family:?} is not a task definition family: up to 255 letters, digits, hyphens and underscores"
    )
}

/// The answer of checking an edit: what is wrong, or what changes, how it fits, and the new
/// revision as JSON and as CloudFormation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditCheck {
    pub errors: Vec<FieldError>,
    /// The containers whose GPU setting changes.
    pub changes: Vec<SettingChange>,
    /// Every difference from the source revision, GPU requirements first.
    pub diff: Vec<DiffEntry>,
    pub fit: Option<FitReport>,
    /// The new revision for `aws ecs register-task-definition --cli-input-json`.
    pub export_json: String,
    /// The containers' `ResourceRequirements` for CloudFormation.
    pub cloudformation: String,
    /// Values masked in the exports (reveal them to copy a registrable JSON).
    pub masked: usize,
    /// Whether the person asking may register this edit, and why not.
    #[serde(default)]
    pub register: Permission,
}

/// The answer of registering an edit: the new revision, or what is wrong (the form keeps its
/// values either way).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditResult {
    pub errors: Vec<FieldError>,
    pub registered: Option<RevisionDetail>,
    /// ECS refused: its code and message.
    pub ecs_error: Option<String>,
}

/// One revision as the revision page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RevisionView {
    pub detail: RevisionDetail,
    /// The RegisterTaskDefinition request that registers it again, pretty.
    pub json: String,
    /// How many secret-looking values `json` masks.
    pub masked: usize,
    pub cloudformation: String,
    /// Whether the person asking may edit and register the family, and why not.
    #[serde(default)]
    pub register: Permission,
    /// Whether the person asking may see the masked values, and why not.
    #[serde(default)]
    pub reveal: Permission,
}

/// Two revisions of a family compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub from: RevisionDetail,
    pub to: RevisionDetail,
    /// The containers whose GPU setting differs.
    pub gpu: Vec<SettingChange>,
    /// Every difference of the JSON, GPU requirements first; secret values masked unless
    /// revealed.
    pub diff: Vec<DiffEntry>,
}

/// What a task definition asks of the GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAskSummary {
    /// `none`, `whole` or `mps`.
    pub kind: GpuKind,
    /// Whole GPUs the task needs on one instance.
    pub whole_gpus: u32,
    /// MiB the task's MPS containers need together on one GPU.
    pub mps_memory_mib: u32,
}

impl From<&placement::GpuRequest> for GpuAskSummary {
    fn from(request: &placement::GpuRequest) -> Self {
        use placement::GpuRequest;
        GpuAskSummary {
            kind: match request {
                GpuRequest::None => GpuKind::None,
                GpuRequest::Whole(_) => GpuKind::Whole,
                GpuRequest::Mps(_) => GpuKind::Mps,
            },
            whole_gpus: request.whole_gpus(),
            mps_memory_mib: request.mps_memory_mib(),
        }
    }
}

/// The answer of validating a task definition: every broken rule, or what it asks of the GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    pub valid: bool,
    /// Each error with its field (a JSON path) and, where the text has it, its line and column.
    pub errors: Vec<FieldError>,
    pub gpu: Option<GpuAskSummary>,
}

impl Validation {
    pub fn valid(request: &placement::GpuRequest) -> Validation {
        Validation {
            valid: true,
            errors: Vec::new(),
            gpu: Some(GpuAskSummary::from(request)),
        }
    }

    pub fn invalid(errors: Vec<FieldError>) -> Validation {
        Validation {
            valid: false,
            errors,
            gpu: None,
        }
    }
}

/// The answer of a fit check: where one task could go, or why the task definition is invalid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FitAnswer {
    Fits(FitReport),
    Invalid(Validation),
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn family_names_are_checked_as_ecs_checks_them() {
        assert!(valid_family("embed-api_2"));
        assert!(!valid_family(""));
        assert!(!valid_family("embed api"));
        assert!(!valid_family(&"x".repeat(256)));
        assert!(invalid_family("a b").contains("up to 255"));
    }
}
