//! CreateCapacityProvider and PutClusterCapacityProviders as ECS's JSON: a request read with
//! aws-sdk-ecs's own shape schema (a field the SDK does not model refused by its path), the
//! provider it would make as the capacity page shows it — with what it may launch, from EC2 and
//! EC2 Auto Scaling — and the calls that make it.

use aws_sdk_ecs::{
    operation::{create_capacity_provider::CreateCapacityProviderInput, RequestId},
    types::{
        CapacityProvider, CapacityProviderStatus, CapacityProviderStrategyItem,
        ManagedInstancesProvider,
    },
};
use serde_json::{Map, Value};

use app::model::{
    capacity::{ClusterCapacity, ProviderView, StrategyItem},
    task_definition::FieldError,
    ServiceError,
};

use super::shapes::{invalid, read_request, to_json};
use super::{capacity::provider_view, Ecs};
use crate::aws::once;

/// The JSON `text` as a CreateCapacityProvider request: the request as the SDK reads it and as
/// ECS's JSON, or each field that is wrong.
pub fn parse(
    text: &str,
) -> Result<(CreateCapacityProviderInput, Map<String, Value>), Vec<FieldError>> {
    read_request(
        text,
        "CreateCapacityProvider",
        |d| CreateCapacityProviderInput::deserialize(d),
        |input| to_json(CreateCapacityProviderInput::SCHEMA, input),
    )
}

/// The provider `input` would make, as DescribeCapacityProviders would describe it.
fn as_described(input: &CreateCapacityProviderInput) -> CapacityProvider {
    let managed = input.managed_instances_provider().map(|m| {
        ManagedInstancesProvider::builder()
            .infrastructure_role_arn(m.infrastructure_role_arn())
            .set_instance_launch_template(m.instance_launch_template().cloned())
            .set_propagate_tags(m.propagate_tags().cloned())
            .set_infrastructure_optimization(m.infrastructure_optimization().cloned())
            .set_auto_repair_configuration(m.auto_repair_configuration().cloned())
            .build()
    });
    CapacityProvider::builder()
        .set_name(input.name().map(str::to_string))
        .set_cluster(input.cluster().map(str::to_string))
        .status(CapacityProviderStatus::Active)
        .set_auto_scaling_group_provider(input.auto_scaling_group_provider().cloned())
        .set_managed_instances_provider(managed)
        .build()
}

impl Ecs {
    /// The request in `text` and the provider it would make, with what it may launch.
    pub async fn draft(
        &self,
        text: &str,
    ) -> Result<(Map<String, Value>, ProviderView), Vec<FieldError>> {
        let (input, body) = parse(text)?;
        let mut view = provider_view(&as_described(&input));
        if input.auto_scaling_group_provider().is_some() {
            view.kind = app::model::words::ProviderType::AutoScalingGroup;
        } else if input.managed_instances_provider().is_some() {
            view.kind = app::model::words::ProviderType::ManagedInstances;
        }
        if let Some(sources) = &self.capacity_sources {
            let mut clusters = [ClusterCapacity {
                providers: vec![view],
                ..ClusterCapacity::default()
            }];
            sources.complete(&mut clusters).await;
            let [cluster] = clusters;
            if let Some(note) = cluster.notes.first() {
                return Err(vec![FieldError {
                    message: format!("what the provider may launch could not be read: {note}"),
                    ..FieldError::default()
                }]);
            }
            view = cluster.providers.into_iter().next().unwrap_or_default();
        }
        Ok((body, view))
    }

    /// CreateCapacityProvider with every field of `body`; ECS's request id.
    pub async fn create_capacity_provider(
        &self,
        body: &Map<String, Value>,
    ) -> Result<Option<String>, ServiceError> {
        let (input, _) =
            parse(&Value::Object(body.clone()).to_string()).map_err(|errors| invalid(&errors))?;
        let CreateCapacityProviderInput {
            name,
            cluster,
            auto_scaling_group_provider,
            managed_instances_provider,
            tags,
            ..
        } = input;
        let call = self
            .client
            .create_capacity_provider()
            .set_name(name)
            .set_cluster(cluster)
            .set_auto_scaling_group_provider(auto_scaling_group_provider)
            .set_managed_instances_provider(managed_instances_provider)
            .set_tags(tags);
        let out = once::write_once!(call, "CreateCapacityProvider")?;
        Ok(out.request_id().map(str::to_string))
    }

    /// PutClusterCapacityProviders: the cluster's whole list and default strategy.
    pub async fn put_cluster_capacity_providers(
        &self,
        cluster: &str,
        providers: &[String],
        strategy: &[StrategyItem],
    ) -> Result<(), ServiceError> {
        let items = strategy
            .iter()
            .map(|s| {
                CapacityProviderStrategyItem::builder()
                    .capacity_provider(&s.capacity_provider)
                    .weight(i32::try_from(s.weight).unwrap_or(i32::MAX))
                    .base(i32::try_from(s.base).unwrap_or(i32::MAX))
                    .build()
                    .map_err(|e| ServiceError::invalid(format!("a strategy item: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let call = self
            .client
            .put_cluster_capacity_providers()
            .cluster(cluster)
            .set_capacity_providers(Some(providers.to_vec()))
            .set_default_capacity_provider_strategy(Some(items));
        once::write_once!(call, "PutClusterCapacityProviders")?;
        Ok(())
    }
}
