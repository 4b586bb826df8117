//! ListServices, DescribeServices, CreateService, UpdateService and DeleteService.

use serde_json::{json, Value};

use super::capacity_providers::strategy_of;
use super::{
    clusters::cluster_of,
    input::{self, required, DeploymentConfiguration},
    output::{epoch, listed, missing, page, tags_of},
    DESCRIBE_SERVICES_LIMIT,
};
use crate::{
    capacity::{ProviderKind, StrategyItem, FARGATE_PROVIDERS},
    engine::{NewService, ServiceUpdate},
    error::{invalid, EcsError},
    model::{DeploymentConfig, DeploymentStatus, Fleet, Service, Threshold},
    task_definitions::parse_tags,
};

pub fn list(fleet: &Fleet, input: &input::ListServices) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    // A deleted service is no longer listed (DescribeServices still describes it).
    let arns: Vec<String> = cluster
        .services
        .values()
        .filter(|s| s.is_active())
        .map(|s| s.arn.clone())
        .collect();
    let (items, next) = page(&arns, &input.paging, 10)?;
    Ok(listed("serviceArns", items, next))
}

pub fn describe(fleet: &Fleet, input: &input::DescribeServices) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    if input.services.is_empty() {
        return Err(invalid("services must list at least one service."));
    }
    if input.services.len() > DESCRIBE_SERVICES_LIMIT {
        return Err(invalid("services can have at most 10 items."));
    }
    let mut services = Vec::new();
    let mut failures = Vec::new();
    for reference in &input.services {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        match cluster.services.get(name) {
            Some(service) => {
                let mut body = service_json(service);
                if input.include.tags() {
                    body["tags"] = tags_of(fleet, &service.arn);
                }
                services.push(body);
            }
            None => failures.push(missing(&if reference.starts_with("arn:") {
                reference.clone()
            } else {
                fleet.arn(&format!("service/{}/{name}", cluster.name))
            })),
        }
    }
    Ok(json!({"services": services, "failures": failures}))
}

/// `launchType` or `capacityProviderStrategy`, as a service or deployment carries it.
fn launch_of(service: &Service) -> (&'static str, Value) {
    if service.capacity_provider_strategy.is_empty() {
        ("launchType", json!("EC2"))
    } else {
        let items: Vec<Value> = service
            .capacity_provider_strategy
            .iter()
            .map(StrategyItem::to_json)
            .collect();
        ("capacityProviderStrategy", Value::Array(items))
    }
}

fn service_json(service: &Service) -> Value {
    let mut body = service_body(service);
    let (field, value) = launch_of(service);
    body[field] = value.clone();
    if let Some(deployments) = body["deployments"].as_array_mut() {
        for deployment in deployments {
            deployment[field] = value.clone();
        }
    }
    body
}

fn service_body(service: &Service) -> Value {
    let running: u32 = service.deployments.iter().map(|d| d.running_count).sum();
    let pending: u32 = service.deployments.iter().map(|d| d.pending_count).sum();
    let (threshold_type, threshold_value) = service.config.threshold.as_api();
    json!({
        "serviceArn": service.arn,
        "serviceName": service.name,
        "clusterArn": service.cluster_arn,
        "status": service.status(),
        "desiredCount": service.desired_count,
        "runningCount": running,
        "pendingCount": pending,
        "taskDefinition": service.task_definition_arn,
        "schedulingStrategy": "REPLICA",
        "deploymentController": {"type": "ECS"},
        "placementConstraints": service.placement_constraints,
        "placementStrategy": service.placement_strategy,
        "createdAt": epoch(service.created_at),
        "deploymentConfiguration": {
            "deploymentCircuitBreaker": {
                "enable": service.config.circuit_breaker_enable,
                "rollback": service.config.circuit_breaker_rollback,
                "resetOnHealthyTask": service.config.reset_on_healthy_task,
                "thresholdConfiguration": {"type": threshold_type, "value": threshold_value},
            },
            "maximumPercent": service.config.maximum_percent,
            "minimumHealthyPercent": service.config.minimum_healthy_percent,
            "strategy": service.config.strategy,
        },
        "deployments": service.deployments.iter().map(|d| json!({
            "id": d.id,
            "status": match d.status { DeploymentStatus::Primary => "PRIMARY", DeploymentStatus::Active => "ACTIVE" },
            "taskDefinition": d.task_definition_arn,
            "desiredCount": d.desired_count,
            "pendingCount": d.pending_count,
            "runningCount": d.running_count,
            "failedTasks": d.failed_tasks,
            "createdAt": epoch(d.created_at),
            "updatedAt": epoch(d.updated_at),
            "rolloutState": d.rollout_state.as_str(),
            "rolloutStateReason": d.rollout_state_reason,
        })).collect::<Vec<_>>(),
        "events": service.events.iter().map(|e| json!({"id": e.id, "createdAt": epoch(e.created_at), "message": e.message})).collect::<Vec<_>>(),
    })
}

