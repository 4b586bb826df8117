//! The task definition lists as ECS is read for them: a registration shows at once, and a list
//! read again describes only the revisions it has not described.

use axum::{
    body::Body,
    http::{Request, StatusCode},
};

use super::support::*;

#[tokio::test]
async fn a_registration_shows_at_once_and_a_familys_list_describes_only_new_revisions() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let status = || {
        Request::post("/api/console_status")
            .body(Body::empty())
            .expect("request")
    };
    let register = |from: u32, memory: u32| {
        let edit = format!(
            r#"{{"edits": [{{"container": "embed-api", "gpu": {{"kind": "mps", "memory_mib": {memory}}}}}],
                "description": "memory {memory}", "cluster": "inference-prod"}}"#
        );
        post_json(
            &format!("/api/v1/task-definitions/embed-api/{from}/register"),
            &edit,
        )
    };
    let revisions = |family: &serde_json::Value| -> Vec<u64> {
        family["revisions"]
            .as_array()
            .expect("revisions")
            .iter()
            .map(|r| r["revision"].as_u64().unwrap_or(0))
            .collect()
    };
    let latest_of = |families: &serde_json::Value| -> u64 {
        families
            .as_array()
            .expect("families")
            .iter()
            .find(|f| f["family"] == "embed-api")
            .map_or(0, |f| f["latest_revision"].as_u64().unwrap_or(0))
    };
    for (from, memory) in [(1, 6144), (2, 7168), (3, 8192)] {
        let response = send(&app, register(from, memory)).await;
        assert_eq!(response.status(), StatusCode::CREATED, "from {from}");
    }
    let received = || emulator_received(&app, status());
    // The task definition reads ECS received between two counts: [DescribeTaskDefinition,
    // ListTaskDefinitions, ListTaskDefinitionFamilies].
    let reads = |before: &std::collections::BTreeMap<String, u64>,
                 after: &std::collections::BTreeMap<String, u64>| {
        [
            "ecs:DescribeTaskDefinition",
            "ecs:ListTaskDefinitions",
            "ecs:ListTaskDefinitionFamilies",
        ]
        .map(|operation| {
            after.get(operation).copied().unwrap_or(0) - before.get(operation).copied().unwrap_or(0)
        })
    };
    let family = json(send(&app, get("/api/v1/task-definitions/embed-api")).await).await;
    assert_eq!(revisions(&family), [4, 3, 2, 1], "{family}");
    // The families' latest: one page of ECS's active revisions, newest first, and each family's
    // newest described, but embed-api's, described just now.
    let before = received().await;
    let families = json(send(&app, get("/api/v1/task-definitions")).await).await;
    assert_eq!(latest_of(&families), 4, "{families}");
    let after = received().await;
    let count = families.as_array().map_or(0, Vec::len) as u64;
    assert!(count > 5, "{families}");
    assert_eq!(reads(&before, &after), [count - 1, 1, 0], "{after:?}");

    // A fifth revision, answered by ECS: both lists show it at once, without reading ECS again.
    let response = send(&app, register(4, 9216)).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let before = received().await;
    let family = json(send(&app, get("/api/v1/task-definitions/embed-api")).await).await;
    assert_eq!(revisions(&family), [5, 4, 3, 2, 1], "{family}");
    assert_eq!(
        family["revisions"][0]["containers"][0]["gpu"]["memory_mib"], 9216,
        "{family}"
    );
    let families = json(send(&app, get("/api/v1/task-definitions")).await).await;
    assert_eq!(latest_of(&families), 5, "{families}");
    let after = received().await;
    assert_eq!(reads(&before, &after), [0, 0, 0], "{after:?}");

    // A sixth, whose answer is lost: the console cannot know, so it reads the family again, and
    // describes the one revision it has not described.
    set_emulator_faults(
        &app,
        r#"{"default": {}, "operations": {"RegisterTaskDefinition": {"lost_answer_rate": 1.0}}}"#,
    )
    .await;
    let response = send(&app, register(5, 10240)).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    set_emulator_faults(&app, r#"{"default": {}, "operations": {}}"#).await;
    let before = received().await;
    let family = json(send(&app, get("/api/v1/task-definitions/embed-api")).await).await;
    assert_eq!(revisions(&family), [6, 5, 4, 3, 2, 1], "{family}");
    let after = received().await;
    assert_eq!(reads(&before, &after), [1, 2, 0], "{after:?}");
}
