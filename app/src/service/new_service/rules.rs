//! The rules a new service is checked by that need more than its own fields: its name in ECS,
//! its task definition, the cluster's capacity providers and its network configuration.

use serde_json::{Map, Value};

use crate::{
    model::{
        arn::TaskDefinitionId,
        capacity::{ClusterCapacity, ProviderType, StrategyItem},
        new_service::field,
        task_definition::{gpu_settings, FieldError},
    },
    service::{context::ServiceContext, task_definitions::find_revision},
};

/// Whether ECS has a service `name` in `cluster` that takes the name (ACTIVE or DRAINING): the
/// snapshot may not show one made a moment ago. When ECS cannot say, CreateService will.
pub(super) async fn taken_in_ecs(context: &ServiceContext, cluster: &str, name: &str) -> bool {
    match context
        .ecs
        .service(cluster.to_string(), name.to_string())
        .await
    {
        Ok(live) => live.status != "INACTIVE",
        Err(_) => false,
    }
}

/// A `deploymentConfiguration` percentage of the request.
pub(super) fn deployment_number(create: &Map<String, Value>, key: &str) -> Option<u32> {
    create
        .get("deploymentConfiguration")?
        .get(key)?
        .as_u64()
        .map(|n| n as u32)
}

/// The containers of a task definition's JSON.
pub(super) fn containers(task: &Map<String, Value>) -> Vec<Map<String, Value>> {
    task.get("containerDefinitions")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|c| c.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// A request's `capacityProviderStrategy`.
pub(super) fn strategy_of(items: &Value) -> Vec<StrategyItem> {
    items
        .as_array()
        .map(|list| {
            list.iter()
                .map(|item| StrategyItem {
                    capacity_provider: item
                        .get("capacityProvider")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    weight: item.get("weight").and_then(Value::as_u64).unwrap_or(0) as u32,
                    base: item.get("base").and_then(Value::as_u64).unwrap_or(0) as u32,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The revision `named` (`family`, `family:N` or its ARN), or an error on `taskDefinition`.
pub(super) async fn existing_task(
    context: &ServiceContext,
    named: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Map<String, Value>> {
    if named.is_empty() {
        errors.push(field(
            "taskDefinition",
            "give the task definition (family or family:revision), or start from the template",
        ));
        return None;
    }
    let tail = named.rsplit('/').next().unwrap_or(named);
    let found = match TaskDefinitionId::parse(named).or_else(|| {
        let (family, revision) = tail.split_once(':')?;
        Some(TaskDefinitionId::new(
            family.to_string(),
            revision.parse().ok()?,
        ))
    }) {
        Some(id) => find_revision(context, &id.family, id.revision).await,
        None => context.ecs.latest_active(tail.to_string()).await,
    };
    match found {
        Ok(Some(source)) => Some(source.task),
        Ok(None) => {
            errors.push(field(
                "taskDefinition",
                format!("ECS has no active revision {named}"),
            ));
            None
        }
        Err(error) => {
            errors.push(field(
                "taskDefinition",
                format!("{named} could not be read: {error}"),
            ));
            None
        }
    }
}

/// What the task needs of a provider: whether it uses GPUs, shares one with MPS, and the
/// compatibilities it lists.
struct TaskNeeds<'a> {
    uses_gpu: bool,
    shares: bool,
    compatibilities: Vec<&'a str>,
}

/// Whether the strategy's providers are the cluster's and can run the task: EC2 capacity for a
/// GPU task, a type that shares GPUs for an MPS task, `MANAGED_INSTANCES` for a Managed
/// Instances provider.
pub(super) fn check_providers(
    capacity: &ClusterCapacity,
    strategy: &[StrategyItem],
    task: &Map<String, Value>,
    snapshot: &crate::model::FleetSnapshot,
    cluster: &str,
    errors: &mut Vec<FieldError>,
) {
    let settings = gpu_settings(task);
    let needs = TaskNeeds {
        uses_gpu: settings.iter().any(|(_, s)| s.uses_gpu()),
        shares: settings
            .iter()
            .any(|(_, s)| matches!(s, crate::model::task_definition::GpuSetting::Mps { .. })),
        compatibilities: task
            .get("requiresCompatibilities")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
    };
    let names: Vec<&str> = capacity.providers.iter().map(|p| p.name.as_str()).collect();
    for (index, item) in strategy.iter().enumerate() {
        let place = format!("capacityProviderStrategy[{index}].capacityProvider");
        let Some(provider) = capacity
            .providers
            .iter()
            .find(|p| p.name == item.capacity_provider)
        else {
            errors.push(field(
                &place,
                format!(
                    "cluster {cluster} has no capacity provider {}; its providers are {}",
                    item.capacity_provider,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
            continue;
        };
        let has_mps_instance = snapshot
            .clusters
            .iter()
            .filter(|c| c.name == cluster)
            .flat_map(|c| c.instances.iter())
            .any(|i| {
                i.capacity_provider.as_deref() == Some(provider.name.as_str()) && i.mps_capable
            });
        if let Some(why) = cannot_run(provider, &needs, has_mps_instance) {
            errors.push(field(&place, why));
        }
    }
}

/// Why `provider` cannot run the task, if it cannot.
fn cannot_run(
    provider: &crate::model::capacity::ProviderView,
    needs: &TaskNeeds<'_>,
    has_mps_instance: bool,
) -> Option<String> {
    if needs.uses_gpu && !provider.can_share_gpus {
        return Some(format!(
            "{} is Fargate capacity, which runs no GPU tasks",
            provider.name
        ));
    }
    let matched: Vec<&crate::model::capacity::LaunchOption> = provider
        .may_launch
        .iter()
        .filter(|o| o.not_matched.is_none())
        .collect();
    if needs.shares
        && !has_mps_instance
        && !matched.is_empty()
        && !matched.iter().any(|o| o.shares_gpus)
    {
        return Some(format!(
            "{} launches no instance type that can share GPUs with MPS ({}), and has no instance that can: choose a provider of NVIDIA GPU instances",
            provider.name,
            matched
                .iter()
                .map(|o| o.facts.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if provider.kind == ProviderType::ManagedInstances
        && !needs.compatibilities.contains(&"MANAGED_INSTANCES")
    {
        return Some(format!(
            "{} is a Managed Instances provider, and the task definition does not list MANAGED_INSTANCES in requiresCompatibilities: register a revision that does",
            provider.name
        ));
    }
    None
}

/// `awsvpc` needs the service's subnets; another network mode takes no network configuration.
pub(super) fn check_network(
    create: &Map<String, Value>,
    task: &Map<String, Value>,
    errors: &mut Vec<FieldError>,
) {
    let awsvpc = task.get("networkMode").and_then(Value::as_str) == Some("awsvpc");
    let subnets = create
        .get("networkConfiguration")
        .and_then(|n| n.get("awsvpcConfiguration"))
        .and_then(|a| a.get("subnets"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if awsvpc && subnets == 0 {
        errors.push(field(
            "networkConfiguration.awsvpcConfiguration.subnets",
            "the task definition's network mode is awsvpc: give the subnets (and security groups) its tasks get their network interfaces in",
        ));
    }
    if !awsvpc && create.contains_key("networkConfiguration") {
        errors.push(field(
            "networkConfiguration",
            "only a task definition with the awsvpc network mode takes a network configuration; remove it",
        ));
    }
}
