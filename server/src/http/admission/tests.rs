use super::*;
use axum::{middleware, routing::get, Router};
use tower::ServiceExt as _;

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn reads_past_the_bound_wait_and_past_the_queue_are_refused() {
    let admission = Arc::new(Lane::new("own", 2, 1, LONG));
    let first = admission.enter().await.expect("a free turn");
    let _second = admission.enter().await.expect("a free turn");

    let waiting = tokio::spawn({
        let admission = admission.clone();
        async move { admission.enter().await.map(drop) }
    });
    // The third read waits for a turn; nothing frees one yet.
    while admission.load().waiting == 0 {
        tokio::task::yield_now().await;
    }
    let refused = admission.enter().await.expect_err("the queue is full");
    assert_eq!(
        refused,
        Refusal::QueueFull {
            in_flight: 2,
            waiting: 1
        }
    );
    assert!(
        !waiting.is_finished(),
        "the waiting read got in with no turn free"
    );

    drop(first);
    waiting
        .await
        .expect("the waiting task ran")
        .expect("the waiting read got the freed turn");
    let load = admission.load();
    assert_eq!((load.in_flight, load.waiting, load.refused), (1, 0, 1));
}

#[tokio::test]
async fn a_read_that_waits_too_long_is_refused_and_leaves_the_queue() {
    let admission = Lane::new("own", 1, 8, Duration::from_millis(50));
    let _turn = admission.enter().await.expect("a free turn");
    let refused = admission.enter().await.expect_err("no turn came");
    assert_eq!(
        refused,
        Refusal::WaitedTooLong {
            waited: Duration::from_millis(50)
        }
    );
    assert_eq!(admission.load().waiting, 0);
    assert!(
        refused.message().contains("try again in 1 s"),
        "{}",
        refused.message()
    );
}

#[tokio::test]
async fn a_client_that_hangs_up_while_waiting_leaves_the_queue() {
    let admission = Lane::new("own", 1, 1, LONG);
    let _turn = admission.enter().await.expect("a free turn");
    let gone = tokio::time::timeout(Duration::from_millis(20), admission.enter()).await;
    assert!(gone.is_err(), "the read got in with no turn free");
    // Its place in the queue is free again: the next read waits instead of being refused.
    assert_eq!(admission.load().waiting, 0);
    let next = tokio::time::timeout(Duration::from_millis(20), admission.enter()).await;
    assert!(
        next.is_err(),
        "the next read should wait, not be refused: {next:?}"
    );
}

#[test]
fn pages_and_api_reads_are_bounded_and_the_rest_is_not() {
    let bounded = [
        (Method::GET, Some("/"), "/"),
        (
            Method::GET,
            Some("/services/{cluster}/{service}"),
            "/services/a/b",
        ),
        (Method::HEAD, Some("/api/v1/cost"), "/api/v1/cost"),
        (
            Method::GET,
            Some("/api/v1/clusters/{cluster}/events"),
            "/api/v1/clusters/a/events",
        ),
        (Method::GET, None, "/no-such-page"),
    ];
    for (method, route, path) in bounded {
        assert!(is_bounded(&method, route, path), "{method} {path}");
    }
    let open = [
        (
            Method::POST,
            Some("/api/v1/services/{cluster}/{service}/deploy"),
            "/api/v1/services/a/b/deploy",
        ),
        (Method::POST, None, "/api/fleet_page"),
        (
            Method::GET,
            Some("/api/v1/fleet/events"),
            "/api/v1/fleet/events",
        ),
        (
            Method::GET,
            Some("/api/v1/deployments/{id}/events"),
            "/api/v1/deployments/7/events",
        ),
        (Method::GET, Some("/healthz"), "/healthz"),
        (Method::GET, Some("/readyz"), "/readyz"),
        (Method::GET, Some("/metrics"), "/metrics"),
        (Method::GET, None, "/pkg/gpushare.wasm"),
        (Method::GET, Some("/auth/login"), "/auth/login"),
        (Method::GET, Some("/signed-out"), "/signed-out"),
        (Method::GET, None, "/favicon.ico"),
    ];
    for (method, route, path) in open {
        assert!(!is_bounded(&method, route, path), "{method} {path}");
    }
}

