//! Unit tests of the `deploy` module.

use std::sync::atomic::Ordering;

use super::*;
use crate::model::audit::AuditRecord;
use crate::service::fake::Fake;

fn request(revision: u32, expected: u32) -> DeployRequest {
    DeployRequest {
        revision: RevisionRef::number(revision),
        expected_revision: RevisionRef::number(expected),
        description: "more memory".into(),
        ..DeployRequest::default()
    }
}

/// `request` for the `embed` service of cluster `prod`, by a deployer of its team.
async fn deploy_embed(
    fake: &std::sync::Arc<Fake>,
    request: DeployRequest,
) -> Result<DeployAnswer, ServiceError> {
    deploy(&fake.context(), &Fake::deployer(), "prod", "embed", request).await
}

fn position(calls: &[String], prefix: &str) -> usize {
    calls
        .iter()
        .position(|c| c.starts_with(prefix))
        .unwrap_or_else(|| panic!("no call {prefix}: {calls:?}"))
}

#[tokio::test]
async fn a_deploy_writes_its_intent_before_update_service_then_watches_the_rollout() {
    let fake = Fake::new();
    let answer = deploy_embed(&fake, request(2, 1)).await.expect("sent");
    assert_eq!(answer.action, AuditAction::Deploy);
    assert_eq!(answer.deployment_id.as_deref(), Some("ecs-svc/2"));
    let calls = fake.calls();
    let begin = position(&calls, "audit.begin");
    let lock = position(&calls, "audit.lock");
    let update = position(&calls, "ecs.update_service embed:2");
    let recorded = position(&calls, "audit.finish in_progress");
    let watched = position(&calls, "watches.start");
    let unlock = position(&calls, "audit.unlock");
    assert!(
        begin < lock && lock < update && update < recorded,
        "{calls:?}"
    );
    assert!(recorded < watched && watched < unlock, "{calls:?}");
    let record = &fake.records()[0];
    assert_eq!(record.outcome, Outcome::InProgress);
    assert_eq!(record.from_revision.as_deref(), Some("embed:1"));
    assert_eq!(record.to_revision.as_deref(), Some("embed:2"));
    assert_eq!(record.description.as_deref(), Some("more memory"));
    assert_eq!(record.pre_check.as_deref(), Some("completes"));
}

#[tokio::test]
async fn nothing_is_sent_when_the_intent_cannot_be_written() {
    let fake = Fake::new();
    fake.fail_begin.store(true, Ordering::SeqCst);
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("refused");
    assert_eq!(error.status(), 503);
    assert!(error.message().ends_with("; nothing was sent"), "{error}");
    assert!(
        !fake
            .calls()
            .iter()
            .any(|c| c.starts_with("ecs.update_service")),
        "{:?}",
        fake.calls()
    );
}

#[tokio::test]
async fn a_deploy_that_finds_the_service_locked_is_refused_and_audited() {
    let fake = Fake::new();
    fake.locks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert("prod/embed".into());
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("refused");
    assert_eq!(error.status(), 409);
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("ecs.update_service")));
    let record = &fake.records()[0];
    assert_eq!(record.outcome, Outcome::Refused);
    assert!(record
        .detail
        .as_deref()
        .is_some_and(|d| d.contains("Another deploy")));
}

#[tokio::test]
async fn an_outcome_the_audit_log_cannot_record_is_an_error_not_dropped() {
    let fake = Fake::new();
    fake.fail_finish.store(true, Ordering::SeqCst);
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("the log lags");
    assert_eq!(error.status(), 503);
    assert!(
        error.message().contains("UpdateService was sent"),
        "it says what happened: {error}"
    );
    assert!(
        fake.calls().iter().any(|c| c == "watches.start"),
        "still watched"
    );
}

#[tokio::test]
async fn nothing_is_sent_when_what_ecs_had_cannot_be_kept() {
    let fake = Fake::new();
    fake.fail_pending.store(true, Ordering::SeqCst);
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("not sent");
    assert!(error.message().contains("nothing was sent"), "{error}");
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("ecs.update_service")));
    assert!(
        fake.locks.lock().expect("locks").is_empty(),
        "the lock is given back"
    );
}

#[tokio::test]
async fn a_refusal_by_ecs_is_audited_and_answered_with_its_kind() {
    let fake = Fake::new();
    fake.refuse_writes.store(true, Ordering::SeqCst);
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("refused");
    assert_eq!(error.status(), 502);
    assert_eq!(fake.records()[0].outcome, Outcome::Refused);
    assert!(
        fake.calls().iter().any(|c| c == "audit.unlock"),
        "the lock is given back"
    );
}

