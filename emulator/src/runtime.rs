//! The running emulator: the fleet behind a lock, the simulated clock that drives it, the fault
//! settings, and the HTTP server that speaks ECS (awsJson1_1) and CloudWatch (rpc-v2-cbor).

mod cloudwatch_wire;
mod json_wire;
mod sqs_ec2;
mod status;
mod writes;

use std::{
    io::Read as _,
    net::SocketAddr,
    sync::{
        atomic::{AtomicI64, AtomicU64, Ordering},
        Arc, RwLock, Weak,
    },
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Path, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{
    cbor,
    clock::SimClock,
    cloudwatch::CloudWatchError,
    ec2, ecs_api,
    error::EcsError,
    events::{EventQueue, SqsError, SQS_TARGET_PREFIX},
    faults::{Faults, Outcome},
    model::Fleet,
    throttle::Buckets,
};

use self::cloudwatch_wire::{cloudwatch, cloudwatch_json};
use self::json_wire::{cost_explorer_json, pricing_json};
use self::sqs_ec2::{ec2_query, sqs};
pub use self::status::Status;
pub use self::writes::{WriteRecord, WRITES_KEPT};

const ECS_TARGET_PREFIX: &str = "AmazonEC2ContainerServiceV20141113.";
/// CloudWatch over `awsJson1_0`, as botocore (the AWS CLI, boto3) speaks it.
const CLOUDWATCH_TARGET_PREFIX: &str = "GraniteServiceVersion20100801.";
const ECS_CONTENT_TYPE: &str = "application/x-amz-json-1.1";

struct Inner {
    /// Written by what changes the fleet (and by the clock, once a simulated second); read by
    /// many requests at once, as ECS answers its reads in parallel.
    fleet: RwLock<Fleet>,
    clock: SimClock,
    /// Simulated milliseconds added by `/_emulator/advance`.
    offset_ms: AtomicI64,
    faults: RwLock<Faults>,
    scenario: String,
    requests: AtomicU64,
    /// Every call received, by service and operation (`ecs:ListClusters`,
    /// `cloudwatch:GetMetricData`, …), whatever became of it: the emulator's own record of what
    /// a client asked, against which a client's own counts can be held.
    received: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
    /// Faults injected so far, by kind, and calls refused by ECS's rate limits.
    injected: std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>,
    /// ECS's request throttling, and the calls per group of actions.
    buckets: Buckets,
    /// The SQS queue ECS's events go to, when an EventBridge rule routes them there.
    events: RwLock<Option<Arc<EventQueue>>>,
    /// The latest ECS calls that change something, with their bodies as received (at most
    /// [`WRITES_KEPT`]): what a client sent, to hold against what it says it sent.
    writes: std::sync::Mutex<std::collections::VecDeque<WriteRecord>>,
}

/// A handle to a running emulator; clones share it.
#[derive(Clone)]
pub struct Emulator {
    inner: Arc<Inner>,
}

impl Emulator {
    /// An emulator over `fleet`, whose clock starts at the fleet's time and runs `clock_speed`
    /// times faster than real time.
    pub fn new(fleet: Fleet, scenario: &str, clock_speed: f64, faults: Faults) -> Emulator {
        Emulator::since(
            fleet,
            scenario,
            clock_speed,
            faults,
            std::time::Instant::now(),
        )
    }

    /// [`Emulator::new`] over a fleet built for the time it was at `built_from`: the clock
    /// counts from that instant, not from when the (slow) build ended.
    pub fn since(
        fleet: Fleet,
        scenario: &str,
        clock_speed: f64,
        faults: Faults,
        built_from: std::time::Instant,
    ) -> Emulator {
        let clock = SimClock::since(fleet.now, built_from, clock_speed);
        Emulator {
            inner: Arc::new(Inner {
                fleet: RwLock::new(fleet),
                clock,
                offset_ms: AtomicI64::new(0),
                faults: RwLock::new(faults),
                scenario: scenario.to_string(),
                requests: AtomicU64::new(0),
                received: std::sync::Mutex::default(),
                injected: std::sync::Mutex::default(),
                writes: std::sync::Mutex::default(),
                buckets: Buckets::default(),
                events: RwLock::new(None),
            }),
        }
    }

    /// The simulated time now.
    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
            + chrono::Duration::milliseconds(self.inner.offset_ms.load(Ordering::Relaxed))
    }

    /// Runs `f` on the fleet, brought up to the simulated time first, alone.
    pub fn with_fleet<R>(&self, f: impl FnOnce(&mut Fleet) -> R) -> R {
        let now = self.now();
        let mut fleet = self
            .inner
            .fleet
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        fleet.advance(now);
        let out = f(&mut fleet);
        match self.events_queue() {
            Some(queue) => queue.push(crate::events::task_events(&mut fleet)),
            None => crate::events::forget_changes(&mut fleet),
        }
        out
    }

    /// Runs `f` on the fleet brought up to the simulated time, without changing it: many reads
    /// run at once, and a read waits only for a change, never for another read.
    pub fn read_fleet<R>(&self, f: impl FnOnce(&Fleet) -> R) -> R {
        let now = self.now();
        {
            let fleet = self
                .inner
                .fleet
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if !fleet.behind(now) {
                return f(&fleet);
            }
        }
        // A simulated second has passed since the last step: take it first. (Every change
        // emits its events before it lets go of the fleet, so there is nothing else to do.)
        self.with_fleet(|_| ());
        let fleet = self
            .inner
            .fleet
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&fleet)
    }

    /// Routes ECS's task state change events to an SQS queue from now on, as an EventBridge
    /// rule on `source: aws.ecs` with the queue as its target would. Returns the path of the
    /// queue's URL on the emulator's endpoint (`/<account>/ecs-events`).
    pub fn enable_events_queue(&self) -> String {
        let account = self.with_fleet(|fleet| fleet.account.clone());
        let mut events = self.inner.events.write().unwrap_or_else(|p| p.into_inner());
        events
            .get_or_insert_with(|| Arc::new(EventQueue::new(&account)))
            .path()
    }

    /// The events queue, when there is one.
    pub fn events_queue(&self) -> Option<Arc<EventQueue>> {
        self.inner
            .events
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Moves simulated time forward at once.
    pub fn advance(&self, seconds: i64) {
        self.inner
            .offset_ms
            .fetch_add(seconds.saturating_mul(1000), Ordering::Relaxed);
        self.with_fleet(|_| ());
    }

    /// Moves simulated time forward to `to`, when that is later than now.
    pub fn advance_to(&self, to: DateTime<Utc>) {
        let seconds = (to - self.now()).num_seconds();
        if seconds > 0 {
            self.advance(seconds);
        }
    }

    /// The fault settings now.
    pub fn faults(&self) -> Faults {
        self.inner
            .faults
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the fault settings.
    pub fn set_faults(&self, faults: Faults) -> Result<(), String> {
        faults.validate()?;
        *self.inner.faults.write().unwrap_or_else(|p| p.into_inner()) = faults;
        Ok(())
    }

    /// Whether ECS's request throttling is enforced now: as the faults say, or by default in
    /// the `large` scenario.
    pub fn rate_limits(&self) -> bool {
        self.inner
            .faults
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .rate_limits
            .unwrap_or(self.inner.scenario == "large")
    }

    /// The emulator's HTTP surface.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", post(ecs))
            .route(
                "/service/GraniteServiceVersion20100801/operation/{operation}",
                post(cloudwatch),
            )
            .route("/_emulator/status", get(status))
            .route("/_emulator/writes", get(writes::writes))
            .route("/_emulator/faults", get(get_faults).put(put_faults))
            .route("/_emulator/advance", post(advance))
            .with_state(self.clone())
    }

    /// Serves on `listener` until the task is dropped, and keeps the simulation moving.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        spawn_ticker(Arc::downgrade(&self.inner));
        axum::serve(listener, self.router()).await
    }

    /// Binds `addr` (port 0 for any free port) and serves in the background.
    pub async fn spawn(self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        tokio::spawn(async move {
            if let Err(error) = self.serve(listener).await {
                tracing::error!(%error, "the emulator stopped");
            }
        });
        Ok(bound)
    }
}

