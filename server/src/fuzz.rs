//! Generated input for the parsers of outside input, judged as a person would: every answer is
//! an answer (no panic, no 500), every refusal says what was wrong (a 4xx with a message), and no
//! refusal takes longer than [`REFUSAL_LIMIT`]. The targets: the JSON API's and the pages' query
//! parameters, the JSON bodies of every write, task definitions (a real one, mutated) for the
//! check and the validation, the policy file, the prices file, load balancer sign-in tokens and
//! the login cookie of an OIDC callback, and the emulator's three wire
//! protocols (ECS's JSON, CloudWatch's CBOR, EC2's and Auto Scaling's query). The test command
//! runs a bounded number of cases of each; `gpushare bench fuzz` runs them for minutes.

mod emulator;
pub mod generate;
mod routes;
mod sign_in;

use std::time::{Duration, Instant};

use axum::{
    body::{Body, Bytes},
    http::{header, Request, StatusCode},
    Router,
};
use http_body_util::BodyExt as _;
use rand::{rngs::StdRng, seq::IndexedRandom, Rng, SeedableRng};
use serde_json::{json, Value};
use tower::ServiceExt as _;

use self::routes::{API_ROUTES, PAGES, TASK_FIELDS, WRITES};

/// The longest a refusal of bad input may take.
pub const REFUSAL_LIMIT: Duration = Duration::from_millis(100);

/// What is fed generated input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    ApiQueries,
    PageQueries,
    JsonBodies,
    TaskDefinitions,
    PolicyFiles,
    PriceFiles,
    AlbTokens,
    OidcCallbacks,
    EmulatorJson,
    EmulatorCbor,
    EmulatorQuery,
}

impl Target {
    pub const ALL: [Target; 11] = [
        Target::ApiQueries,
        Target::PageQueries,
        Target::JsonBodies,
        Target::TaskDefinitions,
        Target::PolicyFiles,
        Target::PriceFiles,
        Target::AlbTokens,
        Target::OidcCallbacks,
        Target::EmulatorJson,
        Target::EmulatorCbor,
        Target::EmulatorQuery,
    ];

    /// The target in words, for the table.
    pub fn name(self) -> &'static str {
        match self {
            Target::ApiQueries => "JSON API query parameters",
            Target::PageQueries => "page query parameters",
            Target::JsonBodies => "JSON bodies of the writes and checks",
            Target::TaskDefinitions => "task definitions (check, validate, fit)",
            Target::PolicyFiles => "policy files",
            Target::PriceFiles => "prices files",
            Target::AlbTokens => "load balancer sign-in tokens (x-amzn-oidc-data)",
            Target::OidcCallbacks => "OIDC callbacks: the login cookie",
            Target::EmulatorJson => "emulator: ECS JSON (awsJson1.1)",
            Target::EmulatorCbor => "emulator: CloudWatch CBOR (rpc-v2-cbor)",
            Target::EmulatorQuery => "emulator: EC2 and Auto Scaling query",
        }
    }
}

/// What the cases of one target came to.
#[derive(Clone, Debug)]
pub struct Tally {
    pub target: Target,
    pub cases: u64,
    pub refused: u64,
    /// What went wrong, each with the input that did it (the first 20).
    pub failures: Vec<String>,
    /// How many went wrong in all.
    pub failed: u64,
    pub slowest_refusal: Duration,
}

/// How one case was answered.
enum Answer {
    Accepted,
    Refused,
    Failed(String),
}

/// The parts fed: the console's router (on its embedded emulator), the emulator's own router,
/// the generator, and a real task definition to mutate.
pub struct Fuzzer {
    console: Router,
    emulator: Router,
    rng: StdRng,
    task_definition: Value,
    /// Made at the first sign-in case.
    sign_in: Option<sign_in::SignIn>,
}