/// A service's `placementConstraints`: at most 10, each `distinctInstance` or a `memberOf`
/// with an expression the emulator can evaluate.
fn placement_constraints(given: Option<&Value>) -> Result<Vec<Value>, EcsError> {
    let Some(given) = given else {
        return Ok(Vec::new());
    };
    let list = given
        .as_array()
        .ok_or_else(|| invalid("placementConstraints must be a list."))?;
    if list.len() > 10 {
        return Err(invalid("A service takes at most 10 placement constraints."));
    }
    for constraint in list {
        match constraint.get("type").and_then(Value::as_str) {
            Some("distinctInstance") | Some("memberOf") => {}
            other => {
                return Err(invalid(format!(
                    "placement constraint type {} is not valid: use distinctInstance or memberOf.",
                    other.unwrap_or("(none)")
                )))
            }
        }
    }
    crate::placement::resources::needs_of(&Default::default(), list).map_err(invalid)?;
    Ok(list.clone())
}

/// A `placementStrategy` as given, checked: at most 5, each `random`, `spread` on
/// `instanceId`/`host`/`attribute:NAME`, or `binpack` on `cpu`/`memory`.
fn placement_strategy(given: Option<&Value>) -> Result<Vec<Value>, EcsError> {
    let Some(given) = given else {
        return Ok(Vec::new());
    };
    crate::placement::strategy::Strategy::parse_list(given).map_err(invalid)?;
    Ok(given.as_array().cloned().unwrap_or_default())
}

/// `base` with what `config` sets; a circuit breaker given is given whole.
fn deployment_config(
    config: Option<&DeploymentConfiguration>,
    base: DeploymentConfig,
) -> Result<DeploymentConfig, EcsError> {
    let Some(config) = config else {
        return Ok(base);
    };
    let mut out = base;
    if let Some(max) = config.maximum_percent {
        out.maximum_percent =
            u32::try_from(max).map_err(|_| invalid("maximumPercent must be positive."))?;
    }
    if let Some(min) = config.minimum_healthy_percent {
        out.minimum_healthy_percent = u32::try_from(min)
            .map_err(|_| invalid("minimumHealthyPercent must not be negative."))?;
    }
    if let Some(breaker) = &config.deployment_circuit_breaker {
        out.circuit_breaker_enable = breaker.enable;
        out.circuit_breaker_rollback = breaker.rollback;
        out.reset_on_healthy_task = breaker.reset_on_healthy_task.unwrap_or(true);
        out.threshold = match &breaker.threshold_configuration {
            None => Threshold::BoundedPercent(50),
            Some(given) => {
                let value = given
                    .value
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| {
                        invalid("thresholdConfiguration.value must be a number of 0 or more.")
                    })?;
                match given.kind.as_deref() {
                    Some("BOUNDED_PERCENT") => Threshold::BoundedPercent(value),
                    Some("UNBOUNDED_PERCENT") => Threshold::UnboundedPercent(value),
                    Some("COUNT") => Threshold::Count(value),
                    other => {
                        return Err(invalid(format!(
                            "thresholdConfiguration.type {} is not valid: use COUNT, BOUNDED_PERCENT or UNBOUNDED_PERCENT.",
                            other.unwrap_or("(none)")
                        )))
                    }
                }
            }
        };
    }
    if let Some(strategy) = &config.strategy {
        if !["ROLLING", "BLUE_GREEN", "LINEAR", "CANARY"].contains(&strategy.as_str()) {
            return Err(invalid(format!(
                "deploymentConfiguration.strategy {strategy} is not valid: use ROLLING, BLUE_GREEN, LINEAR or CANARY."
            )));
        }
        out.strategy = strategy.clone();
    }
    Ok(out)
}

fn desired_count(count: Option<i64>) -> Result<Option<u32>, EcsError> {
    count
        .map(|n| u32::try_from(n).map_err(|_| invalid("desiredCount must not be negative.")))
        .transpose()
}

