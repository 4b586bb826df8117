//! The edge of the server: health and readiness, metrics, unknown paths, body limits,
//! security headers, compression, every section rendered, and the console's own status.

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};

use super::support::*;

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
async fn metrics_say_what_reading_aws_costs() {
    // Every DescribeTasks is throttled: the refresher's calls are counted by outcome, and the
    // SDK's retries too.
    let (app, _) = test_app_with_faults(false, vec!["DescribeTasks:throttle=1".into()]).await;
    let mut body = String::new();
    for _ in 0..200 {
        body = text(send(&app, get("/metrics")).await).await;
        // The SDK retries a throttled call after a back-off of up to a few seconds.
        if body.contains(r#"gpushare_aws_retries_total{service="ecs",operation="DescribeTasks"}"#) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for wanted in [
        r#"gpushare_aws_calls_total{service="ecs",operation="ListClusters",outcome="ok"}"#,
        r#"gpushare_aws_calls_total{service="ecs",operation="DescribeTasks",outcome="throttled"}"#,
        r#"gpushare_aws_retries_total{service="ecs",operation="DescribeTasks"}"#,
        "# TYPE gpushare_fleet_refresh_duration_seconds gauge",
        "gpushare_ecs_api_share_ratio 0.25",
        r#"gpushare_fleet_refreshes_total{outcome="failed"}"#,
        "gpushare_fleet_full_read_gpus_differing_total 0",
    ] {
        assert!(body.contains(wanted), "{wanted} in {body}");
    }
    assert!(
        !body.contains("gpushare_fleet_snapshot_age_seconds"),
        "no snapshot, no age: {body}"
    );
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

/// A page is rendered while its body is read, on whichever worker thread is free. Every page
/// must render and clean up whichever thread reads each part of it: here each part is read on a
/// thread of its own. (A component holding a single-thread value panicked the server when its
/// page was dropped on another thread, and the browser got an empty answer.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::unwrap_used)]
async fn every_page_renders_when_its_body_is_read_across_threads() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    for path in [
        "/",
        "/task-definitions",
        "/task-definitions/embed-api",
        "/task-definitions/embed-api/1",
        "/task-definitions/speech-align/compare?from=1&to=2",
        "/deployments",
        "/deployments/inference-prod/embed-api",
        "/clusters/inference-prod/events",
        "/clusters/inference-prod/stopped-tasks",
        "/audit",
        "/cost",
        "/cost?period=now",
        "/cost/plan",
        "/approvals",
    ] {
        let response = send(&app, get(path)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let mut body = response.into_body();
        let mut page = Vec::new();
        loop {
            let handle = tokio::runtime::Handle::current();
            let (rest, frame) = std::thread::spawn(move || {
                let frame = handle.block_on(http_body_util::BodyExt::frame(&mut body));
                (body, frame)
            })
            .join()
            .unwrap_or_else(|_| panic!("{path}: reading a part on another thread panicked"));
            body = rest;
            match frame {
                None => break,
                Some(frame) => {
                    if let Ok(data) = frame.unwrap().into_data() {
                        page.extend_from_slice(&data);
                    }
                }
            }
        }
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("</html>"), "{path}: the whole page");
    }
}
