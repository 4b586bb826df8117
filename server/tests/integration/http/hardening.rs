//! What an anonymous neighbour can make the console do, and what it must not cost: readiness
//! probes that would become AWS calls, revisions that do not exist asked for again and again,
//! unknown open paths that would show the app's shell, connections that never send their
//! headers, a panic that would drop the connection, and more reads than the console can answer.

use std::time::Duration;

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
    routing::get as get_route,
    Router,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::*;

fn status_request() -> Request<Body> {
    Request::post("/api/console_status")
        .body(Body::empty())
        .expect("request")
}

#[tokio::test]
async fn a_flood_of_readiness_probes_asks_aws_once_a_period() {
    let (app, _) = test_app(true).await;
    fleet_json(&app, "").await;
    let before = emulator_received(&app, status_request()).await;
    let started = std::time::Instant::now();
    let probes = (0..1000).map(|_| {
        let app = app.clone();
        async move { send(&app, get("/readyz")).await.status() }
    });
    let answers = futures::future::join_all(probes).await;
    let seconds = started.elapsed().as_secs_f64();
    assert!(answers.iter().all(|s| *s == StatusCode::OK), "{answers:?}");
    let after = emulator_received(&app, status_request()).await;
    let delta = |operation: &str| {
        after.get(operation).copied().unwrap_or(0) - before.get(operation).copied().unwrap_or(0)
    };
    // One probe a cache period (5 s), however many ask.
    let periods = 1 + (seconds / 5.0).floor() as u64;
    assert!(
        delta("ecs:ListClusters") <= periods,
        "{} ListClusters in {seconds:.1} s",
        delta("ecs:ListClusters")
    );
    assert!(
        delta("cloudwatch:ListMetrics") <= periods,
        "{} ListMetrics in {seconds:.1} s",
        delta("cloudwatch:ListMetrics")
    );
}

