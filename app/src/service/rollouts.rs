//! Following one rollout until it ends: DescribeServices every poll (backing off while ECS
//! fails), the new deployment's tasks when its counts change, each state published to the
//! watchers, and the result with what explains it written to the audit log.

use std::{collections::HashSet, time::Duration};

use tokio::sync::watch;

use crate::{
    model::{
        audit::AuditOutcome,
        deployment::{explain, rollout_result, RolloutResult, WatchState},
    },
    service::{
        clock,
        ports::{AuditStore, EcsReads, RolloutToWatch, TaskQuery},
    },
};

/// How often a watch reads the service while the rollout runs.
pub const POLL: Duration = Duration::from_secs(1);
/// The longest wait between reads when ECS keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How often a watch reads the deployment's tasks when its counts do not change.
const TASKS_EVERY: Duration = Duration::from_secs(10);

/// Follows `rollout` until it ends, publishing each state on `publish`, then writes the result
/// to the audit log. Reads the service every `poll`.
pub async fn follow(
    ecs: &dyn EcsReads,
    audit: &dyn AuditStore,
    rollout: RolloutToWatch,
    publish: &watch::Sender<WatchState>,
    poll: Duration,
) {
    let RolloutToWatch {
        initial: mut state,
        from_task_definition: from,
        known_events,
    } = rollout;
    let known: HashSet<String> = known_events.into_iter().collect();
    let mut delay = poll;
    // The deployment's counts when its tasks were last read, and when.
    let mut tasks_read: Option<((u32, u32, u32), tokio::time::Instant)> = None;
    loop {
        match ecs
            .service(state.cluster.clone(), state.service.clone())
            .await
        {
            Ok(live) => {
                delay = poll;
                state.watch_error = None;
                state.events = live
                    .events
                    .iter()
                    .filter(|e| !known.contains(&e.id))
                    .cloned()
                    .collect();
                let id = state.deployment_id.clone().unwrap_or_default();
                let counts = live
                    .deployments
                    .iter()
                    .find(|d| d.id == id)
                    .map(|ours| {
                        state.progress = if ours.desired == 0 {
                            1.0
                        } else {
                            (f64::from(ours.running) / f64::from(ours.desired)).min(1.0)
                        };
                        (ours.running, ours.pending, ours.failed_tasks)
                    })
                    .unwrap_or_default();
                let result = rollout_result(&live, &id, &from, &state.target);
                state.live = live;
                let stale = tasks_read
                    .is_none_or(|(seen, at)| seen != counts || at.elapsed() >= TASKS_EVERY);
                if !id.is_empty() && (stale || result.is_some()) {
                    match deployment_tasks(ecs, &mut state, &id).await {
                        Ok(()) => tasks_read = Some((counts, tokio::time::Instant::now())),
                        Err(error) => state.watch_error = Some(format!("{error}; still watching")),
                    }
                }
                state.read_at = clock::now();
                if let Some((result, reason)) = result {
                    finish(audit, publish, state, result, reason).await;
                    return;
                }
            }
            Err(error) => {
                state.watch_error = Some(format!("{error}; still watching"));
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
        publish.send_replace(state.clone());
        tokio::time::sleep(delay).await;
    }
}

/// Reads the tasks deployment `deployment` started into `state`: those still meant to run, and
/// those that stopped, most recent first.
async fn deployment_tasks(
    ecs: &dyn EcsReads,
    state: &mut WatchState,
    deployment: &str,
) -> Result<(), crate::model::ServiceError> {
    let mut found = Vec::with_capacity(2);
    for stopped in [false, true] {
        let query = TaskQuery {
            stopped,
            service: Some(state.service.clone()),
        };
        let mut list: Vec<_> = ecs
            .tasks(state.cluster.clone(), query)
            .await?
            .into_iter()
            .filter(|t| t.started_by.as_deref() == Some(deployment))
            .collect();
        list.sort_by(|a, b| {
            b.stopped_at
                .cmp(&a.stopped_at)
                .then_with(|| a.instance.cmp(&b.instance))
                .then_with(|| a.id.cmp(&b.id))
        });
        found.push(list);
    }
    state.stopped_tasks = found.pop().unwrap_or_default();
    state.tasks = found.pop().unwrap_or_default();
    Ok(())
}

/// Publishes a rollout's result, with the events and stop reasons that explain a failure, and
/// writes it to the audit log.
async fn finish(
    audit: &dyn AuditStore,
    publish: &watch::Sender<WatchState>,
    mut state: WatchState,
    result: RolloutResult,
    reason: Option<String>,
) {
    let detail = explain(result, reason, &state.events, &state.stopped_tasks);
    if result == RolloutResult::Succeeded {
        state.progress = 1.0;
    }
    state.result = Some(result);
    state.detail = detail.clone();
    let outcome = AuditOutcome {
        outcome: result.outcome(),
        detail,
        ..AuditOutcome::default()
    };
    if let Err(error) = audit.finish(state.audit_id.clone(), outcome).await {
        // The rollout ended either way; the watch page says the log does not have it.
        state.watch_error = Some(format!(
            "the result could not be written to the audit log: {error}; the next start records it"
        ));
        tracing::warn!(%error, id = %state.audit_id, "a rollout's result could not be written to the audit log");
    }
    publish.send_replace(state);
}
