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