#[tokio::test]
async fn a_revision_that_does_not_exist_is_asked_of_ecs_once_a_while() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let before = emulator_received(&app, status_request()).await;
    for _ in 0..50 {
        let response = send(&app, get("/api/v1/task-definitions/embed-api/999")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let after = emulator_received(&app, status_request()).await;
    let described = after
        .get("ecs:DescribeTaskDefinition")
        .copied()
        .unwrap_or(0)
        - before
            .get("ecs:DescribeTaskDefinition")
            .copied()
            .unwrap_or(0);
    assert!(
        described <= 1,
        "{described} DescribeTaskDefinition for one missing revision"
    );
}

#[tokio::test]
async fn unknown_open_paths_get_a_bare_404_and_not_the_apps_shell() {
    let (app, _) = test_app(true).await;
    fleet_json(&app, "").await;
    let endpoint = emulator_address(&app, status_request()).await;
    for path in [
        "/auth/anything",
        "/auth/login/../../etc",
        "/pkg/not-built.js",
        "/pkg/../gpushare.db",
    ] {
        let response = send(
            &app,
            Request::get(path)
                .header(header::ACCEPT, "text/html")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let body = text(response).await;
        assert_eq!(body.trim(), "Not found", "{path}: {body}");
        for leak in [endpoint.as_str(), env!("CARGO_PKG_VERSION"), "<html"] {
            assert!(!body.contains(leak), "{path} shows {leak}: {body}");
        }
    }
    // The built files are still served.
    let script = send(&app, get("/pkg/gpushare.js")).await;
    assert_eq!(script.status(), StatusCode::OK);
    assert_eq!(text(script).await, "/* built */");
}

/// A console served on a loopback port as `gpushare serve` serves it, whose clients must send
/// their headers within `timeout`.
async fn served(app: Router, timeout: Duration) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(gpushare::http::serve::serve(
        listener,
        app,
        timeout,
        std::future::pending(),
    ));
    address
}

/// Sends `request` over a new connection and reads the answer until the server closes it.
async fn exchange(address: std::net::SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    let (app, _) = test_app(false).await;
    let address = served(app, Duration::from_secs(1)).await;
    let mut slow = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1")
        .await
        .expect("sent");
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the connection is still open after 10 s");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed after {:?}",
        started.elapsed()
    );
    // A prompt client is served as before, on the same server.
    let answer = exchange(
        address,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_panic_while_answering_is_a_500_with_an_incident_and_the_server_keeps_serving() {
    let (state, _) = test_state(false, Vec::new(), None, |_| {}).await;
    // The console's own layers around a route that panics, as a bug in a handler or in a page's
    // render would.
    let routes = Router::new()
        .route(
            "/boom",
            get_route(|| async {
                if std::hint::black_box(true) {
                    panic!("a bug in a handler");
                }
                "never"
            }),
        )
        .route("/fine", get_route(|| async { "fine" }));
    let app = gpushare::http::with_layers(routes, &state).with_state(state);
    let address = served(app, Duration::from_secs(10)).await;
    for accept in ["text/html", "application/json"] {
        let answer = exchange(
            address,
            &format!("GET /boom HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 500"), "{accept}: {answer:?}");
        assert!(answer.contains("incident"), "{accept}: {answer}");
        assert!(
            !answer.contains("a bug in a handler"),
            "the panic's text stays in the log: {answer}"
        );
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("content-security-policy"),
            "the console's headers are still set: {answer}"
        );
    }
    let answer = exchange(
        address,
        "GET /fine HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn reads_past_the_bound_are_refused_with_retry_after_and_writes_health_and_metrics_are_not() {
    let (app, _) = test_app_configured(false, Vec::new(), None, |args| {
        args.max_reads_in_flight = Some(1);
        args.max_aws_reads_in_flight = Some(1);
        args.max_reads_waiting = 0;
    })
    .await;
    // Answers their clients have not read yet hold the one turn of each lane: the reads
    // answered from the console's state, and those that may ask ECS first.
    let held = send(&app, get("/api/v1/budgets")).await;
    assert_eq!(held.status(), StatusCode::OK);
    let held_aws = send(&app, get("/api/v1/task-definitions")).await;
    assert_eq!(held_aws.status(), StatusCode::OK);

    let refused = send(&app, get("/api/v1/cost")).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
    let body = json(refused).await;
    assert_eq!(body["error"]["code"], "busy", "{body}");
    let page = send(
        &app,
        Request::get("/task-definitions")
            .header(header::ACCEPT, "text/html")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(text(page).await.contains("The console is busy"));

    // A check (a POST) and health are answered while reads are refused.
    let check = send(
        &app,
        post_json("/api/v1/task-definitions/validate", "{\"family\": 1}"),
    )
    .await;
    assert_eq!(check.status(), StatusCode::OK, "the check's own answer");
    let check = json(check).await;
    assert!(check.get("error").is_none(), "{check}");
    assert_eq!(send(&app, get("/healthz")).await.status(), StatusCode::OK);
    let metrics = text(send(&app, get("/metrics")).await).await;
    for line in [
        "gpushare_reads_in_flight{lane=\"own\"} 1",
        "gpushare_reads_in_flight{lane=\"aws\"} 1",
        "gpushare_reads_in_flight_limit{lane=\"own\"} 1",
        "gpushare_reads_in_flight_limit{lane=\"aws\"} 1",
        "gpushare_reads_waiting_limit{lane=\"own\"} 0",
        "gpushare_reads_refused_total{lane=\"own\"} 1",
        "gpushare_reads_refused_total{lane=\"aws\"} 1",
        "gpushare_http_requests_total{method=\"GET\",route=\"/api/v1/cost\",status=\"503\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} not in:\n{metrics}");
    }

    // Once the held answer is read, reads are answered again.
    drop(bytes(held).await);
    drop(bytes(held_aws).await);
    assert_eq!(
        send(&app, get("/api/v1/cost")).await.status(),
        StatusCode::OK
    );
}
