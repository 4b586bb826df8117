//! Task definitions (list, describe, register, deregister) and the tags of any resource.

use serde_json::{json, Map, Value};

use super::{
    input::{self, required},
    output::{epoch, listed, page, tags_of},
};
use crate::{
    error::{invalid, EcsError},
    model::{Fleet, TaskDefinition},
    task_definitions::parse_tags,
};

/// `status` of the task definition lists: `Some(true)` active, `Some(false)` inactive, `None`
/// all.
fn status_filter(status: Option<&str>) -> Result<Option<bool>, EcsError> {
    match status {
        None | Some("ACTIVE") => Ok(Some(true)),
        Some("INACTIVE") => Ok(Some(false)),
        Some("ALL") => Ok(None),
        Some("DELETE_IN_PROGRESS") => Ok(Some(false)),
        Some(other) => Err(invalid(format!(
            "status '{other}' is not valid; use ACTIVE, INACTIVE or ALL."
        ))),
    }
}

pub fn list_families(
    fleet: &Fleet,
    input: &input::ListTaskDefinitionFamilies,
) -> Result<Value, EcsError> {
    let prefix = input.family_prefix.as_deref().unwrap_or_default();
    // Unlike ListTaskDefinitions, the families' list has ACTIVE and INACTIVE ones by default.
    let status = status_filter(Some(input.status.as_deref().unwrap_or("ALL")))?;
    let families: Vec<String> = fleet
        .task_definitions
        .iter()
        .filter(|(family, _)| family.starts_with(prefix))
        .filter(|(_, revisions)| match status {
            Some(true) => revisions.iter().any(|td| td.active),
            Some(false) => revisions.iter().all(|td| !td.active),
            None => true,
        })
        .map(|(family, _)| family.clone())
        .collect();
    let (items, next) = page(&families, &input.paging, 100)?;
    Ok(listed("families", items, next))
}

pub fn list(fleet: &Fleet, input: &input::ListTaskDefinitions) -> Result<Value, EcsError> {
    let family = input.family_prefix.as_deref();
    let status = status_filter(input.status.as_deref())?;
    let descending = match input.sort.as_deref() {
        None | Some("ASC") => false,
        Some("DESC") => true,
        Some(other) => {
            return Err(invalid(format!(
                "sort '{other}' is not valid; use ASC or DESC."
            )))
        }
    };
    let mut arns: Vec<String> = fleet
        .task_definitions
        .iter()
        .filter(|(name, _)| family.is_none_or(|f| *name == f))
        .flat_map(|(_, revisions)| revisions.iter())
        .filter(|td| status.is_none_or(|active| td.active == active))
        .map(|td| td.arn.clone())
        .collect();
    if descending {
        arns.reverse();
    }
    let (items, next) = page(&arns, &input.paging, 100)?;
    Ok(listed("taskDefinitionArns", items, next))
}

pub fn describe(fleet: &Fleet, input: &input::DescribeTaskDefinition) -> Result<Value, EcsError> {
    let reference = required(&input.task_definition, "taskDefinition")?;
    let td = fleet.task_definition(reference).ok_or_else(|| {
        EcsError::Client(format!(
            "Unable to describe task definition {reference}: it does not exist."
        ))
    })?;
    let mut body = json!({"taskDefinition": task_definition_json(td)});
    if input.include.tags() {
        body["tags"] = tags_of(fleet, &td.arn);
    }
    Ok(body)
}

pub fn register(
    fleet: &mut Fleet,
    input: input::RegisterTaskDefinition,
) -> Result<Value, EcsError> {
    let now = fleet.now;
    let td = fleet.register_task_definition(input, now)?.clone();
    Ok(json!({"taskDefinition": task_definition_json(&td), "tags": tags_of(fleet, &td.arn)}))
}

pub fn deregister(
    fleet: &mut Fleet,
    input: input::DeregisterTaskDefinition,
) -> Result<Value, EcsError> {
    let reference = required(&input.task_definition, "taskDefinition")?.to_string();
    let now = fleet.now;
    let td = fleet.deregister_task_definition(&reference, now)?;
    Ok(json!({"taskDefinition": task_definition_json(td)}))
}

/// The stored fields exactly as registered, plus what ECS adds.
pub fn task_definition_json(td: &TaskDefinition) -> Value {
    let mut body: Map<String, Value> = td.body.clone();
    body.insert("taskDefinitionArn".into(), json!(td.arn));
    body.insert("revision".into(), json!(td.revision));
    body.insert(
        "status".into(),
        json!(if td.active { "ACTIVE" } else { "INACTIVE" }),
    );
    body.insert("registeredAt".into(), epoch(td.registered_at));
    body.insert(
        "registeredBy".into(),
        json!("arn:aws:iam::123456789012:role/emulator"),
    );
    if let Some(at) = td.deregistered_at {
        body.insert("deregisteredAt".into(), epoch(at));
    }
    if !body.contains_key("compatibilities") {
        let mut compatibilities = vec![json!("EC2")];
        if matches!(td.gpu, crate::placement::GpuRequest::None) {
            compatibilities.push(json!("EXTERNAL"));
        }
        body.insert("compatibilities".into(), Value::Array(compatibilities));
    }
    Value::Object(body)
}

/// Refuses an ARN that names no resource of the account.
fn ensure_resource(fleet: &Fleet, arn: &str) -> Result<(), EcsError> {
    let known = fleet.clusters.values().any(|c| {
        c.arn == arn
            || c.services.values().any(|s| s.arn == arn)
            || c.tasks.contains_key(arn)
            || c.instance_index.contains_key(arn)
    }) || fleet.task_definition(arn).is_some_and(|td| td.arn == arn)
        || fleet.capacity_provider(arn).is_some_and(|p| p.arn == arn);
    if known {
        Ok(())
    } else {
        Err(invalid(format!(
            "The specified resource is not valid: {arn}."
        )))
    }
}

pub fn list_tags(fleet: &Fleet, input: input::ListTagsForResource) -> Result<Value, EcsError> {
    let arn = required(&input.resource_arn, "resourceArn")?;
    ensure_resource(fleet, arn)?;
    Ok(json!({"tags": tags_of(fleet, arn)}))
}

pub fn tag(fleet: &mut Fleet, input: input::TagResource) -> Result<Value, EcsError> {
    let arn = required(&input.resource_arn, "resourceArn")?.to_string();
    ensure_resource(fleet, &arn)?;
    let tags = parse_tags(input.tags)?;
    if tags.is_empty() {
        return Err(invalid("tags must list at least one tag."));
    }
    let existing = fleet.tags.entry(arn).or_default();
    for tag in tags {
        existing.retain(|t| t.key != tag.key);
        existing.push(tag);
    }
    Ok(json!({}))
}

pub fn untag(fleet: &mut Fleet, input: input::UntagResource) -> Result<Value, EcsError> {
    let arn = required(&input.resource_arn, "resourceArn")?.to_string();
    ensure_resource(fleet, &arn)?;
    if let Some(existing) = fleet.tags.get_mut(&arn) {
        existing.retain(|t| !input.tag_keys.contains(&t.key));
    }
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_filter_takes_ecs_words_only() {
        assert_eq!(status_filter(None).ok(), Some(Some(true)));
        assert_eq!(status_filter(Some("INACTIVE")).ok(), Some(Some(false)));
        assert_eq!(status_filter(Some("ALL")).ok(), Some(None));
        assert!(status_filter(Some("active")).is_err());
    }
}
