//! `GET /api/v1/fleet`: the latest snapshot, filtered, with its age and any refresh failure.

use std::{collections::HashMap, sync::Mutex};

use axum::{
    body::{Body, Bytes},
    extract::{rejection::QueryRejection, Query, State},
    http::header,
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use app::model::{
    fleet_view::{filter as filter_snapshot, parse_mode, FleetQuery},
    FleetSnapshot,
};

use crate::{error::AppError, state::AppState};

/// The filters; every one optional, unknown parameters refused.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFilter {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    pub mode: Option<String>,
}

/// The answer's head: how fresh the snapshot is. The snapshot itself follows as `snapshot`.
#[derive(Debug, Serialize)]
struct FleetHead {
    taken_at: String,
    age_seconds: i64,
    /// True when the last refresh failed: the snapshot is the last good one.
    stale: bool,
    last_error: Option<String>,
}

/// Filtered snapshots as JSON, kept per snapshot version and filter: a snapshot never changes,
/// so each view is serialized once, and requests share the bytes.
#[derive(Default)]
pub struct FleetJsonCache {
    entries: Mutex<HashMap<(u64, FleetFilter), Bytes>>,
}

/// Views kept at once.
const CACHED_VIEWS: usize = 32;

impl FleetJsonCache {
    fn get_or_make(
        &self,
        version: u64,
        filter: &FleetFilter,
        make: impl FnOnce() -> Result<Bytes, AppError>,
    ) -> Result<Bytes, AppError> {
        let key = (version, filter.clone());
        if let Some(bytes) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(bytes.clone());
        }
        let bytes = make()?;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(v, _), _| *v == version);
        if entries.len() >= CACHED_VIEWS {
            entries.clear();
        }
        entries.insert(key, bytes.clone());
        Ok(bytes)
    }
}

/// Keeps the clusters, instances and GPUs that match every filter given. An unknown cluster
/// is an error that lists the clusters; an unknown team, service or type matches nothing.
pub fn apply(snapshot: &FleetSnapshot, filter: &FleetFilter) -> Result<FleetSnapshot, AppError> {
    let mode = match filter.mode.as_deref() {
        None => None,
        Some(value) => Some(parse_mode(value).ok_or_else(|| {
            AppError::BadRequest(format!(
                "mode {value:?} is not a sharing mode; use IDLE, NVIDIA_MPS or DEDICATED"
            ))
        })?),
    };
    let query = FleetQuery {
        cluster: filter.cluster.clone(),
        team: filter.team.clone(),
        service: filter.service.clone(),
        instance_type: filter.instance_type.clone(),
        mode,
        ..FleetQuery::default()
    };
    known_cluster(snapshot, query.cluster.as_deref())?;
    Ok(filter_snapshot(snapshot, &query))
}

/// An error naming the clusters that exist, when `cluster` is not one of them.
pub fn known_cluster(snapshot: &FleetSnapshot, cluster: Option<&str>) -> Result<(), AppError> {
    match cluster {
        Some(cluster) if !snapshot.clusters.iter().any(|c| c.name == cluster) => {
            let names: Vec<&str> = snapshot.clusters.iter().map(|c| c.name.as_str()).collect();
            Err(AppError::NotFound(format!(
                "there is no cluster {cluster:?}; the clusters are: {}",
                names.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

/// `GET /api/v1/fleet`.
pub async fn get_fleet(
    State(state): State<AppState>,
    query: Result<Query<FleetFilter>, QueryRejection>,
) -> Result<Response, AppError> {
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
    let body = state.fleet_json.get_or_make(fleet.version, &filter, || {
        let filtered = apply(&snapshot, &filter)?;
        serde_json::to_vec(&filtered)
            .map(Bytes::from)
            .map_err(|e| AppError::Internal(anyhow::anyhow!("the snapshot did not serialize: {e}")))
    })?;
    let mut head = serde_json::to_vec(&FleetHead {
        taken_at: snapshot.taken_at.clone(),
        age_seconds: (chrono::Utc::now() - taken_at).num_seconds(),
        stale: fleet.last_error.is_some(),
        last_error: fleet.last_error,
    })
    .map_err(|e| AppError::Internal(anyhow::anyhow!("the answer did not serialize: {e}")))?;
    // `{"taken_at":…,"last_error":null` + `,"snapshot":` + the cached snapshot + `}`.
    head.pop();
    head.extend_from_slice(br#","snapshot":"#);
    let parts: [Result<Bytes, std::convert::Infallible>; 3] = [
        Ok(Bytes::from(head)),
        Ok(body),
        Ok(Bytes::from_static(b"}")),
    ];
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(futures::stream::iter(parts)),
    )
        .into_response())
}

/// What `GET /api/v1/fleet/events` sends: the snapshot's number and whether it is stale.
#[derive(Debug, Serialize)]
struct FleetNews {
    version: u64,
    taken_at: Option<String>,
    stale: bool,
    last_error: Option<String>,
}

fn news(state: &AppState) -> Event {
    let fleet = state.fleet.state();
    let news = FleetNews {
        version: fleet.version,
        taken_at: fleet.snapshot.as_ref().map(|s| s.taken_at.clone()),
        stale: fleet.last_error.is_some(),
        last_error: fleet.last_error,
    };
    Event::default()
        .event("message")
        .json_data(&news)
        .unwrap_or_else(|_| Event::default().comment("unserializable"))
}

/// `GET /api/v1/fleet/events`: server-sent events, one now and one each time the snapshot is
/// replaced or a refresh fails, so pages refetch only when there is something new.
pub async fn fleet_events(
    State(state): State<AppState>,
) -> Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let first = news(&state);
    let changes = state.fleet.subscribe();
    let updates = futures::stream::unfold((changes, state), |(mut changes, state)| async move {
        changes.changed().await.ok()?;
        let event = news(&state);
        Some((Ok(event), (changes, state)))
    });
    Sse::new(futures::stream::once(async move { Ok(first) }).chain(updates))
        .keep_alive(KeepAlive::default())
}