#[tokio::test]
async fn the_revision_the_user_saw_must_still_run() {
    let fake = Fake::new();
    *fake.running.lock().unwrap_or_else(|p| p.into_inner()) = 2;
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("changed");
    assert_eq!(error.status(), 409);
    assert!(error.message().contains("now runs embed:2"), "{error}");
    assert!(fake.records().is_empty(), "no intent for a stale request");
}

#[tokio::test]
async fn a_rollback_goes_to_an_earlier_revision_of_the_same_family() {
    let fake = Fake::new();
    *fake.running.lock().unwrap_or_else(|p| p.into_inner()) = 2;
    let context = fake.context();
    assert_eq!(
        rollback(&context, &Fake::deployer(), "prod", "embed", request(2, 2))
            .await
            .expect_err("not earlier")
            .status(),
        400
    );
    let other = DeployRequest {
        revision: RevisionRef::parse("other:1").expect("a reference"),
        ..request(1, 2)
    };
    assert!(deploy(&context, &Fake::deployer(), "prod", "embed", other)
        .await
        .expect_err("another family")
        .message()
        .contains("a revision of other"));
    let answer = rollback(&context, &Fake::deployer(), "prod", "embed", request(1, 2))
        .await
        .expect("sent");
    assert_eq!(answer.action, AuditAction::Rollback);
}

#[tokio::test]
async fn another_teams_deployer_is_refused_before_anything_is_sent() {
    let fake = Fake::new();
    let error = deploy(
        &fake.context(),
        &Fake::outsider(),
        "prod",
        "embed",
        request(2, 1),
    )
    .await
    .expect_err("another team's service");
    assert_eq!(error.status(), 403);
    assert!(
        error
            .message()
            .contains("Service prod/embed belongs to team search"),
        "{error}"
    );
    assert!(
        !fake.calls().iter().any(|c| c.starts_with("ecs.")),
        "{:?}",
        fake.calls()
    );
    let record = &fake.records()[0];
    assert_eq!(record.outcome, Outcome::Refused);
    assert_eq!(record.action, AuditAction::Deploy);
    assert_eq!(record.who.source.as_deref(), Some("10.0.0.7"));
}

fn restart_of(expected: u32) -> RestartRequest {
    RestartRequest {
        expected_revision: RevisionRef::number(expected),
        force: false,
        description: "pick up the moved :latest tag".into(),
    }
}

#[tokio::test]
async fn a_restart_rolls_the_running_revision_out_again_as_a_new_deployment_audited() {
    let fake = Fake::new();
    let answer = restart(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        restart_of(1),
    )
    .await
    .expect("sent");
    assert_eq!(answer.action, AuditAction::Restart);
    let calls = fake.calls();
    let begin = position(&calls, "audit.begin");
    let lock = position(&calls, "audit.lock");
    let update = position(&calls, "ecs.update_service embed:1 forceNewDeployment");
    assert!(begin < lock && lock < update, "{calls:?}");
    let record = &fake.records()[0];
    assert_eq!(record.action, AuditAction::Restart);
    assert_eq!(record.outcome, Outcome::InProgress);
    assert_eq!(record.from_revision.as_deref(), Some("embed:1"));
    assert_eq!(record.to_revision.as_deref(), Some("embed:1"));
    assert_eq!(
        record.description.as_deref(),
        Some("pick up the moved :latest tag")
    );
}

#[tokio::test]
async fn a_restart_is_refused_when_the_service_runs_another_revision_or_by_another_team() {
    let fake = Fake::new();
    let error = restart(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        restart_of(2),
    )
    .await
    .expect_err("embed runs 1");
    assert_eq!(error.status(), 409, "{error}");
    let error = restart(
        &fake.context(),
        &Fake::outsider(),
        "prod",
        "embed",
        restart_of(1),
    )
    .await
    .expect_err("not their team");
    assert_eq!(error.status(), 403, "{error}");
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("ecs.update_service")));
}

#[tokio::test]
async fn a_deploy_cannot_smuggle_a_restart_nor_deploy_the_running_revision() {
    let fake = Fake::new();
    let smuggled = DeployRequest {
        restart: true,
        ..request(1, 1)
    };
    let error = deploy_embed(&fake, smuggled).await.expect_err("refused");
    assert_eq!(error.status(), 400);
    assert!(error.message().contains("/restart"), "{error}");
    let error = deploy_embed(&fake, request(1, 1))
        .await
        .expect_err("already runs");
    assert!(error.message().contains("restart it"), "{error}");
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("ecs.update_service")));
}

