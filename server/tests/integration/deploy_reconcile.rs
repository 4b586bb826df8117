//! The crash-reconcile path: intents written to the audit log whose outcome never was (the
//! server stopped between the intent and the AWS call, or right after it) are settled at the
//! next start by asking ECS, and a rollout that was sent is watched to its end.

use std::sync::Arc;

use crate::support::{temp_dir, Postgres};

use app::{
    model::audit::{AuditAction, AuditActor, AuditFilter, AuditIntent, Lock, Outcome},
    service::{deployments::reconcile, ports::AuditStore},
};
use gpushare::{audit::SqlAuditLog, config::EmulatorArgs, fleet::store::SnapshotStore};

/// The lock of the demo's `ml-dev/speech-align`.
fn speech_align() -> Lock {
    Lock::Service {
        cluster: "ml-dev".into(),
        service: "speech-align".into(),
    }
}

fn intent(resource: &str, from: &str, to: &str) -> AuditIntent {
    AuditIntent {
        who: AuditActor::named("local"),
        action: AuditAction::Deploy,
        resource: resource.into(),
        from_revision: Some(from.into()),
        to_revision: Some(to.into()),
        diff: "[]".into(),
        pre_check: Some("completes".into()),
        description: None,
        ..AuditIntent::default()
    }
}

#[tokio::test]
async fn pending_intents_are_settled_with_ecs_at_start_on_sqlite() {
    let dir = temp_dir("reconcile");
    let audit = Arc::new(SqlAuditLog::open(None, &dir).await.expect("opens"));
    pending_intents_are_settled_with_ecs_at_start(audit).await;
}

#[tokio::test]
async fn pending_intents_are_settled_with_ecs_at_start_on_postgresql() {
    let server = Postgres::start();
    let audit = Arc::new(
        SqlAuditLog::open(Some(&server.url()), std::path::Path::new("/nonexistent"))
            .await
            .expect("opens"),
    );
    assert_eq!(audit.backend, "postgres");
    pending_intents_are_settled_with_ecs_at_start(audit).await;
}

