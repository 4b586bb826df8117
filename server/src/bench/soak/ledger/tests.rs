use super::*;
use serde_json::json;

fn record(n: u32, action: AuditAction, resource: &str, to: &str, outcome: Outcome) -> AuditRecord {
    AuditRecord {
        id: format!("r{n}"),
        at: format!("2026-12-04T10:00:{n:02}.000Z"),
        action,
        resource: resource.into(),
        to_revision: Some(to.into()),
        outcome,
        deployment_id: matches!(outcome, Outcome::InProgress | Outcome::Succeeded)
            .then(|| format!("ecs-svc/{n}")),
        ..AuditRecord::default()
    }
}

fn write(seq: u64, operation: &str, request: Value) -> WriteRecord {
    WriteRecord {
        seq,
        operation: operation.into(),
        request,
        error: None,
        request_id: Some(format!("q{seq}")),
        answered: true,
    }
}

fn scale(seq: u64, n: u32) -> WriteRecord {
    write(
        seq,
        "UpdateService",
        json!({"cluster": "prod-a", "service": "svc-01", "desiredCount": n}),
    )
}

fn restart(seq: u64) -> WriteRecord {
    write(
        seq,
        "UpdateService",
        json!({"cluster": "prod-a", "service": "svc-01", "taskDefinition": "svc-01:3", "forceNewDeployment": true}),
    )
}

fn register(seq: u64, tag: &str) -> WriteRecord {
    write(
        seq,
        "RegisterTaskDefinition",
        json!({"family": "svc-01", "tags": [{"key": "team", "value": "search"}, {"key": AUDIT_TAG, "value": tag}]}),
    )
}

const SVC: &str = "prod-a/svc-01";

#[test]
fn every_write_matched_once_is_clean() {
    let records = [
        record(
            1,
            AuditAction::Register,
            "svc-01",
            "svc-01:3",
            Outcome::Registered,
        ),
        record(
            2,
            AuditAction::Scale,
            SVC,
            "svc-01:3 × 5",
            Outcome::Succeeded,
        ),
        record(
            3,
            AuditAction::Restart,
            SVC,
            "svc-01:3",
            Outcome::InProgress,
        ),
        // Refused before anything was sent: between two restarts, it expects nothing.
        record(4, AuditAction::Scale, SVC, "svc-01:3 × 9", Outcome::Refused),
        record(
            5,
            AuditAction::Restart,
            SVC,
            "svc-01:3",
            Outcome::InProgress,
        ),
        record(
            6,
            AuditAction::Request,
            SVC,
            "svc-01:3 × 9",
            Outcome::Recorded,
        ),
    ];
    let mut refused = scale(5, 7);
    refused.error = Some("InvalidParameterException".into());
    let writes = [
        register(1, "r1"),
        scale(2, 5),
        restart(3),
        restart(4),
        refused,
    ];
    let ledger = compare(&records, &writes);
    assert!(ledger.clean(), "{ledger:?}");
    assert_eq!(
        (ledger.writes_run, ledger.writes_refused, ledger.records),
        (4, 1, 5)
    );
}

#[test]
fn a_write_the_record_says_was_sent_but_ecs_never_ran_is_lost() {
    let records = [record(
        1,
        AuditAction::Scale,
        SVC,
        "svc-01:3 × 5",
        Outcome::Succeeded,
    )];
    let ledger = compare(&records, &[]);
    assert_eq!(ledger.lost, 1, "{ledger:?}");
    let records = [record(
        1,
        AuditAction::Register,
        "svc-01",
        "svc-01:3",
        Outcome::Registered,
    )];
    assert_eq!(compare(&records, &[]).lost, 1);
}

#[test]
fn a_write_ecs_ran_twice_for_one_record_is_sent_twice() {
    let records = [record(
        1,
        AuditAction::Register,
        "svc-01",
        "svc-01:3",
        Outcome::Registered,
    )];
    let ledger = compare(&records, &[register(1, "r1"), register(2, "r1")]);
    assert_eq!((ledger.sent_twice, ledger.lost), (1, 0), "{ledger:?}");

    let records = [record(
        1,
        AuditAction::Restart,
        SVC,
        "svc-01:3",
        Outcome::InProgress,
    )];
    let ledger = compare(&records, &[restart(1), restart(2)]);
    assert_eq!(ledger.sent_twice, 1, "{ledger:?}");
}

#[test]
fn a_write_no_record_accounts_for_is_a_missing_record() {
    let records = [record(
        1,
        AuditAction::Scale,
        SVC,
        "svc-01:3 × 5",
        Outcome::Succeeded,
    )];
    let ledger = compare(&records, &[scale(1, 4), scale(2, 5)]);
    assert_eq!((ledger.missing_records, ledger.lost), (1, 0), "{ledger:?}");
    let ledger = compare(&[], &[register(1, "nobody")]);
    assert_eq!(ledger.missing_records, 1);
}

#[test]
fn a_record_that_says_not_sent_while_ecs_ran_it_has_the_wrong_outcome() {
    let records = [record(
        1,
        AuditAction::Scale,
        SVC,
        "svc-01:3 × 5",
        Outcome::Failed,
    )];
    let ledger = compare(&records, &[scale(1, 5)]);
    assert_eq!(
        (ledger.wrong_outcome, ledger.missing_records),
        (1, 0),
        "{ledger:?}"
    );
    let records = [record(
        1,
        AuditAction::Register,
        "svc-01",
        "svc-01:3",
        Outcome::Refused,
    )];
    assert_eq!(compare(&records, &[register(1, "r1")]).wrong_outcome, 1);
    // A record naming a request ECS did not run.
    let mut named = record(
        1,
        AuditAction::Scale,
        SVC,
        "svc-01:3 × 5",
        Outcome::Succeeded,
    );
    named.request_id = Some("q99".into());
    assert_eq!(compare(&[named], &[scale(1, 5)]).wrong_outcome, 1);
}

#[test]
fn records_still_pending_or_unknown_are_unsettled_but_may_have_run() {
    let records = [
        record(1, AuditAction::Scale, SVC, "svc-01:3 × 5", Outcome::Unknown),
        record(2, AuditAction::Restart, SVC, "svc-01:3", Outcome::Pending),
    ];
    let ledger = compare(&records, &[scale(1, 5)]);
    assert_eq!(
        (
            ledger.unsettled,
            ledger.lost,
            ledger.sent_twice,
            ledger.missing_records
        ),
        (2, 0, 0, 0),
        "{ledger:?}"
    );
    assert!(!ledger.clean());
}
