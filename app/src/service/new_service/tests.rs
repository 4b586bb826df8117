//! Unit tests of a new service: who may create one and for which team, and what is sent.

use super::*;
use crate::{
    model::{audit::Outcome, identity::Role},
    service::fake::Fake,
};

fn form(create: serde_json::Value) -> NewServiceForm {
    NewServiceForm {
        create: create.to_string(),
        description: "canary".into(),
        ..NewServiceForm::default()
    }
}

fn canary() -> serde_json::Value {
    serde_json::json!({
        "serviceName": "embed-canary",
        "taskDefinition": "embed:1",
        "desiredCount": 1,
        "launchType": "EC2",
    })
}

#[tokio::test]
async fn a_deployer_creates_a_service_for_their_team_and_it_is_audited_and_watched() {
    let fake = Fake::new();
    let context = fake.context();
    let checked = check(&context, &Fake::deployer(), "prod", &form(canary()))
        .await
        .unwrap();
    assert_eq!(checked.team, "search", "the requester's one team");
    assert_eq!(
        checked.create["tags"],
        serde_json::json!([{"key": "team", "value": "search"}])
    );
    assert!(checked.added.iter().any(|a| a.contains("circuit breaker")));
    let answer = create(&context, &Fake::deployer(), "prod", form(canary()))
        .await
        .unwrap();
    assert_eq!(answer.action, AuditAction::Create);
    let sent = fake.created.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(serde_json::Value::Object(sent[0].clone()), checked.create);
    let record = fake
        .records()
        .into_iter()
        .find(|r| r.action == AuditAction::Create)
        .unwrap();
    assert_eq!(record.outcome, Outcome::InProgress);
    assert_eq!(record.resource, "prod/embed-canary");
    assert_eq!(record.to_revision.as_deref(), Some("embed:1 × 1"));
    assert!(
        fake.locks.lock().unwrap().is_empty(),
        "the lock is given back"
    );
}

#[tokio::test]
async fn no_one_creates_a_service_for_another_team_and_viewers_create_none() {
    let fake = Fake::new();
    let context = fake.context();
    let mut other = canary();
    other["tags"] = serde_json::json!([{"key": "team", "value": "search"}]);
    // Bo is on vision: a service tagged for search is refused, and the refusal audited.
    let refused = create(&context, &Fake::outsider(), "prod", form(other.clone()))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 403, "{refused}");
    assert!(refused.message().contains("tags: the team tag says search"));
    let record = fake.records().pop().unwrap();
    assert_eq!(
        (record.action, record.outcome),
        (AuditAction::Create, Outcome::Refused)
    );
    // Nor by a tag given twice, or written in another case.
    let mut twice = canary();
    twice["tags"] =
        serde_json::json!([{"key": "team", "value": "vision"}, {"key": "team", "value": "search"}]);
    let refused = create(&context, &Fake::outsider(), "prod", form(twice))
        .await
        .unwrap_err();
    assert_ne!(refused.status(), 202);
    let viewer = crate::model::identity::Actor {
        role: Role::Viewer,
        ..Fake::deployer()
    };
    let refused = create(&context, &viewer, "prod", form(canary()))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 403);
    assert!(fake.created.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_template_is_registered_first_and_the_service_runs_its_revision() {
    let fake = Fake::new();
    let context = fake.context();
    let template = crate::model::new_service::Template {
        family: "embed".into(),
        image: "repo/embed:2".into(),
        network_mode: "bridge".into(),
        managed_instances: false,
        ..crate::model::new_service::Template::default()
    };
    let mut request = form(canary());
    request.register =
        Some(serde_json::Value::Object(template.register_json("team", "search")).to_string());
    let answer = create(&context, &Fake::deployer(), "prod", request.clone())
        .await
        .unwrap();
    assert_eq!(answer.action, AuditAction::Create);
    let records = fake.records();
    let registered = records
        .iter()
        .find(|r| r.action == AuditAction::Register)
        .unwrap();
    assert_eq!(registered.outcome, Outcome::Registered);
    let sent = fake.created.lock().unwrap().clone();
    assert_eq!(
        sent[0]["taskDefinition"].as_str(),
        registered.to_revision.as_deref(),
        "the service runs the revision just registered"
    );
    // An image that does not parse is refused before anything is registered.
    let mut bad = request;
    let mut task = template.register_json("team", "search");
    task["containerDefinitions"][0]["image"] = serde_json::json!("Repo/Embed:2");
    bad.register = Some(serde_json::Value::Object(task).to_string());
    let refused = check(&context, &Fake::deployer(), "prod", &bad)
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 400);
    assert!(
        refused
            .message()
            .contains("register.containerDefinitions[0].image"),
        "{refused}"
    );
}