/// Advances the fleet every tenth of a real second, so rollouts move without requests.
fn spawn_ticker(inner: Weak<Inner>) {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_millis(100));
        loop {
            interval.tick().await;
            let Some(inner) = inner.upgrade() else { break };
            Emulator { inner }.read_fleet(|_| ());
        }
    });
}

fn request_id(emulator: &Emulator) -> String {
    let n = emulator.inner.requests.fetch_add(1, Ordering::Relaxed);
    format!("{:08x}-0000-4000-8000-{:012x}", n as u32, n)
}

/// A response whose body fails at once: the client sees its connection dropped.
fn dropped() -> Response {
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "connection dropped by fault injection",
        ))
    });
    Response::new(Body::from_stream(failing))
}

/// Waits out the operation's injected latency and draws what the request meets.
async fn injected(emulator: &Emulator, operation: &str) -> Outcome {
    let fault = emulator.faults().for_operation(operation).clone();
    let delay = fault.delay();
    // A zero sleep still waits for the timer's next tick (up to a millisecond).
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let outcome = fault.draw();
    if let Some(kind) = outcome.fault_name() {
        emulator.count_injected(kind, None);
    }
    outcome
}

/// Runs `f` on a blocking thread, so that building a large answer (a DescribeTasks of 100
/// tasks takes milliseconds) holds up neither the server's other requests nor, when the
/// emulator is embedded, the console's. At most [`ANSWERING`] at once, so that a burst of
/// calls reuses a few threads rather than starting one (and its memory) per call. `None` if
/// `f` panicked.
async fn off_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let _permit = ANSWER_PERMITS.acquire().await.ok()?;
    tokio::task::spawn_blocking(f).await.ok()
}

