//! Admission of reads: pages and the JSON API's reads are answered a bounded number at a time,
//! a bounded number more wait their turn, and the rest are refused at once with `503` and
//! `Retry-After`.
//!
//! Reads go in two lanes, each with its own bound. Reads answered from what the console keeps
//! (the fleet, cost, audit, approvals) cost CPU and memory and nothing else, so few are let in
//! at a time. Reads that may ask ECS first (task definitions, services, deployments, a
//! cluster's events) spend most of their time waiting for ECS, or for the console's share of
//! ECS's rate, and hold little meanwhile; in the first lane a few of them would hold every turn
//! and starve the reads that need none, so they have a lane of their own with a larger bound.
//!
//! A read that is rendering holds its memory (a page of the whole fleet, a cost report) until
//! it is sent. Without a bound, a console asked for more reads a second than it can answer
//! holds every one of them at once: its memory grows with the queue, and each answer comes
//! later than the one before. With the bound, memory stays that of the reads in flight, the
//! reads that are answered come in time, and the ones refused say so before any work is done.
//! Writes are never refused here (a write refused for load would be a change lost to a
//! person), nor are live-update streams (they have their own caps), health, metrics, sign-in
//! or the site's files.

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use axum::{
    body::Body,
    extract::{MatchedPath, Request, State},
    http::{header, HeaderValue, Method, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Response},
    Json,
};
use http_body_util::BodyExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::limits::{
    AWS_READS_IN_FLIGHT_PER_CORE as AWS_IN_FLIGHT_PER_CORE,
    READS_IN_FLIGHT_PER_CORE as IN_FLIGHT_PER_CORE, READS_WAITING as WAITING,
};

/// Paths of the reads that may ask ECS before they answer (the second lane): pages and API
/// routes under these prefixes. Every other bounded read is answered from the console's state.
const ASKS_AWS: [&str; 9] = [
    "/task-definitions",
    "/api/v1/task-definitions",
    "/deployments",
    "/api/v1/services",
    "/api/v1/deployments/",
    "/clusters/",
    "/api/v1/clusters/",
    "/rollouts/",
    "/api/v1/capacity-providers",
];

/// The longest a read waits for its turn before it is refused.
pub const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// Refusals are logged at most once this often.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Seconds a refused client is told to wait before it asks again.
const RETRY_AFTER_SECONDS: u64 = 1;

/// The two lanes of reads.
#[derive(Debug)]
pub struct Admission {
    /// Reads answered from the console's own state.
    pub own: Lane,
    /// Reads that may ask ECS first.
    pub aws: Lane,
}

impl Admission {
    /// The two lanes' bounds: `own` and `aws` reads in flight, and `waiting` more in each.
    pub fn new(own: usize, aws: usize, waiting: usize) -> Self {
        Admission {
            own: Lane::new("own", own, waiting, LONGEST_WAIT),
            aws: Lane::new("aws", aws, waiting, LONGEST_WAIT),
        }
    }

    /// The lane of a bounded read ([`is_bounded`]) by its path.
    pub fn lane(&self, path: &str) -> &Lane {
        if ASKS_AWS.iter().any(|prefix| path.starts_with(prefix)) {
            &self.aws
        } else {
            &self.own
        }
    }

    /// Reads refused in both lanes since the start.
    pub fn refused(&self) -> u64 {
        self.own.load().refused + self.aws.load().refused
    }
}

/// Cores of this machine, for the lanes' default bounds.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
}

/// One lane: the reads in flight and waiting, and the bound on each.
#[derive(Debug)]
pub struct Lane {
    turns: Arc<Semaphore>,
    in_flight_limit: usize,
    waiting_limit: usize,
    longest_wait: Duration,
    waiting: AtomicUsize,
    refused: AtomicU64,
    /// When the last line about refusals was logged, and the refusals counted then.
    logged: std::sync::Mutex<(Option<std::time::Instant>, u64)>,
    /// The lane's name in the log and the metrics.
    name: &'static str,
}

/// How many reads are in flight and waiting now, and how many were refused since the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub in_flight: usize,
    pub in_flight_limit: usize,
    pub waiting: usize,
    pub waiting_limit: usize,
    pub refused: u64,
}

/// Why a read was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// As many reads wait as may.
    QueueFull { in_flight: usize, waiting: usize },
    /// The read waited the longest it may and no turn came.
    WaitedTooLong { waited: Duration },
}

impl Refusal {
    /// What a person reads: what happened, that nothing was lost, and what to do.
    pub fn message(&self) -> String {
        let why = match self {
            Refusal::QueueFull { in_flight, waiting } => format!(
                "the console is busy: it is answering {in_flight} reads and {waiting} more are \
                 waiting, as many as it lets wait"
            ),
            Refusal::WaitedTooLong { waited } => format!(
                "the console is busy: this read waited {:.1} s for its turn and none came",
                waited.as_secs_f64()
            ),
        };
        format!(
            "{why}. Nothing was changed; try again in {RETRY_AFTER_SECONDS} s. If this keeps \
             happening, the console needs more CPU, or more replicas, or a higher \
             --max-reads-in-flight"
        )
    }
}

