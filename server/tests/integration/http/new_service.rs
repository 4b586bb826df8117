//! A new service through the JSON API against the emulator: ECS's CreateService request checked
//! (every refusal names its field, before anything is created), previewed as CLI input and
//! CloudFormation, then created — the emulator receiving exactly the request previewed — and its
//! first deployment watched to steady state, audited as `create`.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::support::*;

const CHECK: &str = "/api/v1/clusters/inference-prod/services/check";
const CREATE: &str = "/api/v1/clusters/inference-prod/services";

fn body(extra: Value) -> String {
    let mut body = json!({
        "serviceName": "embed-canary",
        "taskDefinition": "embed-api:1",
        "desiredCount": 2,
        "launchType": "EC2",
        "tags": [{"key": "team", "value": "search"}],
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            if value.is_null() {
                body.remove(key);
            } else {
                body.insert(key.clone(), value.clone());
            }
        }
    }
    body.to_string()
}

/// Each bad request is a 400 that names the field, and nothing reaches ECS.
#[tokio::test]
async fn a_bad_create_service_request_is_refused_by_field_before_anything_is_created() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let cases = [
        (body(json!({"gpuCount": 1})), "gpuCount"),
        (body(json!({"desiredCount": "two"})), "line 1"),
        (
            body(json!({"serviceName": "embed-api"})),
            "already has a service embed-api",
        ),
        (body(json!({"serviceName": "embed.v2"})), "serviceName"),
        (body(json!({"desiredCount": 9000})), "desiredCount"),
        (body(json!({"cluster": "batch-sim"})), "cluster"),
        (
            body(json!({"taskDefinition": "no-such-family"})),
            "taskDefinition",
        ),
        (
            body(
                json!({"launchType": null, "capacityProviderStrategy": [{"capacityProvider": "batch-sim-gpu-asg", "weight": 1}]}),
            ),
            "has no capacity provider batch-sim-gpu-asg",
        ),
        (
            body(
                json!({"launchType": null, "capacityProviderStrategy": [{"capacityProvider": "FARGATE", "weight": 1}]}),
            ),
            "capacityProviderStrategy[0]",
        ),
        (
            body(
                json!({"launchType": null, "capacityProviderStrategy": [{"capacityProvider": "gpu-sharing-mi", "weight": 1}]}),
            ),
            "MANAGED_INSTANCES",
        ),
        (body(json!({"launchType": "FARGATE"})), "launchType"),
        (
            body(
                json!({"networkConfiguration": {"awsvpcConfiguration": {"subnets": ["subnet-1"]}}}),
            ),
            "networkConfiguration",
        ),
        (body(json!({"tags": null})), "give the team tag"),
        ("[1, 2]".to_string(), "JSON object"),
    ];
    for (request, expected) in cases {
        for path in [CHECK, CREATE] {
            let response = send(&app, post_json(path, &request)).await;
            let status = response.status();
            let text = text(response).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {request}: {text}");
            assert!(text.contains(expected), "{path} {request}: {text}");
        }
    }
    assert!(
        emulator
            .writes()
            .iter()
            .all(|w| w.operation != "CreateService"),
        "nothing was sent"
    );
    assert!(audit_records(&app, "create").await.is_empty());
}

/// The request checked is the request sent: the emulator's own record of CreateService equals
/// the check's `create` (with the circuit breaker the console adds), and the service reaches a
/// steady state, watched.
#[tokio::test]
async fn a_new_service_is_created_as_previewed_and_watched_to_steady_state() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let request = body(json!({}));
    let check = json(send(&app, post_json(CHECK, &request)).await).await;
    assert_eq!(check["service"], "embed-canary", "{check}");
    assert_eq!(check["team"], "search");
    assert_eq!(
        check["create"]["deploymentConfiguration"]["deploymentCircuitBreaker"],
        json!({"enable": true, "rollback": true}),
        "{check}"
    );
    assert_eq!(
        check["rollout"]["verdict"]["verdict"], "completes",
        "{check}"
    );
    let cli = check["cli"].as_str().unwrap_or_default();
    assert!(
        cli.starts_with("aws ecs create-service --cli-input-json '"),
        "{cli}"
    );
    assert!(check["cloudformation"]
        .as_str()
        .is_some_and(|y| y.contains("Type: AWS::ECS::Service")
            && y.contains("ServiceName: \"embed-canary\"")));

    let response = send(
        &app,
        post_json(
            &format!("{CREATE}?description=canary%20of%20embed"),
            &request,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json(response).await;
    assert_eq!(answer["action"], "create", "{answer}");
    let sent: Vec<Value> = emulator
        .writes()
        .into_iter()
        .filter(|w| w.operation == "CreateService")
        .map(|w| w.request)
        .collect();
    assert_eq!(
        sent,
        [check["create"].clone()],
        "the request previewed is the one sent"
    );
    let id = answer["audit_id"].as_str().unwrap_or_default().to_string();
    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
    let records = audit_records(&app, "create").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["resource"], "inference-prod/embed-canary");
    assert_eq!(records[0]["to_revision"], "embed-api:1 × 2");
    assert_eq!(records[0]["description"], "canary of embed");
    // The same name again is refused: the service exists now.
    let again = send(&app, post_json(CREATE, &request)).await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
}

/// From the template, the emulator receives exactly the RegisterTaskDefinition the check showed
/// (with the console's audit tag, and what the SDK writes of its own), then the CreateService
/// with the revision just registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_template_the_registration_sent_is_the_one_previewed() {
    let (state, emulator, site) = crate::support::console_with_emulator("template").await;
    let context = state.services.clone();
    fleet_json(&gpushare::router(state), "").await;
    let template = app::model::new_service::Template {
        family: "embed-canary".into(),
        image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:2.0".into(),
        network_mode: "bridge".into(),
        ..app::model::new_service::Template::default()
    };
    let form = app::model::new_service::NewServiceForm {
        create: json!({
            "serviceName": "embed-canary",
            "desiredCount": 1,
            "launchType": "EC2",
            "tags": [{"key": "team", "value": "search"}],
        })
        .to_string(),
        register: Some(Value::Object(template.register_json("team", "search")).to_string()),
        description: "from the template".into(),
        force: false,
    };
    let actor = app::model::identity::Actor::local();
    let check = app::service::new_service::check(&context, &actor, "inference-prod", &form)
        .await
        .expect("the template checks");
    app::service::new_service::create(&context, &actor, "inference-prod", form)
        .await
        .expect("created");
    let writes = emulator.writes();
    let registered: Vec<Value> = writes
        .iter()
        .filter(|w| w.operation == "RegisterTaskDefinition")
        .map(|w| w.request.clone())
        .collect();
    assert_eq!(registered.len(), 1, "{registered:?}");
    let mut sent = registered[0].clone();
    let tags = sent["tags"].as_array_mut().expect("tags");
    tags.retain(|t| t["key"] != "gpushare:audit-id");
    assert_eq!(
        Some(sent),
        check.register,
        "the registration sent is the one previewed"
    );
    let created: Vec<&Value> = writes
        .iter()
        .filter(|w| w.operation == "CreateService")
        .map(|w| &w.request)
        .collect();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["taskDefinition"], "embed-canary:1");
    let _ = std::fs::remove_dir_all(&site);
}
