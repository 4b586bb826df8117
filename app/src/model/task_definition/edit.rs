//! Edits of a revision's GPU settings: the form's text read as settings, the settings applied
//! to the revision's JSON, and the result checked with ECS's rules (the emulator's own).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{GpuKind, GpuSetting, SourceRevision};

/// One container's GPU setting as the edit form sends it: text, checked here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditInput {
    pub container: String,
    /// `none`, `whole` or `mps`.
    pub kind: String,
    /// Whole GPUs.
    #[serde(default)]
    pub count: String,
    /// MPS memory, MiB.
    #[serde(default)]
    pub memory_mib: String,
    /// MPS compute limit, percent; empty for none.
    #[serde(default)]
    pub compute_percent: String,
}

/// What a form field or a JSON field got wrong.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub container: Option<String>,
    /// `kind`, `count`, `memory_mib`, `compute_percent`, or a JSON path
    /// (`containerDefinitions[0].resourceRequirements[0].value`).
    pub field: String,
    pub message: String,
    /// Where a JSON field is in the text the user sent, when it was text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

/// A container's setting before and after the edit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    pub container: String,
    pub before: String,
    pub after: String,
}

/// The form's text as settings, with a message per field that is not a valid number.
pub fn parse_inputs(inputs: &[EditInput]) -> Result<Vec<(String, GpuSetting)>, Vec<FieldError>> {
    let mut settings = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        match setting_of(input) {
            Ok(setting) => settings.push((input.container.clone(), setting)),
            Err(mut wrong) => errors.append(&mut wrong),
        }
    }
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(errors)
    }
}

/// One container's row of the form as a setting, or a message per field that is wrong.
fn setting_of(input: &EditInput) -> Result<GpuSetting, Vec<FieldError>> {
    let error = |field: &str, message: String| FieldError {
        container: Some(input.container.clone()),
        field: field.into(),
        message,
        ..FieldError::default()
    };
    let number = |text: &str| text.trim().parse::<i64>().ok();
    match GpuKind::parse(&input.kind) {
        Some(GpuKind::None) => Ok(GpuSetting::None),
        Some(GpuKind::Whole) => match number(&input.count) {
            Some(count) if (1..=64).contains(&count) => Ok(GpuSetting::Whole {
                count: count as u32,
            }),
            _ => Err(vec![error(
                "count",
                format!(
                    "{:?} is not a number of GPUs: give a whole number from 1 to 64.",
                    input.count
                ),
            )]),
        },
        Some(GpuKind::Mps) => {
            let mut errors = Vec::new();
            let memory = match number(&input.memory_mib) {
                Some(m) if (1..=i64::from(i32::MAX)).contains(&m) => Some(m as u32),
                _ => {
                    errors.push(error(
                        "memory_mib",
                        format!(
                            "{:?} is not a GPU memory: give a whole number of MiB, at least 1 (8 GiB is 8192).",
                            input.memory_mib
                        ),
                    ));
                    None
                }
            };
            let compute = if input.compute_percent.trim().is_empty() {
                Some(None)
            } else {
                match number(&input.compute_percent) {
                    Some(p) if (1..=100).contains(&p) => Some(Some(p as u32)),
                    _ => {
                        errors.push(error(
                            "compute_percent",
                            format!(
                                "{:?} is not a compute limit: give a whole number from 1 to 100, or leave it empty for none.",
                                input.compute_percent
                            ),
                        ));
                        None
                    }
                }
            };
            match (memory, compute) {
                (Some(memory_mib), Some(max_compute_percent)) => Ok(GpuSetting::Mps {
                    memory_mib,
                    max_compute_percent,
                }),
                _ => Err(errors),
            }
        }
        None => Err(vec![error(
            "kind",
            format!(
                "{:?} is not a GPU setting: choose none, whole or mps.",
                input.kind
            ),
        )]),
    }
}

