//! RegisterTaskDefinition's rules for GPU requirements, as the ECS API reference documents them
//! (ResourceRequirement, SharingStrategy, NvidiaMpsAllocation), on the task definition's JSON.
//!
//! One implementation: the emulator refuses a registration with the first error, and the
//! console's editor shows every error next to its field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{GpuRequest, ALL_GPUS};

/// A broken rule: where, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleError {
    /// The container it concerns, if one.
    pub container: Option<String>,
    /// The field, as a JSON path from the task definition, e.g.
    /// `containerDefinitions[0].resourceRequirements[0].sharingStrategy.nvidiaMps.memory`.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The GPU ask of one container, as parsed from its `resourceRequirements`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ContainerGpu {
    None,
    /// `value`: a number of whole GPUs, or [`ALL_GPUS`] for `ALL`.
    Whole(u32),
    /// `sharingStrategy.nvidiaMps`.
    Mps {
        memory_mib: u32,
        max_compute_percent: Option<u32>,
    },
}

/// Parses one container's GPU requirement (the container at `index` of
/// `containerDefinitions`), applying the per-container rules.
pub fn container_gpu(
    index: usize,
    container: &Map<String, Value>,
) -> Result<ContainerGpu, RuleError> {
    let name = container.get("name").and_then(Value::as_str).unwrap_or("?");
    let base = format!("containerDefinitions[{index}].resourceRequirements");
    let error = |path: String, message: String| RuleError {
        container: Some(name.to_string()),
        path,
        message,
    };
    let Some(requirements) = container.get("resourceRequirements") else {
        return Ok(ContainerGpu::None);
    };
    let requirements = requirements.as_array().ok_or_else(|| {
        error(
            base.clone(),
            format!("Container '{name}': resourceRequirements must be a list."),
        )
    })?;
    let mut found = ContainerGpu::None;
    for (n, requirement) in requirements.iter().enumerate() {
        let path = format!("{base}[{n}]");
        let requirement = requirement.as_object().ok_or_else(|| {
            error(
                path.clone(),
                format!("Container '{name}': each resource requirement must be an object."),
            )
        })?;
        let kind = requirement
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind != "GPU" {
            if !matches!(kind, "InferenceAccelerator" | "NeuronDevice") {
                return Err(error(
                    format!("{path}.type"),
                    format!("Container '{name}': resource requirement type '{kind}' is not valid; use GPU, InferenceAccelerator or NeuronDevice."),
                ));
            }
            continue;
        }
        if found != ContainerGpu::None {
            return Err(error(
                path,
                format!("Container '{name}' has more than one GPU resource requirement."),
            ));
        }
        found = gpu_requirement(name, &path, requirement)?;
    }
    Ok(found)
}

/// One GPU resource requirement at `path` of container `name`: a whole number of GPUs in
/// `value`, or a `sharingStrategy`, never both.
fn gpu_requirement(
    name: &str,
    path: &str,
    requirement: &Map<String, Value>,
) -> Result<ContainerGpu, RuleError> {
    let error = |path: String, message: String| RuleError {
        container: Some(name.to_string()),
        path,
        message,
    };
    // `None` when the requirement leaves `value` out; an empty text is still a value.
    let value = match requirement.get("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) => Some(value.as_str()),
        Some(_) => {
            return Err(error(
                format!("{path}.value"),
                format!("Container '{name}': the GPU value must be a string."),
            ))
        }
    };
    let strategy = requirement.get("sharingStrategy").filter(|v| !v.is_null());
    match (value, strategy) {
        (Some(value), Some(_)) => {
            let hint = if value.is_empty() {
                " Leave value out, even an empty one."
            } else {
                ""
            };
            Err(error(
                format!("{path}.sharingStrategy"),
                format!("Container '{name}': a GPU resource requirement takes either a value or a sharingStrategy, not both.{hint}"),
            ))
        }
        (None | Some(""), None) => Err(error(
            format!("{path}.value"),
            format!("Container '{name}': a GPU resource requirement needs a value (a number of GPUs) or a sharingStrategy."),
        )),
        (Some(value), None) => Ok(ContainerGpu::Whole(parse_gpu_count(value).ok_or_else(|| {
            error(
                format!("{path}.value"),
                format!("Container '{name}': the GPU value '{value}' is not valid; give a whole number of GPUs of at least 1, or ALL."),
            )
        })?)),
        (None, Some(strategy)) => parse_sharing_strategy(strategy).map_err(|(field, message)| {
            error(
                format!("{path}.sharingStrategy{field}"),
                format!("Container '{name}': {message}"),
            )
        }),
    }
}

