//! `/healthz` (the process is up) and `/readyz` (its dependencies are usable).

use axum::{
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;

use crate::{http::state::AppState, readiness::CheckResult};

/// The body of `/healthz`.
#[derive(Debug, Serialize)]
pub struct Health {
    pub status: &'static str,
    pub version: &'static str,
    pub uptime_seconds: u64,
}

/// `GET /healthz`: 200 whenever the process can answer at all.
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok",
        version: state.services.version,
        uptime_seconds: state.services.started.elapsed().as_secs(),
    })
}

/// The body of `/readyz`.
#[derive(Debug, Serialize)]
pub struct Ready {
    pub status: &'static str,
    pub checks: Vec<CheckResult>,
}

/// Marks `/readyz`'s 503: the answer a probe asked for, not a failure of the request, so the
/// request log does not report it as a server error (readiness logs its own changes).
#[derive(Clone, Copy, Debug)]
pub struct NotReady;

/// `GET /readyz`: 200 when every dependency is usable, 503 with the failing checks otherwise.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let checks = state.readiness.run().await;
    let ready = checks.iter().all(|check| check.ok);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Ready {
        status: if ready { "ready" } else { "not_ready" },
        checks,
    };
    let mut response = (status, Json(body)).into_response();
    if !ready {
        response.extensions_mut().insert(NotReady);
    }
    response
}
