//! `GET /api/v1/fleet`: the latest snapshot, filtered, with its age and any refresh failure.

use axum::{
    body::{Body, Bytes},
    extract::{rejection::QueryRejection, Extension, Query, State},
    http::{header, HeaderMap, HeaderValue},
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
    headers: HeaderMap,
    query: Result<Query<FleetFilter>, QueryRejection>,
) -> Result<Response, AppError> {
    let Query(filter) = query.map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the filters are {FILTER_PARAMETERS}",
            rejection.body_text()
        ))
    })?;
    let (fleet, snapshot) = latest(&state.services)?;
    let view = state.fleet_json.get_or_make(fleet.version, &filter, || {
        let filtered = narrow(&snapshot, &filter)?;
        serde_json::to_vec(&filtered)
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
    // `{"taken_at":…,"last_error":null` + `,"snapshot":` + the kept view + `}`.
    head.pop();
    head.extend_from_slice(br#","snapshot":"#);
    let (parts, encoding) = if accepts_gzip(&headers) {
        (view.gzip(&head, b"}")?, Some("gzip"))
    } else {
        let json = view.inflate()?;
        (
            vec![Bytes::from(head), json, Bytes::from_static(b"}")],
            None,
        )
    };
    let mut response = Body::from_stream(futures::stream::iter(
        parts.into_iter().map(Ok::<Bytes, std::convert::Infallible>),
    ))
    .into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response_headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(encoding) = encoding {
        response_headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    Ok(response)
}

/// Whether the request's `Accept-Encoding` takes gzip: named (or `*`) without `q=0`.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
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
