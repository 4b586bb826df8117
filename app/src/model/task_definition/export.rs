//! A revision's JSON as it leaves the console: the CLI's `--cli-input-json`, the
//! CloudFormation snippet of its GPU requirements, and the tag that keeps its change
//! description.

use serde_json::{json, Map, Value};

/// Fields of DescribeTaskDefinition's answer that ECS sets itself and RegisterTaskDefinition
/// does not take.
pub const DESCRIBE_ONLY_FIELDS: [&str; 9] = [
    "taskDefinitionArn",
    "revision",
    "status",
    "requiresAttributes",
    "compatibilities",
    "registeredAt",
    "registeredBy",
    "deregisteredAt",
    "deleteRequestedAt",
];

/// The tag that keeps a revision's change description (a comment on a revision).
pub const CHANGE_TAG: &str = "gpushare:change";
/// ECS tag values are at most 256 characters.
pub const TAG_VALUE_LIMIT: usize = 256;

/// The tag that names the audit record of the registration that made a revision, so that a
/// registration whose answer was lost can be found in ECS afterwards.
pub const AUDIT_TAG: &str = "gpushare:audit-id";

/// Puts the audit record `id` in the audit tag of `task`, in place of an earlier one (a revision
/// made from another keeps its source's); `false` when the task has the 50 tags ECS allows
/// without one (an earlier audit tag is dropped even then: it names another record).
pub fn set_audit_tag(task: &mut Map<String, Value>, id: &str) -> bool {
    let tags = task
        .entry("tags")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(tags) = tags.as_array_mut() else {
        return false;
    };
    tags.retain(|t| t.get("key").and_then(Value::as_str) != Some(AUDIT_TAG));
    if tags.len() >= super::limits::MAX_TAGS {
        return false;
    }
    tags.push(json!({"key": AUDIT_TAG, "value": id}));
    true
}

/// Whether a change `description` (trimmed) fits the change tag: ECS keeps at most
/// [`TAG_VALUE_LIMIT`] characters in a tag value, and a deploy's description is held to the same.
pub fn check_description(description: &str) -> Result<(), String> {
    let length = description.trim().chars().count();
    if length > TAG_VALUE_LIMIT {
        return Err(format!(
            "The description has {length} characters; ECS keeps at most {TAG_VALUE_LIMIT} in a tag. Shorten it."
        ));
    }
    Ok(())
}

/// Puts `description` (trimmed) in the change tag of `task`, in place of an earlier one; an
/// empty description removes it. Too long a description is refused with what to do.
pub fn set_change_tag(task: &mut Map<String, Value>, description: &str) -> Result<(), String> {
    check_description(description)?;
    let description = description.trim();
    let mut tags: Vec<Value> = task
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter(|t| t.get("key").and_then(Value::as_str) != Some(CHANGE_TAG))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !description.is_empty() {
        tags.push(json!({"key": CHANGE_TAG, "value": description}));
    }
    if tags.is_empty() {
        task.remove("tags");
    } else {
        task.insert("tags".into(), Value::Array(tags));
    }
    Ok(())
}

/// The containers' `ResourceRequirements` as CloudFormation YAML, for an
/// `AWS::ECS::TaskDefinition` kept in code; one block per container that has requirements.
pub fn cloudformation_yaml(task: &Map<String, Value>) -> String {
    let quote = |text: &str| Value::String(text.to_string()).to_string();
    let mut out = String::new();
    let containers = task
        .get("containerDefinitions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for container in &containers {
        let Some(requirements) = container
            .get("resourceRequirements")
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
        else {
            continue;
        };
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push_str(&format!(
            "# AWS::ECS::TaskDefinition, ContainerDefinitions entry with Name: {}\nResourceRequirements:\n",
            quote(name)
        ));
        for requirement in requirements {
            let kind = requirement
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push_str(&format!("  - Type: {}\n", quote(kind)));
            if let Some(value) = requirement
                .get("value")
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
            {
                out.push_str(&format!("    Value: {}\n", quote(value)));
            }
            if let Some(mps) = requirement.pointer("/sharingStrategy/nvidiaMps") {
                out.push_str("    SharingStrategy:\n      NvidiaMps:\n");
                if let Some(memory) = mps.get("memory") {
                    out.push_str(&format!("        Memory: {memory}\n"));
                }
                if let Some(percent) = mps.get("maxComputePercent") {
                    out.push_str(&format!("        MaxComputePercent: {percent}\n"));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("# No container of this task definition has resource requirements.\n");
    }
    out
}

/// The task definition as pretty JSON, ready for `aws ecs register-task-definition
/// --cli-input-json file://…`.
pub fn cli_json(task: &Map<String, Value>) -> String {
    serde_json::to_string_pretty(task).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task_definition::{apply_gpu_edits, secrets::fixture::task, GpuSetting};

    #[test]
    fn the_change_description_is_one_tag() {
        let mut edited = task();
        set_change_tag(&mut edited, "  more memory ").expect("short");
        set_change_tag(&mut edited, "more memory for batch 8").expect("short");
        assert_eq!(
            edited["tags"],
            json!([{"key": "team", "value": "search"}, {"key": CHANGE_TAG, "value": "more memory for batch 8"}])
        );
        set_change_tag(&mut edited, "").expect("empty");
        assert_eq!(edited, task());
        let error = set_change_tag(&mut edited, &"x".repeat(257)).expect_err("long");
        assert!(error.contains("257 characters"));
    }

    #[test]
    fn cloudformation_names_every_requirement() {
        let mut edited = task();
        apply_gpu_edits(
            &mut edited,
            &[(
                "model".into(),
                GpuSetting::Mps {
                    memory_mib: 8192,
                    max_compute_percent: Some(50),
                },
            )],
        );
        let yaml = cloudformation_yaml(&edited);
        assert_eq!(
            yaml,
            "# AWS::ECS::TaskDefinition, ContainerDefinitions entry with Name: \"model\"\n\
             ResourceRequirements:\n  - Type: \"InferenceAccelerator\"\n    Value: \"device_1\"\n\
             \x20 - Type: \"GPU\"\n    SharingStrategy:\n      NvidiaMps:\n        Memory: 8192\n        MaxComputePercent: 50\n"
        );
        assert!(cloudformation_yaml(&Map::new()).starts_with("# No container"));
    }
}
