//! `GET /api/v1/fleet`: the latest snapshot, filtered, with its age and any refresh failure.

use axum::{
    body::{Body, Bytes},
    extract::{rejection::QueryRejection, Extension, Query, State},
    http::header,
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
};
use futures::StreamExt;
use serde::Serialize;

use app::{
    model::identity::Actor,
    service::fleet::{latest, narrow, FleetFilter, FILTER_PARAMETERS},
};

use crate::{
    error::AppError,
    http::{state::AppState, streams::client_of},
};

/// The answer's head: how fresh the snapshot is. The snapshot itself follows as `snapshot`.
#[derive(Debug, Serialize)]
struct FleetHead {
    taken_at: String,
    age_seconds: i64,
    /// True when the last refresh failed: the snapshot is the last good one.
    stale: bool,
    last_error: Option<String>,
}

/// `GET /api/v1/fleet`.
pub async fn get_fleet(
    State(state): State<AppState>,
    query: Result<Query<FleetFilter>, QueryRejection>,
) -> Result<Response, AppError> {
    let Query(filter) = query.map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the filters are {FILTER_PARAMETERS}",
            rejection.body_text()
        ))
    })?;
    let (fleet, snapshot) = latest(&state.services)?;
    let body = state.fleet_json.get_or_make(fleet.version, &filter, || {
        let filtered = narrow(&snapshot, &filter)?;
        serde_json::to_vec(&filtered)
            .map(Bytes::from)
            .map_err(|e| AppError::Internal(anyhow::anyhow!("the snapshot did not serialize: {e}")))
    })?;
    let mut head = serde_json::to_vec(&FleetHead {
        taken_at: snapshot.taken_at.clone(),
        age_seconds: fleet
            .taken_at
            .map_or(0, |at| (chrono::Utc::now() - at).num_seconds()),
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
    let fleet = state.services.fleet.state();
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
/// replaced or a refresh fails, so pages refetch only when there is something new. 429 when the
/// client (or the server) holds as many streams as it may.
pub async fn fleet_events(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>>, AppError> {
    let ticket = state.streams.admit(&client_of(&actor))?;
    let first = news(&state);
    let changes = state.services.fleet.subscribe();
    let updates = futures::stream::unfold(
        (changes, state, ticket),
        |(mut changes, state, ticket)| async move {
            changes.changed().await.ok()?;
            let event = news(&state);
            Some((Ok(event), (changes, state, ticket)))
        },
    );
    Ok(
        Sse::new(futures::stream::once(async move { Ok(first) }).chain(updates))
            .keep_alive(KeepAlive::default()),
    )
}
