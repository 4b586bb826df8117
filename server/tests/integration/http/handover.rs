//! What a page hands the browser with its HTML: the answers of its resources, by number, which
//! the browser's copy of the page reads back as it creates the same resources in the same order.
//! A resource created where the server may build a view more than once (inside a `Suspend` that
//! runs again when the resource it awaits resolves) is numbered differently from one load to the
//! next, and the browser then reads another resource's answer and cannot hydrate the page. So each
//! page must hand over the same resources on every load.

use super::support::*;

/// The resource numbers a page's HTML hands over (`__PENDING_RESOURCES`).
fn handed_over(html: &str) -> Option<String> {
    let start = html.find("__PENDING_RESOURCES=[")?;
    let rest = &html[start..];
    Some(rest[..rest.find(']')? + 1].to_string())
}

#[tokio::test]
async fn each_page_hands_the_browser_the_same_resources_on_every_load() {
    let (app, _) = test_app(false).await;
    // Pages that read the fleet snapshot wait for the first one.
    fleet_json(&app, "").await;
    let pages = [
        "/deployments/inference-prod/embed-api?revision=1",
        "/deployments/ml-dev/speech-align",
        "/deployments",
        "/deployments/new",
        "/task-definitions",
        "/task-definitions/embed-api",
        "/clusters/inference-prod/events",
        "/clusters/inference-prod/stopped-tasks",
        "/",
        "/capacity",
        "/task-definitions/embed-api/1",
        "/task-definitions/embed-api/compare",
        "/audit",
        "/approvals",
        "/cost",
        "/cost/plan",
        "/cost/months",
        "/cost/reconciliation",
    ];
    for page in pages {
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..15 {
            let response = send(&app, get(page)).await;
            assert!(
                response.status().is_success() || response.status() == 400,
                "{page}: {}",
                response.status()
            );
            let html = text(response).await;
            let numbers = handed_over(&html).unwrap_or_else(|| panic!("{page}: no hand-over"));
            *seen.entry(numbers).or_insert(0) += 1;
        }
        assert_eq!(
            seen.len(),
            1,
            "{page} handed over different resources from one load to the next: {seen:?}"
        );
    }
}
