//! The fleet page's data, from the latest in-memory snapshot: never waits on AWS.

use leptos::prelude::*;

use crate::model::{
    fleet_view::{FleetOverview, FleetQuery, GpuDetail},
    ServiceError,
};

/// The summary, filter menus, freshness and notes for a view of the fleet.
#[server(name = GetFleetOverview, prefix = "/api", endpoint = "fleet_overview")]
pub async fn fleet_overview(query: FleetQuery) -> Result<FleetOverview, ServiceError> {
    Ok(crate::service::fleet::overview(&super::context()?, &query))
}

/// The heatmap of a view of the fleet, as SVG markup.
#[server(name = GetFleetHeatmap, prefix = "/api", endpoint = "fleet_heatmap")]
pub async fn fleet_heatmap(query: FleetQuery) -> Result<String, ServiceError> {
    Ok(crate::service::fleet::heatmap(&super::context()?, &query))
}

/// One GPU, by `<EC2 instance ID>:<index>` or UUID; `None` when the fleet has no such GPU.
#[server(name = GetGpuDetail, prefix = "/api", endpoint = "gpu_detail")]
pub async fn gpu_detail(key: String) -> Result<Option<GpuDetail>, ServiceError> {
    crate::service::fleet::gpu(&super::context()?, &key)
}