/// Two intents left by a crash, one sent and one not, settled by the next start.
async fn pending_intents_are_settled_with_ecs_at_start(audit: Arc<SqlAuditLog>) {
    let emulator = gpushare::build_emulator(&EmulatorArgs::default(), 0)
        .await
        .expect("the demo fleet");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");

    // Sent: the server wrote the intent, UpdateService went out, and the server stopped.
    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition("embed-api:1")
        .send()
        .await
        .expect("described");
    let td = described.task_definition().expect("a task definition");
    // Registered again as the console registers: through the SDK, as ECS takes it.
    use gpushare::ecs::task_definitions::json;
    let again = serde_json::Value::Object(json::register_json(td, &[])).to_string();
    let again = json::parse_register(&again).expect("the described revision reads back");
    json::register(&clients.ecs, again)
        .await
        .expect("revision 2");
    let sent = audit
        .begin(intent(
            "inference-prod/embed-api",
            "embed-api:1",
            "embed-api:2",
        ))
        .await
        .expect("intent");
    clients
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("embed-api")
        .task_definition("embed-api:2")
        .send()
        .await
        .expect("sent");
    // Not sent: the server stopped between the intent and the call.
    let lost = audit
        .begin(intent(
            "ml-dev/speech-align",
            "speech-align:1",
            "speech-align:2",
        ))
        .await
        .expect("intent");
    assert!(audit
        .lock(speech_align(), lost.clone())
        .await
        .expect("lock"));

    let fleet = Arc::new(SnapshotStore::new(std::time::Duration::from_secs(15)));
    let source = app::model::FleetSource::Aws {
        region: clients.region.clone(),
    };
    let services = gpushare::ports::service_context(
        &clients,
        gpushare::ports::Settings::defaults(source, &clients.region),
        gpushare::ports::Stores {
            fleet,
            history: Arc::new(gpushare::cost_history::SqlCostHistory::new(
                &audit,
                gpushare::cost_history::RETENTION_DAYS,
            )),
            audit: audit.clone(),
            markets: Arc::new(app::service::ports::NoMarkets),
            reads: Default::default(),
        },
    );
    // Finished rollouts' channels are dropped soon here, to see it happen.
    let watcher = Arc::new(
        gpushare::rollouts::RolloutWatcher::new(
            services.ecs.clone(),
            audit.clone(),
            std::time::Duration::from_millis(200),
        )
        .keeping_finished(std::time::Duration::from_millis(300)),
    );
    let mut services = services;
    services.watches = watcher.clone();
    assert_eq!(
        reconcile(&services, std::time::Duration::ZERO)
            .await
            .expect("reconciled"),
        2
    );
    let lost_record = audit.get(lost.clone()).await.expect("get").expect("found");
    assert_eq!(lost_record.outcome, Outcome::Refused);
    assert!(lost_record
        .detail
        .unwrap_or_default()
        .contains("before UpdateService was sent"));
    assert!(
        audit
            .lock(speech_align(), "next".into())
            .await
            .expect("lock"),
        "the crash's lock is released"
    );
    // The sent one is watched again to its end.
    let started = std::time::Instant::now();
    loop {
        let record = audit.get(sent.clone()).await.expect("get").expect("found");
        if record.outcome == Outcome::Succeeded {
            assert!(record.deployment_id.is_some());
            break;
        }
        assert_eq!(watcher.channels(), 1, "the rollout being watched");
        assert!(
            started.elapsed().as_secs() < 90,
            "still {}: {record:?}",
            record.outcome
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // The finished rollout's channel goes; its state still comes from the audit record.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        watcher.channels(),
        0,
        "the finished rollout's channel was dropped"
    );
    let state = app::service::deployments::deployment_state(&services, &sent)
        .await
        .expect("read")
        .expect("the deployment");
    assert_eq!(
        state.result,
        Some(app::model::deployment::RolloutResult::Succeeded)
    );
    let pending = audit
        .list(AuditFilter {
            outcome: Some("pending".into()),
            ..AuditFilter::default()
        })
        .await
        .expect("list");
    assert!(pending.is_empty());
}

#[tokio::test]
async fn another_live_replicas_records_and_locks_are_left_alone_on_sqlite() {
    let dir = temp_dir("replicas");
    let a = SqlAuditLog::open(None, &dir).await.expect("opens");
    let b = SqlAuditLog::open(None, &dir).await.expect("opens again");
    replicas_leave_each_other_alone(a, b).await;
}

/// The ids of the records `replica` would settle.
async fn unsettled_ids(replica: &SqlAuditLog) -> Vec<String> {
    replica
        .select_unsettled()
        .await
        .expect("unsettled")
        .into_iter()
        .map(|r| r.id)
        .collect()
}

#[tokio::test]
async fn another_live_replicas_records_and_locks_are_left_alone_on_postgresql() {
    let server = Postgres::start();
    let nowhere = std::path::Path::new("/nonexistent");
    let a = SqlAuditLog::open(Some(&server.url()), nowhere)
        .await
        .expect("opens");
    let b = SqlAuditLog::open(Some(&server.url()), nowhere)
        .await
        .expect("opens again");
    replicas_leave_each_other_alone(a, b).await;
}

/// Replica `a` has a deploy in flight: `b` neither settles its record nor takes or frees its
/// lock. Once `a` is gone, `b` settles what it left and the lock comes free.
async fn replicas_leave_each_other_alone(a: SqlAuditLog, b: SqlAuditLog) {
    assert_ne!(a.replica, b.replica);
    let resource = "ml-dev/speech-align";
    let in_flight = a
        .insert(&intent(resource, "speech-align:1", "speech-align:2"))
        .await
        .expect("intent");
    assert!(a.take_lock(resource, &in_flight).await.expect("lock"));
    let mine = b
        .insert(&intent("ml-dev/other", "other:1", "other:2"))
        .await
        .expect("intent");

    let seen = unsettled_ids(&b).await;
    assert!(seen.contains(&mine), "its own record: {seen:?}");
    assert!(
        !seen.contains(&in_flight),
        "another live replica's record: {seen:?}"
    );
    assert!(!b.take_lock(resource, "b-record").await.expect("lock"));
    b.release_lock(resource, "b-record").await.expect("unlock");
    assert!(
        !b.take_lock(resource, "b-record").await.expect("lock"),
        "a's lock stays a's"
    );

    // `a` stops: what it left is `b`'s to settle, and `b` gives its lock back when it does.
    a.leave().await.expect("left");
    let seen = unsettled_ids(&b).await;
    assert!(
        seen.contains(&in_flight),
        "a gone replica's record: {seen:?}"
    );
    b.release_lock(resource, &in_flight).await.expect("unlock");
    assert!(b.take_lock(resource, "b-record").await.expect("lock"));
}