impl Lane {
    /// At most `in_flight` reads answered at once and `waiting` more waiting, each at most
    /// `longest_wait`.
    pub fn new(
        name: &'static str,
        in_flight: usize,
        waiting: usize,
        longest_wait: Duration,
    ) -> Self {
        let in_flight = in_flight.max(1);
        Lane {
            turns: Arc::new(Semaphore::new(in_flight)),
            in_flight_limit: in_flight,
            waiting_limit: waiting,
            longest_wait,
            waiting: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            logged: std::sync::Mutex::new((None, 0)),
            name,
        }
    }

    /// A turn to answer a read: at once when one is free, after a wait when the queue has
    /// room, or a refusal.
    pub async fn enter(&self) -> Result<OwnedSemaphorePermit, Refusal> {
        if let Ok(turn) = self.turns.clone().try_acquire_owned() {
            return Ok(turn);
        }
        let waiting = self.waiting.fetch_add(1, Ordering::AcqRel);
        let _leave = Leave(&self.waiting);
        if waiting >= self.waiting_limit {
            return Err(self.refuse(Refusal::QueueFull {
                in_flight: self.in_flight_limit - self.turns.available_permits(),
                waiting,
            }));
        }
        match tokio::time::timeout(self.longest_wait, self.turns.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Ok(turn),
            // The semaphore is never closed; a closed one refuses as a long wait would.
            Ok(Err(_)) | Err(_) => Err(self.refuse(Refusal::WaitedTooLong {
                waited: self.longest_wait,
            })),
        }
    }

    /// Counts a refusal, and logs the refusals since the last line at most once per
    /// [`LOG_EVERY`]: a line per refusal would flood the log just when the console is busiest.
    fn refuse(&self, refusal: Refusal) -> Refusal {
        let total = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(since) = self.due_for_log(total) {
            tracing::warn!(
                lane = self.name,
                refused = since,
                in_flight_limit = self.in_flight_limit,
                waiting_limit = self.waiting_limit,
                "the console is busy: reads were refused with 503 since the last such line; if \
                 it keeps happening, give the console more CPU or replicas, or raise \
                 --max-reads-in-flight (own) or --max-aws-reads-in-flight (aws)"
            );
        }
        refusal
    }

    /// The refusals to log now, `total` counted so far: none while the last line is younger
    /// than [`LOG_EVERY`].
    fn due_for_log(&self, total: u64) -> Option<u64> {
        let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        if logged.0.is_some_and(|at| at.elapsed() < LOG_EVERY) {
            return None;
        }
        let since = total.saturating_sub(logged.1);
        *logged = (Some(std::time::Instant::now()), total);
        Some(since)
    }

    /// The reads in flight and waiting now.
    pub fn load(&self) -> Load {
        Load {
            in_flight: self.in_flight_limit - self.turns.available_permits(),
            in_flight_limit: self.in_flight_limit,
            waiting: self.waiting.load(Ordering::Acquire),
            waiting_limit: self.waiting_limit,
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// Takes a waiting read off the count however its wait ends (a turn, a refusal, or the client
/// gone and the request dropped).
struct Leave<'a>(&'a AtomicUsize);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether a request is a read this module bounds: a `GET` or `HEAD` of a page or of the JSON
/// API, not a live-update stream, health, metrics, sign-in or one of the site's files.
pub fn is_bounded(method: &Method, route: Option<&str>, path: &str) -> bool {
    if method != Method::GET && method != Method::HEAD {
        return false;
    }
    const OPEN: [&str; 5] = [
        "/healthz",
        "/readyz",
        "/metrics",
        "/api/v1/fleet/events",
        "/api/v1/deployments/{id}/events",
    ];
    if route.is_some_and(|route| OPEN.contains(&route)) {
        return false;
    }
    let open_prefix = ["/pkg/", "/auth/", "/signed-out"]
        .iter()
        .any(|prefix| path.starts_with(prefix));
    !open_prefix && !path.ends_with(".ico")
}

/// Middleware: lets bounded reads in a bounded number at a time. The turn is held until the
/// answer's last byte is sent (a page's compression is part of its cost).
pub async fn admit(
    State(admission): State<Arc<Admission>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    if !is_bounded(request.method(), route, request.uri().path()) {
        return next.run(request).await;
    }
    match admission.lane(request.uri().path()).enter().await {
        Ok(turn) => {
            let response = next.run(request).await;
            let (parts, body) = response.into_parts();
            let body = body.map_frame(move |frame| {
                let _held = &turn;
                frame
            });
            Response::from_parts(parts, Body::new(body))
        }
        Err(refusal) => refuse(&refusal, crate::error::wants_html(&request)),
    }
}

/// The `503` a refused read gets: JSON for the API, for a browser a page that asks again by
/// itself after `Retry-After`.
fn refuse(refusal: &Refusal, page: bool) -> Response {
    let message = refusal.message();
    let mut response = if page {
        let page = format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"refresh\" content=\"{RETRY_AFTER_SECONDS}\">\
             <title>Busy · gpushare</title><link rel=\"stylesheet\" href=\"/pkg/gpushare.css\"></head>\
             <body><main class=\"signed-out\"><h1>The console is busy</h1><p>{message}</p>\
             <p>This page asks again by itself.</p></main></body></html>"
        );
        (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response()
    } else {
        let body = serde_json::json!({"error": {"code": "busy", "message": message}});
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    };
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    response
}

#[cfg(test)]
mod tests;
