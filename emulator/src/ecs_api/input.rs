//! What each ECS operation takes, as typed inputs read from the awsJson 1.1 body: field names
//! as the ECS API reference spells them, every field optional where ECS allows it (a missing
//! required one is refused by the operation with ECS's words), unknown fields ignored as ECS
//! ignores them. A value of the wrong type is refused with its path.

use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{Map, Value};

use crate::error::{invalid, EcsError};

/// Reads an operation's input from its body; an empty body is an empty input.
pub fn read<T: DeserializeOwned + Default>(body: Value) -> Result<T, EcsError> {
    match body {
        Value::Null => Ok(T::default()),
        Value::Object(_) => serde_path_to_error::deserialize(body).map_err(|error| {
            let path = error.path().to_string();
            invalid(format!(
                "{path} is not valid: {}.",
                error.into_inner().to_string().trim_end_matches('.')
            ))
        }),
        _ => Err(EcsError::Client(
            "The request body must be a JSON object.".into(),
        )),
    }
}

/// A required string field, or ECS's refusal naming it.
pub fn required<'a>(value: &'a Option<String>, name: &str) -> Result<&'a str, EcsError> {
    value
        .as_deref()
        .ok_or_else(|| invalid(format!("{name} is required.")))
}

/// `maxResults` and `nextToken` of a list operation.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Paging {
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

/// The optional `include` of describe operations (`TAGS`, `CONTAINER_INSTANCE_HEALTH`, …).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Include(pub Vec<String>);

impl Include {
    pub fn tags(&self) -> bool {
        self.0.iter().any(|field| field == "TAGS")
    }

