//! What the HTTP tests share: a router on the embedded emulator's demo fleet (with its own
//! site root and audit log), requests sent through `tower::ServiceExt::oneshot` with no socket,
//! and readers of the answers.

#![allow(dead_code)]

use std::path::PathBuf;

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
    response::Response,
    Router,
};
use http_body_util::BodyExt;
use tower::ServiceExt;

use gpushare::{config::ServeArgs, connect_fleet, router, AppState};

/// A router on the embedded emulator's demo fleet, whose site root is a fresh temporary folder,
/// with or without the built assets.
pub async fn test_app(with_assets: bool) -> (Router, PathBuf) {
    test_app_with_faults(with_assets, Vec::new()).await
}

/// [`test_app`] with the emulator's `--fault` specs.
pub async fn test_app_with_faults(with_assets: bool, faults: Vec<String>) -> (Router, PathBuf) {
    test_app_on(with_assets, faults, None).await
}

/// [`test_app_with_faults`] with its audit log in the database at `database_url` (SQLite in the
/// site root without one).
pub async fn test_app_on(
    with_assets: bool,
    faults: Vec<String>,
    database_url: Option<String>,
) -> (Router, PathBuf) {
    test_app_configured(with_assets, faults, database_url, |_| {}).await
}

/// A router whose serve flags `configure` changes, behind a socket that says requests come from
/// `peer` (the sign-in trusts a proxy by its address).
pub async fn test_app_behind(
    peer: std::net::SocketAddr,
    configure: impl FnOnce(&mut ServeArgs),
) -> Router {
    let (app, _) = test_app_configured(false, Vec::new(), None, configure).await;
    app.layer(axum::extract::connect_info::MockConnectInfo(peer))
}

