//! Router tests: the whole HTTP surface through `tower::ServiceExt::oneshot`, no socket.

use std::path::PathBuf;

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
    response::Response,
    Router,
};
use http_body_util::BodyExt;
use tower::ServiceExt;

use gpushare::{config::ServeArgs, connect_fleet, router, AppState};

mod support;
use support::Postgres;

/// A router on the embedded emulator's demo fleet, whose site root is a fresh temporary folder,
/// with or without the built assets.
async fn test_app(with_assets: bool) -> (Router, PathBuf) {
    test_app_with_faults(with_assets, Vec::new()).await
}

/// [`test_app`] with the emulator's `--fault` specs.
async fn test_app_with_faults(with_assets: bool, faults: Vec<String>) -> (Router, PathBuf) {
    test_app_on(with_assets, faults, None).await
}

/// [`test_app_with_faults`] with its audit log in the database at `database_url` (SQLite in the
/// site root without one).
async fn test_app_on(
    with_assets: bool,
    faults: Vec<String>,
    database_url: Option<String>,
) -> (Router, PathBuf) {
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
    let (source, clients) = connect_fleet(&args.fleet)
        .await
        .expect("the embedded emulator starts");
    let audit =
        gpushare::audit::SqlAuditLog::open(database_url.as_deref(), &site_root.join("data"))
            .await
            .expect("the audit log opens");
    (
        router(AppState::new(
            &args,
            source,
            clients,
            std::sync::Arc::new(audit),
        )),
        site_root,
    )
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

async fn send(app: &Router, request: Request<Body>) -> Response {
    app.clone()
        .oneshot(request)
        .await
        .expect("the router never fails")
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

async fn text(response: Response) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

async fn json(response: Response) -> serde_json::Value {
    let body = text(response).await;
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("not JSON ({error}): {body}"))
}

#[tokio::test]
async fn healthz_answers_ok_with_the_version() {
    let (app, _) = test_app(false).await;
    let response = send(&app, get("/healthz")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn readyz_fails_without_the_built_site_and_passes_with_it() {
    let (app, _) = test_app(false).await;
    let response = send(&app, get("/readyz")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = json(response).await;
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["checks"][0]["name"], "site_assets");
    assert!(body["checks"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .contains("gpushare.wasm"));

    let (app, _) = test_app(true).await;
    let response = send(&app, get("/readyz")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(json(response).await["status"], "ready");
}

#[tokio::test]
async fn metrics_count_requests_by_matched_route() {
    let (app, _) = test_app(false).await;
    send(&app, get("/healthz")).await;
    send(&app, get("/healthz")).await;
    send(&app, get("/no/such/page/12345")).await;
    let response = send(&app, get("/metrics")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap_or_default()
        .starts_with("text/plain"));
    let body = text(response).await;
    assert!(
        body.contains(
            r#"gpushare_http_requests_total{method="GET",route="/healthz",status="200"} 2"#
        ),
        "{body}"
    );
    assert!(
        body.contains(
            r#"gpushare_http_requests_total{method="GET",route="unmatched",status="404"} 1"#
        ),
        "{body}"
    );
    assert!(
        !body.contains("12345"),
        "raw paths must not become labels: {body}"
    );
    assert!(body.contains("# TYPE gpushare_http_request_duration_seconds histogram"));
}

#[tokio::test]
async fn unknown_pages_get_the_404_page() {
    let (app, _) = test_app(false).await;
    let response = send(&app, get("/no-such-page")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = text(response).await;
    assert!(body.contains("Page not found"), "{body}");
    assert!(body.contains("gpushare"), "the header is there too");
}

#[tokio::test]
async fn unknown_api_endpoints_get_a_json_404() {
    let (app, _) = test_app(false).await;
    let response = send(&app, get("/api/v1/nothing-here")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = json(response).await;
    assert_eq!(body["error"]["code"], "not_found");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("/api/v1/nothing-here"));
}

#[tokio::test]
async fn oversized_bodies_get_413_with_a_message() {
    let (app, _) = test_app(false).await;
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/console_status")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::CONTENT_LENGTH, "10000")
        .body(Body::from(vec![b'a'; 10_000]))
        .expect("request");
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body = json(response).await;
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("4096 bytes"));
}

#[tokio::test]
async fn pages_carry_security_headers_and_the_nonce_on_their_scripts() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
    let policy = headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("the policy names a nonce");

    let body = text(response).await;
    assert!(body.contains("Simulated fleet (demo)"), "{body}");
    assert!(
        body.contains("inference-prod"),
        "the clusters come from the snapshot read through the SDK: {body}"
    );
    let scripts = body.matches("<script").count();
    assert!(scripts > 0, "the page loads its hydration script");
    assert_eq!(
        body.matches(&format!("nonce=\"{nonce}\"")).count(),
        scripts,
        "every script carries this request's nonce: {body}"
    );

    let again = send(&app, get("/")).await;
    let other = again.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .expect("ascii");
    assert!(!other.contains(nonce), "each request gets a fresh nonce");
}

#[tokio::test]
async fn api_responses_carry_security_headers_too() {
    let (app, _) = test_app(false).await;
    let response = send(&app, get("/healthz")).await;
    assert_eq!(
        response.headers()[header::X_CONTENT_TYPE_OPTIONS],
        "nosniff"
    );
    assert!(response
        .headers()
        .contains_key(header::CONTENT_SECURITY_POLICY));
}

#[tokio::test]
async fn every_section_renders_on_the_server() {
    let (app, _) = test_app(false).await;
    for (path, heading) in [
        ("/", "Fleet"),
        ("/task-definitions", "Task definitions"),
        ("/deployments", "Deployments"),
        ("/audit", "Audit log"),
        ("/cost", "Cost"),
    ] {
        let response = send(&app, get(path)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let body = text(response).await;
        assert!(
            body.contains(&format!("<h1>{heading}</h1>")),
            "{path}: {body}"
        );
        assert!(
            body.contains(r#"aria-current="page""#),
            "{path} marks its nav link"
        );
    }
}

#[tokio::test]
async fn the_theme_cookie_is_rendered_into_the_page() {
    let (app, _) = test_app(false).await;
    let request = Request::get("/")
        .header(header::COOKIE, "other=1; gpushare-theme=dark")
        .body(Body::empty())
        .expect("request");
    let body = text(send(&app, request).await).await;
    assert!(body.contains(r#"data-theme="dark""#), "{body}");
    assert!(body.contains("Theme: dark"), "{body}");
}

#[tokio::test]
async fn the_status_server_function_answers() {
    let (app, _) = test_app(false).await;
    let request = Request::post("/api/console_status")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(Body::empty())
        .expect("request");
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["fleet_source"]["kind"], "emulator");
    assert_eq!(body["fleet_source"]["scenario"], "demo");
}

#[tokio::test]
async fn responses_are_compressed_when_asked() {
    let (app, _) = test_app(false).await;
    for encoding in ["gzip", "br"] {
        let request = Request::get("/")
            .header(header::ACCEPT_ENCODING, encoding)
            .body(Body::empty())
            .expect("request");
        let response = send(&app, request).await;
        assert_eq!(response.headers()[header::CONTENT_ENCODING], encoding);
    }
}

#[tokio::test]
async fn the_cluster_server_function_reads_the_emulated_fleet() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let request = Request::post("/api/list_clusters")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(Body::empty())
        .expect("request");
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    let names: Vec<&str> = body
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["batch-sim", "inference-prod", "ml-dev"]);
    let prod = &body[1];
    assert_eq!(prod["container_instances"], 12);
    assert_eq!(prod["services"], 7);
}

/// Waits for the background refresher's first snapshot.
async fn fleet_json(app: &Router, query: &str) -> (StatusCode, serde_json::Value) {
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

fn gpus(body: &serde_json::Value) -> Vec<&serde_json::Value> {
    body["snapshot"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["instances"].as_array().into_iter().flatten())
        .flat_map(|i| i["gpus"].as_array().into_iter().flatten())
        .collect()
}

#[tokio::test]
async fn the_fleet_api_serves_the_snapshot_with_filters() {
    let (app, _) = test_app(false).await;
    let (status, all) = fleet_json(&app, "").await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["stale"], false);
    assert!(all["age_seconds"].as_i64().is_some());
    let total = gpus(&all).len();
    assert!(total > 24, "{total}");

    let (_, dev) = fleet_json(&app, "?cluster=ml-dev").await;
    let clusters: Vec<&str> = dev["snapshot"]["clusters"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(clusters, ["ml-dev"]);

    let (_, dedicated) = fleet_json(&app, "?mode=DEDICATED").await;
    let found = gpus(&dedicated);
    assert!(!found.is_empty());
    assert!(found.iter().all(|g| g["mode"] == "DEDICATED"));

    let (_, research) = fleet_json(&app, "?team=research&instance_type=p4d.24xlarge").await;
    let found = gpus(&research);
    assert!(!found.is_empty());
    assert!(found.iter().all(|g| g["containers"]
        .as_array()
        .expect("list")
        .iter()
        .any(|c| c["team"] == "research")));
}

#[tokio::test]
async fn the_fleet_api_refuses_bad_filters_clearly() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let (status, body) = fleet_json(&app, "?mode=SHARED").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("NVIDIA_MPS"),
        "{body}"
    );
    let (status, body) = fleet_json(&app, "?colour=red").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("instance_type"),
        "{body}"
    );
    let (status, body) = fleet_json(&app, "?cluster=%3Cscript%3E").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("inference-prod"),
        "lists what exists: {body}"
    );
}

#[tokio::test]
async fn the_fleet_page_renders_one_cell_per_gpu_and_corrects_bad_parameters() {
    let (app, _) = test_app(false).await;
    let (_, all) = fleet_json(&app, "").await;
    let total = gpus(&all).len();
    let page = text(send(&app, get("/")).await).await;
    let heatmap = page
        .split_once(r#"class="hm""#)
        .map(|(_, rest)| rest.split_once("</svg>").map_or(rest, |(svg, _)| svg))
        .expect("the heatmap is rendered on the server");
    assert_eq!(heatmap.matches("<rect").count(), total);
    assert!(
        page.contains(&format!(
            r#"data-testid="gpu-count" class="value">{total}<"#
        )),
        "the summary counts the same GPUs"
    );

    let response = send(
        &app,
        get("/?cluster=%3Cscript%3Ealert(1)%3C%2Fscript%3E&mode=SHARED&colour=red"),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a corrected view, not an error"
    );
    let page = text(response).await;
    assert!(
        !page.contains("<script>alert(1)"),
        "untrusted text is escaped"
    );
    assert!(page.contains("There is no cluster"), "says so");
    assert!(
        page.contains("batch-sim, inference-prod, ml-dev"),
        "shows what exists"
    );
    assert!(page.contains(r#"Sharing mode "SHARED" does not exist"#));
    assert!(page.contains(r#"Colour mode "red" does not exist"#));
    let heatmap = page
        .split_once(r#"class="hm""#)
        .map(|(_, rest)| rest.split_once("</svg>").map_or(rest, |(svg, _)| svg))
        .expect("heatmap");
    assert_eq!(
        heatmap.matches("<rect").count(),
        total,
        "the whole fleet instead"
    );

    let dev = text(send(&app, get("/?cluster=ml-dev&colour=utilization")).await).await;
    let (_, expected) = fleet_json(&app, "?cluster=ml-dev").await;
    let svg = dev
        .split_once(r#"class="hm""#)
        .and_then(|(_, rest)| rest.split_once("</svg>"))
        .map(|(svg, _)| svg)
        .expect("heatmap");
    assert_eq!(svg.matches("<rect").count(), gpus(&expected).len());
    assert!(svg.contains(r#"data-colour="utilization""#));
    assert!(
        svg.contains(r#"class="nd "#),
        "the instance without the agent has no data"
    );
}

#[tokio::test]
async fn the_fleet_page_server_functions_answer() {
    let (app, _) = test_app(false).await;
    let (_, all) = fleet_json(&app, "").await;
    let form = |body: &str| {
        Request::post("/api/fleet_overview")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body.to_string()))
            .expect("request")
    };
    let response = send(&app, form("query[cluster]=nope&query[colour]=compute")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let overview = json(response).await;
    assert_eq!(
        overview["summary"]["gpus"].as_u64(),
        Some(gpus(&all).len() as u64)
    );
    assert_eq!(overview["applied"]["cluster"], serde_json::Value::Null);
    assert!(overview["notes"][0]
        .as_str()
        .unwrap_or_default()
        .contains("no cluster \"nope\""));

    let some_gpu = gpus(&all)
        .into_iter()
        .find(|g| g["containers"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("a busy GPU");
    let request = Request::post("/api/gpu_detail")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "key={}",
            some_gpu["uuid"].as_str().unwrap_or_default()
        )))
        .expect("request");
    let detail = json(send(&app, request).await).await;
    assert_eq!(detail["gpu"]["uuid"], some_gpu["uuid"]);
    assert!(!detail["gpu_services"].as_array().expect("list").is_empty());
}

#[tokio::test]
async fn fleet_events_stream_the_snapshot_version() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/fleet/events")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut body = response.into_body();
    let frame = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
        .await
        .expect("the first event comes at once")
        .expect("a frame")
        .expect("no error");
    let event = String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8");
    assert!(event.starts_with("event: message\ndata: {"), "{event}");
    assert!(
        event.contains(r#""version":"#) && event.contains(r#""stale":false"#),
        "{event}"
    );
}

fn post_json(path: &str, body: &str) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

#[tokio::test]
async fn task_definitions_are_validated_with_every_error_and_its_field() {
    let (app, _) = test_app(false).await;
    let response = send(
        &app,
        post_json(
            "/api/v1/task-definitions/validate",
            "{\"family\": \"a\",\n  \"cpu\": }",
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let message = json(response).await["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("line 2 column"), "{message}");

    let response = send(&app, post_json("/api/v1/task-definitions/validate", "[1]")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let broken = r#"{"family": "embed", "taskDefinitionArn": "arn:x", "containerDefinitions": [
        {"name": "a", "image": "i", "resourceRequirements": [{"type": "GPU", "value": "1",
         "sharingStrategy": {"nvidiaMps": {"memory": 8192}}}]},
        {"name": "b", "image": "i", "resourceRequirements": [{"type": "GPU",
         "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 150}}}]}]}"#;
    let answer =
        json(send(&app, post_json("/api/v1/task-definitions/validate", broken)).await).await;
    assert_eq!(answer["valid"], false);
    let paths: Vec<&str> = answer["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "taskDefinitionArn",
            "containerDefinitions[0].resourceRequirements[0].sharingStrategy",
            "containerDefinitions[1].resourceRequirements[0].sharingStrategy.nvidiaMps.maxComputePercent",
        ]
    );

    let good = r#"{"family": "embed", "containerDefinitions": [{"name": "a", "image": "i",
        "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}]}]}"#;
    let answer = json(send(&app, post_json("/api/v1/task-definitions/validate", good)).await).await;
    assert_eq!(answer["valid"], true, "{answer}");
    assert_eq!(answer["gpu"]["kind"], "mps");
    assert_eq!(answer["gpu"]["mps_memory_mib"], 8192);
}

#[tokio::test]
async fn the_fit_check_places_with_the_fleet_snapshot() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let task = |memory: u32| {
        format!(
            r#"{{"family": "embed", "containerDefinitions": [{{"name": "a", "image": "i",
            "resourceRequirements": [{{"type": "GPU", "sharingStrategy": {{"nvidiaMps": {{"memory": {memory}}}}}}}]}}]}}"#
        )
    };
    let response = send(
        &app,
        post_json(
            "/api/v1/task-definitions/fit-check?cluster=ml-dev",
            &task(8192),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let report = json(response).await;
    assert!(report["more_tasks"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(!report["placeable"].as_array().expect("list").is_empty());
    assert!(report["never"].is_null());

    let report = json(
        send(
            &app,
            post_json("/api/v1/task-definitions/fit-check", &task(200_000)),
        )
        .await,
    )
    .await;
    let never = report["never"].as_str().unwrap_or_default();
    assert!(never.contains("81079 MiB on p5.48xlarge"), "{report}");

    let response = send(
        &app,
        post_json("/api/v1/task-definitions/fit-check?cluster=nope", &task(1)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/fit-check?zone=a", &task(1)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/fit-check", &task(0)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let response = send(
        &app,
        post_json(
            "/api/v1/task-definitions/fit-check",
            r#"{"family": "web", "containerDefinitions": [{"name": "a", "image": "i"}]}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn task_definition_families_and_revisions_are_listed_with_their_gpu_settings() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let page = text(send(&app, get("/task-definitions")).await).await;
    assert!(page.contains(r#"data-testid="family-table""#), "{page}");
    assert!(page.contains(r#"href="/task-definitions/embed-api""#));
    assert!(page.contains("embed-api: MPS 4096 MiB (4.0 GiB), compute limit 50 %"));
    assert!(
        page.contains("inference-prod/embed-api"),
        "the services that run it"
    );

    let response = send(&app, get("/task-definitions/speech-align")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page = text(response).await;
    // The broken release that rolled back is revision 2, newest first.
    let first = page.find(r#"data-revision="2""#).expect("revision 2");
    let second = page.find(r#"data-revision="1""#).expect("revision 1");
    assert!(first < second, "newest first");
    assert!(
        page.contains(r#"data-testid="container-gpu">MPS"#),
        "{page}"
    );

    let response = send(&app, get("/task-definitions/no-such-family")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(text(response)
        .await
        .contains("There is no task definition family"));
}

#[tokio::test]
async fn the_task_definition_api_lists_families_and_revisions() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/task-definitions")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let families = json(response).await;
    let embed = families
        .as_array()
        .expect("a list")
        .iter()
        .find(|f| f["family"] == "embed-api")
        .expect("embed-api");
    assert_eq!(embed["team"], "search");
    assert_eq!(embed["services"][0], "inference-prod/embed-api");

    let response = send(&app, get("/api/v1/task-definitions/embed-api")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let family = json(response).await;
    let container = &family["revisions"][0]["containers"][0];
    assert_eq!(container["gpu"]["kind"], "mps");
    assert_eq!(container["gpu"]["memory_mib"], 4096);

    let response = send(&app, get("/api/v1/task-definitions/no-such-family")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(&app, get("/api/v1/task-definitions/bad%20name")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = json(response).await;
    assert!(body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("letters, digits"));
}

#[tokio::test]
async fn a_revision_comes_with_its_json_masked_and_its_exports() {
    let (app, _) = test_app(false).await;
    // A revision with a secret-looking variable, registered through the API.
    let source = json(send(&app, get("/api/v1/task-definitions/embed-api/1")).await).await;
    let mut task = source["task_definition"].clone();
    assert_eq!(task["family"], "embed-api");
    assert!(
        task.get("revision").is_none(),
        "only what RegisterTaskDefinition takes"
    );
    task["containerDefinitions"][0]["environment"] = serde_json::json!([{"name": "HF_TOKEN", "value": "hf_secret"}, {"name": "MODE", "value": "<b>fast</b>"}]);
    let body = serde_json::json!({"task_definition": task, "description": "a token"}).to_string();
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", &body),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let registered = json(response).await;
    assert_eq!(registered["registered"]["revision"], 2, "{registered}");
    assert_eq!(registered["registered"]["change"], "a token");
    // The audit log has the registration, with its diff masked.
    let log = json(send(&app, get("/api/v1/audit?action=register")).await).await;
    let record = &log[0];
    assert_eq!(record["outcome"], "registered", "{log}");
    assert_eq!(record["resource"], "embed-api");
    assert_eq!(record["from_revision"], "embed-api:1");
    assert_eq!(record["to_revision"], "embed-api:2");
    assert_eq!(record["actor"], "local");
    assert_eq!(record["description"], "a token");
    assert!(record["request_id"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));
    assert!(!log.to_string().contains("hf_secret"), "{log}");
    let response = send(&app, get("/api/v1/audit?format=csv&resource=embed")).await;
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );
    let csv = text(response).await;
    assert!(csv.starts_with("id,at,"));
    assert!(
        csv.contains(",register,embed-api,embed-api:1,embed-api:2,registered,"),
        "{csv}"
    );
    for path in [
        "/api/v1/audit?action=delete",
        "/api/v1/audit?format=xml",
        "/api/v1/audit?limit=0",
        "/api/v1/audit?who=me",
    ] {
        assert_eq!(
            send(&app, get(path)).await.status(),
            StatusCode::BAD_REQUEST,
            "{path}"
        );
    }
    let page = text(send(&app, get("/audit?action=register")).await).await;
    assert!(page.contains(r#"data-outcome="registered""#), "{page}");

    let answer = json(send(&app, get("/api/v1/task-definitions/embed-api/2")).await).await;
    assert_eq!(answer["masked_values"], 1);
    let environment = &answer["task_definition"]["containerDefinitions"][0]["environment"];
    assert_eq!(environment[0]["value"], "••••••••");
    assert!(!answer.to_string().contains("hf_secret"));
    assert!(answer["cloudformation"]
        .as_str()
        .unwrap_or_default()
        .contains("NvidiaMps:"));
    let revealed = json(
        send(
            &app,
            get("/api/v1/task-definitions/embed-api/2?reveal=true"),
        )
        .await,
    )
    .await;
    assert_eq!(
        revealed["task_definition"]["containerDefinitions"][0]["environment"][0]["value"],
        "hf_secret"
    );

    // The page masks too, and renders markup as text.
    let page = text(send(&app, get("/task-definitions/embed-api/2")).await).await;
    assert!(
        page.contains("••••••••") && !page.contains("hf_secret"),
        "{page}"
    );
    assert!(!page.contains("<b>fast</b>") && page.contains("&lt;b&gt;fast&lt;/b&gt;"));
    assert!(page.contains(r#"data-testid="export-cloudformation""#));
    let page = text(send(&app, get("/task-definitions/embed-api/2?reveal=true")).await).await;
    assert!(page.contains("hf_secret"));

    for (path, status) in [
        (
            "/api/v1/task-definitions/embed-api/99",
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/task-definitions/embed-api/zero",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/api/v1/task-definitions/embed-api/0",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/api/v1/task-definitions/embed-api/1?reveal=maybe",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/api/v1/task-definitions/embed-api/1?show=all",
            StatusCode::BAD_REQUEST,
        ),
        ("/api/v1/task-definitions/bad%21/1", StatusCode::BAD_REQUEST),
    ] {
        let response = send(&app, get(path)).await;
        assert_eq!(response.status(), status, "{path}");
        assert!(!json(response).await["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty());
    }
    let response = send(&app, get("/task-definitions/embed-api/99")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(&app, get("/task-definitions/embed-api/x")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    // A deregistered revision is still listed, marked inactive.
    let status = json(
        send(
            &app,
            Request::post("/api/console_status")
                .body(Body::empty())
                .expect("request"),
        )
        .await,
    )
    .await;
    let endpoint = status["fleet_source"]["endpoint"]
        .as_str()
        .expect("the emulator")
        .to_string();
    let clients = gpushare::aws::Clients::new(&gpushare::aws::Target::Emulator { endpoint }).await;
    clients
        .ecs
        .deregister_task_definition()
        .task_definition("embed-api:1")
        .send()
        .await
        .expect("deregistered");
    let family = json(send(&app, get("/api/v1/task-definitions/embed-api")).await).await;
    let revisions: Vec<(u64, bool)> = family["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| (r["revision"].as_u64().unwrap_or(0), r["active"] == true))
        .collect();
    assert_eq!(revisions, [(2, true), (1, false)]);
    let page = text(send(&app, get("/task-definitions/embed-api")).await).await;
    assert!(page.contains(r#"data-testid="inactive""#));
    assert!(page.contains("Edit revision 2"));
}

#[tokio::test]
async fn two_revisions_compare_with_gpu_settings_first() {
    let (app, _) = test_app(false).await;
    let response = send(
        &app,
        get("/api/v1/task-definitions/speech-align/compare?from=1&to=2"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let comparison = json(response).await;
    assert_eq!(comparison["from"]["revision"], 1);
    assert_eq!(comparison["to"]["revision"], 2);
    let diff = comparison["diff"].as_array().expect("a diff");
    assert!(!diff.is_empty(), "{comparison}");
    let first_plain = diff.iter().position(|e| e["gpu"] == false);
    let last_gpu = diff.iter().rposition(|e| e["gpu"] == true);
    if let (Some(plain), Some(gpu)) = (first_plain, last_gpu) {
        assert!(gpu < plain, "GPU requirements first: {comparison}");
    }

    let page = text(
        send(
            &app,
            get("/task-definitions/speech-align/compare?from=1&to=2"),
        )
        .await,
    )
    .await;
    assert!(page.contains(r#"data-testid="json-diff""#), "{page}");
    for (path, status) in [
        (
            "/api/v1/task-definitions/speech-align/compare?from=1",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/api/v1/task-definitions/speech-align/compare?from=1&to=x",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/api/v1/task-definitions/speech-align/compare?from=1&to=9",
            StatusCode::NOT_FOUND,
        ),
    ] {
        assert_eq!(send(&app, get(path)).await.status(), status, "{path}");
    }
    let response = send(
        &app,
        get("/task-definitions/speech-align/compare?from=1&to=x"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("not a revision number"));
}

#[tokio::test]
async fn an_edit_is_checked_then_registered_through_the_api() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 8192, "max_compute_percent": 50}}],
        "description": "more memory for batch 32", "cluster": "inference-prod"}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/check", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let check = json(response).await;
    assert_eq!(
        check["changes"][0]["after"], "MPS 8192 MiB (8.0 GiB), compute limit 50 %",
        "{check}"
    );
    assert_eq!(check["diff"][0]["gpu"], true);
    assert_eq!(check["fit"]["cluster"], "inference-prod");
    assert!(check["export_json"]
        .as_str()
        .unwrap_or_default()
        .contains("\"memory\": 8192"));
    assert!(check["cloudformation"]
        .as_str()
        .unwrap_or_default()
        .contains("Memory: 8192"));

    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let registered = json(response).await;
    assert_eq!(registered["registered"]["revision"], 2);
    assert_eq!(
        registered["registered"]["containers"][0]["gpu"]["memory_mib"],
        8192
    );
    // The same edit again, from the new revision, changes nothing.
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/2/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(json(response).await["errors"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("Nothing changes"));

    for (body, status, says) in [
        ("{", StatusCode::BAD_REQUEST, "not an edit"),
        (
            r#"{"edits": [], "task_definition": {}}"#,
            StatusCode::BAD_REQUEST,
            "not both",
        ),
        (
            r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": -1}}]}"#,
            StatusCode::BAD_REQUEST,
            "not an edit",
        ),
        (
            r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 0}}]}"#,
            StatusCode::BAD_REQUEST,
            "at least 1",
        ),
        (
            r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "whole", "count": 65}}]}"#,
            StatusCode::BAD_REQUEST,
            "1 to 64",
        ),
        (
            r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 1, "max_compute_percent": 101}}]}"#,
            StatusCode::BAD_REQUEST,
            "1 to 100",
        ),
        (
            r#"{"edits": [], "colour": "red"}"#,
            StatusCode::BAD_REQUEST,
            "unknown field",
        ),
        (
            r#"{"edits": [{"container": "nope", "gpu": {"kind": "none"}}]}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "no container",
        ),
        (
            r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 1}}], "cluster": "nope"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "no cluster",
        ),
        (
            r#"{"task_definition": {"family": "other", "containerDefinitions": [{"name": "a", "image": "i"}]}}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "keep the family",
        ),
        (
            r#"{"task_definition": {"family": "embed-api", "containerDefinitions": [{"name": "a", "image": "i", "gpus": 1}]}}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "no field 'gpus'",
        ),
    ] {
        let response = send(
            &app,
            post_json("/api/v1/task-definitions/embed-api/1/check", body),
        )
        .await;
        assert_eq!(response.status(), status, "{body}");
        let answer = text(response).await;
        assert!(answer.contains(says), "{body}: {answer}");
        assert!(
            !answer.contains("\"line\""),
            "places in the API's own text: {answer}"
        );
    }
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/9/check", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/nope/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_ecs_error_on_register_comes_back_with_its_code() {
    let (app, _) = test_app_with_faults(false, vec!["RegisterTaskDefinition:error=1".into()]).await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "whole", "count": 1}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let answer = json(response).await;
    let error = answer["ecs_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("ECS refused RegisterTaskDefinition: ServerException"),
        "{answer}"
    );
    assert!(answer["registered"].is_null());
}

#[tokio::test]
async fn services_are_listed_with_their_rollout_and_configuration() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/services")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let rows = json(response).await;
    let embed = rows
        .as_array()
        .expect("a list")
        .iter()
        .find(|r| r["cluster"] == "inference-prod" && r["service"]["name"] == "embed-api")
        .unwrap_or_else(|| panic!("embed-api: {rows}"));
    assert_eq!(embed["family"], "embed-api");
    assert_eq!(embed["revision"], 1);
    assert!(
        embed["service"]["desired"].as_u64().unwrap_or(0) > 0,
        "{embed}"
    );
    assert!(
        embed["service"]["maximum_percent"].as_u64().is_some(),
        "{embed}"
    );
    assert!(
        embed["gpu"][0]
            .as_str()
            .unwrap_or_default()
            .contains("MPS 4096 MiB"),
        "{embed}"
    );

    let one = json(send(&app, get("/api/v1/services?cluster=ml-dev")).await).await;
    assert!(one
        .as_array()
        .expect("list")
        .iter()
        .all(|r| r["cluster"] == "ml-dev"));
    assert_eq!(
        send(&app, get("/api/v1/services?cluster=nope"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&app, get("/api/v1/services?zone=a")).await.status(),
        StatusCode::BAD_REQUEST
    );

    let page = text(send(&app, get("/deployments")).await).await;
    assert!(page.contains(r#"data-testid="service-table""#), "{page}");
    assert!(page.contains(r#"href="/deployments/inference-prod/embed-api""#));
}

#[tokio::test]
async fn a_rollout_is_pre_checked_on_the_fleet() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let pre_check = "/api/v1/services/inference-prod/embed-api/pre-check";
    let response = send(&app, get(pre_check)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let check = json(response).await;
    assert_eq!(check["target"]["revision"], 1);
    assert!(check["comparison"].is_null(), "the running revision");
    assert_eq!(
        check["rollout"]["verdict"]["verdict"], "completes",
        "{check}"
    );

    // A revision that asks for more GPU memory than any GPU has never fits.
    let huge =
        r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 200000}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", huge),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let check = json(send(&app, get(&format!("{pre_check}?revision=2"))).await).await;
    assert_eq!(check["rollout"]["verdict"]["verdict"], "never", "{check}");
    assert_eq!(check["comparison"]["gpu"][0]["container"], "embed-api");
    let check = json(send(&app, get(&format!("{pre_check}?revision=embed-api:2"))).await).await;
    assert_eq!(check["target"]["revision"], 2);

    for (path, status) in [
        (
            format!("{pre_check}?revision=other:1"),
            StatusCode::BAD_REQUEST,
        ),
        (format!("{pre_check}?revision=0"), StatusCode::BAD_REQUEST),
        (format!("{pre_check}?revision=9"), StatusCode::NOT_FOUND),
        (format!("{pre_check}?rev=1"), StatusCode::BAD_REQUEST),
        (
            "/api/v1/services/inference-prod/nope/pre-check".to_string(),
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/services/nope/embed-api/pre-check".to_string(),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let response = send(&app, get(&path)).await;
        assert_eq!(response.status(), status, "{path}");
    }

    let page = text(
        send(
            &app,
            get("/deployments/inference-prod/embed-api?revision=2"),
        )
        .await,
    )
    .await;
    assert!(page.contains(r#"data-verdict="never""#), "{page}");
    let response = send(
        &app,
        get("/deployments/inference-prod/embed-api?revision=x"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

/// Polls a deployment until its result is known, at most `seconds`.
async fn deployment_result(app: &Router, id: &str, seconds: u64) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let state = json(send(app, get(&format!("/api/v1/deployments/{id}"))).await).await;
        if !state["result"].is_null() || started.elapsed().as_secs() > seconds {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_deploy_rolls_out_and_is_audited_and_a_second_at_once_is_refused() {
    let (app, _) = test_app(false).await;
    deploy_race_and_rollback(&app).await;
}

/// The deploy paths with their audit records, on a PostgreSQL audit log as several replicas
/// would share: a deploy that succeeds, the race, a rollback, a forced deploy the circuit
/// breaker rolls back, and one whose tasks exit.
#[tokio::test]
async fn deploys_and_rollbacks_are_audited_on_postgresql() {
    let server = Postgres::start();
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    deploy_race_and_rollback(&app).await;
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    unplaceable_deploy_rolled_back(&app).await;
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    exiting_tasks_rolled_back(&app).await;
    let log = json(send(&app, get("/api/v1/audit?resource=embed-api")).await).await;
    let outcomes: Vec<&str> = log
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["outcome"].as_str())
        .collect();
    for outcome in ["succeeded", "refused", "rolled_back"] {
        assert!(outcomes.contains(&outcome), "{outcome}: {log}");
    }
    assert!(!outcomes.contains(&"pending"), "{log}");
}

/// A deploy rolls out and is audited, a second at the same moment is refused, and a rollback
/// goes through the same checks.
async fn deploy_race_and_rollback(app: &Router) {
    let app = app.clone();
    fleet_json(&app, "").await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 40}}], "description": "cap at 40 %"}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let deploy = "/api/v1/services/inference-prod/embed-api/deploy";

    // The revision the user saw must be the one running.
    let response = send(
        &app,
        post_json(deploy, r#"{"revision": 2, "expected_revision": 7}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert!(text(response).await.contains("now runs embed-api:1"));

    // Two deploys at the same moment: exactly one is sent.
    let body = r#"{"revision": 2, "expected_revision": 1, "description": "roll out the cap"}"#;
    let (a, b) = tokio::join!(
        send(&app, post_json(deploy, body)),
        send(&app, post_json(deploy, body))
    );
    let mut statuses = [a.status(), b.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::ACCEPTED, StatusCode::CONFLICT]);
    let accepted = if a.status() == StatusCode::ACCEPTED {
        a
    } else {
        b
    };
    let answer = json(accepted).await;
    let id = answer["audit_id"]
        .as_str()
        .expect("an audit id")
        .to_string();
    assert!(answer["deployment_id"].as_str().is_some(), "{answer}");
    assert_eq!(answer["action"], "deploy");

    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
    assert_eq!(state["progress"], 1.0);
    // The new tasks, each on a GPU the fleet snapshot names.
    let tasks = state["tasks"].as_array().expect("tasks");
    assert_eq!(
        tasks.len() as u64,
        state["live"]["desired"].as_u64().expect("desired"),
        "{state}"
    );
    for task in tasks {
        assert_eq!(task["task_definition"], "embed-api:2");
        assert!(
            task["instance"]
                .as_str()
                .is_some_and(|i| i.starts_with("i-")),
            "{task}"
        );
        let gpu = &task["containers"][0]["gpus"][0];
        assert!(
            gpu["uuid"].as_str().is_some_and(|u| !u.is_empty()),
            "{task}"
        );
        assert!(gpu["index"].as_u64().is_some(), "{task}");
    }
    // The watch page and the event stream show the same end.
    let page = text(send(&app, get(&format!("/rollouts/{id}"))).await).await;
    assert!(page.contains(r#"data-result="succeeded""#), "{page}");
    let response = send(&app, get(&format!("/api/v1/deployments/{id}/events"))).await;
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let stream = text(response).await;
    assert!(
        stream.starts_with("data: {") && stream.contains(r#""result":"succeeded""#),
        "{stream}"
    );
    assert_eq!(
        send(&app, get("/rollouts/nope")).await.status(),
        StatusCode::NOT_FOUND
    );
    let log = json(send(&app, get("/api/v1/audit?action=deploy")).await).await;
    let records = log.as_array().expect("records");
    let sent: Vec<_> = records.iter().filter(|r| r["id"] == id.as_str()).collect();
    assert_eq!(sent[0]["outcome"], "succeeded", "{log}");
    assert_eq!(sent[0]["pre_check"], "completes");
    assert!(sent[0]["request_id"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    assert!(
        records.iter().any(|r| r["outcome"] == "refused"),
        "the loser is audited too: {log}"
    );

    // A rollback to revision 1 goes through the same checks.
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/rollback",
            r#"{"revision": 3, "expected_revision": 2}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/rollback",
            r#"{"revision": 1, "expected_revision": 2}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json(response).await;
    assert_eq!(answer["action"], "rollback");

    for (body, status) in [
        ("{", StatusCode::BAD_REQUEST),
        (r#"{"revision": 1}"#, StatusCode::BAD_REQUEST),
        (
            r#"{"revision": 1, "expected_revision": 1, "colour": 1}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"revision": 99, "expected_revision": 1}"#,
            StatusCode::NOT_FOUND,
        ),
        (
            r#"{"revision": "other:2", "expected_revision": 1}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"revision": "embed-api:99", "expected_revision": "embed-api:1"}"#,
            StatusCode::NOT_FOUND,
        ),
    ] {
        let response = send(&app, post_json(deploy, body)).await;
        assert_eq!(response.status(), status, "{body}");
    }
    assert_eq!(
        send(&app, get("/api/v1/deployments/nope")).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_deploy_that_cannot_place_is_refused_then_forced_and_reported_as_rolled_back() {
    let (app, _) = test_app(false).await;
    unplaceable_deploy_rolled_back(&app).await;
}

/// A deploy the pre-check refuses, forced, and reported as rolled back.
async fn unplaceable_deploy_rolled_back(app: &Router) {
    let app = app.clone();
    fleet_json(&app, "").await;
    let huge =
        r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 200000}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", huge),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let deploy = "/api/v1/services/inference-prod/embed-api/deploy";
    let response = send(
        &app,
        post_json(deploy, r#"{"revision": 2, "expected_revision": 1}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let refusal = json(response).await;
    assert_eq!(refusal["error"]["code"], "pre_check");
    assert_eq!(
        refusal["pre_check"]["verdict"]["verdict"], "never",
        "{refusal}"
    );

    let response = send(
        &app,
        post_json(
            deploy,
            r#"{"revision": 2, "expected_revision": 1, "force": true}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let id = json(response).await["audit_id"]
        .as_str()
        .expect("id")
        .to_string();
    let state = deployment_result(&app, &id, 120).await;
    assert_eq!(
        state["result"], "rolled_back",
        "reported as a failure: {state}"
    );
    assert!(
        state["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("circuit breaker"),
        "{state}"
    );
    let log = json(send(&app, get("/api/v1/audit?action=deploy")).await).await;
    assert_eq!(log[0]["outcome"], "rolled_back");
    assert!(log[0]["pre_check"]
        .as_str()
        .unwrap_or_default()
        .contains("deployed anyway"));
}

/// Sets the embedded emulator's faults at runtime (`PUT /_emulator/faults`).
async fn set_emulator_faults(app: &Router, faults: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let status = json(
        send(
            app,
            Request::post("/api/console_status")
                .body(Body::empty())
                .expect("request"),
        )
        .await,
    )
    .await;
    let endpoint = status["fleet_source"]["endpoint"]
        .as_str()
        .expect("the emulator")
        .trim_start_matches("http://")
        .to_string();
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

#[tokio::test]
async fn a_watch_keeps_going_while_ecs_throttles() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 30}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    // From now on most DescribeServices calls are throttled, more than the SDK's retries absorb.
    set_emulator_faults(
        &app,
        r#"{"default": {}, "operations": {"DescribeServices": {"throttle_rate": 0.7}}}"#,
    )
    .await;
    let mut sent = None;
    for _ in 0..20 {
        let response = send(
            &app,
            post_json(
                "/api/v1/services/inference-prod/embed-api/deploy",
                r#"{"revision": 2, "expected_revision": 1}"#,
            ),
        )
        .await;
        if response.status() == StatusCode::ACCEPTED {
            sent = Some(json(response).await);
            break;
        }
        assert_eq!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "throttled, not refused"
        );
    }
    let answer = sent.expect("one deploy got through the throttling");
    let id = answer["audit_id"].as_str().expect("id").to_string();
    let state = deployment_result(&app, &id, 120).await;
    assert_eq!(state["result"], "succeeded", "{state}");
}

#[tokio::test]
async fn a_clusters_events_merge_every_service_newest_first_and_filter() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/clusters/inference-prod/events")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let feed = json(response).await;
    let events = feed["events"].as_array().expect("events");
    assert!(!events.is_empty(), "{feed}");
    let services: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| e["service"].as_str())
        .collect();
    assert!(services.len() > 1, "every service's events: {feed}");
    let times: Vec<&str> = events.iter().filter_map(|e| e["at"].as_str()).collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    assert!(feed["services"]
        .as_array()
        .expect("services")
        .iter()
        .any(|s| s == "embed-api"));

    let one = json(
        send(
            &app,
            get("/api/v1/clusters/inference-prod/events?service=embed-api&kind=steady&limit=2"),
        )
        .await,
    )
    .await;
    let events = one["events"].as_array().expect("events");
    assert!(!events.is_empty() && events.len() <= 2, "{one}");
    assert!(events
        .iter()
        .all(|e| e["service"] == "embed-api" && e["kind"] == "steady"));
    let words = json(
        send(
            &app,
            get("/api/v1/clusters/inference-prod/events?q=STEADY%20STATE&since=1d"),
        )
        .await,
    )
    .await;
    assert!(words["events"]
        .as_array()
        .expect("events")
        .iter()
        .all(|e| e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("steady state")));

    for (query, status, says) in [
        (
            "/api/v1/clusters/nope/events",
            StatusCode::NOT_FOUND,
            "the clusters are",
        ),
        (
            "/api/v1/clusters/inference-prod/events?service=nope",
            StatusCode::NOT_FOUND,
            "embed-api",
        ),
        (
            "/api/v1/clusters/inference-prod/events?kind=bad",
            StatusCode::BAD_REQUEST,
            "problem, deployment, steady, other",
        ),
        (
            "/api/v1/clusters/inference-prod/events?since=3w",
            StatusCode::BAD_REQUEST,
            "30m, 6h or 2d",
        ),
        (
            "/api/v1/clusters/inference-prod/events?limit=0",
            StatusCode::BAD_REQUEST,
            "between 1 and 1000",
        ),
        (
            "/api/v1/clusters/inference-prod/events?colour=red",
            StatusCode::BAD_REQUEST,
            "service, kind, q, since and limit",
        ),
        (
            "/api/v1/clusters/inference-prod/stopped-tasks?stop_code=Crashed",
            StatusCode::BAD_REQUEST,
            "TaskFailedToStart",
        ),
        (
            "/api/v1/clusters/inference-prod/stopped-tasks?service=nope",
            StatusCode::NOT_FOUND,
            "embed-api",
        ),
    ] {
        let response = send(&app, get(query)).await;
        assert_eq!(response.status(), status, "{query}");
        let body = text(response).await;
        assert!(body.contains(says), "{query}: {body}");
    }

    // The pages' server functions, as the browser calls them with no filter at all.
    for (path, body) in [
        ("/api/cluster_events", "cluster=inference-prod"),
        ("/api/cluster_stopped_tasks", "cluster=inference-prod"),
        ("/api/list_audit", ""),
    ] {
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(body))
            .expect("request");
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let answer = json(response).await;
        assert!(
            answer.is_array() || answer["Ok"].is_object(),
            "{path}: {answer}"
        );
    }

    // The page: the merged feed, its filter, and clear errors with the right status.
    let response = send(&app, get("/clusters/inference-prod/events?kind=steady")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page = text(response).await;
    assert!(page.contains(r#"data-testid="events-table""#), "{page}");
    assert!(page.contains(r#"data-kind="steady""#));
    assert!(!page.contains(r#"data-kind="deployment""#));
    for (path, status) in [
        ("/clusters/nope/events", StatusCode::NOT_FOUND),
        (
            "/clusters/inference-prod/events?limit=many",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/clusters/inference-prod/events?since=forever",
            StatusCode::BAD_REQUEST,
        ),
        ("/clusters/nope/stopped-tasks", StatusCode::NOT_FOUND),
    ] {
        let response = send(&app, get(path)).await;
        assert_eq!(response.status(), status, "{path}");
        assert!(text(response).await.contains(r#"role="alert""#), "{path}");
    }
}

#[tokio::test]
async fn tasks_that_exit_stop_with_their_reasons_and_the_rollout_reports_them() {
    let (app, _) = test_app(false).await;
    exiting_tasks_rolled_back(&app).await;
}

/// A revision whose tasks exit: the breaker rolls it back, and the watch, the audit record and
/// the cluster's stopped tasks say why.
async fn exiting_tasks_rolled_back(app: &Router) {
    let app = app.clone();
    fleet_json(&app, "").await;
    // A revision whose container exits as soon as it starts.
    let revision = json(send(&app, get("/api/v1/task-definitions/embed-api/1")).await).await;
    let mut td = revision["task_definition"].clone();
    td["containerDefinitions"][0]["environment"] =
        serde_json::json!([{"name": "EMULATOR_EXIT_CODE", "value": "3"}]);
    let body = serde_json::json!({"task_definition": td}).to_string();
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", &body),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        text(response).await
    );
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/deploy",
            r#"{"revision": 2, "expected_revision": 1}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let id = json(response).await["audit_id"]
        .as_str()
        .expect("id")
        .to_string();
    let state = deployment_result(&app, &id, 120).await;
    assert_eq!(state["result"], "rolled_back", "{state}");
    let stopped = state["stopped_tasks"].as_array().expect("stopped tasks");
    assert!(stopped.len() >= 3, "the breaker's failures: {state}");
    assert!(
        stopped
            .iter()
            .all(|t| t["task_definition"] == "embed-api:2" && t["stop_code"].as_str().is_some()),
        "{state}"
    );
    // The breaker's failures exited; a task still starting at the rollback was stopped by it.
    assert!(
        stopped
            .iter()
            .filter(|t| t["containers"][0]["exit_code"] == 3)
            .count()
            >= 3,
        "{state}"
    );
    let detail = state["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("exited 3"), "{detail}");
    let page = text(send(&app, get(&format!("/rollouts/{id}"))).await).await;
    assert!(page.contains(r#"data-testid="watch-stopped""#), "{page}");
    let log = json(send(&app, get("/api/v1/audit?action=deploy")).await).await;
    let record = log
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["id"] == id.as_str())
        .expect("the deploy's record");
    assert_eq!(record["outcome"], "rolled_back");
    assert!(record["detail"]
        .as_str()
        .unwrap_or_default()
        .contains("exited 3"));

    // The cluster's stopped tasks show them, filtered by service and stop code.
    let all = json(
        send(
            &app,
            get("/api/v1/clusters/inference-prod/stopped-tasks?service=embed-api"),
        )
        .await,
    )
    .await;
    let tasks = all["tasks"].as_array().expect("tasks");
    assert!(tasks.len() >= stopped.len(), "{all}");
    let code = stopped
        .iter()
        .find(|t| t["containers"][0]["exit_code"] == 3)
        .and_then(|t| t["stop_code"].as_str())
        .expect("a failure's code");
    let coded = json(
        send(
            &app,
            get(&format!(
                "/api/v1/clusters/inference-prod/stopped-tasks?stop_code={code}&q=EXITED"
            )),
        )
        .await,
    )
    .await;
    assert!(!coded["tasks"].as_array().expect("tasks").is_empty());
    assert!(coded["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .all(|t| t["stop_code"] == code));
    let page = text(
        send(
            &app,
            get("/clusters/inference-prod/stopped-tasks?service=embed-api"),
        )
        .await,
    )
    .await;
    assert!(
        page.contains(&format!(r#"data-stop-code="{code}""#)),
        "{page}"
    );
    assert!(page.contains("exit 3"));
}
