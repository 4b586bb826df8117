//! CreateService as ECS's JSON: a request body read with aws-sdk-ecs's own shape schema (a field
//! the SDK does not model is refused by its path, a value of the wrong type at its line and
//! column), written back as the JSON that is sent, and sent with every field it sets.

use aws_sdk_ecs::operation::{create_service::CreateServiceInput, RequestId};
use serde_json::{Map, Value};

use app::model::{task_definition::FieldError, ServiceError};
use app::service::ports::ServiceCreated;

use super::shapes::{invalid, read_request, to_json};
use super::Ecs;
use crate::aws::once;

/// The JSON `text` as a CreateService request: the request as the SDK reads it, written back as
/// ECS's JSON, or each field that is wrong.
pub fn parse(text: &str) -> Result<(CreateServiceInput, Map<String, Value>), Vec<FieldError>> {
    let (input, mut body) = read_request(
        text,
        "CreateService",
        |d| CreateServiceInput::deserialize(d),
        |input| to_json(CreateServiceInput::SCHEMA, input),
    )?;
    // The SDK writes an empty name for a request without one; ECS's JSON has none.
    if body.get("serviceName").and_then(Value::as_str) == Some("") {
        body.remove("serviceName");
    }
    Ok((input, body))
}

impl Ecs {
    /// CreateService with every field of `body` (ECS's JSON, read with the SDK's shapes).
    pub async fn create(&self, body: &Map<String, Value>) -> Result<ServiceCreated, ServiceError> {
        let text = Value::Object(body.clone()).to_string();
        let (input, _) = parse(&text).map_err(|errors| invalid(&errors))?;
        let call = call(&self.client, input);
        let out = once::write_once!(call, "CreateService")?;
        let service = out.service();
        Ok(ServiceCreated {
            arn: service
                .and_then(|s| s.service_arn())
                .unwrap_or_default()
                .to_string(),
            deployment_id: service
                .and_then(|s| s.deployments().first())
                .and_then(|d| d.id())
                .map(str::to_string),
            request_id: out.request_id().map(str::to_string),
        })
    }
}

/// The CreateService call for `input`, every field of the request set from it.
fn call(
    ecs: &aws_sdk_ecs::Client,
    input: CreateServiceInput,
) -> aws_sdk_ecs::operation::create_service::builders::CreateServiceFluentBuilder {
    let CreateServiceInput {
        cluster,
        service_name,
        task_definition,
        availability_zone_rebalancing,
        load_balancers,
        service_registries,
        desired_count,
        client_token,
        launch_type,
        capacity_provider_strategy,
        platform_version,
        role,
        deployment_configuration,
        placement_constraints,
        placement_strategy,
        network_configuration,
        health_check_grace_period_seconds,
        scheduling_strategy,
        deployment_controller,
        tags,
        enable_ecs_managed_tags,
        propagate_tags,
        enable_execute_command,
        service_connect_configuration,
        volume_configurations,
        vpc_lattice_configurations,
        gateway_connectors,
        monitoring,
        ..
    } = input;
    ecs.create_service()
        .set_cluster(cluster)
        .set_service_name(service_name)
        .set_task_definition(task_definition)
        .set_availability_zone_rebalancing(availability_zone_rebalancing)
        .set_load_balancers(load_balancers)
        .set_service_registries(service_registries)
        .set_desired_count(desired_count)
        .set_client_token(client_token)
        .set_launch_type(launch_type)
        .set_capacity_provider_strategy(capacity_provider_strategy)
        .set_platform_version(platform_version)
        .set_role(role)
        .set_deployment_configuration(deployment_configuration)
        .set_placement_constraints(placement_constraints)
        .set_placement_strategy(placement_strategy)
        .set_network_configuration(network_configuration)
        .set_health_check_grace_period_seconds(health_check_grace_period_seconds)
        .set_scheduling_strategy(scheduling_strategy)
        .set_deployment_controller(deployment_controller)
        .set_tags(tags)
        .set_enable_ecs_managed_tags(enable_ecs_managed_tags)
        .set_propagate_tags(propagate_tags)
        .set_enable_execute_command(enable_execute_command)
        .set_service_connect_configuration(service_connect_configuration)
        .set_volume_configurations(volume_configurations)
        .set_vpc_lattice_configurations(vpc_lattice_configurations)
        .set_gateway_connectors(gateway_connectors)
        .set_monitoring(monitoring)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_create_service_body_is_read_with_the_sdk_shapes() {
        let body = json!({
            "cluster": "prod",
            "serviceName": "embed",
            "taskDefinition": "embed:3",
            "desiredCount": 2,
            "capacityProviderStrategy": [{"capacityProvider": "gpu-mi", "weight": 1, "base": 0}],
            "deploymentConfiguration": {"deploymentCircuitBreaker": {"enable": true, "rollback": true}},
            "tags": [{"key": "team", "value": "search"}],
        });
        let (input, kept) = parse(&body.to_string()).expect("valid");
        assert_eq!(input.service_name(), Some("embed"));
        assert_eq!(
            kept["capacityProviderStrategy"][0]["capacityProvider"],
            "gpu-mi"
        );
        assert_eq!(kept["tags"], body["tags"]);
        let errors = parse(
            &json!({"serviceName": "x", "desiredCount": 1, "gpuCount": 2,
            "deploymentConfiguration": {"circuitBreaker": true}})
            .to_string(),
        )
        .expect_err("unknown fields");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["deploymentConfiguration.circuitBreaker", "gpuCount"]
        );
        let wrong = parse("{\n \"serviceName\": \"x\",\n \"desiredCount\": \"two\"\n}")
            .expect_err("wrong type");
        assert_eq!(wrong[0].line, Some(3), "{wrong:?}");
        assert!(parse("[1]").is_err());
    }
}
