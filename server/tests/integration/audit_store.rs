//! The audit log's store on both of its backends: SQLite in a temporary data directory, and a
//! real PostgreSQL server started from Debian's binaries for the test.

use std::path::Path;

use crate::support::{temp_dir, Postgres};
use app::model::{
    audit::{AuditAction, AuditFilter, AuditIntent, AuditOutcome, Outcome},
    identity::{AuthMode, Role},
};
use gpushare::audit::SqlAuditLog;

fn intent(resource: &str) -> AuditIntent {
    AuditIntent {
        actor: "local".into(),
        action: AuditAction::Deploy,
        resource: resource.into(),
        from_revision: Some("embed:1".into()),
        to_revision: Some("embed:2".into()),
        diff: "[]".into(),
        pre_check: Some("completes".into()),
        description: Some("it's \"quoted\"; DROP TABLE audit_log; --".into()),
        actor_email: Some("ana@example.com".into()),
        actor_role: Some(Role::Deployer),
        auth_mode: Some(AuthMode::Proxy),
        source: Some("10.0.0.7".into()),
    }
}

/// What every backend must do.
async fn check_store(log: &SqlAuditLog) {
    let first = log.insert(&intent("prod/embed")).await.expect("insert");
    let second = log.insert(&intent("prod/rerank")).await.expect("insert");
    let pending = log.one(&first).await.expect("get").expect("found");
    assert_eq!(pending.outcome, Outcome::Pending);
    assert_eq!(pending.action, AuditAction::Deploy);
    assert_eq!(pending.description, intent("x").description, "text is data");
    assert_eq!(pending.actor_email.as_deref(), Some("ana@example.com"));
    assert_eq!(pending.actor_role, Some(Role::Deployer));
    assert_eq!(pending.auth_mode, Some(AuthMode::Proxy));
    assert_eq!(pending.source.as_deref(), Some("10.0.0.7"));
    log.update(
        &first,
        &AuditOutcome {
            outcome: Outcome::InProgress,
            request_id: Some("req-1".into()),
            deployment_id: Some("ecs-svc/1".into()),
            ..AuditOutcome::default()
        },
    )
    .await
    .expect("update");
    log.update(
        &first,
        &AuditOutcome {
            outcome: Outcome::RolledBack,
            detail: Some("circuit breaker".into()),
            ..AuditOutcome::default()
        },
    )
    .await
    .expect("update");
    let done = log.one(&first).await.expect("get").expect("found");
    assert_eq!(done.outcome, Outcome::RolledBack);
    assert_eq!(done.request_id.as_deref(), Some("req-1"), "kept");
    assert_eq!(done.deployment_id.as_deref(), Some("ecs-svc/1"), "kept");
    assert_eq!(done.detail.as_deref(), Some("circuit breaker"));
    let all = log.select(&AuditFilter::default()).await.expect("list");
    assert_eq!(
        all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [second.as_str(), first.as_str()],
        "newest first"
    );
    let filtered = log
        .select(&AuditFilter {
            resource: Some("rerank".into()),
            outcome: Some("pending".into()),
            action: Some("deploy".into()),
            limit: Some(5),
        })
        .await
        .expect("filter");
    assert_eq!(filtered.len(), 1);
    assert_eq!(filtered[0].id, second);
    let none = log
        .select(&AuditFilter {
            action: Some("register".into()),
            ..AuditFilter::default()
        })
        .await
        .expect("filter");
    assert!(none.is_empty());
    assert!(log.one("nope").await.expect("get").is_none());

    assert!(log.take_lock("prod/embed", &first).await.expect("lock"));
    assert!(
        !log.take_lock("prod/embed", &second).await.expect("lock"),
        "held"
    );
    assert!(
        log.take_lock("prod/other", &second).await.expect("lock"),
        "per service"
    );
    log.release_lock("prod/embed", &second)
        .await
        .expect("unlock by another record");
    assert!(
        !log.take_lock("prod/embed", &second).await.expect("lock"),
        "a lock is given back only by the record that holds it"
    );
    log.release_lock("prod/embed", &first)
        .await
        .expect("unlock");
    assert!(
        log.take_lock("prod/embed", &second).await.expect("lock"),
        "free again"
    );

    // Many takers at once: exactly one wins.
    let takers: Vec<_> = (0..8)
        .map(|n| {
            let log = log.clone();
            tokio::spawn(async move { log.take_lock("prod/race", &format!("t{n}")).await })
        })
        .collect();
    let mut won = 0;
    for taker in takers {
        if taker.await.expect("joined").expect("lock") {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn the_store_works_on_sqlite() {
    let dir = temp_dir("audit-sqlite");
    let log = SqlAuditLog::open(None, &dir).await.expect("opens");
    assert_eq!(log.backend, "sqlite");
    check_store(&log).await;
    // Opening again applies no migration twice and keeps the records.
    let again = SqlAuditLog::open(None, &dir).await.expect("opens again");
    assert_eq!(
        again
            .select(&AuditFilter::default())
            .await
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn the_store_works_on_postgresql() {
    let server = Postgres::start();
    let log = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens");
    assert_eq!(log.backend, "postgres");
    check_store(&log).await;
    let again = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens again");
    assert_eq!(
        again
            .select(&AuditFilter::default())
            .await
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn a_database_url_of_another_kind_is_refused() {
    let error = SqlAuditLog::open(Some("mysql://x"), Path::new("/tmp"))
        .await
        .err()
        .expect("refused");
    assert!(error.to_string().contains("postgres:// or sqlite://"));
}
