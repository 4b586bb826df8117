//! Unit tests of retiring a service.

use std::sync::atomic::Ordering;

use super::*;
use crate::service::fake::Fake;

fn confirmed(name: &str) -> RetireRequest {
    RetireRequest {
        confirm: name.into(),
        expected_desired: Some(1),
        description: "model replaced".into(),
    }
}

#[tokio::test]
async fn a_retirement_scales_to_zero_then_deletes_and_is_audited_once() {
    let fake = Fake::new();
    let context = fake.context();
    let answer = retire(
        &context,
        &Fake::deployer(),
        "prod",
        "embed",
        confirmed("embed"),
    )
    .await
    .unwrap();
    assert!(answer.scaled_to_zero);
    assert_eq!(answer.status, "DRAINING");
    let calls = fake.calls();
    let scaled = calls
        .iter()
        .position(|c| c == "ecs.scale_service 0")
        .unwrap();
    let deleted = calls
        .iter()
        .position(|c| c == "ecs.delete_service")
        .unwrap();
    assert!(scaled < deleted, "scaled before deleted: {calls:?}");
    let records: Vec<_> = fake
        .records()
        .into_iter()
        .filter(|r| r.action == AuditAction::Retire)
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Succeeded);
    assert_eq!(records[0].from_revision.as_deref(), Some("embed:1 × 1"));
    assert_eq!(records[0].description.as_deref(), Some("model replaced"));
    assert!(
        fake.locks.lock().unwrap().is_empty(),
        "the lock is given back"
    );
    // Retired once, it cannot be retired again.
    let again = retire(
        &context,
        &Fake::deployer(),
        "prod",
        "embed",
        confirmed("embed"),
    )
    .await
    .unwrap_err();
    assert_eq!(again.status(), 409, "{again}");
}

#[tokio::test]
async fn a_retirement_needs_the_name_typed_and_the_count_the_person_saw() {
    let fake = Fake::new();
    let context = fake.context();
    for typed in ["", "embed-api", " Embed "] {
        let error = retire(
            &context,
            &Fake::deployer(),
            "prod",
            "embed",
            confirmed(typed),
        )
        .await
        .unwrap_err();
        assert_eq!(error.status(), 400, "{typed:?}: {error}");
        assert!(
            error.message().contains("type the service's name, embed"),
            "{error}"
        );
    }
    let stale = retire(
        &context,
        &Fake::deployer(),
        "prod",
        "embed",
        RetireRequest {
            expected_desired: Some(4),
            ..confirmed("embed")
        },
    )
    .await
    .unwrap_err();
    assert_eq!(stale.status(), 409);
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("ecs.scale_service") || c == "ecs.delete_service"));
}

#[tokio::test]
async fn another_team_cannot_retire_it_and_the_refusal_is_audited() {
    let fake = Fake::new();
    let context = fake.context();
    let preview = retire_preview(&context, &Fake::outsider(), "prod", "embed")
        .await
        .unwrap();
    assert!(!preview.allowed);
    assert!(preview.reason.unwrap().contains("belongs to team search"));
    let refused = retire(
        &context,
        &Fake::outsider(),
        "prod",
        "embed",
        confirmed("embed"),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.status(), 403);
    let record = fake.records().pop().unwrap();
    assert_eq!(
        (record.action, record.outcome),
        (AuditAction::Retire, Outcome::Refused)
    );
    assert!(!fake.calls().iter().any(|c| c == "ecs.delete_service"));
}

#[tokio::test]
async fn a_delete_refused_half_way_says_what_exists_now() {
    let fake = Fake::new();
    fake.refuse_delete.store(true, Ordering::SeqCst);
    let context = fake.context();
    let error = retire(
        &context,
        &Fake::deployer(),
        "prod",
        "embed",
        confirmed("embed"),
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 502, "{error}");
    assert!(
        error.message().contains("scaled from 1 to 0 tasks")
            && error
                .message()
                .contains("still exists with 0 desired tasks"),
        "{error}"
    );
    let record = fake.records().pop().unwrap();
    assert_eq!(record.outcome, Outcome::Failed);
    assert!(record.detail.unwrap().contains("DeleteService was refused"));
    // Retried once ECS allows it: nothing to scale, only the delete.
    fake.refuse_delete.store(false, Ordering::SeqCst);
    let answer = retire(
        &context,
        &Fake::deployer(),
        "prod",
        "embed",
        RetireRequest {
            expected_desired: Some(0),
            ..confirmed("embed")
        },
    )
    .await
    .unwrap();
    assert!(!answer.scaled_to_zero);
    assert_eq!(
        fake.calls()
            .iter()
            .filter(|c| c.starts_with("ecs.scale_service"))
            .count(),
        1
    );
}

#[tokio::test]
async fn the_preview_prices_the_service_and_lets_its_team_retire_it() {
    let fake = Fake::new();
    let context = fake.context();
    let preview = retire_preview(&context, &Fake::deployer(), "prod", "embed")
        .await
        .unwrap();
    assert!(preview.allowed, "{preview:?}");
    assert_eq!(preview.runs, "embed:1");
    assert_eq!(preview.team.as_deref(), Some("search"));
    assert!(preview.monthly_cents.is_some(), "{preview:?}");
    assert!(preview.cost_note.contains("by GPU memory share"));
}