fn named(name: &str) -> serde_json::Value {
    serde_json::json!({
        "serviceName": name,
        "taskDefinition": "embed:1",
        "desiredCount": 1,
        "launchType": "EC2",
    })
}

#[tokio::test]
async fn past_the_budget_a_new_service_waits_for_approval_and_is_created_once_approved() {
    let fake = Fake::with_budget(3 * 1024);
    let context = fake.context();
    let checked = check(&context, &Fake::deployer(), "prod", &form(canary()))
        .await
        .unwrap();
    assert!(checked.budget.as_ref().unwrap().over, "the check shows it");
    let answer = create(&context, &Fake::deployer(), "prod", form(canary()))
        .await
        .unwrap();
    let id = answer.approval.clone().expect("a request for approval");
    assert!(
        fake.created.lock().unwrap().is_empty(),
        "nothing is created before the approval"
    );
    let request = context.approvals.get(id.clone()).await.unwrap().unwrap();
    assert_eq!(request.title(), "Create prod/embed-canary (embed:1 × 1)");
    assert_eq!(
        request.arithmetic,
        "search holds 2 GiB of 3 GiB on prod; this new service adds 2 GiB, to 4 GiB: 1 GiB past the budget."
    );
    // Approvers may be of any team: what they are shown leaves the requests out.
    let shown = crate::service::approvals::get(&context, &Fake::approver(), &id)
        .await
        .unwrap();
    let creation = shown.request.creation.unwrap();
    assert_eq!(creation.form, NewServiceForm::default());
    assert_eq!(creation.task_definition, "embed:1");
    // Asked again, it is the same request.
    let again = create(&context, &Fake::deployer(), "prod", form(canary()))
        .await
        .unwrap();
    assert_eq!(again.approval.as_deref(), Some(id.as_str()));
    assert!(again.already_asked);

    let done = crate::service::approvals::approve(&context, &Fake::approver(), &id, "ok")
        .await
        .unwrap();
    assert_eq!(
        done.state,
        crate::model::approval::ApprovalState::Sent,
        "{:?}",
        done.detail
    );
    let sent = fake.created.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["serviceName"], "embed-canary");
    let record = fake
        .records()
        .into_iter()
        .find(|r| r.action == AuditAction::Create)
        .unwrap();
    assert_eq!(record.who.actor, "ana", "created as the requester's");
    assert_eq!(record.approved_by.as_deref(), Some("cy"));
    assert_eq!(record.approval_id.as_deref(), Some(id.as_str()));
}

#[tokio::test]
async fn a_service_just_created_counts_against_the_budget_before_the_fleet_shows_it() {
    // 5 GiB: embed holds 2, a first new service takes it to 4, a second would take it to 6.
    let fake = Fake::with_budget(5 * 1024);
    let context = fake.context();
    let first = create(&context, &Fake::deployer(), "prod", form(named("embed-a")))
        .await
        .unwrap();
    assert!(first.approval.is_none(), "within the budget: created");
    let second = create(&context, &Fake::deployer(), "prod", form(named("embed-b")))
        .await
        .unwrap();
    let id = second
        .approval
        .expect("the first service counts although the snapshot does not show it");
    let request = context.approvals.get(id).await.unwrap().unwrap();
    assert!(
        request
            .arithmetic
            .starts_with("search holds 4 GiB of 5 GiB"),
        "{}",
        request.arithmetic
    );
    assert_eq!(fake.created.lock().unwrap().len(), 1);
}
