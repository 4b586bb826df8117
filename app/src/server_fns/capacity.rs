//! The clusters' capacity providers.

use leptos::prelude::*;

use crate::model::{capacity::ClusterCapacity, ServiceError};

/// Every cluster's capacity providers (or `cluster`'s), with what each may launch and what its
/// instances are doing.
#[server(name = ListCapacity, prefix = "/api", endpoint = "list_capacity")]
pub async fn list_capacity(cluster: Option<String>) -> Result<Vec<ClusterCapacity>, ServiceError> {
    let query = crate::model::capacity::CapacityQuery { cluster };
    crate::service::capacity::providers(&super::context()?, query).await
}

/// A new capacity provider checked, nothing created: the types it takes, which share GPUs, and
/// the cluster's providers after. Admins only.
#[server(name = CheckProvider, prefix = "/api", endpoint = "check_provider")]
pub async fn check_provider(
    cluster: String,
    form: crate::model::new_provider::ProviderForm,
) -> Result<crate::model::new_provider::ProviderCheck, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::new_provider::check(&context, &actor, &cluster, &form).await
}

/// Creates a capacity provider and adds it to the cluster's providers, after the checks.
#[server(name = CreateProvider, prefix = "/api", endpoint = "create_provider")]
pub async fn create_provider(
    cluster: String,
    form: crate::model::new_provider::ProviderForm,
) -> Result<crate::model::new_provider::ProviderCheck, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::new_provider::create(&context, &actor, &cluster, form).await
}