/// The capacity provider strategy a service runs by: the one given, checked against the
/// cluster's providers and the task definition; none for the EC2 launch type; the cluster's
/// default strategy when neither is given.
fn strategy_for(
    fleet: &Fleet,
    cluster: &str,
    task_definition: &str,
    launch_type: Option<&str>,
    given: Option<&[input::StrategyItem]>,
) -> Result<Vec<StrategyItem>, EcsError> {
    let key = fleet
        .cluster_key(cluster)
        .ok_or(EcsError::ClusterNotFound)?;
    let cluster = &fleet.clusters[&key];
    let strategy = match (launch_type, given) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "Specifying both a launchType and capacityProviderStrategy is not supported. Remove one and try again.",
            ))
        }
        (Some("EC2"), None) => return Ok(Vec::new()),
        (Some(other), None) => {
            return Err(invalid(format!(
                "launchType {other} is not run here: give EC2, or a capacityProviderStrategy."
            )))
        }
        (None, Some(items)) => strategy_of(items, &cluster.capacity_providers)?,
        (None, None) => cluster.default_strategy.clone(),
    };
    if strategy.len() > 1 && strategy.iter().all(|item| item.weight == 0) {
        return Err(invalid(
            "At least one capacity provider in the strategy must have a weight greater than zero.",
        ));
    }
    let td = fleet.task_definition(task_definition);
    let compatibilities: Vec<&str> = td
        .and_then(|td| td.body.get("requiresCompatibilities"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for item in &strategy {
        let kind = fleet
            .capacity_provider(&item.capacity_provider)
            .map(|p| p.kind);
        if td.is_some_and(|td| td.gpu != crate::placement::GpuRequest::None)
            && FARGATE_PROVIDERS.contains(&item.capacity_provider.as_str())
        {
            return Err(invalid(format!(
                "The capacity provider {} is Fargate, which does not run tasks with GPUs.",
                item.capacity_provider
            )));
        }
        if kind == Some(ProviderKind::ManagedInstances)
            && !compatibilities.contains(&"MANAGED_INSTANCES")
        {
            return Err(invalid(format!(
                "The task definition is not compatible with the Managed Instances capacity provider {}: add MANAGED_INSTANCES to its requiresCompatibilities.",
                item.capacity_provider
            )));
        }
    }
    Ok(strategy)
}

pub fn create(fleet: &mut Fleet, input: input::CreateService) -> Result<Value, EcsError> {
    let cluster = input.cluster.clone().unwrap_or_else(|| "default".into());
    let task_definition = required(&input.task_definition, "taskDefinition")?.to_string();
    let capacity_provider_strategy = strategy_for(
        fleet,
        &cluster,
        &task_definition,
        input.launch_type.as_deref(),
        input.capacity_provider_strategy.as_deref(),
    )?;
    let new = NewService {
        capacity_provider_strategy,
        name: required(&input.service_name, "serviceName")?.to_string(),
        task_definition,
        desired_count: desired_count(input.desired_count)?.unwrap_or(0),
        config: deployment_config(
            input.deployment_configuration.as_ref(),
            DeploymentConfig::default(),
        )?,
        placement_constraints: placement_constraints(input.placement_constraints.as_ref())?,
        placement_strategy: placement_strategy(input.placement_strategy.as_ref())?,
    };
    let awsvpc = fleet
        .task_definition(&new.task_definition)
        .and_then(|td| td.body.get("networkMode").and_then(Value::as_str))
        == Some("awsvpc");
    match (awsvpc, input.network_configuration.is_some()) {
        (true, false) => {
            return Err(invalid(
                "Network Configuration must be provided when networkMode 'awsvpc' is specified.",
            ))
        }
        (false, true) => return Err(invalid(
            "Network Configuration is not valid for the given networkMode of this task definition.",
        )),
        _ => {}
    }
    let tags = parse_tags(input.tags)?;
    let arn = fleet.create_service(&cluster, new)?.arn.clone();
    if !tags.is_empty() {
        fleet.tags.insert(arn.clone(), tags);
    }
    let service = fleet
        .clusters
        .values()
        .find_map(|c| c.services.values().find(|s| s.arn == arn));
    Ok(json!({"service": service.map(service_json)}))
}

pub fn update(fleet: &mut Fleet, input: input::UpdateService) -> Result<Value, EcsError> {
    let cluster = input.cluster.clone().unwrap_or_else(|| "default".into());
    let name = required(&input.service, "service")?.to_string();
    let key = fleet
        .cluster_key(&cluster)
        .ok_or(EcsError::ClusterNotFound)?;
    let (base, current_td) = fleet.clusters[&key]
        .services
        .get(name.rsplit('/').next().unwrap_or(&name))
        .map(|s| (s.config.clone(), s.task_definition_arn.clone()))
        .ok_or(EcsError::ServiceNotFound)?;
    let capacity_provider_strategy = input
        .capacity_provider_strategy
        .as_deref()
        .map(|items| {
            let td = input.task_definition.as_deref().unwrap_or(&current_td);
            strategy_for(fleet, &cluster, td, None, Some(items))
        })
        .transpose()?;
    let update = ServiceUpdate {
        task_definition: input.task_definition.clone(),
        desired_count: desired_count(input.desired_count)?,
        config: input
            .deployment_configuration
            .as_ref()
            .map(|config| deployment_config(Some(config), base))
            .transpose()?,
        force_new_deployment: input.force_new_deployment,
        capacity_provider_strategy,
    };
    let service = fleet.update_service(&cluster, &name, update)?;
    Ok(json!({"service": service_json(service)}))
}

pub fn delete(fleet: &mut Fleet, input: input::DeleteService) -> Result<Value, EcsError> {
    let cluster = input.cluster.clone().unwrap_or_else(|| "default".into());
    let name = required(&input.service, "service")?.to_string();
    let service = fleet.delete_service(&cluster, &name, input.force)?;
    Ok(json!({"service": service_json(service)}))
}