/// A deploy's record, as the log keeps it.
fn deploy_record(id: &str, outcome: Outcome, deployment: Option<&str>) -> AuditRecord {
    AuditRecord {
        id: id.into(),
        at: "2026-12-04T10:00:00.000Z".into(),
        updated_at: "2026-12-04T10:00:00.000Z".into(),
        action: AuditAction::Deploy,
        resource: "prod/embed".into(),
        from_revision: Some("embed:2".into()),
        to_revision: Some("embed:1".into()),
        outcome,
        deployment_id: deployment.map(str::to_string),
        ..AuditRecord::default()
    }
}

#[tokio::test]
async fn a_reconcile_does_not_take_a_deployment_another_record_owns_for_an_unanswered_ones() {
    // ECS's PRIMARY deployment runs embed:1 and is ecs-svc/1: record `a`'s, which the
    // circuit breaker may have made PRIMARY again. `b` got no answer: it did not make it.
    let fake = Fake::new();
    *fake.records.lock().expect("the records") = vec![
        deploy_record("a", Outcome::Succeeded, Some("ecs-svc/1")),
        deploy_record("b", Outcome::Unknown, None),
    ];
    crate::service::deployments::reconcile(&fake.context(), std::time::Duration::ZERO)
        .await
        .expect("reconciled");
    let b = fake
        .records()
        .into_iter()
        .find(|r| r.id == "b")
        .expect("record b");
    assert_eq!(b.outcome, Outcome::Failed, "{b:?}");
    assert_eq!(b.deployment_id, None);

    // With no other owner, the same deployment is the unanswered record's.
    let fake = Fake::new();
    *fake.records.lock().expect("the records") = vec![deploy_record("b", Outcome::Unknown, None)];
    crate::service::deployments::reconcile(&fake.context(), std::time::Duration::ZERO)
        .await
        .expect("reconciled");
    let b = fake
        .records()
        .into_iter()
        .find(|r| r.id == "b")
        .expect("record b");
    assert_eq!(b.deployment_id.as_deref(), Some("ecs-svc/1"), "{b:?}");

    // One ECS spoke of before the intent, or rolled back to, is not the unanswered one's.
    for (at, message) in [
        (
            "2026-12-04T09:59:00.000Z",
            "(service embed) (deployment ecs-svc/1) deployment completed.",
        ),
        (
            "2026-12-04T10:00:05.000Z",
            "(service embed) (deployment ecs-svc/2) rolling back to deployment ecs-svc/1.",
        ),
    ] {
        let fake = Fake::new();
        *fake.records.lock().expect("the records") =
            vec![deploy_record("b", Outcome::Unknown, None)];
        *fake.events.lock().expect("the events") = vec![crate::model::deployment::LiveEvent {
            id: "e".into(),
            at: at.into(),
            message: message.into(),
        }];
        crate::service::deployments::reconcile(&fake.context(), std::time::Duration::ZERO)
            .await
            .expect("reconciled");
        let b = fake
            .records()
            .into_iter()
            .find(|r| r.id == "b")
            .expect("record b");
        assert_eq!(b.outcome, Outcome::Failed, "{message}: {b:?}");
    }
}

/// A restart of `embed` that ECS takes (at its own clock, `ecs_clock`) and whose answer is
/// lost; the restart's record, `unknown`.
async fn restart_unanswered(fake: &std::sync::Arc<Fake>, ecs_clock: &str) -> AuditRecord {
    fake.lose_update_answers.store(true, Ordering::SeqCst);
    *fake.ecs_clock.lock().expect("the clock") = ecs_clock.into();
    let error = restart(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        restart_of(1),
    )
    .await
    .expect_err("no answer");
    assert_eq!(error.status(), 504, "{error}");
    fake.lose_update_answers.store(false, Ordering::SeqCst);
    let record = fake.records().pop().expect("the restart's record");
    assert_eq!(record.outcome, Outcome::Unknown, "{record:?}");
    record
}

/// Reconciles the fake's records at once; the record `id` after it.
async fn reconciled(fake: &std::sync::Arc<Fake>, id: &str) -> AuditRecord {
    crate::service::deployments::reconcile(&fake.context(), std::time::Duration::ZERO)
        .await
        .expect("reconciled");
    fake.records()
        .into_iter()
        .find(|r| r.id == id)
        .expect("the record")
}

