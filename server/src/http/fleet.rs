//! `GET /api/v1/fleet`: the latest snapshot, filtered, with its age and any refresh failure.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    Json,
};
use serde::{Deserialize, Serialize};

use app::model::{ClusterView, FleetSnapshot, GpuMode};

use crate::{error::AppError, state::AppState};

/// The filters; every one optional, unknown parameters refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFilter {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    pub mode: Option<String>,
}

/// The answer: the snapshot and how fresh it is.
#[derive(Debug, Serialize)]
pub struct FleetResponse {
    pub taken_at: String,
    pub age_seconds: i64,
    /// True when the last refresh failed: the snapshot is the last good one.
    pub stale: bool,
    pub last_error: Option<String>,
    pub snapshot: FleetSnapshot,
}

fn parse_mode(mode: &str) -> Result<GpuMode, AppError> {
    match mode {
        "IDLE" => Ok(GpuMode::Idle),
        "NVIDIA_MPS" => Ok(GpuMode::NvidiaMps),
        "DEDICATED" => Ok(GpuMode::Dedicated),
        other => Err(AppError::BadRequest(format!(
            "mode {other:?} is not a sharing mode; use IDLE, NVIDIA_MPS or DEDICATED"
        ))),
    }
}

/// Keeps the clusters, instances and GPUs that match every filter given.
pub fn apply(snapshot: &FleetSnapshot, filter: &FleetFilter) -> Result<FleetSnapshot, AppError> {
    let mode = filter.mode.as_deref().map(parse_mode).transpose()?;
    if let Some(cluster) = &filter.cluster {
        if !snapshot.clusters.iter().any(|c| &c.name == cluster) {
            let names: Vec<&str> = snapshot.clusters.iter().map(|c| c.name.as_str()).collect();
            return Err(AppError::NotFound(format!(
                "there is no cluster {cluster:?}; the clusters are: {}",
                names.join(", ")
            )));
        }
    }
    let gpu_level = mode.is_some() || filter.team.is_some() || filter.service.is_some();
    let clusters = snapshot
        .clusters
        .iter()
        .filter(|c| filter.cluster.as_ref().is_none_or(|name| &c.name == name))
        .map(|c| ClusterView {
            name: c.name.clone(),
            instances: c
                .instances
                .iter()
                .filter(|i| {
                    filter
                        .instance_type
                        .as_ref()
                        .is_none_or(|t| &i.instance_type == t)
                })
                .map(|i| {
                    let mut instance = i.clone();
                    instance.gpus.retain(|g| {
                        mode.is_none_or(|m| g.mode == m)
                            && filter.team.as_ref().is_none_or(|team| {
                                g.containers.iter().any(|c| c.team.as_ref() == Some(team))
                            })
                            && filter.service.as_ref().is_none_or(|s| {
                                g.containers.iter().any(|c| c.service.as_ref() == Some(s))
                            })
                    });
                    instance
                })
                .filter(|i| !gpu_level || !i.gpus.is_empty())
                .collect(),
        })
        .collect();
    Ok(FleetSnapshot {
        clusters,
        ..snapshot.clone()
    })
}

/// `GET /api/v1/fleet`.
pub async fn get_fleet(
    State(state): State<AppState>,
    query: Result<Query<FleetFilter>, QueryRejection>,
) -> Result<Json<FleetResponse>, AppError> {
    let Query(filter) = query.map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the filters are cluster, team, service, instance_type and mode",
            rejection.body_text()
        ))
    })?;
    let fleet = state.fleet.state();
    let (Some(snapshot), Some(taken_at)) = (fleet.snapshot, fleet.taken_at) else {
        return Err(AppError::Unavailable(match fleet.last_error {
            Some(error) => {
                format!("no fleet snapshot yet: {error}; check the AWS credentials and region")
            }
            None => "the first fleet snapshot is still being read; try again in a few seconds"
                .to_string(),
        }));
    };
    let filtered = apply(&snapshot, &filter)?;
    Ok(Json(FleetResponse {
        taken_at: snapshot.taken_at.clone(),
        age_seconds: (chrono::Utc::now() - taken_at).num_seconds(),
        stale: fleet.last_error.is_some(),
        last_error: fleet.last_error,
        snapshot: filtered,
    }))
}
