use super::*;
use crate::model::activity::{StopCode, TaskContainer};

fn task(code: StopCode, reason: &str, exit: Option<i32>) -> TaskInfo {
    TaskInfo {
        stop_code: Some(code),
        stopped_reason: Some(reason.into()),
        containers: vec![TaskContainer {
            name: "main".into(),
            exit_code: exit,
            ..TaskContainer::default()
        }],
        ..TaskInfo::default()
    }
}

#[test]
fn failures_come_first_counted_once_per_reason() {
    let tasks = vec![
        task(
            StopCode::ServiceSchedulerInitiated,
            "Scaling activity",
            None,
        ),
        task(
            StopCode::EssentialContainerExited,
            "Essential container in task exited",
            Some(3),
        ),
        task(
            StopCode::EssentialContainerExited,
            "Essential container in task exited",
            Some(3),
        ),
        task(
            StopCode::TaskFailedToStart,
            "CannotPullContainerError",
            None,
        ),
    ];
    assert_eq!(
        stop_reasons(&tasks),
        [
            "2 tasks stopped (EssentialContainerExited): Essential container in task exited; main exited 3",
            "1 task stopped (TaskFailedToStart): CannotPullContainerError",
            "1 task stopped (ServiceSchedulerInitiated): Scaling activity",
        ]
    );
    assert!(stop_reasons(&[TaskInfo::default()]).is_empty());
}

#[test]
fn a_failure_is_explained_by_its_events_and_stopped_tasks() {
    let events = vec![
        LiveEvent {
            message: "(service a) has started 2 tasks: (task 1) (task 2).".into(),
            ..LiveEvent::default()
        },
        LiveEvent {
            message: "(service a) was unable to place a task.".into(),
            ..LiveEvent::default()
        },
    ];
    let stopped = vec![task(
        StopCode::TaskFailedToStart,
        "CannotPullContainerError",
        None,
    )];
    assert_eq!(
        explain(
            RolloutResult::RolledBack,
            Some("ECS deployment circuit breaker: tasks failed to start.".into()),
            &events,
            &stopped
        )
        .as_deref(),
        Some("ECS deployment circuit breaker: tasks failed to start. Events: (service a) was unable to place a task. | 1 task stopped (TaskFailedToStart): CannotPullContainerError")
    );
    assert_eq!(
        explain(RolloutResult::Failed, None, &[], &stopped).as_deref(),
        Some("1 task stopped (TaskFailedToStart): CannotPullContainerError")
    );
    assert_eq!(
        explain(RolloutResult::Succeeded, None, &events, &stopped),
        None
    );
}

fn deployment(id: &str, status: &str, state: Option<&str>) -> LiveDeployment {
    LiveDeployment {
        id: id.into(),
        status: status.into(),
        rollout_state: state.map(RolloutState::from),
        ..LiveDeployment::default()
    }
}