impl Fuzzer {
    /// A fuzzer of `console` (once it has read the fleet) and `emulator`, from `seed`.
    pub async fn new(console: Router, emulator: Router, seed: u64) -> Fuzzer {
        let mut task_definition = json!({"family": "embed-api", "containerDefinitions": []});
        for _ in 0..200 {
            let (status, body) = call(&console, get("/api/v1/task-definitions/embed-api/1")).await;
            if status == StatusCode::OK {
                if let Ok(answer) = serde_json::from_slice::<Value>(&body) {
                    task_definition = answer["task_definition"].clone();
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Fuzzer {
            console,
            emulator,
            rng: StdRng::seed_from_u64(seed),
            task_definition,
            sign_in: None,
        }
    }

    /// `cases` cases of `target`.
    pub async fn run(&mut self, target: Target, cases: u64) -> Tally {
        self.run_while(target, |done, _| done < cases).await
    }

    /// Cases of `target` for `time`.
    pub async fn run_for(&mut self, target: Target, time: Duration) -> Tally {
        self.run_while(target, |_, started: Instant| started.elapsed() < time)
            .await
    }

    async fn run_while(&mut self, target: Target, more: impl Fn(u64, Instant) -> bool) -> Tally {
        let started = Instant::now();
        let mut tally = Tally {
            target,
            cases: 0,
            refused: 0,
            failures: Vec::new(),
            failed: 0,
            slowest_refusal: Duration::ZERO,
        };
        while more(tally.cases, started) {
            let (input, answer, took) = self.one(target).await;
            tally.cases += 1;
            let refused = matches!(answer, Answer::Refused);
            let failure = match answer {
                Answer::Accepted => None,
                Answer::Refused if took > REFUSAL_LIMIT => Some(format!(
                    "refused in {} ms, past {} ms",
                    took.as_millis(),
                    REFUSAL_LIMIT.as_millis()
                )),
                Answer::Refused => None,
                Answer::Failed(why) => Some(why),
            };
            if refused {
                tally.refused += 1;
                tally.slowest_refusal = tally.slowest_refusal.max(took);
            }
            if let Some(why) = failure {
                tally.failed += 1;
                if tally.failures.len() < 20 {
                    tally.failures.push(format!("{why}: {}", clip(&input)));
                }
            }
        }
        tally
    }

    /// One generated case of `target`: the input in words, how it was answered, how long it took.
    async fn one(&mut self, target: Target) -> (String, Answer, Duration) {
        match target {
            Target::PolicyFiles => {
                let text = toml_text(
                    &mut self.rng,
                    &[
                        "roles",
                        "teams",
                        "budgets",
                        "group",
                        "role",
                        "team",
                        "cluster",
                        "gpu_memory",
                        "whole_gpus",
                        "monthly_cost",
                        "approvers",
                        "default_role",
                        "admin_only_fields",
                        "allowed_gpu_variables",
                    ],
                );
                let (answer, took) = parsed(|| crate::auth::policy::parse(&text));
                (text, answer, took)
            }
            Target::PriceFiles => {
                let text = price_text(&mut self.rng);
                let (answer, took) = parsed(|| crate::prices::parse("fuzz.toml", &text));
                (text, answer, took)
            }
            Target::AlbTokens | Target::OidcCallbacks => self.sign_in_case(target).await,
            Target::EmulatorJson | Target::EmulatorCbor | Target::EmulatorQuery => {
                let request = emulator::request(&mut self.rng, target);
                let input = format!("{} {}", request.method(), request.uri());
                let (answer, took) = judged(&self.emulator, request, true).await;
                (input, answer, took)
            }
            _ => {
                let (input, request) = self.console_request(target);
                let (answer, took) = judged(&self.console, request, false).await;
                (input, answer, took)
            }
        }
    }

    /// A load balancer token or an OIDC login cookie, judged by the verifier (made at the first).
    async fn sign_in_case(&mut self, target: Target) -> (String, Answer, Duration) {
        if self.sign_in.is_none() {
            match sign_in::SignIn::new().await {
                Ok(made) => self.sign_in = Some(made),
                Err(why) => {
                    return (
                        "setting up".into(),
                        Answer::Failed(format!("cannot set up: {why}")),
                        Duration::ZERO,
                    )
                }
            }
        }
        let Some(sign_in) = &self.sign_in else {
            return (
                "setting up".into(),
                Answer::Failed("no verifier".into()),
                Duration::ZERO,
            );
        };
        if target == Target::AlbTokens {
            let token = sign_in.alb_token(&mut self.rng);
            let (answer, took) = sign_in.judge_alb(&token).await;
            (token, answer, took)
        } else {
            let cookie = sign_in.login_cookie(&mut self.rng);
            let (answer, took) = sign_in.judge_cookie(&cookie);
            (cookie, answer, took)
        }
    }

    /// A request of the console's for `target`, and it in words.
    fn console_request(&mut self, target: Target) -> (String, Request<Body>) {
        let rng = &mut self.rng;
        match target {
            Target::ApiQueries | Target::PageQueries => {
                let routes: &[(&str, &[&str])] = if target == Target::ApiQueries {
                    &API_ROUTES
                } else {
                    &PAGES
                };
                let (path, known) = routes.choose(rng).copied().unwrap_or(("/", &[]));
                let path = format!("{path}{}", generate::query(rng, known));
                (path.clone(), get(&path))
            }
            Target::JsonBodies => {
                let (path, known) = WRITES.choose(rng).copied().unwrap_or(WRITES[0]);
                let body = if rng.random_bool(0.1) {
                    generate::text(rng)
                } else {
                    Value::Object(generate::object(rng, known, 3)).to_string()
                };
                let path = format!(
                    "{path}{}",
                    generate::query(rng, &["description", "force", "default", "cluster"])
                );
                (format!("POST {path} {body}"), post(&path, body))
            }
            _ => {
                let mut task = self.task_definition.clone();
                generate::mutate(rng, &mut task, &TASK_FIELDS);
                let (path, body) = match rng.random_range(0..3) {
                    0 => (
                        "/api/v1/task-definitions/embed-api/1/check".to_string(),
                        json!({"task_definition": task, "description": "generated"}).to_string(),
                    ),
                    1 => (
                        "/api/v1/task-definitions/validate".to_string(),
                        task.to_string(),
                    ),
                    _ => (
                        "/api/v1/task-definitions/fit-check".to_string(),
                        task.to_string(),
                    ),
                };
                (format!("POST {path} {body}"), post(&path, body))
            }
        }
    }
}

/// A prices file: half the time valid entries with one to four fields generated, else
/// TOML-ish text.
fn price_text(rng: &mut StdRng) -> String {
    const FIELDS: [&str; 8] = [
        "price",
        "instance_type",
        "usd_per_hour",
        "region",
        "lifecycle",
        "managed_instances_usd_per_hour",
        "source",
        "effective",
    ];
    if rng.random_bool(0.5) {
        let mut file = json!({"price": [
            {"instance_type": "g6e.12xlarge", "usd_per_hour": 10.49, "region": "us-east-1",
             "source": "negotiated 2026"},
            {"instance_type": "p5.48xlarge", "usd_per_hour": 55.04, "lifecycle": "spot"},
            {"instance_type": "g5.xlarge", "usd_per_hour": 1.006,
             "managed_instances_usd_per_hour": 0.12},
        ]});
        generate::mutate(rng, &mut file, &FIELDS);
        // TOML has no null: a generated null leaves the field out, as a person would.
        if let Ok(text) = toml::to_string(&without_nulls(file)) {
            return text;
        }
    }
    toml_text(rng, &FIELDS)
}

/// `value` without its null fields and items.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        other => other,
    }
}

/// TOML-ish text: tables and arrays of tables named as in `known`, with generated values, now
/// and then broken.
fn toml_text(rng: &mut StdRng, known: &[&str]) -> String {
    let mut text = String::new();
    for _ in 0..rng.random_range(0..8) {
        let name = known.choose(rng).copied().unwrap_or("x");
        match rng.random_range(0..4) {
            0 => text.push_str(&format!("[[{name}]]\n")),
            1 => text.push_str(&format!("[{name}]\n")),
            _ => {}
        }
        for _ in 0..rng.random_range(0..5) {
            let key = known.choose(rng).copied().unwrap_or("x");
            let value = match rng.random_range(0..5) {
                0 => format!("{:?}", generate::text(rng)),
                1 => rng.random_range(-10_i64..100_000).to_string(),
                2 => format!("[{:?}, {:?}]", generate::text(rng), generate::text(rng)),
                3 => format!("{}", rng.random::<f64>() * 100.0),
                _ => generate::text(rng),
            };
            text.push_str(&format!("{key} = {value}\n"));
        }
    }
    text
}

/// How a parser of text answered: accepted, refused with a message, or panicked.
fn parsed<T>(
    parse: impl FnOnce() -> Result<T, String> + std::panic::UnwindSafe,
) -> (Answer, Duration) {
    let started = Instant::now();
    let answer = match std::panic::catch_unwind(parse) {
        Ok(Ok(_)) => Answer::Accepted,
        Ok(Err(message)) if !message.trim().is_empty() => Answer::Refused,
        Ok(Err(_)) => Answer::Failed("refused without saying why".into()),
        Err(_) => Answer::Failed("panicked".into()),
    };
    (answer, started.elapsed())
}

/// How `router` answered `request`: a panic or a 500 fails, a 4xx must say why; an emulator's
/// (`emulator`) refusal is ECS's error shape, which says why in its own way.
async fn judged(router: &Router, request: Request<Body>, emulator: bool) -> (Answer, Duration) {
    let started = Instant::now();
    let answer = tokio::spawn(router.clone().oneshot(request)).await;
    let took = started.elapsed();
    let response = match answer {
        Err(error) if error.is_panic() => return (Answer::Failed("panicked".into()), took),
        Err(_) => return (Answer::Failed("the request was cancelled".into()), took),
        Ok(Err(never)) => match never {},
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let body = body_of(response).await;
    let answer = match status.as_u16() {
        500 => Answer::Failed(format!("500: {}", clip(&String::from_utf8_lossy(&body)))),
        400..=499 if says_why(&body, emulator) => Answer::Refused,
        400..=499 => Answer::Failed(format!("{status} without a message")),
        // ECS refusing what the console sent, or the fleet not read yet: the console's message.
        _ => Answer::Accepted,
    };
    (answer, took)
}

/// Whether a refusal's body says what was wrong: a JSON error's message, a page's text, or the
/// emulator's error shape.
fn says_why(body: &Bytes, emulator: bool) -> bool {
    if body.is_empty() {
        return false;
    }
    if emulator {
        return true;
    }
    let said = |m: Option<&str>| m.is_some_and(|m| !m.trim().is_empty());
    match serde_json::from_slice::<Value>(body) {
        // An error with its message, or a check's errors, each with its own.
        Ok(value) => {
            said(
                value["error"]["message"]
                    .as_str()
                    .or_else(|| value["error"].as_str()),
            ) || value["errors"].as_array().is_some_and(|errors| {
                !errors.is_empty() && errors.iter().all(|e| said(e["message"].as_str()))
            })
        }
        // A page: its text says it.
        Err(_) => String::from_utf8_lossy(body).contains("<main"),
    }
}

fn get(path: &str) -> Request<Body> {
    Request::get(path.replace(|c: char| c.is_control() || c == ' ', ""))
        .body(Body::empty())
        .unwrap_or_else(|_| Request::new(Body::empty()))
}

fn post(path: &str, body: String) -> Request<Body> {
    Request::post(path.replace(|c: char| c.is_control() || c == ' ', ""))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|_| Request::new(Body::empty()))
}

/// A response's whole body (empty when it cannot be read).
async fn body_of(response: axum::response::Response) -> Bytes {
    response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default()
}

async fn call(router: &Router, request: Request<Body>) -> (StatusCode, Bytes) {
    match router.clone().oneshot(request).await {
        Ok(response) => (response.status(), body_of(response).await),
        Err(never) => match never {},
    }
}

/// The first 300 characters of an input, for a report.
fn clip(text: &str) -> String {
    let clipped: String = text.chars().take(300).collect();
    if clipped.len() < text.len() {
        format!("{clipped}…")
    } else {
        clipped
    }
}
