//! Unit tests of the budget gate: a snapshot too old to judge by, and changes sent before the
//! snapshot shows them.

use super::*;
use crate::{
    model::deployment::ScaleRequest,
    service::{deployments::scale, fake::Fake},
};

fn to(desired: u32, expected: u32) -> ScaleRequest {
    ScaleRequest {
        desired,
        expected_desired: expected,
        ..ScaleRequest::default()
    }
}

fn scaled(fake: &Fake) -> Vec<String> {
    fake.calls()
        .into_iter()
        .filter(|c| c.starts_with("ecs.scale_service"))
        .collect()
}

#[tokio::test]
async fn a_snapshot_too_old_to_judge_by_sends_nothing_and_says_why() {
    let fake = Fake::with_budget(64 * 1024);
    *fake.snapshot_age.lock().unwrap() = 3600;
    let error = scale(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        to(2, 1),
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 503, "{error}");
    assert!(
        error.message().contains("3600 s old, too old to judge"),
        "{error}"
    );
    assert!(scaled(&fake).is_empty());
    // Without a budget there is nothing to judge, and the change goes.
    let free = Fake::new();
    *free.snapshot_age.lock().unwrap() = 3600;
    scale(
        &free.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        to(2, 1),
    )
    .await
    .unwrap();
    assert_eq!(scaled(&free), ["ecs.scale_service 2"]);
}

#[tokio::test]
async fn scale_ups_sent_before_the_snapshot_shows_them_add_up() {
    // embed:1 asks 2 GiB a task; the snapshot says 1 task and never changes here.
    let fake = Fake::with_budget(6 * 1024);
    let context = fake.context();
    scale(&context, &Fake::deployer(), "prod", "embed", to(2, 1))
        .await
        .unwrap();
    scale(&context, &Fake::deployer(), "prod", "embed", to(3, 2))
        .await
        .unwrap();
    assert_eq!(scaled(&fake).len(), 2, "6 GiB of 6: within");
    let asked = scale(&context, &Fake::deployer(), "prod", "embed", to(4, 3))
        .await
        .unwrap();
    assert!(asked.approval.is_some(), "8 GiB of 6 waits: {asked:?}");
    assert_eq!(scaled(&fake).len(), 2);
    let uses = budgets(&context).await.unwrap();
    assert_eq!(uses[0].held_mib, 6 * 1024);
    assert!(uses[0].services[0].counts_sent);
}