/// Answers built at once, on blocking threads.
const ANSWERING: usize = 4;

/// [`off_thread`]'s permits: a call holds one from just before its blocking part is spawned
/// until its caller has the answer or is gone.
static ANSWER_PERMITS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(ANSWERING);

fn ecs_error(emulator: &Emulator, error: &EcsError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = json!({"__type": error.type_name(), "message": error.to_string()});
    let mut response = (status, body.to_string()).into_response();
    set_json_headers(emulator, response.headers_mut());
    response
}

fn set_json_headers(emulator: &Emulator, headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(ECS_CONTENT_TYPE),
    );
    if let Ok(id) = HeaderValue::from_str(&request_id(emulator)) {
        headers.insert("x-amzn-requestid", id);
    }
}

/// `POST /` with `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Operation>` (ECS),
/// `GraniteServiceVersion20100801.<Operation>` (CloudWatch over JSON, for botocore),
/// `AmazonSQS.<Operation>`, `AWSPriceListService.<Operation>` (the Price List Query API) or
/// `AWSInsightsIndexService.<Operation>` (Cost Explorer).
async fn ecs(State(emulator): State<Emulator>, headers: HeaderMap, body: Bytes) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if let Some(operation) = target.strip_prefix(CLOUDWATCH_TARGET_PREFIX) {
        return cloudwatch_json(emulator, operation.to_string(), body).await;
    }
    if let Some(operation) = target.strip_prefix(SQS_TARGET_PREFIX) {
        return sqs(emulator, operation.to_string(), body).await;
    }
    if let Some(operation) = target.strip_prefix(crate::pricing::TARGET_PREFIX) {
        return pricing_json(emulator, operation.to_string(), body).await;
    }
    if let Some(operation) = target.strip_prefix(crate::billing::TARGET_PREFIX) {
        return cost_explorer_json(emulator, operation.to_string(), body).await;
    }
    // EC2's query protocol: a form body and no target header.
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if target.is_empty() && form {
        return ec2_query(emulator, body).await;
    }
    let operation = target
        .strip_prefix(ECS_TARGET_PREFIX)
        .unwrap_or_default()
        .to_string();
    emulator.receive("ecs", &operation);
    if !ecs_api::OPERATIONS.contains(&operation.as_str()) {
        let message = if operation.is_empty() {
            "Missing or unknown X-Amz-Target header; expected AmazonEC2ContainerServiceV20141113.<Operation>.".to_string()
        } else {
            format!("The operation {operation} is not supported by this emulator.")
        };
        return json_refusal(&emulator, "UnknownOperationException", message);
    }
    let outcome = injected(&emulator, &operation).await;
    if let Some(refused) = throttled_or_faulted(&emulator, &operation, outcome) {
        return refused;
    }
    let input: Value = if body.is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(error) => {
                return json_refusal(
                    &emulator,
                    "SerializationException",
                    format!("The request body is not valid JSON: {error}."),
                )
            }
        }
    };
    let id = request_id(&emulator);
    let answer = answer_ecs(
        &emulator,
        operation,
        input,
        &id,
        outcome != Outcome::LoseAnswer,
    )
    .await;
    if outcome == Outcome::LoseAnswer {
        return dropped();
    }
    let mut response = match answer {
        Ok(output) => (StatusCode::OK, output).into_response(),
        Err(error) => ecs_error(&emulator, &error),
    };
    set_json_headers(&emulator, response.headers_mut());
    if let Ok(id) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-amzn-requestid", id);
    }
    response
}

