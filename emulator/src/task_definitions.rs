//! RegisterTaskDefinition's rules for GPU requirements, as the ECS API reference documents them,
//! and the parsed form the emulator places tasks with.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::{
    error::{invalid, EcsError},
    model::{Fleet, Tag, TaskDefinition},
    placement::GpuRequest,
};

pub use crate::placement::ALL_GPUS;

/// The task's GPU request from its containers, with the rules across containers, as the API
/// error ECS gives.
pub fn task_gpu(
    containers: &[Map<String, Value>],
    compatibilities: &[String],
) -> Result<(GpuRequest, Vec<String>), EcsError> {
    crate::placement::rules::task_gpu(containers, compatibilities).map_err(|e| invalid(e.message))
}

fn fails_with(containers: &[Map<String, Value>]) -> Option<i32> {
    containers.iter().find_map(|container| {
        container
            .get("environment")?
            .as_array()?
            .iter()
            .find_map(|pair| {
                (pair.get("name")?.as_str()? == "EMULATOR_EXIT_CODE")
                    .then(|| pair.get("value")?.as_str()?.parse().ok())
                    .flatten()
            })
    })
}

impl Fleet {
    /// RegisterTaskDefinition: validates, stores every field as given, returns the new revision.
    pub fn register_task_definition(
        &mut self,
        mut input: Map<String, Value>,
        now: DateTime<Utc>,
    ) -> Result<&TaskDefinition, EcsError> {
        let family = input
            .get("family")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("family is required."))?
            .to_string();
        if !crate::error::is_ecs_name(&family) {
            return Err(invalid(
                "family must be 1 to 255 letters, numbers, hyphens and underscores.",
            ));
        }
        let containers = container_definitions(&input)?;
        let names = container_names(&containers)?;
        let compatibilities: Vec<String> = input
            .get("requiresCompatibilities")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let (gpu, gpu_containers) = task_gpu(&containers, &compatibilities)?;
        let tags = parse_tags(input.remove("tags"))?;
        let needs = crate::placement::resources::needs_of(&input, &[]).map_err(invalid)?;

        let revisions = self.task_definitions.entry(family.clone()).or_default();
        let revision = revisions.len() as u32 + 1;
        let arn = format!(
            "arn:aws:ecs:{}:{}:task-definition/{family}:{revision}",
            self.region, self.account
        );
        revisions.push(TaskDefinition {
            arn: arn.clone(),
            family,
            revision,
            active: true,
            fails_with: fails_with(&containers),
            body: input,
            gpu,
            gpu_containers,
            containers: names,
            needs,
            registered_at: now,
            deregistered_at: None,
        });
        if !tags.is_empty() {
            self.tags.insert(arn.clone(), tags);
        }
        self.task_definition(&arn)
            .ok_or_else(|| EcsError::Server("registration was lost".into()))
    }

    /// DeregisterTaskDefinition: marks a revision INACTIVE.
    pub fn deregister_task_definition(
        &mut self,
        reference: &str,
        now: DateTime<Utc>,
    ) -> Result<&TaskDefinition, EcsError> {
        let arn = self
            .task_definition(reference)
            .filter(|_| reference.contains(':'))
            .map(|td| td.arn.clone())
            .ok_or_else(|| invalid(format!("The task definition '{reference}' does not exist; give family:revision or its ARN.")))?;
        let (family, revision) = split_arn(&arn);
        let td = self
            .task_definitions
            .get_mut(&family)
            .and_then(|revisions| revisions.get_mut(revision.saturating_sub(1)))
            .ok_or_else(|| EcsError::Server("task definition index is inconsistent".into()))?;
        td.active = false;
        td.deregistered_at = Some(now);
        Ok(td)
    }
}

fn split_arn(arn: &str) -> (String, usize) {
    let rest = arn
        .rsplit_once(":task-definition/")
        .map_or(arn, |(_, rest)| rest);
    let (family, revision) = rest.rsplit_once(':').unwrap_or((rest, "0"));
    (family.to_string(), revision.parse().unwrap_or(0))
}

/// The most tags ECS keeps on one resource.
pub const MAX_TAGS: usize = 50;