fn parse_gpu_count(value: &str) -> Option<u32> {
    if value == "ALL" {
        return Some(ALL_GPUS);
    }
    value
        .parse::<u32>()
        .ok()
        .filter(|count| (1..ALL_GPUS).contains(count))
}

/// A sharing strategy, or the field (a path suffix) and what is wrong with it.
fn parse_sharing_strategy(strategy: &Value) -> Result<ContainerGpu, (&'static str, String)> {
    let strategy = strategy
        .as_object()
        .ok_or(("", "sharingStrategy must be an object.".to_string()))?;
    if strategy.len() != 1 {
        return Err((
            "",
            "sharingStrategy must have exactly one member (nvidiaMps).".into(),
        ));
    }
    let mps = match strategy.get("nvidiaMps") {
        Some(Value::Object(mps)) => mps,
        Some(_) => return Err((".nvidiaMps", "nvidiaMps must be an object.".into())),
        None => {
            let other = strategy
                .keys()
                .next()
                .map(String::as_str)
                .unwrap_or_default();
            return Err((
                "",
                format!("sharing strategy '{other}' is not supported; use nvidiaMps."),
            ));
        }
    };
    let memory = mps.get("memory").ok_or((
        ".nvidiaMps.memory",
        "nvidiaMps.memory is required (MiB of GPU memory).".to_string(),
    ))?;
    let memory = whole_number(memory)
        .filter(|memory| *memory >= 1 && *memory <= i64::from(i32::MAX))
        .ok_or((
            ".nvidiaMps.memory",
            "nvidiaMps.memory must be a whole number of MiB, at least 1.".to_string(),
        ))?;
    let compute = match mps.get("maxComputePercent") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            whole_number(value)
                .filter(|p| (1..=100).contains(p))
                .ok_or((
                    ".nvidiaMps.maxComputePercent",
                    "nvidiaMps.maxComputePercent must be a whole number from 1 to 100.".to_string(),
                ))?,
        ),
    };
    if let Some(unknown) = mps
        .keys()
        .find(|key| *key != "memory" && *key != "maxComputePercent")
    {
        return Err((".nvidiaMps", format!("nvidiaMps has no field '{unknown}'.")));
    }
    Ok(ContainerGpu::Mps {
        memory_mib: memory as u32,
        max_compute_percent: compute.map(|p| p as u32),
    })
}

fn whole_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    })
}

/// The rules across a task's containers, given each GPU container's parsed ask.
fn across(
    asks: &[(usize, String, ContainerGpu)],
    compatibilities: &[String],
) -> Result<GpuRequest, RuleError> {
    let whole: Vec<u32> = asks
        .iter()
        .filter_map(|(_, _, g)| match g {
            ContainerGpu::Whole(count) => Some(*count),
            _ => None,
        })
        .collect();
    let mps: Vec<u32> = asks
        .iter()
        .filter_map(|(_, _, g)| match g {
            ContainerGpu::Mps { memory_mib, .. } => Some(*memory_mib),
            _ => None,
        })
        .collect();
    if !whole.is_empty() && !mps.is_empty() {
        return Err(RuleError {
            container: None,
            path: "containerDefinitions".into(),
            message: "All containers of a task that use GPUs must use the same option: all a value (whole GPUs) or all a sharingStrategy.".into(),
        });
    }
    if !mps.is_empty() {
        if let Some(bad) = compatibilities
            .iter()
            .find(|c| *c == "EXTERNAL" || *c == "FARGATE")
        {
            return Err(RuleError {
                container: None,
                path: "requiresCompatibilities".into(),
                message: format!(
                    "GPU sharing (sharingStrategy) is not supported with {bad} compatibility; use EC2 or MANAGED_INSTANCES."
                ),
            });
        }
        return Ok(GpuRequest::Mps(mps));
    }
    if !whole.is_empty() {
        return Ok(GpuRequest::Whole(whole));
    }
    Ok(GpuRequest::None)
}

