//! Task definitions as the JSON ECS speaks, through aws-sdk-ecs's own shape schemas: a described
//! revision becomes JSON field by field as the SDK models it, and JSON becomes a
//! RegisterTaskDefinition request the same way. What the SDK models is exactly what is kept; a
//! field it does not model is refused by its path, as ECS refuses it.

use aws_sdk_ecs::{
    error::SdkError,
    operation::register_task_definition::{
        builders::RegisterTaskDefinitionFluentBuilder, RegisterTaskDefinitionError,
        RegisterTaskDefinitionInput, RegisterTaskDefinitionOutput,
    },
    types::{Tag, TaskDefinition},
};
use aws_smithy_schema::codec::Codec;
use aws_smithy_types::body::SdkBody;
use placement::rules::RuleError;
use serde_json::{Map, Value};

use app::model::task_definition::{line_column, DESCRIBE_ONLY_FIELDS};

use crate::ecs::shapes::{codec, dropped_fields};
use aws_smithy_schema::{serde::SerializableStruct, Schema};

/// A value of an SDK shape as JSON, tidied as the console shows a task definition.
fn to_json(schema: &Schema<'_>, value: &dyn SerializableStruct) -> Value {
    let mut value = crate::ecs::shapes::to_json(schema, value);
    tidy(&mut value);
    value
}

/// The SDK models a resource requirement's `value` as always present, so it writes `""` beside
/// a sharing strategy; ECS's model says a requirement has one or the other, not both, so the
/// console leaves it out: of the JSON it shows, and of the request it sends.
fn tidy(task: &mut Value) -> bool {
    let mut changed = false;
    let Some(containers) = task
        .get_mut("containerDefinitions")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    for container in containers {
        let Some(requirements) = container
            .get_mut("resourceRequirements")
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for requirement in requirements.iter_mut().filter_map(Value::as_object_mut) {
            if requirement.contains_key("sharingStrategy")
                && requirement.get("value").and_then(Value::as_str) == Some("")
            {
                requirement.remove("value");
                changed = true;
            }
        }
    }
    changed
}

/// A RegisterTaskDefinition request body without the `"value": ""` the SDK writes beside a
/// sharing strategy; `None` when there is nothing to leave out.
pub fn as_ecs_takes_it(body: &[u8]) -> Option<String> {
    let mut request: Value = serde_json::from_slice(body).ok()?;
    tidy(&mut request).then(|| request.to_string())
}

/// Registers `input`: the call of [`register_call`], its body rewritten just before it is signed
/// so that no `"value": ""` goes out beside a sharing strategy.
pub async fn register(
    ecs: &aws_sdk_ecs::Client,
    input: RegisterTaskDefinitionInput,
) -> Result<RegisterTaskDefinitionOutput, SdkError<RegisterTaskDefinitionError>> {
    let call = register_call(ecs, input);
    crate::aws::once::send(|| {
        call.clone()
            .customize()
            .config_override(crate::aws::once::config())
            .mutate_request(|request| {
                if let Some(body) = request.body().bytes().and_then(as_ecs_takes_it) {
                    request
                        .headers_mut()
                        .insert("content-length", body.len().to_string());
                    *request.body_mut() = SdkBody::from(body);
                }
            })
            .send()
    })
    .await
}