/// An edit that passed ECS's rules: the new revision's JSON, its GPU request, and the
/// containers whose setting changes.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedEdit {
    pub task: serde_json::Map<String, serde_json::Value>,
    pub request: placement::GpuRequest,
    pub changes: Vec<SettingChange>,
}

/// The GPU setting of each container of a task definition's JSON, by name (a container whose
/// requirement breaks a rule is left out: the rules report it).
pub fn gpu_settings(
    task: &serde_json::Map<String, serde_json::Value>,
) -> Vec<(String, GpuSetting)> {
    use placement::rules::ContainerGpu;
    let containers = task
        .get("containerDefinitions")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    containers
        .iter()
        .enumerate()
        .filter_map(|(index, container)| {
            let container = container.as_object()?;
            let name = container.get("name")?.as_str()?.to_string();
            let setting = match placement::rules::container_gpu(index, container).ok()? {
                ContainerGpu::None => GpuSetting::None,
                ContainerGpu::Whole(count) => GpuSetting::Whole { count },
                ContainerGpu::Mps {
                    memory_mib,
                    max_compute_percent,
                } => GpuSetting::Mps {
                    memory_mib,
                    max_compute_percent,
                },
            };
            Some((name, setting))
        })
        .collect()
}

/// The containers whose GPU setting differs between the source revision and `task`, with
/// containers added or removed.
pub fn gpu_changes(
    source: &SourceRevision,
    task: &serde_json::Map<String, serde_json::Value>,
) -> Vec<SettingChange> {
    let after = gpu_settings(task);
    let mut changes: Vec<SettingChange> = source
        .detail
        .containers
        .iter()
        .filter_map(|c| {
            let now = after.iter().find(|(name, _)| name == &c.name);
            match now {
                Some((_, setting)) if setting == &c.gpu => None,
                Some((_, setting)) => Some(SettingChange {
                    container: c.name.clone(),
                    before: c.gpu.describe(),
                    after: setting.describe(),
                }),
                None => Some(SettingChange {
                    container: c.name.clone(),
                    before: c.gpu.describe(),
                    after: "container removed".into(),
                }),
            }
        })
        .collect();
    changes.extend(
        after
            .iter()
            .filter(|(name, _)| !source.detail.containers.iter().any(|c| &c.name == name))
            .map(|(name, setting)| SettingChange {
                container: name.clone(),
                before: "container added".into(),
                after: setting.describe(),
            }),
    );
    changes
}

/// Applies `edits` to the source revision's JSON and checks the result with ECS's rules (the
/// emulator's own): the new JSON, the task's GPU request and the changes, or every broken rule.
pub fn check_edit(
    source: &SourceRevision,
    edits: &[(String, GpuSetting)],
) -> Result<CheckedEdit, Vec<FieldError>> {
    let mut task = source.task.clone();
    let mut errors: Vec<FieldError> = apply_gpu_edits(&mut task, edits)
        .into_iter()
        .map(|name| FieldError {
            message: format!(
                "revision {} has no container {name:?}",
                source.detail.revision
            ),
            container: Some(name),
            field: "container".into(),
            ..FieldError::default()
        })
        .collect();
    let request = match placement::rules::check_task(&task) {
        Ok(request) => Some(request),
        Err(broken) => {
            errors.extend(broken.into_iter().map(|e| FieldError {
                container: e.container,
                field: e.path,
                message: e.message,
                ..FieldError::default()
            }));
            None
        }
    };
    let Some(request) = request.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };
    let changes = gpu_changes(source, &task);
    Ok(CheckedEdit {
        task,
        request,
        changes,
    })
}