    /// DescribeContainerInstances' `CONTAINER_INSTANCE_HEALTH`: without it ECS leaves
    /// `healthStatus` out.
    pub fn health(&self) -> bool {
        self.0
            .iter()
            .any(|field| field == "CONTAINER_INSTANCE_HEALTH")
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListClusters {
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeClusters {
    #[serde(default)]
    pub clusters: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCluster {
    pub cluster_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListContainerInstances {
    pub cluster: Option<String>,
    pub status: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateContainerInstancesState {
    pub cluster: Option<String>,
    #[serde(default)]
    pub container_instances: Vec<String>,
    pub status: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeContainerInstances {
    pub cluster: Option<String>,
    #[serde(default)]
    pub container_instances: Vec<String>,
    #[serde(default)]
    pub include: Include,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListServices {
    pub cluster: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeServices {
    pub cluster: Option<String>,
    #[serde(default)]
    pub services: Vec<String>,
    #[serde(default)]
    pub include: Include,
}

/// A service's deployment circuit breaker.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CircuitBreaker {
    #[serde(default)]
    pub enable: bool,
    #[serde(default)]
    pub rollback: bool,
    pub reset_on_healthy_task: Option<bool>,
    pub threshold_configuration: Option<ThresholdConfiguration>,
}

/// How many failures trip the circuit breaker.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdConfiguration {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub value: Option<i64>,
}

/// The parts of a deployment configuration the emulator honours.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentConfiguration {
    pub maximum_percent: Option<i64>,
    pub minimum_healthy_percent: Option<i64>,
    pub deployment_circuit_breaker: Option<CircuitBreaker>,
    pub strategy: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateService {
    pub cluster: Option<String>,
    pub service_name: Option<String>,
    pub task_definition: Option<String>,
    pub desired_count: Option<i64>,
    pub deployment_configuration: Option<DeploymentConfiguration>,
    pub placement_constraints: Option<Value>,
    pub placement_strategy: Option<Value>,
    pub tags: Option<Value>,
    pub launch_type: Option<String>,
    pub capacity_provider_strategy: Option<Vec<StrategyItem>>,
    pub network_configuration: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateService {
    pub cluster: Option<String>,
    pub service: Option<String>,
    pub task_definition: Option<String>,
    pub desired_count: Option<i64>,
    pub deployment_configuration: Option<DeploymentConfiguration>,
    #[serde(default)]
    pub force_new_deployment: bool,
    pub capacity_provider_strategy: Option<Vec<StrategyItem>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteService {
    pub cluster: Option<String>,
    pub service: Option<String>,
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasks {
    pub cluster: Option<String>,
    pub service_name: Option<String>,
    pub container_instance: Option<String>,
    pub family: Option<String>,
    pub started_by: Option<String>,
    pub desired_status: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeTasks {
    pub cluster: Option<String>,
    #[serde(default)]
    pub tasks: Vec<String>,
    #[serde(default)]
    pub include: Include,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskDefinitionFamilies {
    pub family_prefix: Option<String>,
    pub status: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskDefinitions {
    pub family_prefix: Option<String>,
    pub status: Option<String>,
    pub sort: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeTaskDefinition {
    pub task_definition: Option<String>,
    #[serde(default)]
    pub include: Include,
}

/// RegisterTaskDefinition keeps every field as registered, so it reads the body as it is.
pub type RegisterTaskDefinition = Map<String, Value>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeregisterTaskDefinition {
    pub task_definition: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTagsForResource {
    pub resource_arn: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagResource {
    pub resource_arn: Option<String>,
    pub tags: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntagResource {
    pub resource_arn: Option<String>,
    #[serde(default)]
    pub tag_keys: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_input_reads_ecs_names_and_refuses_a_wrong_type_by_its_path() {
        let tasks: ListTasks = read(json!({
            "cluster": "prod", "serviceName": "embed", "maxResults": 10, "unknownField": 1
        }))
        .expect("valid");
        assert_eq!(tasks.cluster.as_deref(), Some("prod"));
        assert_eq!(tasks.service_name.as_deref(), Some("embed"));
        assert_eq!(tasks.paging.max_results, Some(10));
        let empty: ListTasks = read(Value::Null).expect("an empty body");
        assert!(empty.cluster.is_none());
        let wrong = read::<ListTasks>(json!({"cluster": 5})).expect_err("refused");
        assert_eq!(wrong.type_name(), "InvalidParameterException");
        assert!(
            wrong.to_string().starts_with("cluster is not valid"),
            "{wrong}"
        );
        let nested = read::<UpdateService>(
            json!({"service": "a", "deploymentConfiguration": {"maximumPercent": "lots"}}),
        )
        .expect_err("refused");
        assert!(
            nested
                .to_string()
                .starts_with("deploymentConfiguration.maximumPercent is not valid"),
            "{nested}"
        );
        assert!(read::<ListTasks>(json!([1])).is_err());
        let described: DescribeServices =
            read(json!({"services": ["a"], "include": ["TAGS"]})).expect("valid");
        assert!(described.include.tags());
        assert_eq!(
            required(&None, "service").expect_err("missing").to_string(),
            "service is required."
        );
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCapacityProvider {
    pub name: Option<String>,
    pub cluster: Option<String>,
    pub auto_scaling_group_provider: Option<Map<String, Value>>,
    pub managed_instances_provider: Option<Map<String, Value>>,
    pub tags: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeCapacityProviders {
    #[serde(default)]
    pub capacity_providers: Vec<String>,
    pub cluster: Option<String>,
    #[serde(default)]
    pub include: Include,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateCapacityProvider {
    pub name: Option<String>,
    pub cluster: Option<String>,
    pub auto_scaling_group_provider: Option<Map<String, Value>>,
    pub managed_instances_provider: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteCapacityProvider {
    pub capacity_provider: Option<String>,
    pub cluster: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PutClusterCapacityProviders {
    pub cluster: Option<String>,
    pub capacity_providers: Option<Vec<String>>,
    pub default_capacity_provider_strategy: Option<Vec<StrategyItem>>,
}

/// One entry of a capacity provider strategy, as a request gives it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyItem {
    pub capacity_provider: Option<String>,
    pub weight: Option<i64>,
    pub base: Option<i64>,
}