/// The body [`register`] sends for `input`: the SDK's JSON of it, tidied as ECS takes it.
pub fn as_sent(input: &RegisterTaskDefinitionInput) -> Map<String, Value> {
    let mut body = to_json(RegisterTaskDefinitionInput::SCHEMA, input);
    tidy(&mut body);
    match body {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A described revision as DescribeTaskDefinition's JSON names it.
pub fn describe_json(task_definition: &TaskDefinition) -> Map<String, Value> {
    match to_json(TaskDefinition::SCHEMA, task_definition) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The RegisterTaskDefinition request that registers `task_definition` again, with its `tags`:
/// the described JSON without the fields ECS sets itself (ARN, revision, status, times, …).
pub fn register_json(task_definition: &TaskDefinition, tags: &[Tag]) -> Map<String, Value> {
    let mut body = describe_json(task_definition);
    for field in DESCRIBE_ONLY_FIELDS {
        body.remove(field);
    }
    if !tags.is_empty() {
        let tags: Vec<Value> = tags
            .iter()
            .map(|tag| serde_json::json!({"key": tag.key(), "value": tag.value()}))
            .collect();
        body.insert("tags".into(), Value::Array(tags));
    }
    body
}

/// The JSON `text` as a RegisterTaskDefinition request, read with the SDK's shapes: a value of
/// the wrong type is refused at its line and column, and any field the SDK does not model at its
/// JSON path.
pub fn parse_register(text: &str) -> Result<RegisterTaskDefinitionInput, Vec<RuleError>> {
    let original: Value = serde_json::from_str(text).map_err(|e| {
        vec![RuleError {
            container: None,
            path: String::new(),
            message: format!(
                "line {}, column {}: {e}; fix the JSON there",
                e.line(),
                e.column()
            ),
        }]
    })?;
    let codec = codec();
    let mut deserializer = codec.create_deserializer(text.as_bytes());
    let input = RegisterTaskDefinitionInput::deserialize(&mut deserializer).map_err(|e| {
        let (line, column) = line_column(text, deserializer.position());
        vec![RuleError {
            container: None,
            path: String::new(),
            message: format!(
                "line {line}, column {column}: {e}; give the value the type the ECS API reference gives it"
            ),
        }]
    })?;
    let kept = to_json(RegisterTaskDefinitionInput::SCHEMA, &input);
    let mut unknown = Vec::new();
    dropped_fields(&original, &kept, String::new(), &mut unknown);
    if unknown.is_empty() {
        Ok(input)
    } else {
        Err(unknown
            .into_iter()
            .map(|path| {
                let field = path.rsplit('.').next().unwrap_or(&path).to_string();
                RuleError {
                    container: None,
                    message: format!(
                        "ECS has no field '{field}' here; remove it or check its spelling against the ECS API reference{}",
                        if DESCRIBE_ONLY_FIELDS.contains(&field.as_str()) {
                            " (ECS sets it when it registers the revision)"
                        } else {
                            ""
                        }
                    ),
                    path,
                }
            })
            .collect())
    }
}

/// The RegisterTaskDefinition call for `input`, every field of the request set from it.
// Elastic Inference accelerators are deprecated in the SDK; a revision that has them keeps them.
#[allow(deprecated)]
pub fn register_call(
    ecs: &aws_sdk_ecs::Client,
    input: RegisterTaskDefinitionInput,
) -> RegisterTaskDefinitionFluentBuilder {
    let RegisterTaskDefinitionInput {
        family,
        task_role_arn,
        execution_role_arn,
        network_mode,
        container_definitions,
        volumes,
        placement_constraints,
        requires_compatibilities,
        cpu,
        memory,
        tags,
        pid_mode,
        ipc_mode,
        proxy_configuration,
        inference_accelerators,
        ephemeral_storage,
        runtime_platform,
        enable_fault_injection,
        ..
    } = input;
    ecs.register_task_definition()
        .set_family(family)
        .set_task_role_arn(task_role_arn)
        .set_execution_role_arn(execution_role_arn)
        .set_network_mode(network_mode)
        .set_container_definitions(container_definitions)
        .set_volumes(volumes)
        .set_placement_constraints(placement_constraints)
        .set_requires_compatibilities(requires_compatibilities)
        .set_cpu(cpu)
        .set_memory(memory)
        .set_tags(tags)
        .set_pid_mode(pid_mode)
        .set_ipc_mode(ipc_mode)
        .set_proxy_configuration(proxy_configuration)
        .set_inference_accelerators(inference_accelerators)
        .set_ephemeral_storage(ephemeral_storage)
        .set_runtime_platform(runtime_platform)
        .set_enable_fault_injection(enable_fault_injection)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_read_with_the_sdk_shapes_and_unknown_fields_are_named() {
        let text = json!({
            "family": "embed",
            "cpu": "1024",
            "containerDefinitions": [{
                "name": "model", "image": "embed:1", "cpu": 512,
                "environment": [{"name": "A", "value": "1"}],
                "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}],
                "healthCheck": {"command": ["CMD", "true"], "interval": 30, "retrys": 3},
                "gpuMemory": 4,
            }],
            "revision": 4,
        })
        .to_string();
        let errors = parse_register(&text).expect_err("unknown fields");
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "containerDefinitions[0].gpuMemory",
                "containerDefinitions[0].healthCheck.retrys",
                "revision",
            ]
        );
        assert!(errors[2].message.contains("ECS sets it"));

        let wrong_type = "{\n  \"family\": \"embed\",\n  \"containerDefinitions\": [\n    {\"name\": \"m\", \"image\": \"i\", \"cpu\": \"lots\"}\n  ]\n}";
        let errors = parse_register(wrong_type).expect_err("wrong type");
        assert!(errors[0].message.starts_with("line 4,"), "{errors:?}");

        let huge = json!({"family": "embed", "containerDefinitions": [{"name": "m", "image": "i",
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 99_999_999_999u64}}}]}]});
        let errors = parse_register(&huge.to_string()).expect_err("too big for ECS");
        assert!(errors[0].message.starts_with("line 1,"), "{errors:?}");

        let good = json!({
            "family": "embed",
            "containerDefinitions": [{"name": "m", "image": "i",
                "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192}}}]}],
            "tags": [{"key": "team", "value": "search"}],
        });
        let input = parse_register(&good.to_string()).expect("valid");
        assert_eq!(input.family(), Some("embed"));
        let mut expected = good.clone();
        // A container's CPU units are 0 when not given, as ECS describes it.
        expected["containerDefinitions"][0]["cpu"] = json!(0);
        assert_eq!(
            to_json(RegisterTaskDefinitionInput::SCHEMA, &input),
            expected,
            "what the SDK reads, it writes back the same"
        );
    }
}