/// A GPU setting as the `resourceRequirements` entry ECS takes.
pub fn gpu_requirement(setting: &GpuSetting) -> Option<Value> {
    match setting {
        GpuSetting::None => None,
        GpuSetting::Whole { count } if *count == u32::MAX => {
            Some(json!({"type": "GPU", "value": "ALL"}))
        }
        GpuSetting::Whole { count } => Some(json!({"type": "GPU", "value": count.to_string()})),
        GpuSetting::Mps {
            memory_mib,
            max_compute_percent,
        } => {
            let mut mps = json!({"memory": memory_mib});
            if let Some(percent) = max_compute_percent {
                mps["maxComputePercent"] = json!(percent);
            }
            Some(json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": mps}}))
        }
    }
}

/// Gives the named containers of `task` their new GPU settings: each one's GPU requirement is
/// replaced, its other requirements and every other field stay. The names not found are
/// returned.
pub fn apply_gpu_edits(
    task: &mut Map<String, Value>,
    edits: &[(String, GpuSetting)],
) -> Vec<String> {
    let mut missing = Vec::new();
    let containers = task
        .get_mut("containerDefinitions")
        .and_then(Value::as_array_mut);
    let Some(containers) = containers else {
        return edits.iter().map(|(name, _)| name.clone()).collect();
    };
    for (name, setting) in edits {
        let Some(container) = containers
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        else {
            missing.push(name.clone());
            continue;
        };
        let mut requirements: Vec<Value> = container
            .get("resourceRequirements")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|r| r.get("type").and_then(Value::as_str) != Some("GPU"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        requirements.extend(gpu_requirement(setting));
        if requirements.is_empty() {
            container.remove("resourceRequirements");
        } else {
            container.insert("resourceRequirements".into(), Value::Array(requirements));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task_definition::diff;
    use crate::model::task_definition::{ContainerSummary, RevisionDetail};

    fn revision() -> SourceRevision {
        let detail = RevisionDetail {
            family: "asr".into(),
            revision: 3,
            arn: "arn:aws:ecs:us-east-1:1:task-definition/asr:3".into(),
            active: true,
            registered_at: None,
            compatibilities: vec!["EC2".into()],
            network_mode: None,
            cpu: None,
            memory: None,
            containers: vec![
                ContainerSummary {
                    name: "model".into(),
                    image: "asr:1".into(),
                    cpu: 1024,
                    memory_mib: Some(4096),
                    gpu: GpuSetting::Whole { count: 1 },
                },
                ContainerSummary {
                    name: "proxy".into(),
                    image: "envoy".into(),
                    cpu: 256,
                    memory_mib: None,
                    gpu: GpuSetting::None,
                },
            ],
            team: None,
            change: None,
            audit_id: None,
        };
        let task = serde_json::json!({
            "family": "asr",
            "requiresCompatibilities": ["EC2"],
            "containerDefinitions": [
                {"name": "model", "image": "asr:1", "cpu": 1024, "memory": 4096,
                 "resourceRequirements": [{"type": "GPU", "value": "1"}]},
                {"name": "proxy", "image": "envoy", "cpu": 256},
            ],
        });
        SourceRevision {
            detail,
            task: task.as_object().cloned().unwrap_or_default(),
        }
    }

    fn input(container: &str, kind: &str, memory: &str, compute: &str) -> EditInput {
        EditInput {
            container: container.into(),
            kind: kind.into(),
            count: "1".into(),
            memory_mib: memory.into(),
            compute_percent: compute.into(),
        }
    }

    #[test]
    fn form_text_becomes_settings_or_says_what_to_fix() {
        let ok = parse_inputs(&[
            input("model", "mps", " 8192 ", "50"),
            input("proxy", "none", "", ""),
        ]);
        assert_eq!(
            ok,
            Ok(vec![
                (
                    "model".to_string(),
                    GpuSetting::Mps {
                        memory_mib: 8192,
                        max_compute_percent: Some(50)
                    }
                ),
                ("proxy".to_string(), GpuSetting::None),
            ])
        );
        let errors = parse_inputs(&[
            input("model", "mps", "8 GiB", "150"),
            input("proxy", "shared", "", ""),
        ])
        .expect_err("three fields");
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["memory_mib", "compute_percent", "kind"]);
        assert!(errors[0].message.contains("8192"));
        let negative = parse_inputs(&[input("model", "mps", "-1", "")]).expect_err("negative");
        assert_eq!(negative[0].field, "memory_mib");
        let none_limit = parse_inputs(&[input("model", "mps", "1", "")]).expect("no limit");
        assert_eq!(
            none_limit[0].1,
            GpuSetting::Mps {
                memory_mib: 1,
                max_compute_percent: None
            }
        );
    }

    #[test]
    fn an_edit_is_checked_with_ecs_rules_and_lists_its_changes() {
        let to_mps = vec![(
            "model".to_string(),
            GpuSetting::Mps {
                memory_mib: 8192,
                max_compute_percent: Some(50),
            },
        )];
        let checked = check_edit(&revision(), &to_mps).expect("valid");
        let (request, changes) = (checked.request, checked.changes);
        assert_eq!(request, placement::GpuRequest::Mps(vec![8192]));
        assert_eq!(
            checked.task["containerDefinitions"][0]["resourceRequirements"],
            serde_json::json!([{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}])
        );
        assert_eq!(
            changes,
            [SettingChange {
                container: "model".into(),
                before: "1 whole GPU".into(),
                after: "MPS 8192 MiB (8.0 GiB), compute limit 50 %".into(),
            }]
        );
        // Two GPU containers on different options break a rule across the task.
        let mixed = vec![
            ("model".to_string(), GpuSetting::Whole { count: 1 }),
            (
                "proxy".to_string(),
                GpuSetting::Mps {
                    memory_mib: 1,
                    max_compute_percent: None,
                },
            ),
        ];
        let errors = check_edit(&revision(), &mixed).expect_err("mixed");
        assert!(errors[0].message.contains("same option"));
        let mut fargate = revision();
        fargate.task["requiresCompatibilities"] = serde_json::json!(["FARGATE"]);
        let errors = check_edit(&fargate, &to_mps).expect_err("fargate");
        assert_eq!(errors[0].field, "requiresCompatibilities");
        let errors = check_edit(&revision(), &[("nope".to_string(), GpuSetting::None)])
            .expect_err("unknown container");
        assert_eq!(errors[0].field, "container");
        assert!(check_edit(&revision(), &[])
            .expect("no change")
            .changes
            .is_empty());
    }

    fn task() -> Map<String, Value> {
        crate::model::task_definition::secrets::fixture::task()
    }

    #[test]
    fn an_edit_replaces_only_the_gpu_requirement() {
        let mut edited = task();
        let mps = GpuSetting::Mps {
            memory_mib: 8192,
            max_compute_percent: Some(50),
        };
        let missing = apply_gpu_edits(
            &mut edited,
            &[
                ("model".into(), mps),
                ("proxy".into(), GpuSetting::None),
                ("nope".into(), GpuSetting::None),
            ],
        );
        assert_eq!(missing, ["nope"]);
        assert_eq!(
            edited["containerDefinitions"][0]["resourceRequirements"],
            json!([
                {"type": "InferenceAccelerator", "value": "device_1"},
                {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}
            ])
        );
        assert!(edited["containerDefinitions"][1]
            .get("resourceRequirements")
            .is_none());
        let changes = diff(&task(), &edited);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(changes.iter().all(|c| c.gpu));
        assert_eq!(
            changes[0].path,
            "containerDefinitions[model].resourceRequirements[1].value"
        );
        assert_eq!(
            changes[0].change,
            crate::model::task_definition::DiffChange::Removed
        );
        assert_eq!(
            changes[1].path,
            "containerDefinitions[model].resourceRequirements[1].sharingStrategy"
        );
        assert_eq!(
            changes[1].after.as_deref(),
            Some(r#"{"nvidiaMps":{"maxComputePercent":50,"memory":8192}}"#)
        );
        let mut back = edited.clone();
        apply_gpu_edits(
            &mut back,
            &[("model".into(), GpuSetting::Whole { count: 1 })],
        );
        assert_eq!(back, task(), "and back again is the same JSON");
    }
}