/// A 400 in ECS's JSON error shape.
fn json_refusal(emulator: &Emulator, kind: &str, message: String) -> Response {
    let mut response = (
        StatusCode::BAD_REQUEST,
        json!({"__type": kind, "message": message}).to_string(),
    )
        .into_response();
    set_json_headers(emulator, response.headers_mut());
    response
}

/// The answer instead of the operation's, when its rate limit is spent or a fault is injected.
fn throttled_or_faulted(
    emulator: &Emulator,
    operation: &str,
    outcome: Outcome,
) -> Option<Response> {
    let enforce = emulator.rate_limits();
    if !emulator
        .inner
        .buckets
        .take(operation, enforce, std::time::Instant::now())
    {
        // What the call drew does not happen: ECS refused it first.
        emulator.count_injected("rate limited", outcome.fault_name());
        return Some(ecs_error(emulator, &EcsError::Throttling));
    }
    match outcome {
        Outcome::Throttle => Some(ecs_error(emulator, &EcsError::Throttling)),
        Outcome::ServerError => Some(ecs_error(
            emulator,
            &EcsError::Server("Injected server error.".into()),
        )),
        Outcome::Drop => Some(dropped()),
        Outcome::Answer | Outcome::LoseAnswer => None,
    }
}

/// Runs an ECS operation on a blocking thread: reads beside each other, writes one at a time.
///
/// A write runs and is recorded in one step, under the fleet's lock: once it has started it
/// completes and is recorded even when its caller hangs up meanwhile (a console killed
/// mid-call), as ECS carries out a call it received whatever becomes of the connection; and
/// the record's order is the order the writes ran in.
async fn answer_ecs(
    emulator: &Emulator,
    operation: String,
    input: Value,
    request_id: &str,
    answered: bool,
) -> Result<String, EcsError> {
    let request_id = request_id.to_string();
    off_thread({
        let emulator = emulator.clone();
        move || {
            if ecs_api::reads_only(&operation) {
                return emulator.read_fleet(|fleet| ecs_api::read(fleet, &operation, input));
            }
            emulator.with_fleet(|fleet| {
                let answer = ecs_api::handle(fleet, &operation, input.clone());
                emulator.record_write(WriteRecord {
                    seq: 0,
                    error: answer.as_ref().err().map(|e| e.type_name().to_string()),
                    operation,
                    request: input,
                    request_id: Some(request_id),
                    answered,
                });
                answer
            })
        }
    })
    .await
    .unwrap_or_else(|| {
        Err(EcsError::Server(
            "The emulator failed while answering; try again.".into(),
        ))
    })
}

async fn status(State(emulator): State<Emulator>) -> Json<Status> {
    Json(emulator.status())
}

async fn get_faults(State(emulator): State<Emulator>) -> Json<Faults> {
    Json(emulator.faults())
}

async fn put_faults(State(emulator): State<Emulator>, body: Bytes) -> Response {
    let faults: Faults = match serde_json::from_slice(&body) {
        Ok(faults) => faults,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": format!("the fault settings are not valid: {error}")})),
            )
                .into_response()
        }
    };
    match emulator.set_faults(faults) {
        Ok(()) => Json(emulator.faults()).into_response(),
        Err(error) => (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    seconds: i64,
}

async fn advance(State(emulator): State<Emulator>, body: Bytes) -> Response {
    match serde_json::from_slice::<Advance>(&body) {
        Ok(Advance { seconds }) if (0..=86_400).contains(&seconds) => {
            emulator.advance(seconds);
            Json(emulator.status()).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "send {\"seconds\": N} with N from 0 to 86400"})),
        )
            .into_response(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