/// Parses a `tags` list of `{key, value}`.
pub fn parse_tags(tags: Option<Value>) -> Result<Vec<Tag>, EcsError> {
    let Some(tags) = tags else {
        return Ok(Vec::new());
    };
    let list = tags
        .as_array()
        .ok_or_else(|| invalid("tags must be a list of {key, value}."))?;
    if list.len() > MAX_TAGS {
        return Err(invalid(format!(
            "tags can have at most {MAX_TAGS} items; this request has {}.",
            list.len()
        )));
    }
    // A request that gives a key twice is refused, as AWS's tagging refuses it; which value
    // would win is not documented, so the cautious reading keeps neither.
    let mut keys = std::collections::HashSet::new();
    if let Some(key) = list
        .iter()
        .filter_map(|tag| tag.get("key").and_then(Value::as_str))
        .find(|key| !keys.insert(*key))
    {
        return Err(invalid(format!(
            "Duplicate tag keys are not allowed: {key:?} is given more than once."
        )));
    }
    list.iter()
        .map(|tag| {
            let key = tag
                .get("key")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty() && k.len() <= 128);
            let value = tag.get("value").and_then(Value::as_str).unwrap_or_default();
            match key {
                Some(key) if value.len() <= 256 => Ok(Tag {
                    key: key.to_string(),
                    value: value.to_string(),
                }),
                _ => Err(invalid(
                    "Each tag needs a key of 1 to 128 characters and a value of at most 256.",
                )),
            }
        })
        .collect()
}