#[test]
fn a_rollback_is_a_failure_not_a_success() {
    let running = LiveService {
        deployments: vec![
            deployment("new", "PRIMARY", Some("IN_PROGRESS")),
            deployment("old", "ACTIVE", Some("COMPLETED")),
        ],
        ..LiveService::default()
    };
    assert_eq!(rollout_result(&running, "new", "old-td", "new-td"), None);
    let done = LiveService {
        deployments: vec![deployment("new", "PRIMARY", Some("COMPLETED"))],
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&done, "new", "old-td", "new-td"),
        Some((RolloutResult::Succeeded, None))
    );
    let rolled_back = LiveService {
        deployments: vec![
            deployment("back", "PRIMARY", Some("IN_PROGRESS")),
            deployment("new", "ACTIVE", Some("FAILED")),
        ],
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&rolled_back, "new", "old-td", "new-td").map(|r| r.0),
        Some(RolloutResult::RolledBack)
    );
    let failed = LiveService {
        deployments: vec![deployment("new", "PRIMARY", Some("FAILED"))],
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&failed, "new", "old-td", "new-td").map(|r| r.0),
        Some(RolloutResult::Failed)
    );
    let gone = LiveService {
        task_definition: "old-td".into(),
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&gone, "new", "old-td", "new-td").map(|r| r.0),
        Some(RolloutResult::RolledBack)
    );
    // The failed deployment left the list; the breaker's event says why.
    let tripped = LiveService {
        task_definition: "old-td".into(),
        events: vec![LiveEvent {
            message: "(service embed) (deployment new) deployment failed: tasks failed to start."
                .into(),
            ..LiveEvent::default()
        }],
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&tripped, "new", "old-td", "new-td"),
        Some((
            RolloutResult::RolledBack,
            Some("ECS deployment circuit breaker: tasks failed to start; the service runs old-td again.".into())
        ))
    );
    let other = LiveService {
        task_definition: "third-td".into(),
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&other, "new", "old-td", "new-td").map(|r| r.0),
        Some(RolloutResult::Failed)
    );
}

#[test]
fn a_restart_replaced_by_a_later_one_is_not_a_rollback() {
    // A restart's deployment runs the revision the service ran: the service running it "again"
    // says nothing of a rollback.
    let arn = "arn:aws:ecs:us-east-1:123456789012:task-definition/svc-34:1";
    let replaced = LiveService {
        task_definition: arn.into(),
        deployments: vec![
            deployment("ecs-svc/later", "PRIMARY", Some("IN_PROGRESS")),
            deployment("ecs-svc/before", "ACTIVE", Some("COMPLETED")),
        ],
        ..LiveService::default()
    };
    assert_eq!(
        rollout_result(&replaced, "ecs-svc/ours", arn, "svc-34:1"),
        Some((
            RolloutResult::Failed,
            Some(format!("the deployment was replaced by deployment ecs-svc/later before it completed; the service runs {arn}"))
        ))
    );
    // The breaker's event for it still says it was rolled back.
    let tripped = LiveService {
        events: vec![LiveEvent {
            message: "(service svc-34) (deployment ecs-svc/ours) deployment failed: tasks failed to start.".into(),
            ..LiveEvent::default()
        }],
        ..replaced.clone()
    };
    assert_eq!(
        rollout_result(&tripped, "ecs-svc/ours", arn, "svc-34:1").map(|r| r.0),
        Some(RolloutResult::RolledBack)
    );
    // A deploy's: running the old revision again, with the event gone, is still a rollback.
    let deployed_from = "arn:aws:ecs:us-east-1:123456789012:task-definition/svc-34:1";
    assert_eq!(
        rollout_result(&replaced, "ecs-svc/ours", deployed_from, "svc-34:2").map(|r| r.0),
        Some(RolloutResult::RolledBack)
    );
}

#[test]
fn the_deployments_ecs_knows_are_those_it_lists_and_those_its_events_name() {
    let event = |message: &str| LiveEvent {
        message: message.into(),
        ..LiveEvent::default()
    };
    let live = LiveService {
        deployments: vec![deployment("ecs-svc/3", "PRIMARY", Some("IN_PROGRESS"))],
        // Newest first.
        events: vec![
            event("(service s) (deployment ecs-svc/3) rolling back to deployment ecs-svc/1."),
            event("(service s) has started 2 tasks: (task 1234)."),
            event("(service s) (deployment ecs-svc/2) deployment completed."),
            event("Scaling activity initiated by (deployment ecs-svc)"),
        ],
        ..LiveService::default()
    };
    assert_eq!(
        live.known_deployments(),
        ["ecs-svc/3", "ecs-svc/2", "ecs-svc/1"]
    );
    // Oldest event first, each once; a rollback's target only when asked for.
    assert_eq!(
        live.named_deployments(&["(deployment "]),
        ["ecs-svc/2", "ecs-svc/3"]
    );
}
