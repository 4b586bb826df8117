//! The HTTP edge: middleware layers and the handlers that are not pages.

pub mod activity;
pub mod admission;
pub mod api;
pub mod approvals;
pub mod audit;
pub mod capacity;
pub mod cost;
pub mod fleet;
pub mod fleet_cache;
pub mod health;
pub mod metrics;
pub mod origin;
pub mod panics;
pub mod plan;
pub mod reconciliation;
pub mod sealed;
pub mod security;
pub mod serve;
pub mod services;
pub mod site;
pub mod state;
pub mod streams;
pub mod task_definitions;

use std::time::Duration;

use axum::{
    extract::{MatchedPath, Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    Router,
};
use http::StatusCode;
use tower_http::{
    classify::ServerErrorsFailureClass,
    compression::{CompressionLayer, CompressionLevel},
    limit::RequestBodyLimitLayer,
    timeout::TimeoutLayer,
    trace::TraceLayer,
};

use crate::error::AppError;
use state::AppState;

/// Wraps every route in the middleware. Listed innermost first, so a request passes them
/// bottom-up: metrics, security headers, the admission of reads (a bounded number at a time),
/// tracing, the catching of panics, clear errors for
/// oversized and slow requests, the refusal of requests from elsewhere (host, origin, content
/// type), sign-in, compression, the timeout, and the body limit.
pub fn with_layers(router: Router<AppState>, state: &AppState) -> Router<AppState> {
    router
        .layer(RequestBodyLimitLayer::new(state.body_limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.request_timeout,
        ))
        // Brotli at quality 4 and gzip at 4: answers are compressed as they are sent, and brotli's
        // default (11) takes seconds of a core for a large page. The site's own files are sent
        // from copies compressed at the best quality when it was built (`site.rs`).
        .layer(
            CompressionLayer::new()
                .gzip(true)
                .br(true)
                .quality(CompressionLevel::Precise(4)),
        )
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::identify,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), origin::guard))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            explain_edge_errors,
        ))
        .layer(middleware::from_fn(panics::catch))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let route = request
                        .extensions()
                        .get::<MatchedPath>()
                        .map_or("unmatched", MatchedPath::as_str);
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        route,
                        path = %request.uri().path()
                    )
                })
                .on_response(log_answer)
                .on_failure(log_broken_answer),
        )
        // Outside the tracing: a read refused as busy is counted and logged by the admission,
        // a line a while, not one per refusal.
        .layer(middleware::from_fn_with_state(
            state.admission.clone(),
            admission::admit,
        ))
        .layer(middleware::from_fn(security::headers))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::record,
        ))
}

/// Logs an answer once it is sent, in the request's span: a 500 at ERROR (what went wrong is
/// logged where it happened, in words), another server error at WARN (ECS or the fleet not
/// there yet, a timeout: the answer says why and when to try again), anything else at DEBUG.
/// `/readyz`'s 503 is what a probe asked for while the console starts or a dependency is down,
/// not a failed request: readiness logs its own changes once each.
fn log_answer<B>(response: &Response<B>, latency: Duration, _span: &tracing::Span) {
    let status = response.status();
    let latency_ms = latency.as_millis();
    let probe = response.extensions().get::<health::NotReady>().is_some();
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(status = status.as_u16(), latency_ms, "answered {status}");
    } else if status.is_server_error() && !probe {
        tracing::warn!(status = status.as_u16(), latency_ms, "answered {status}");
    } else {
        tracing::debug!(status = status.as_u16(), latency_ms, "answered");
    }
}

/// Logs an answer whose body failed while it was sent. A server error's status is logged by
/// [`log_answer`], which knows `/readyz`'s 503 from a failure.
fn log_broken_answer(class: ServerErrorsFailureClass, latency: Duration, _span: &tracing::Span) {
    if let ServerErrorsFailureClass::Error(error) = class {
        let latency_ms = latency.as_millis();
        tracing::error!(latency_ms, "the answer failed while it was sent: {error}");
    }
}

/// Replaces the terse bodies of the timeout and body-limit layers with [`AppError`]'s messages.
async fn explain_edge_errors(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE if !is_json => AppError::PayloadTooLarge {
            limit: state.body_limit,
        }
        .into_response(),
        StatusCode::REQUEST_TIMEOUT if !is_json => AppError::Timeout {
            seconds: state.request_timeout.as_secs(),
        }
        .into_response(),
        _ => response,
    }
}