#[tokio::test]
async fn an_unanswered_restart_is_its_new_deployment_whatever_ecs_clock_says() {
    // ECS's clock is an hour behind the console's: the deployment the restart made has a
    // creation time before the record's intent.
    let fake = Fake::new();
    let record = restart_unanswered(&fake, "2026-12-04T09:00:00.000Z").await;
    assert_eq!(
        record.prior_deployments.as_deref(),
        Some(&["ecs-svc/1".to_string()][..]),
        "the deployments ECS had are kept before the call"
    );
    let calls = fake.calls();
    let kept = position(&calls, "audit.finish pending");
    let update = position(&calls, "ecs.update_service embed:1 forceNewDeployment");
    assert!(kept < update, "{calls:?}");
    let settled = reconciled(&fake, &record.id).await;
    assert_eq!(settled.outcome, Outcome::InProgress, "{settled:?}");
    assert_eq!(settled.deployment_id.as_deref(), Some("ecs-svc/101"));
    assert!(
        settled
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("ECS made deployment ecs-svc/101")),
        "{settled:?}"
    );
}

#[tokio::test]
async fn an_unanswered_restart_during_an_earlier_ones_rollout_is_told_from_it() {
    // The earlier restart's deployment is PRIMARY and still rolling out, and its record owns
    // it; the second restart's answer is lost.
    let fake = Fake::new();
    *fake.deployments.lock().expect("deployments") =
        vec![crate::model::deployment::LiveDeployment {
            id: "ecs-svc/7".into(),
            status: crate::model::words::DeploymentStatus::Primary,
            task_definition: "arn:aws:ecs:us-east-1:123456789012:task-definition/embed:1".into(),
            rollout_state: Some(crate::model::words::RolloutState::InProgress),
            created_at: Some("2026-12-04T10:00:00.000Z".into()),
            ..Default::default()
        }];
    fake.records.lock().expect("records").push(AuditRecord {
        action: AuditAction::Restart,
        to_revision: Some("embed:1".into()),
        ..deploy_record("first", Outcome::InProgress, Some("ecs-svc/7"))
    });
    let second = restart_unanswered(&fake, "2026-12-04T10:00:21.000Z").await;
    assert_eq!(
        second.prior_deployments.as_deref(),
        Some(&["ecs-svc/7".to_string()][..])
    );
    let settled = reconciled(&fake, &second.id).await;
    assert_eq!(
        settled.deployment_id.as_deref(),
        Some("ecs-svc/101"),
        "{settled:?}"
    );
    let first = reconciled(&fake, "first").await;
    assert_eq!(first.deployment_id.as_deref(), Some("ecs-svc/7"));
}

#[tokio::test]
async fn an_unanswered_restart_ecs_did_not_take_did_not_take_effect() {
    let fake = Fake::new();
    let record = restart_unanswered(&fake, "2026-12-04T10:00:00.000Z").await;
    // ECS never made the deployment: it lists what it had.
    fake.deployments.lock().expect("deployments").clear();
    let settled = reconciled(&fake, &record.id).await;
    assert_eq!(settled.outcome, Outcome::Failed, "{settled:?}");
    assert_eq!(settled.deployment_id, None);
    assert!(settled
        .detail
        .as_deref()
        .is_some_and(|d| d.contains("did not take effect")));
}

#[tokio::test]
async fn an_unanswered_deploy_the_circuit_breaker_rolled_back_is_its_own_and_watched() {
    // The deploy of embed:2 made ecs-svc/101; it failed, ECS re-activated ecs-svc/1 and no
    // longer lists ecs-svc/101; only its events name it.
    let fake = Fake::new();
    fake.lose_update_answers.store(true, Ordering::SeqCst);
    let error = deploy_embed(&fake, request(2, 1))
        .await
        .expect_err("no answer");
    assert_eq!(error.status(), 504, "{error}");
    let record = fake.records().pop().expect("the deploy's record");
    fake.deployments.lock().expect("deployments").clear();
    *fake.running.lock().expect("running") = 1;
    *fake.events.lock().expect("events") = [
        "(service embed) (deployment ecs-svc/101) rolling back to deployment ecs-svc/1.",
        "(service embed) (deployment ecs-svc/101) deployment failed: tasks failed to start.",
    ]
    .iter()
    .enumerate()
    .map(|(n, message)| crate::model::deployment::LiveEvent {
        id: format!("e{n}"),
        at: "2026-12-04T10:05:00.000Z".into(),
        message: message.to_string(),
    })
    .collect();
    let settled = reconciled(&fake, &record.id).await;
    assert_eq!(
        settled.deployment_id.as_deref(),
        Some("ecs-svc/101"),
        "{settled:?}"
    );
    assert!(fake
        .watched
        .lock()
        .expect("watched")
        .iter()
        .any(|w| w.audit_id == record.id && w.deployment_id.as_deref() == Some("ecs-svc/101")));
}