/// A console behind a sign-in proxy at 127.0.0.1 (which it trusts), reached from `peer`, under
/// the policy `policy` (TOML), with serve flags that `configure` changes further.
pub async fn behind_proxy_with(
    policy: &str,
    peer: std::net::SocketAddr,
    configure: impl FnOnce(&mut ServeArgs),
) -> Router {
    let path = std::env::temp_dir().join(format!(
        "gpushare-policy-{}-{}.toml",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::write(&path, policy).expect("a policy file");
    test_app_behind(peer, move |args| {
        args.access.auth = gpushare::config::AuthFlag::Proxy;
        args.access.trusted_proxies = vec!["127.0.0.1/32".into()];
        args.access.policy = Some(path);
        configure(args);
    })
    .await
}

/// `request` as the sign-in proxy forwards it for `user` in `groups` (comma-separated).
pub fn signed_as(user: &str, groups: &str, mut request: Request<Body>) -> Request<Body> {
    let headers = request.headers_mut();
    headers.insert("x-forwarded-user", user.parse().expect("a value"));
    headers.insert(
        "x-forwarded-email",
        format!("{user}@example.com").parse().expect("a value"),
    );
    headers.insert("x-forwarded-groups", groups.parse().expect("a value"));
    request
}

/// [`test_app_on`] with serve flags that `configure` changes.
pub async fn test_app_configured(
    with_assets: bool,
    faults: Vec<String>,
    database_url: Option<String>,
    configure: impl FnOnce(&mut ServeArgs),
) -> (Router, PathBuf) {
    let (state, site_root) = test_state(with_assets, faults, database_url, configure).await;
    (router(state), site_root)
}

/// The state behind [`test_app_configured`]'s router, for tests that reach the use cases.
pub async fn test_state(
    with_assets: bool,
    faults: Vec<String>,
    database_url: Option<String>,
    configure: impl FnOnce(&mut ServeArgs),
) -> (AppState, PathBuf) {
    let site_root = std::env::temp_dir().join(format!(
        "gpushare-router-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    let pkg = site_root.join("pkg");
    std::fs::create_dir_all(&pkg).expect("temp site root");
    if with_assets {
        for name in ["gpushare.js", "gpushare.wasm", "gpushare.css"] {
            std::fs::write(pkg.join(name), "/* built */").expect("asset");
        }
    }
    let mut args = ServeArgs {
        site_root: site_root.clone(),
        body_limit: 4096,
        ..ServeArgs::default()
    };
    args.fleet.emulator.faults = faults;
    configure(&mut args);
    let (source, clients) = connect_fleet(&args.fleet)
        .await
        .expect("the embedded emulator starts");
    let audit =
        gpushare::audit::SqlAuditLog::open(database_url.as_deref(), &site_root.join("data"))
            .await
            .expect("the audit log opens");
    (
        gpushare::startup::start(&args, source, clients, std::sync::Arc::new(audit))
            .expect("flags a console starts with"),
        site_root,
    )
}

/// A console on the embedded emulator, with the emulator itself, for tests that change the
/// fleet as someone outside the console would.
pub async fn test_app_with_emulator() -> (Router, emulator::Emulator) {
    test_app_with_emulator_every(15).await
}

/// As [`test_app_with_emulator`], with a fleet snapshot every `seconds`.
pub async fn test_app_with_emulator_every(seconds: u64) -> (Router, emulator::Emulator) {
    let site_root = std::env::temp_dir().join(format!(
        "gpushare-router-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(site_root.join("pkg")).expect("temp site root");
    let mut args = ServeArgs {
        site_root: site_root.clone(),
        body_limit: 4096,
        ..ServeArgs::default()
    };
    args.fleet.refresh_interval = seconds;
    let (source, clients, emulator) = gpushare::connect_fleet_with_emulator(&args.fleet)
        .await
        .expect("the embedded emulator starts");
    let audit = gpushare::audit::SqlAuditLog::open(None, &site_root.join("data"))
        .await
        .expect("the audit log opens");
    let state = gpushare::startup::start(&args, source, clients, std::sync::Arc::new(audit))
        .expect("flags a console starts with");
    (router(state), emulator.expect("the embedded emulator"))
}

/// Serves `app` on a loopback port, as `gpushare serve` does; its address.
pub async fn serve_on_loopback(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let _ = axum::serve(listener, service).await;
    });
    address
}

/// The audit records of `action`, newest first.
pub async fn audit_records(app: &Router, action: &str) -> Vec<serde_json::Value> {
    json(send(app, get(&format!("/api/v1/audit?action={action}"))).await)
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

pub fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub async fn send(app: &Router, request: Request<Body>) -> Response {
    app.clone()
        .oneshot(request)
        .await
        .expect("the router never fails")
}

pub fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

pub async fn bytes(response: Response) -> axum::body::Bytes {
    response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
}

pub async fn text(response: Response) -> String {
    String::from_utf8(bytes(response).await.to_vec()).expect("utf-8")
}

pub async fn json(response: Response) -> serde_json::Value {
    let body = text(response).await;
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("not JSON ({error}): {body}"))
}

/// Waits for the background refresher's first snapshot.
pub async fn fleet_json(app: &Router, query: &str) -> (StatusCode, serde_json::Value) {
    for _ in 0..100 {
        let response = send(app, get(&format!("/api/v1/fleet{query}"))).await;
        if response.status() != StatusCode::SERVICE_UNAVAILABLE {
            let status = response.status();
            return (status, json(response).await);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no fleet snapshot after 5 s");
}

pub fn gpus(body: &serde_json::Value) -> Vec<&serde_json::Value> {
    body["snapshot"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["instances"].as_array().into_iter().flatten())
        .flat_map(|i| i["gpus"].as_array().into_iter().flatten())
        .collect()
}

pub fn post_json(path: &str, body: &str) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// Polls a deployment until its result is known, at most `seconds`.
pub async fn deployment_result(app: &Router, id: &str, seconds: u64) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let state = json(send(app, get(&format!("/api/v1/deployments/{id}"))).await).await;
        if !state["result"].is_null() || started.elapsed().as_secs() > seconds {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The embedded emulator's `host:port`, as the console's status names it; `request` is the
/// status request (signed as the app's sign-in needs).
pub async fn emulator_address(app: &Router, request: Request<Body>) -> String {
    let status = json(send(app, request).await).await;
    status["fleet_source"]["endpoint"]
        .as_str()
        .unwrap_or_else(|| panic!("the emulator: {status}"))
        .trim_start_matches("http://")
        .to_string()
}

/// Sets the embedded emulator's faults at runtime (`PUT /_emulator/faults`).
pub async fn set_emulator_faults(app: &Router, faults: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let endpoint = emulator_address(
        app,
        Request::post("/api/console_status")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    let mut stream = tokio::net::TcpStream::connect(&endpoint)
        .await
        .expect("connects");
    let request = format!(
        "PUT /_emulator/faults HTTP/1.1\r\nHost: {endpoint}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{faults}",
        faults.len()
    );
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("answered");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// The calls the embedded emulator has received so far, by `service:Operation` (its own record,
/// `GET /_emulator/status`); `status` is the console status request, signed as the app needs.
pub async fn emulator_received(
    app: &Router,
    status: Request<Body>,
) -> std::collections::BTreeMap<String, u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let endpoint = emulator_address(app, status).await;
    let mut stream = tokio::net::TcpStream::connect(&endpoint)
        .await
        .expect("connects");
    let request =
        format!("GET /_emulator/status HTTP/1.1\r\nHost: {endpoint}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("answered");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let status: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("the emulator's status ({e}): {body}"));
    serde_json::from_value(status["received"].clone()).expect("counts by operation")
}
