//! A panic while a request is handled — in a handler, a server function or a page's render —
//! is a bug, but it must not cost the person their answer or the server its connection: it is
//! caught here, logged once with the request and an incident id, and answered 500 with that id,
//! and the server keeps serving.

use std::panic::AssertUnwindSafe;

use axum::{
    extract::Request,
    http::StatusCode,
    middleware::Next,
    response::{Html, IntoResponse, Response},
    Json,
};
use futures::FutureExt as _;

/// A short id a person can quote, which the log line carries too.
fn incident_id() -> String {
    let mut bytes = [0_u8; 6];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The text of a panic's payload.
fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Middleware: answers a panic below it with a 500 that names an incident id.
pub async fn catch(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let wants_json = !crate::error::wants_html(&request);
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(payload) => {
            let incident = incident_id();
            tracing::error!(
                incident = %incident,
                %method,
                path = %path,
                panic = %payload_text(payload.as_ref()),
                "a request panicked; answered 500"
            );
            answer(&incident, wants_json)
        }
    }
}

/// The 500 a panicked request gets.
fn answer(incident: &str, json: bool) -> Response {
    let message = format!(
        "Something went wrong on the server (incident {incident}). It has been logged; try again, and if it keeps happening, report the incident id."
    );
    if json {
        let body = serde_json::json!({
            "error": {"code": "internal", "message": message, "incident": incident}
        });
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
    }
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Something went wrong · gpushare</title>\
         <link rel=\"stylesheet\" href=\"/pkg/gpushare.css\"></head>\
         <body><main class=\"signed-out\"><h1>Something went wrong</h1><p>{message}</p><p><a href=\"/\">Open the console</a></p></main></body></html>"
    );
    (StatusCode::INTERNAL_SERVER_ERROR, Html(page)).into_response()
}

/// Sends the process's panic messages to the log as one line, instead of the default text on
/// standard error; the request's own line, with the incident id, follows from [`catch`].
pub fn log_panics() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(panic = %payload_text(info.payload()), %location, "panicked");
    }));
}