/// The task's GPU request from its containers, stopping at the first broken rule; and the names
/// of the containers that use GPUs.
pub fn task_gpu(
    containers: &[Map<String, Value>],
    compatibilities: &[String],
) -> Result<(GpuRequest, Vec<String>), RuleError> {
    let mut asks = Vec::new();
    for (index, container) in containers.iter().enumerate() {
        let gpu = container_gpu(index, container)?;
        if gpu != ContainerGpu::None {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            asks.push((index, name, gpu));
        }
    }
    let request = across(&asks, compatibilities)?;
    Ok((request, asks.into_iter().map(|(_, name, _)| name).collect()))
}

/// Every GPU rule of a task definition's JSON, every container: all broken rules, or the task's
/// GPU request. For an editor, which shows each error next to its field.
pub fn check_task(task_definition: &Map<String, Value>) -> Result<GpuRequest, Vec<RuleError>> {
    let containers: Vec<Map<String, Value>> = task_definition
        .get("containerDefinitions")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| c.as_object().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    let compatibilities: Vec<String> = task_definition
        .get("requiresCompatibilities")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut asks = Vec::new();
    for (index, container) in containers.iter().enumerate() {
        match container_gpu(index, container) {
            Ok(ContainerGpu::None) => {}
            Ok(gpu) => asks.push((
                index,
                container
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                gpu,
            )),
            Err(error) => errors.push(error),
        }
    }
    match across(&asks, &compatibilities) {
        Ok(request) if errors.is_empty() => Ok(request),
        Ok(_) => Err(errors),
        Err(error) => {
            errors.push(error);
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(containers: Value) -> Map<String, Value> {
        json!({"family": "a", "containerDefinitions": containers})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    fn gpu_container(name: &str, requirement: Value) -> Value {
        json!({"name": name, "image": "img", "resourceRequirements": [requirement]})
    }

    /// Every rule, broken (with the words its message must say and the field it names) and
    /// kept.
    #[test]
    fn each_rule_rejects_what_it_should_and_accepts_the_rest() {
        let mps = ".sharingStrategy.nvidiaMps";
        let broken = [
            (
                "both value and strategy",
                json!({"type": "GPU", "value": "1", "sharingStrategy": {"nvidiaMps": {"memory": 1}}}),
                "not both",
                ".sharingStrategy".to_string(),
            ),
            (
                "an empty value beside a strategy (ECS: one or the other)",
                json!({"type": "GPU", "value": "", "sharingStrategy": {"nvidiaMps": {"memory": 8192}}}),
                "even an empty one",
                ".sharingStrategy".to_string(),
            ),
            (
                "neither",
                json!({"type": "GPU", "value": ""}),
                "needs a value",
                ".value".to_string(),
            ),
            (
                "memory missing",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {}}}),
                "is required",
                format!("{mps}.memory"),
            ),
            (
                "memory zero",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 0}}}),
                "at least 1",
                format!("{mps}.memory"),
            ),
            (
                "memory negative",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": -4}}}),
                "at least 1",
                format!("{mps}.memory"),
            ),
            (
                "memory huge",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1_u64 << 40}}}),
                "whole number",
                format!("{mps}.memory"),
            ),
            (
                "memory fractional",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1.5}}}),
                "whole number",
                format!("{mps}.memory"),
            ),
            (
                "memory a string",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": "8192"}}}),
                "whole number",
                format!("{mps}.memory"),
            ),
            (
                "compute 0",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 0}}}),
                "1 to 100",
                format!("{mps}.maxComputePercent"),
            ),
            (
                "compute 101",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 101}}}),
                "1 to 100",
                format!("{mps}.maxComputePercent"),
            ),
            (
                "unknown mps field",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "memoryGiB": 8}}}),
                "no field 'memoryGiB'",
                mps.to_string(),
            ),
            (
                "two strategies",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}, "other": {}}}),
                "exactly one",
                ".sharingStrategy".to_string(),
            ),
            (
                "unknown strategy",
                json!({"type": "GPU", "sharingStrategy": {"timeSlicing": {}}}),
                "not supported",
                ".sharingStrategy".to_string(),
            ),
            (
                "zero GPUs",
                json!({"type": "GPU", "value": "0"}),
                "at least 1",
                ".value".to_string(),
            ),
            (
                "a number, not a string",
                json!({"type": "GPU", "value": 1}),
                "must be a string",
                ".value".to_string(),
            ),
            (
                "unknown type",
                json!({"type": "TPU", "value": "1"}),
                "not valid",
                ".type".to_string(),
            ),
        ];
        for (name, requirement, words, field) in broken {
            let errors =
                check_task(&task(json!([gpu_container("c", requirement)]))).expect_err(name);
            assert_eq!(errors.len(), 1, "{name}: {errors:?}");
            assert!(
                errors[0].message.contains(words),
                "{name}: {}",
                errors[0].message
            );
            assert_eq!(
                errors[0].path,
                format!("containerDefinitions[0].resourceRequirements[0]{field}"),
                "{name}"
            );
            assert_eq!(errors[0].container.as_deref(), Some("c"));
        }
        let kept = [
            (
                json!({"type": "GPU", "value": "2"}),
                GpuRequest::Whole(vec![2]),
            ),
            (
                json!({"type": "GPU", "value": "ALL"}),
                GpuRequest::Whole(vec![ALL_GPUS]),
            ),
            (
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 100}}}),
                GpuRequest::Mps(vec![1]),
            ),
            (
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 4096.0, "maxComputePercent": 1}}}),
                GpuRequest::Mps(vec![4096]),
            ),
        ];
        for (requirement, expected) in kept {
            assert_eq!(
                check_task(&task(json!([gpu_container("c", requirement.clone())]))),
                Ok(expected),
                "{requirement}"
            );
        }
    }

    #[test]
    fn every_broken_container_is_reported_not_only_the_first() {
        let errors = check_task(&task(json!([
            gpu_container("a", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 0}}})),
            {"name": "sidecar", "image": "envoy"},
            gpu_container("b", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 500}}})),
        ])))
        .expect_err("two broken");
        let containers: Vec<_> = errors.iter().map(|e| e.container.as_deref()).collect();
        assert_eq!(containers, [Some("a"), Some("b")]);
        assert!(errors[1].path.starts_with("containerDefinitions[2]"));
    }

    #[test]
    fn containers_of_a_task_use_one_option() {
        let errors = check_task(&task(json!([
            gpu_container("a", json!({"type": "GPU", "value": "1"})),
            gpu_container(
                "b",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}})
            ),
        ])))
        .expect_err("mixed");
        assert!(errors[0].message.contains("same option"));
        let containers = [
            gpu_container(
                "a",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 100}}}),
            ),
            gpu_container(
                "b",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 200}}}),
            ),
            json!({"name": "sidecar", "image": "envoy"}),
        ];
        let maps: Vec<Map<String, Value>> = containers
            .iter()
            .map(|c| c.as_object().cloned().unwrap_or_default())
            .collect();
        assert_eq!(
            task_gpu(&maps, &[]),
            Ok((
                GpuRequest::Mps(vec![100, 200]),
                vec!["a".into(), "b".into()]
            ))
        );
    }

    #[test]
    fn sharing_is_refused_on_fargate_and_external_only() {
        for compatibility in ["FARGATE", "EXTERNAL"] {
            let mut body = task(json!([gpu_container(
                "c",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}})
            )]));
            body.insert("requiresCompatibilities".into(), json!([compatibility]));
            let errors = check_task(&body).expect_err(compatibility);
            assert!(errors[0].message.contains(compatibility));
            assert_eq!(errors[0].path, "requiresCompatibilities");
        }
        for compatibility in ["EC2", "MANAGED_INSTANCES"] {
            let mut body = task(json!([gpu_container(
                "c",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}})
            )]));
            body.insert("requiresCompatibilities".into(), json!([compatibility]));
            assert!(check_task(&body).is_ok(), "{compatibility}");
        }
        // Whole GPUs are not GPU sharing.
        let mut body = task(json!([gpu_container(
            "c",
            json!({"type": "GPU", "value": "1"})
        )]));
        body.insert("requiresCompatibilities".into(), json!(["EXTERNAL"]));
        assert!(check_task(&body).is_ok());
    }
}