fn router(admission: Arc<Admission>) -> Router {
    Router::new()
        .route("/page", get(|| async { Html("<main>the page</main>") }))
        .route(
            "/api/v1/cost",
            get(|| async { Json(serde_json::json!({"ok": true})) }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/api/v1/task-definitions",
            get(|| async { Json(serde_json::json!([])) }),
        )
        .layer(middleware::from_fn_with_state(admission, admit))
}

fn get_request(path: &str, accept: &str) -> Request {
    Request::builder()
        .uri(path)
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .expect("a request")
}

/// The router's answer to a `GET` of `path` accepting `accept`.
async fn ask(app: &Router, path: &str, accept: &str) -> Response {
    app.clone()
        .oneshot(get_request(path, accept))
        .await
        .expect("an answer")
}

/// A whole answer's body: reading it sends the answer, which frees its turn.
async fn body(response: Response) -> axum::body::Bytes {
    response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes()
}

#[tokio::test]
async fn the_turn_is_held_until_the_answer_is_sent_and_a_refusal_says_why() {
    let admission = Arc::new(Admission::new(1, 1, 0));
    let app = router(admission.clone());
    let admission = &admission.own;

    // An answer not yet read by its client still holds its turn.
    let unsent = ask(&app, "/page", "text/html").await;
    assert_eq!(unsent.status(), StatusCode::OK);
    assert_eq!(admission.load().in_flight, 1);

    let refused = ask(&app, "/api/v1/cost", "*/*").await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
    let bytes = body(refused).await;
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(json["error"]["code"], "busy");
    assert!(json["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("the console is busy") && m.contains("Nothing was changed")));

    let page = ask(&app, "/page", "text/html,application/xhtml+xml").await;
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    let bytes = body(page).await;
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("<main") && text.contains("http-equiv=\"refresh\""),
        "{text}"
    );

    // A read that may ask ECS has a lane of its own: a full first lane does not hold it back.
    let aws = ask(&app, "/api/v1/task-definitions", "*/*").await;
    assert_eq!(aws.status(), StatusCode::OK);

    // Health is never refused for load.
    let health = ask(&app, "/healthz", "*/*").await;
    assert_eq!(health.status(), StatusCode::OK);

    // Once the first answer is sent, its turn is free.
    let sent = body(unsent).await;
    assert_eq!(&sent[..], b"<main>the page</main>");
    assert_eq!(admission.load().in_flight, 0);
    let next = ask(&app, "/api/v1/cost", "*/*").await;
    assert_eq!(next.status(), StatusCode::OK);
}

#[test]
fn reads_that_may_ask_ecs_go_in_their_own_lane() {
    let admission = Admission::new(1, 1, 0);
    let lane = |path: &str| std::ptr::eq(admission.lane(path), &admission.aws);
    for path in [
        "/task-definitions",
        "/task-definitions/svc-00/3",
        "/api/v1/task-definitions/svc-00",
        "/deployments",
        "/deployments/prod-a/svc-00",
        "/api/v1/services",
        "/api/v1/deployments/12",
        "/clusters/prod-a/events",
        "/api/v1/clusters/prod-a/stopped-tasks",
        "/rollouts/7",
        "/api/v1/capacity-providers",
    ] {
        assert!(lane(path), "{path} may ask ECS");
    }
    for path in [
        "/",
        "/api/v1/fleet",
        "/cost",
        "/api/v1/cost/plan",
        "/audit",
        "/api/v1/budgets",
        "/approvals/3",
    ] {
        assert!(!lane(path), "{path} is answered from the console's state");
    }
}

#[test]
fn refusals_are_logged_a_line_a_while_with_their_count() {
    let lane = Lane::new("own", 1, 0, LONG);
    assert_eq!(lane.due_for_log(1), Some(1), "the first refusal is logged");
    assert_eq!(lane.due_for_log(2), None);
    assert_eq!(lane.due_for_log(3), None);
    // As if the last line were older than the interval.
    lane.logged.lock().expect("not poisoned").0 =
        std::time::Instant::now().checked_sub(LOG_EVERY + Duration::from_secs(1));
    assert_eq!(
        lane.due_for_log(7),
        Some(6),
        "the refusals since the last line"
    );
    assert_eq!(lane.due_for_log(8), None);
}
