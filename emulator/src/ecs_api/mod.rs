//! The ECS operations over JSON: what each takes (typed inputs, [`input`]) and answers, shaped
//! as the ECS API reference documents it (awsJson 1.1 field names, epoch-second timestamps,
//! `failures` lists), one module per kind of resource.

mod capacity_providers;
mod clusters;
pub mod input;
mod instances;
mod output;
mod services;
mod task_definitions;
mod tasks;

use serde_json::Value;

use crate::{error::EcsError, model::Fleet};

pub use task_definitions::task_definition_json;
pub use tasks::task_json;

/// The ECS operations the emulator serves.
pub const OPERATIONS: [&str; 26] = [
    "ListClusters",
    "DescribeClusters",
    "CreateCluster",
    "ListContainerInstances",
    "DescribeContainerInstances",
    "UpdateContainerInstancesState",
    "ListServices",
    "DescribeServices",
    "CreateService",
    "UpdateService",
    "DeleteService",
    "ListTasks",
    "DescribeTasks",
    "ListTaskDefinitionFamilies",
    "ListTaskDefinitions",
    "DescribeTaskDefinition",
    "RegisterTaskDefinition",
    "DeregisterTaskDefinition",
    "ListTagsForResource",
    "TagResource",
    "UntagResource",
    "CreateCapacityProvider",
    "DescribeCapacityProviders",
    "UpdateCapacityProvider",
    "DeleteCapacityProvider",
    "PutClusterCapacityProviders",
];

/// Most ARNs one describe call takes (DescribeServices: 10).
const DESCRIBE_LIMIT: usize = 100;
const DESCRIBE_SERVICES_LIMIT: usize = 10;

/// Whether `operation` only reads the fleet (and so can run beside other reads).
pub fn reads_only(operation: &str) -> bool {
    matches!(
        operation,
        "DescribeContainerInstances"
            | "ListClusters"
            | "DescribeClusters"
            | "ListContainerInstances"
            | "ListServices"
            | "DescribeServices"
            | "ListTasks"
            | "DescribeTasks"
            | "ListTaskDefinitionFamilies"
            | "ListTaskDefinitions"
            | "DescribeTaskDefinition"
            | "ListTagsForResource"
            | "DescribeCapacityProviders"
    )
}

/// Runs one ECS operation that only reads (see [`reads_only`]) and answers with the JSON body.
pub fn read(fleet: &Fleet, operation: &str, body: Value) -> Result<String, EcsError> {
    use input::read;
    let answer = match operation {
        // The largest answers are written straight to text.
        "DescribeContainerInstances" => return instances::describe(fleet, &read(body)?),
        "ListClusters" => clusters::list(fleet, &read(body)?),
        "DescribeClusters" => clusters::describe(fleet, read(body)?),
        "ListContainerInstances" => instances::list(fleet, &read(body)?),
        "ListServices" => services::list(fleet, &read(body)?),
        "DescribeServices" => services::describe(fleet, &read(body)?),
        "ListTasks" => tasks::list(fleet, &read(body)?),
        "DescribeTasks" => return tasks::describe(fleet, &read(body)?),
        "ListTaskDefinitionFamilies" => task_definitions::list_families(fleet, &read(body)?),
        "ListTaskDefinitions" => task_definitions::list(fleet, &read(body)?),
        "DescribeTaskDefinition" => task_definitions::describe(fleet, &read(body)?),
        "ListTagsForResource" => task_definitions::list_tags(fleet, read(body)?),
        "DescribeCapacityProviders" => capacity_providers::describe(fleet, &read(body)?),
        other => Err(EcsError::Client(format!(
            "The operation {other} is not supported by this emulator."
        ))),
    }?;
    Ok(answer.to_string())
}

/// Runs one ECS operation and answers with the JSON body.
pub fn handle(fleet: &mut Fleet, operation: &str, body: Value) -> Result<String, EcsError> {
    use input::read;
    if reads_only(operation) {
        return self::read(fleet, operation, body);
    }
    let answer = match operation {
        "UpdateContainerInstancesState" => return instances::update_state(fleet, &read(body)?),
        "CreateCluster" => clusters::create(fleet, read(body)?),
        "CreateService" => services::create(fleet, read(body)?),
        "UpdateService" => services::update(fleet, read(body)?),
        "DeleteService" => services::delete(fleet, read(body)?),
        "RegisterTaskDefinition" => task_definitions::register(fleet, read(body)?),
        "DeregisterTaskDefinition" => task_definitions::deregister(fleet, read(body)?),
        "TagResource" => task_definitions::tag(fleet, read(body)?),
        "UntagResource" => task_definitions::untag(fleet, read(body)?),
        "CreateCapacityProvider" => capacity_providers::create(fleet, read(body)?),
        "UpdateCapacityProvider" => capacity_providers::update(fleet, read(body)?),
        "DeleteCapacityProvider" => capacity_providers::delete(fleet, read(body)?),
        "PutClusterCapacityProviders" => capacity_providers::put_cluster(fleet, read(body)?),
        other => Err(EcsError::Client(format!(
            "The operation {other} is not supported by this emulator."
        ))),
    }?;
    Ok(answer.to_string())
}
