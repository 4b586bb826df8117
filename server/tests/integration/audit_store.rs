//! The audit log's store on both of its backends: SQLite in a temporary data directory, and a
//! real PostgreSQL server started from Debian's binaries for the test.

use std::path::Path;

use crate::support::{temp_dir, Postgres};
use app::{
    model::{
        approval::{ApprovalRequest, ApprovalState},
        audit::{AuditAction, AuditActor, AuditFilter, AuditIntent, AuditOutcome, Outcome},
        budget::Delta,
        identity::{Actor, AuthMode, Role},
    },
    service::ports::{ApprovalQuery, ApprovalStore, Decision},
};
use gpushare::audit::SqlAuditLog;

fn intent(resource: &str) -> AuditIntent {
    AuditIntent {
        who: AuditActor {
            actor: "local".into(),
            actor_email: Some("ana@example.com".into()),
            actor_role: Some(Role::Deployer),
            auth_mode: Some(AuthMode::Proxy),
            source: Some("10.0.0.7".into()),
        },
        action: AuditAction::Deploy,
        resource: resource.into(),
        from_revision: Some("embed:1".into()),
        to_revision: Some("embed:2".into()),
        diff: "[]".into(),
        pre_check: Some("completes".into()),
        description: Some("it's \"quoted\"; DROP TABLE audit_log; --".into()),
        approved_by: Some("cy".into()),
        approval_id: Some("request-1".into()),
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
    assert_eq!(pending.who.actor_email.as_deref(), Some("ana@example.com"));
    assert_eq!(pending.who.actor_role, Some(Role::Deployer));
    assert_eq!(pending.who.auth_mode, Some(AuthMode::Proxy));
    assert_eq!(pending.who.source.as_deref(), Some("10.0.0.7"));
    assert_eq!(pending.approved_by.as_deref(), Some("cy"));
    assert_eq!(pending.approval_id.as_deref(), Some("request-1"));
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

/// A request past a budget, as the deploy asks for it.
fn asked(service: &str) -> ApprovalRequest {
    ApprovalRequest {
        action: AuditAction::Deploy,
        team: "search".into(),
        cluster: "prod".into(),
        service: service.into(),
        requester: Actor {
            subject: "ana".into(),
            email: Some("ana@example.com".into()),
            role: Role::Deployer,
            teams: vec!["search".into()],
            ..Actor::default()
        },
        from: format!("{service}:1"),
        target: format!("{service}:2"),
        arithmetic: "search holds 2 GiB of 3 GiB on prod; this deploy adds 2 GiB".into(),
        delta: Delta {
            memory_mib: 2048,
            whole_gpus: 0,
        },
        after_mib: 4096,
        ..ApprovalRequest::default()
    }
}

fn decision(to: ApprovalState, by: &str) -> Decision {
    Decision {
        to,
        by: by.into(),
        by_email: Some(format!("{by}@example.com")),
        note: Some("it's fine; \"quoted\"".into()),
    }
}

/// What the approvals store must do on every backend, with `other` a second replica on the same
/// database: a request kept whole, decided once when two replicas decide at once, settled only
/// from `sending`.
/// The requests the store lists for `state`, and how many match in all.
async fn listed(log: &SqlAuditLog, state: Option<ApprovalState>) -> (Vec<ApprovalRequest>, u64) {
    ApprovalStore::list(
        log,
        ApprovalQuery {
            state,
            limit: 100,
            ..ApprovalQuery::default()
        },
    )
    .await
    .expect("list")
}

async fn check_approvals(log: &SqlAuditLog, other: &SqlAuditLog) {
    let created = ApprovalStore::create(log, asked("embed"))
        .await
        .expect("create");
    assert!(!created.existing);
    let id = created.id;
    // The same change of the same service asked again, on either replica, is the same request.
    for store in [log, other] {
        let again = ApprovalStore::create(store, asked("embed"))
            .await
            .expect("create");
        assert_eq!((again.id.as_str(), again.existing), (id.as_str(), true));
    }
    let kept = ApprovalStore::get(other, id.clone())
        .await
        .expect("get")
        .expect("found by the other replica");
    assert_eq!(kept.state, ApprovalState::Pending);
    assert_eq!(kept.requester.email.as_deref(), Some("ana@example.com"));
    assert_eq!(kept.delta.memory_mib, 2048);
    assert_eq!(kept.after_mib, 4096);
    assert!(!kept.created_at.is_empty());
    let (pending, total) = listed(log, Some(ApprovalState::Pending)).await;
    assert_eq!((pending.len(), total), (1, 1));

    // Many decisions at once from two replicas: exactly one moves the request.
    let deciders: Vec<_> = (0..8)
        .map(|n| {
            let store = if n % 2 == 0 {
                log.clone()
            } else {
                other.clone()
            };
            let id = id.clone();
            tokio::spawn(async move {
                ApprovalStore::decide(
                    &store,
                    id,
                    decision(ApprovalState::Sending, &format!("approver{n}")),
                )
                .await
            })
        })
        .collect();
    let mut won = 0;
    for decider in deciders {
        if decider.await.expect("joined").expect("decide") {
            won += 1;
        }
    }
    assert_eq!(won, 1, "one decision wins");
    let sending = ApprovalStore::get(log, id.clone())
        .await
        .expect("get")
        .expect("found");
    assert_eq!(sending.state, ApprovalState::Sending);
    assert!(sending
        .decided_by
        .as_deref()
        .is_some_and(|b| b.starts_with("approver")));
    assert_eq!(
        sending.decision_note.as_deref(),
        Some("it's fine; \"quoted\"")
    );
    ApprovalStore::settle(
        log,
        id.clone(),
        ApprovalState::Sent,
        "sent".into(),
        Some("a1".into()),
    )
    .await
    .expect("settle");
    // Settled once: a second settle of a request no longer sending changes nothing.
    ApprovalStore::settle(
        other,
        id.clone(),
        ApprovalState::Refused,
        "late".into(),
        None,
    )
    .await
    .expect("settle");
    let sent = ApprovalStore::get(other, id.clone())
        .await
        .expect("get")
        .expect("found");
    assert_eq!(sent.state, ApprovalState::Sent);
    assert_eq!(sent.audit_id.as_deref(), Some("a1"));
    assert_eq!(sent.detail.as_deref(), Some("sent"));

    let rejected = ApprovalStore::create(other, asked("rerank"))
        .await
        .expect("create")
        .id;
    assert!(ApprovalStore::decide(
        log,
        rejected.clone(),
        decision(ApprovalState::Rejected, "cy")
    )
    .await
    .expect("decide"));
    assert!(
        !ApprovalStore::decide(other, rejected, decision(ApprovalState::Sending, "root"))
            .await
            .expect("decide")
    );
    assert_eq!(listed(log, Some(ApprovalState::Pending)).await.1, 0);
    assert_eq!(listed(log, None).await.1, 2);
    // Once decided, the same change may be asked again.
    let anew = ApprovalStore::create(other, asked("embed"))
        .await
        .expect("create");
    assert!(!anew.existing && anew.id != id);

    // Counts and sums are never capped, whatever the number of requests: 600 requests of three
    // teams (past the 500 the list used to stop at).
    for n in 0..600 {
        let request = ApprovalRequest {
            team: ["search", "vision", "ads"][n % 3].into(),
            cluster: "prod".into(),
            from: format!("svc-{n}:1"),
            target: format!("svc-{n}:2"),
            ..asked(&format!("svc-{n}"))
        };
        assert!(
            !ApprovalStore::create(log, request)
                .await
                .expect("create")
                .existing
        );
    }
    let counts = ApprovalStore::pending_counts(other, "ana".into(), None)
        .await
        .expect("counts");
    let of = |team: &str| -> (u64, u64) {
        counts
            .iter()
            .filter(|c| c.team == team)
            .fold((0, 0), |(n, mib), c| (n + c.count, mib + c.memory_mib))
    };
    // Ana asked for all of them (the "embed" one asked again above among them, for search).
    assert_eq!(of("search"), (201, 201 * 2048));
    assert_eq!(of("vision"), (200, 200 * 2048));
    assert!(counts.iter().all(|c| c.own));
    let others = ApprovalStore::pending_counts(other, "cy".into(), Some("prod/svc-0".into()))
        .await
        .expect("counts");
    assert_eq!(
        others
            .iter()
            .filter(|c| c.team == "search")
            .map(|c| c.count)
            .sum::<u64>(),
        200,
        "one service left out"
    );
    assert!(others.iter().all(|c| !c.own));
    let (page, total) = listed(log, Some(ApprovalState::Pending)).await;
    assert_eq!((page.len(), total), (100, 601));
    let (vision, total) = ApprovalStore::list(
        log,
        ApprovalQuery {
            state: Some(ApprovalState::Pending),
            team: Some("vision".into()),
            limit: 100,
            offset: 150,
            ..ApprovalQuery::default()
        },
    )
    .await
    .expect("list");
    assert_eq!((vision.len(), total), (50, 200));
    assert!(vision.iter().all(|r| r.team == "vision"));
}

#[tokio::test]
async fn approvals_are_decided_once_across_replicas_on_sqlite() {
    let dir = temp_dir("approvals-sqlite");
    let log = SqlAuditLog::open(None, &dir).await.expect("opens");
    let other = SqlAuditLog::open(None, &dir)
        .await
        .expect("a second replica");
    check_approvals(&log, &other).await;
}

#[tokio::test]
async fn approvals_are_decided_once_across_replicas_on_postgresql() {
    let server = Postgres::start();
    let log = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens");
    let other = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("a second replica");
    check_approvals(&log, &other).await;
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
