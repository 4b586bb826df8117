//! Task definitions: validation and the fit check, families and revisions, one revision's
//! JSON and exports, comparisons, and edits checked and registered through the API.

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
};

use super::support::*;

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
    // ECS refuses (a client error, here throttling): nothing was registered, and the answer says
    // so with ECS's code. A server error is another matter: see `writes`.
    let (app, _) =
        test_app_with_faults(false, vec!["RegisterTaskDefinition:throttle=1".into()]).await;
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
        error.contains("ECS is throttling requests (RegisterTaskDefinition: ThrottlingException: Rate exceeded)"),
        "{answer}"
    );
    assert!(answer["registered"].is_null());
}
