//! A cluster's activity: every service's events merged and filtered, and tasks that stopped
//! with their reasons, on the page, in the API and in a rollout's watch.

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
    Router,
};

use super::support::*;

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
            answer.is_array() || answer["cluster"] == "inference-prod",
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
pub(super) async fn exiting_tasks_rolled_back(app: &Router) {
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

#[tokio::test]
async fn while_ecs_throttles_a_page_shows_its_last_answer_and_says_how_old_it_is() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let path = "/clusters/inference-prod/stopped-tasks";
    let page = text(send(&app, get(path)).await).await;
    assert!(page.contains(r#"data-testid="stopped-count""#), "{page}");
    assert!(
        !page.contains(r#"data-testid="stale-reads""#),
        "ECS answered: {page}"
    );
    // From now on ECS throttles every read of tasks, more than the SDK's retries absorb.
    set_emulator_faults(
        &app,
        r#"{"default": {}, "operations": {"ListTasks": {"throttle_rate": 1.0}, "DescribeTasks": {"throttle_rate": 1.0}}}"#,
    )
    .await;
    let response = send(&app, get(path)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page = text(response).await;
    assert!(
        page.contains(r#"data-testid="stopped-count""#),
        "the last answer is shown: {page}"
    );
    assert!(
        page.contains(r#"data-testid="stale-reads""#) && page.contains("showing data from"),
        "and said to be older: {page}"
    );
    // Once the read in the background has failed, the page says why.
    let mut said = String::new();
    for _ in 0..120 {
        let page = text(send(&app, get(path)).await).await;
        said = page
            .split(r#"data-testid="stale-reads""#)
            .nth(1)
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect();
        if said.contains("ECS is throttling requests") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(
        said.contains("ECS is throttling requests") && said.contains("Rate exceeded"),
        "{said}"
    );
    assert!(!said.contains("ServiceError"), "no Debug dump: {said}");
}

/// The filter forms' inputs carry what the URL asked for in the page the server renders, so that
/// someone without JavaScript sees (and submits again) what they typed, and a test does not race
/// the page's hydration for it.
#[tokio::test]
async fn filter_forms_render_what_the_url_asked_for_on_the_server() {
    let (app, _) = test_app(true).await;
    for (path, name, value) in [
        (
            "/audit?resource=inference-prod%2Fembed-api",
            "resource",
            "inference-prod/embed-api",
        ),
        (
            "/approvals?team=search&cluster=inference-prod",
            "team",
            "search",
        ),
        (
            "/approvals?team=search&cluster=inference-prod",
            "cluster",
            "inference-prod",
        ),
        (
            "/clusters/inference-prod/events?q=placement&since=2h",
            "q",
            "placement",
        ),
        (
            "/clusters/inference-prod/events?q=placement&since=2h",
            "since",
            "2h",
        ),
        (
            "/clusters/inference-prod/stopped-tasks?q=OutOfMemory&limit=50",
            "q",
            "OutOfMemory",
        ),
        (
            "/clusters/inference-prod/stopped-tasks?q=OutOfMemory&limit=50",
            "limit",
            "50",
        ),
    ] {
        let page = text(send(&app, get(path)).await).await;
        let input = page
            .split("<input")
            .skip(1)
            .map(|rest| rest.split('>').next().unwrap_or_default())
            .find(|tag| tag.contains(&format!(r#"name="{name}""#)))
            .unwrap_or_else(|| panic!("{path}: no input named {name}"));
        assert!(
            input.contains(&format!(r#"value="{value}""#)),
            "{path}: the input {name} is <input{input}>, without the value {value:?}"
        );
    }
}