/// The container definitions: at least one, each an object.
fn container_definitions(input: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, EcsError> {
    match input.get("containerDefinitions") {
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .map(|c| {
                c.as_object()
                    .cloned()
                    .ok_or_else(|| invalid("Each container definition must be an object."))
            })
            .collect(),
        _ => Err(invalid(
            "containerDefinitions must list at least one container.",
        )),
    }
}

/// The containers' names, in order: each present, unique, and with an image.
fn container_names(containers: &[Map<String, Value>]) -> Result<Vec<String>, EcsError> {
    let mut names: Vec<String> = Vec::new();
    for container in containers {
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid("Each container definition needs a name."))?;
        if names.iter().any(|n| n == name) {
            return Err(invalid(format!(
                "Container names must be unique: '{name}' appears twice."
            )));
        }
        if container
            .get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid(format!("Container '{name}' needs an image.")));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    fn register(value: Value) -> Result<TaskDefinition, EcsError> {
        let mut fleet = Fleet::new(1, Utc::now());
        fleet
            .register_task_definition(body(value), Utc::now())
            .cloned()
    }

    fn gpu_container(name: &str, requirement: Value) -> Value {
        json!({"name": name, "image": "img", "resourceRequirements": [requirement]})
    }

    #[test]
    fn a_tag_key_given_twice_is_refused() {
        let refused = register(
            json!({"family": "a", "containerDefinitions": [{"name": "c", "image": "i"}],
            "tags": [{"key": "team", "value": "search"}, {"key": "team", "value": "vision"}]}),
        )
        .expect_err("a key twice");
        assert!(refused.to_string().contains("\"team\""), "{refused}");
        assert!(parse_tags(Some(
            json!([{"key": "a", "value": "1"}, {"key": "b", "value": "1"}])
        ))
        .is_ok());
    }

    /// ECS's model: a requirement has a value or a sharing strategy, not both. Whether ECS
    /// lets an empty value through is not documented; the cautious reading refuses it, so that
    /// the console never depends on it.
    #[test]
    fn mps_with_an_empty_value_is_refused() {
        let refused = register(json!({"family": "a", "containerDefinitions": [gpu_container("c", json!({
            "type": "GPU", "value": "", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}
        }))]}))
        .expect_err("value and strategy");
        assert!(refused.to_string().contains("not both"), "{refused}");
        let td = register(json!({"family": "a", "containerDefinitions": [gpu_container("c", json!({
            "type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}
        }))]}))
        .expect("valid");
        assert_eq!(td.gpu, GpuRequest::Mps(vec![8192]));
        assert_eq!(td.revision, 1);
    }

    #[test]
    fn each_rule_rejects_what_it_should() {
        let cases = [
            (
                "both value and strategy",
                json!({"type": "GPU", "value": "1", "sharingStrategy": {"nvidiaMps": {"memory": 1}}}),
                "not both",
            ),
            (
                "neither",
                json!({"type": "GPU", "value": ""}),
                "needs a value",
            ),
            (
                "memory zero",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 0}}}),
                "at least 1",
            ),
            (
                "memory fractional",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1.5}}}),
                "whole number",
            ),
            (
                "compute 0",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 0}}}),
                "1 to 100",
            ),
            (
                "compute 101",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1, "maxComputePercent": 101}}}),
                "1 to 100",
            ),
            (
                "two strategies",
                json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}, "other": {}}}),
                "exactly one",
            ),
            (
                "unknown strategy",
                json!({"type": "GPU", "sharingStrategy": {"timeSlicing": {}}}),
                "not supported",
            ),
            (
                "zero GPUs",
                json!({"type": "GPU", "value": "0"}),
                "at least 1",
            ),
        ];
        for (name, requirement, expected) in cases {
            let error = register(
                json!({"family": "a", "containerDefinitions": [gpu_container("c", requirement)]}),
            )
            .expect_err(name);
            assert!(
                matches!(error, EcsError::InvalidParameter(_)),
                "{name}: {error:?}"
            );
            assert!(error.to_string().contains(expected), "{name}: {error}");
        }
    }

    #[test]
    fn containers_of_a_task_use_one_option() {
        let error = register(json!({"family": "a", "containerDefinitions": [
            gpu_container("a", json!({"type": "GPU", "value": "1"})),
            gpu_container("b", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}})),
        ]}))
        .expect_err("mixed");
        assert!(error.to_string().contains("same option"), "{error}");

        let td = register(json!({"family": "a", "containerDefinitions": [
            gpu_container("a", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 100}}})),
            gpu_container("b", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 200}}})),
            {"name": "sidecar", "image": "envoy"},
        ]}))
        .expect("valid");
        assert_eq!(td.gpu, GpuRequest::Mps(vec![100, 200]));
        assert_eq!(td.gpu_containers, ["a", "b"]);
    }

    #[test]
    fn sharing_is_refused_on_fargate_and_external() {
        for compatibility in ["FARGATE", "EXTERNAL"] {
            let error = register(json!({"family": "a", "requiresCompatibilities": [compatibility],
                "containerDefinitions": [gpu_container("c", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}}))]}))
            .expect_err(compatibility);
            assert!(error.to_string().contains(compatibility), "{error}");
        }
        let td = register(json!({"family": "a", "requiresCompatibilities": ["EC2"],
            "containerDefinitions": [gpu_container("c", json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1}}}))]}));
        assert!(td.is_ok());
    }

    #[test]
    fn every_field_is_kept_and_revisions_count_up() {
        let mut fleet = Fleet::new(1, Utc::now());
        let input = json!({"family": "web", "networkMode": "awsvpc", "cpu": "1024", "memory": "4096",
            "containerDefinitions": [{"name": "c", "image": "i", "environment": [{"name": "A", "value": "1"}],
                "someFutureField": {"nested": [1, 2, 3]}}],
            "tags": [{"key": "team", "value": "search"}]});
        let first = fleet
            .register_task_definition(body(input.clone()), Utc::now())
            .expect("valid")
            .clone();
        let second = fleet
            .register_task_definition(body(input.clone()), Utc::now())
            .expect("valid")
            .clone();
        assert_eq!(second.revision, 2);
        let mut expected = body(input);
        expected.remove("tags");
        assert_eq!(first.body, expected);
        assert_eq!((first.needs.cpu, first.needs.memory_mib), (1024, 4096));
        assert_eq!(
            fleet.tags[&first.arn],
            vec![Tag {
                key: "team".into(),
                value: "search".into()
            }]
        );
        assert_eq!(fleet.task_definition("web").map(|td| td.revision), Some(2));
        fleet
            .deregister_task_definition("web:2", Utc::now())
            .expect("exists");
        assert_eq!(
            fleet.task_definition("web").map(|td| td.revision),
            Some(1),
            "latest ACTIVE"
        );
    }
}
