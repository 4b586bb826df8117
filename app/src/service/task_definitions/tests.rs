//! Unit tests of the `task_definitions` module.

use std::sync::atomic::Ordering;

use super::*;
use crate::{model::task_definition::EditInput, service::fake::Fake};

fn mps(memory: &str) -> EditSpec {
    EditSpec::Form(vec![EditInput {
        container: "model".into(),
        kind: "mps".into(),
        memory_mib: memory.into(),
        ..EditInput::default()
    }])
}

/// `edits` of revision 2 of family `embed`, registered by a deployer of its team.
async fn register_embed(
    fake: &std::sync::Arc<Fake>,
    edits: EditSpec,
    description: &str,
) -> Result<EditResult, ServiceError> {
    register(
        &fake.context(),
        &Fake::deployer(),
        "embed",
        2,
        edits,
        description,
    )
    .await
}

#[tokio::test]
async fn a_registration_is_audited_around_the_ecs_call() {
    let fake = Fake::new();
    let answer = register_embed(&fake, mps("6144"), "more memory")
        .await
        .expect("answered");
    assert_eq!(answer.registered.map(|r| r.revision), Some(3));
    let calls = fake.calls();
    assert_eq!(
        calls,
        ["audit.begin", "ecs.register", "audit.finish registered"],
        "intent first, outcome after"
    );
    let record = &fake.records()[0];
    assert_eq!(record.action, AuditAction::Register);
    assert_eq!(record.to_revision.as_deref(), Some("embed:3"));
}

#[tokio::test]
async fn an_edit_that_breaks_a_rule_or_changes_nothing_sends_nothing() {
    let fake = Fake::new();
    let context = fake.context();
    let broken = register(&context, &Fake::deployer(), "embed", 2, mps("lots"), "")
        .await
        .expect("answered");
    assert_eq!(broken.errors[0].field, "memory_mib");
    let same = register(&context, &Fake::deployer(), "embed", 2, mps("4096"), "")
        .await
        .expect("answered");
    assert!(
        same.errors[0].message.starts_with("Nothing changes"),
        "{same:?}"
    );
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    assert_eq!(
        register(&context, &Fake::deployer(), "embed", 9, mps("1"), "")
            .await
            .expect_err("no such revision")
            .status(),
        404
    );
    assert_eq!(
        register(&context, &Fake::deployer(), "bad name", 1, mps("1"), "")
            .await
            .expect_err("no such family")
            .status(),
        400
    );
}

#[tokio::test]
async fn a_registration_the_audit_log_cannot_record_is_an_error() {
    let fake = Fake::new();
    fake.fail_begin.store(true, Ordering::SeqCst);
    let error = register_embed(&fake, mps("6144"), "")
        .await
        .expect_err("no intent");
    assert!(
        error.message().ends_with("nothing was registered"),
        "{error}"
    );
    assert!(!fake.calls().iter().any(|c| c == "ecs.register"));

    let fake = Fake::new();
    fake.fail_finish.store(true, Ordering::SeqCst);
    let error = register_embed(&fake, mps("6144"), "")
        .await
        .expect_err("no outcome");
    assert!(
        error.message().contains("the revision was registered"),
        "says what happened: {error}"
    );
}

#[tokio::test]
async fn ecs_refusing_a_registration_is_answered_and_audited() {
    let fake = Fake::new();
    fake.refuse_writes.store(true, Ordering::SeqCst);
    let answer = register_embed(&fake, mps("6144"), "")
        .await
        .expect("answered");
    assert!(answer
        .ecs_error
        .is_some_and(|e| e.starts_with("ECS refused RegisterTaskDefinition")));
    assert_eq!(fake.records()[0].outcome, Outcome::Refused);
}

#[tokio::test]
async fn another_teams_deployer_is_refused_and_the_attempt_audited() {
    let fake = Fake::new();
    let error = register(
        &fake.context(),
        &Fake::outsider(),
        "embed",
        2,
        mps("6144"),
        "",
    )
    .await
    .expect_err("another team's family");
    assert_eq!(error.status(), 403);
    assert!(
        error.message().contains("belongs to team search"),
        "{error}"
    );
    assert!(!fake.calls().iter().any(|c| c == "ecs.register"));
    let record = &fake.records()[0];
    assert_eq!(record.outcome, Outcome::Refused);
    assert_eq!(record.who.actor, "bo");
    assert_eq!(
        record.who.actor_role,
        Some(crate::model::identity::Role::Deployer)
    );
}

#[tokio::test]
async fn a_deployer_may_not_widen_what_the_task_may_do() {
    let fake = Fake::new();
    let mut task = fake.revision_json(2);
    task["taskRoleArn"] = serde_json::json!("arn:aws:iam::1:role/everything");
    let error = register_embed(&fake, EditSpec::Json(task.to_string()), "")
        .await
        .expect_err("a role is an admin's");
    assert_eq!(error.status(), 403);
    assert!(error.message().contains("taskRoleArn"), "{error}");
    assert!(!fake.calls().iter().any(|c| c == "ecs.register"));
    let checked = check(
        &fake.context(),
        &Fake::deployer(),
        "embed",
        2,
        EditSpec::Json(task.to_string()),
        None,
        false,
    )
    .await
    .expect("checked");
    assert!(
        !checked.register.allowed,
        "the check says so before registering"
    );
}

#[tokio::test]
async fn revealing_needs_the_owning_team() {
    let fake = Fake::new();
    let context = fake.context();
    let shown = revision(&context, &Fake::deployer(), "embed", 2, true)
        .await
        .expect("revealed")
        .expect("exists");
    assert!(shown.reveal.allowed && shown.register.allowed);
    let error = revision(&context, &Fake::outsider(), "embed", 2, true)
        .await
        .expect_err("not their team");
    assert_eq!(error.status(), 403);
    let masked = revision(&context, &Fake::outsider(), "embed", 2, false)
        .await
        .expect("masked is fine")
        .expect("exists");
    assert!(!masked.reveal.allowed && !masked.register.allowed);
    assert!(masked
        .register
        .reason
        .is_some_and(|r| r.contains("team search")));
}
