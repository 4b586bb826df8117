//! A service brought toward its desired state within its deployment configuration: its
//! deployments' counts, new tasks started under `maximumPercent`, old tasks stopped while
//! `minimumHealthyPercent` allows, placement failures recorded, and the rollout settled.

use std::collections::BTreeSet;

use chrono::Duration;

use super::{circuit_breaker, scheduling::Unplaced, services::start_deployment, task_list};
use crate::model::{DeploymentConfig, Fleet, RolloutState, TaskStatus};

/// The first retry after a placement failure, in simulated seconds; each further failure
/// doubles the wait, up to [`PLACEMENT_BACKOFF_MAX_SECONDS`] (ECS backs off up to 15 minutes).
const PLACEMENT_RETRY_SECONDS: i64 = 10;
const PLACEMENT_BACKOFF_MAX_SECONDS: i64 = 15 * 60;
/// The same scheduler event is not written again for six hours, unless its cause went away;
/// "has reached a steady state" is repeated as often.
pub(super) const EVENT_REPEAT_SECONDS: i64 = 6 * 3600;
/// A task counts as running successfully (resetting the breaker's count) once it has run this
/// long: ECS says "successfully running" and does not say for how long; the emulator's
/// inference stands for the health-check grace. A container that exits at once reaches
/// RUNNING first, and still counts as a failure.
pub(super) const HEALTHY_AFTER_SECONDS: i64 = 10;

/// How long to wait before placing again after `failures` placement failures in a row.
fn placement_backoff(failures: u32) -> Duration {
    let doubled =
        PLACEMENT_RETRY_SECONDS.saturating_mul(1_i64 << failures.saturating_sub(1).min(20));
    Duration::seconds(doubled.min(PLACEMENT_BACKOFF_MAX_SECONDS))
}

/// The reason ECS gives the tasks it stops to make room for a deployment.
const SCALING_REASON: &str = "Scaling activity initiated by (deployment ecs-svc)";

/// What one reconciliation works with: the service's size and bounds, and its PRIMARY
/// deployment.
struct Pass {
    desired: u32,
    /// Tasks of all deployments together at most (`maximumPercent`, at least 1).
    max_total: u32,
    /// Running tasks that must stay (`minimumHealthyPercent`, rounded up).
    min_healthy: u32,
    primary_id: String,
    primary_td: String,
    group: String,
    /// The service's tasks on DRAINING instances: replaced within the bounds, then stopped.
    draining: BTreeSet<String>,
    /// PRIMARY tasks among them, running or pending, and running.
    draining_primary_live: u32,
    draining_primary_running: u32,
}

/// The bounds of a rolling update of `desired` tasks: at most `max_total` tasks at once, at
/// least `min_healthy` running. Blue/green, linear and canary run the whole new set beside
/// the old one, which stays until the new set runs.
fn bounds(desired: u32, config: &DeploymentConfig) -> (u32, u32) {
    if config.whole_new_set() {
        return ((desired * 2).max(1), desired);
    }
    (
        (desired * config.maximum_percent / 100).max(1),
        (desired * config.minimum_healthy_percent).div_ceil(100),
    )
}

/// Which old tasks (`(running, arn)`, pending first) to stop now: pending ones always; running
/// ones while more than `min_healthy` run and the new deployment needs room or has replaced
/// them.
fn old_tasks_to_stop(
    old: &[(bool, String)],
    mut running_total: u32,
    min_healthy: u32,
    desired: u32,
    primary_live: u32,
    primary_running: u32,
) -> Vec<String> {
    let mut stop = Vec::new();
    for (running, arn) in old {
        if *running {
            let needed_room = primary_live < desired;
            let over = running_total > min_healthy;
            let replaced = running_total > desired || primary_running >= desired;
            if !(over && (needed_room || replaced)) {
                continue;
            }
            running_total -= 1;
        }
        stop.push(arn.clone());
    }
    stop
}

impl Fleet {
    /// Brings a service toward its desired state within its deployment configuration.
    pub(super) fn reconcile(&mut self, key: &str, name: &str) {
        let Some(pass) = self.count_deployments(key, name) else {
            return;
        };
        self.start_primary_tasks(key, name, &pass);
        self.stop_replaced_tasks(key, name, &pass);
        self.settle_rollout(key, name);
    }

    /// Counts each deployment's running and pending tasks; what this pass works with.
    fn count_deployments(&mut self, key: &str, name: &str) -> Option<Pass> {
        let healthy_since = self.now - Duration::seconds(HEALTHY_AFTER_SECONDS);
        let cluster = self.clusters.get_mut(key)?;
        let svc = cluster.services.get(name)?;
        // Per deployment: running, pending, running successfully.
        let mut counts: Vec<(u32, u32, u32)> = vec![(0, 0, 0); svc.deployments.len()];
        for task in svc.tasks.iter().filter_map(|arn| cluster.tasks.get(arn)) {
            let index = svc
                .deployments
                .iter()
                .position(|d| Some(&d.id) == task.started_by.as_ref());
            if let Some(index) = index {
                if task.last_status == TaskStatus::Running {
                    counts[index].0 += 1;
                    counts[index].2 +=
                        u32::from(task.started_at.is_some_and(|at| at <= healthy_since));
                } else {
                    counts[index].1 += 1;
                }
            }
        }
        let svc = cluster.services.get_mut(name)?;
        let reset = svc.config.reset_on_healthy_task;
        for (deployment, (running, pending, healthy)) in svc.deployments.iter_mut().zip(counts) {
            deployment.running_count = running;
            deployment.healthy_count = healthy;
            // Once the deployment runs a task successfully, its failure count resets and is no
            // longer evaluated (`resetOnHealthyTask`, true by default).
            if reset && healthy > 0 && !deployment.has_run_a_task {
                deployment.has_run_a_task = true;
                deployment.failed_tasks = 0;
            }
            deployment.pending_count = pending;
        }
        let primary = svc.deployments.first()?;
        // Tasks on DRAINING instances (UpdateContainerInstancesState): ECS replaces them
        // within the deployment configuration's bounds and then stops them.
        let draining_instances: BTreeSet<&str> = cluster
            .instances
            .iter()
            .filter(|i| i.room.status == "DRAINING")
            .map(|i| i.arn.as_str())
            .collect();
        let mut draining = BTreeSet::new();
        let (mut draining_primary_live, mut draining_primary_running) = (0, 0);
        if !draining_instances.is_empty() {
            for task in svc.tasks.iter().filter_map(|arn| cluster.tasks.get(arn)) {
                if task.desired_status == TaskStatus::Stopped
                    || !draining_instances.contains(task.instance_arn.as_str())
                {
                    continue;
                }
                draining.insert(task.arn.clone());
                if task.started_by.as_deref() == Some(primary.id.as_str()) {
                    draining_primary_live += 1;
                    if task.last_status == TaskStatus::Running {
                        draining_primary_running += 1;
                    }
                }
            }
        }
        let (max_total, min_healthy) = bounds(svc.desired_count, &svc.config);
        Some(Pass {
            draining,
            draining_primary_live,
            draining_primary_running,
            desired: svc.desired_count,
            max_total,
            min_healthy,
            primary_id: primary.id.clone(),
            primary_td: primary.task_definition_arn.clone(),
            group: format!("service:{name}"),
        })
    }

    /// Starts PRIMARY tasks while there is room under `maximumPercent`, until one cannot be
    /// placed (retried no sooner than [`PLACEMENT_RETRY_SECONDS`] later).
    fn start_primary_tasks(&mut self, key: &str, name: &str, pass: &Pass) {
        let now = self.now;
        let mut started = Vec::new();
        let mut placement_failure: Option<(Unplaced, Option<String>)> = None;
        loop {
            let svc = &self.clusters[key].services[name];
            let primary = &svc.deployments[0];
            let live_total: u32 = svc
                .deployments
                .iter()
                .map(|d| d.running_count + d.pending_count)
                .sum();
            // Tasks on draining instances are to be replaced: they do not count as live.
            let primary_live = (primary.running_count + primary.pending_count)
                .saturating_sub(pass.draining_primary_live);
            if primary_live >= pass.desired
                || live_total >= pass.max_total
                || primary.rollout_state == RolloutState::Failed
            {
                break;
            }
            let backoff = placement_backoff(primary.failed_placements);
            if primary
                .last_placement_failure
                .is_some_and(|at| now < at + backoff)
            {
                break;
            }
            let placed = self.place_or_wait(key, name, pass);
            match placed {
                Ok(arn) => {
                    let Some(svc) = self.service_mut(key, name) else {
                        return;
                    };
                    svc.tasks.insert(arn.clone());
                    svc.deployments[0].pending_count += 1;
                    svc.deployments[0].updated_at = now;
                    // The cause went away: the back-off and the event's silence start over.
                    svc.deployments[0].failed_placements = 0;
                    svc.last_placement_event = None;
                    started.push(arn);
                }
                Err(why) => {
                    placement_failure = Some(why);
                    break;
                }
            }
        }
        if !started.is_empty() {
            let ids = task_list(&started);
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) has started {} tasks: {ids}.",
                    started.len()
                ),
            );
        }
        if let Some((why, closest)) = placement_failure {
            self.record_placement_failure(key, name, &why, closest.as_deref());
        }
    }

    /// Places one PRIMARY task, on its capacity provider's instances when the service has a
    /// strategy; on a provider, a task no instance can take waits for capacity in PROVISIONING.
    fn place_or_wait(
        &mut self,
        key: &str,
        name: &str,
        pass: &Pass,
    ) -> Result<String, (Unplaced, Option<String>)> {
        let provider = self.provider_for_next_task(key, name);
        let group = pass.group.clone();
        let started_by = Some(pass.primary_id.clone());
        self.run_task_on(
            key,
            &pass.primary_td,
            group.clone(),
            started_by.clone(),
            provider.as_deref(),
        )
        .or_else(|why| {
            provider
                .as_deref()
                .and_then(|p| self.wait_for_capacity(key, &pass.primary_td, group, started_by, p))
                .ok_or(why)
        })
    }

    /// Stops the old deployments' tasks that the new one replaces (pending ones first) while
    /// enough stay healthy, and PRIMARY tasks beyond the desired count after a scale-in.
    fn stop_replaced_tasks(&mut self, key: &str, name: &str, pass: &Pass) {
        let (old, excess) = {
            let cluster = &self.clusters[key];
            let svc = &cluster.services[name];
            let ours = |by: Option<&str>| by == Some(pass.primary_id.as_str());
            // The old deployments' tasks, and the PRIMARY's on draining instances, go as the
            // new ones replace them; the PRIMARY's elsewhere only beyond the desired count.
            let tasks_of = |primary: bool| {
                let mut tasks: Vec<(bool, String)> = svc
                    .tasks
                    .iter()
                    .filter_map(|arn| cluster.tasks.get(arn))
                    .filter(|t| {
                        (ours(t.started_by.as_deref()) && !pass.draining.contains(&t.arn))
                            == primary
                    })
                    .map(|t| (t.last_status == TaskStatus::Running, t.arn.clone()))
                    .collect();
                tasks.sort();
                tasks
            };
            let running: u32 = svc.deployments.iter().map(|d| d.running_count).sum();
            let primary = &svc.deployments[0];
            let primary_live = (primary.running_count + primary.pending_count)
                .saturating_sub(pass.draining_primary_live);
            let primary_running = primary
                .running_count
                .saturating_sub(pass.draining_primary_running);
            let old = old_tasks_to_stop(
                &tasks_of(false),
                running,
                pass.min_healthy,
                pass.desired,
                primary_live,
                primary_running,
            );
            let excess: Vec<String> = tasks_of(true)
                .into_iter()
                .take(primary_live.saturating_sub(pass.desired) as usize)
                .map(|(_, arn)| arn)
                .collect();
            (old, excess)
        };
        let stopped: Vec<String> = old
            .into_iter()
            .chain(excess)
            .filter(|arn| self.stop_task(key, arn, SCALING_REASON, "ServiceSchedulerInitiated"))
            .collect();
        if !stopped.is_empty() {
            let ids = task_list(&stopped);
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) has stopped {} running tasks: {ids}.",
                    stopped.len()
                ),
            );
        }
    }

    fn record_placement_failure(
        &mut self,
        key: &str,
        name: &str,
        why: &Unplaced,
        closest: Option<&str>,
    ) {
        let now = self.now;
        let closest = closest
            .map(|id| {
                format!(
                    " The closest matching (container-instance {id}) {}.",
                    why.reason_text()
                )
            })
            .unwrap_or_default();
        let message = format!(
            "(service {name}) was unable to place a task because no container instance met all of its requirements.{closest} For more information, see the Troubleshooting section of the Amazon ECS Developer Guide."
        );
        let write_event = {
            let Some(svc) = self.service_mut(key, name) else {
                return;
            };
            let primary = &mut svc.deployments[0];
            primary.failed_placements += 1;
            // A task the scheduler cannot launch is a failure, until the deployment runs a task.
            if !primary.has_run_a_task {
                primary.failed_tasks += 1;
            }
            primary.last_placement_failure = Some(now);
            primary.updated_at = now;
            // The same message is omitted for six hours while its cause lasts.
            let repeated = svc.last_placement_event.as_ref().is_some_and(|(at, last)| {
                *last == message && now < *at + Duration::seconds(EVENT_REPEAT_SECONDS)
            });
            if !repeated {
                svc.last_placement_event = Some((now, message.clone()));
            }
            !repeated
        };
        if write_event {
            self.push_event(key, name, message);
        }
    }

    /// Completes, fails or rolls back the primary deployment, and says when the service is steady.
    fn settle_rollout(&mut self, key: &str, name: &str) {
        let Some(svc) = self.clusters.get(key).and_then(|c| c.services.get(name)) else {
            return;
        };
        let primary = &svc.deployments[0];
        let old_live: u32 = svc.deployments[1..]
            .iter()
            .map(|d| d.running_count + d.pending_count)
            .sum();
        let tripped = circuit_breaker::trips(&svc.config, svc.desired_count, primary.failed_tasks);
        let rollback = svc.config.circuit_breaker_rollback;
        let in_progress = primary.rollout_state == RolloutState::InProgress;
        // Complete when every task runs successfully, not merely RUNNING.
        let done = primary.healthy_count == svc.desired_count
            && primary.running_count == svc.desired_count
            && primary.pending_count == 0
            && old_live == 0;
        let primary_id = primary.id.clone();
        let steady = svc.steady;
        let rollback_to = svc.last_completed.clone();

        if let Some(reason) = tripped.filter(|_| in_progress) {
            // The rollback re-activates the last completed deployment under its own ID.
            let target = rollback.then_some(rollback_to).flatten();
            self.fail_rollout(key, name, &primary_id, reason, target);
            return;
        }
        if in_progress && done {
            self.complete_rollout(key, name, &primary_id);
        }
        self.note_steady(key, name, steady);
    }

    /// The circuit breaker tripped: the primary deployment fails, and rolls back to `target`.
    fn fail_rollout(
        &mut self,
        key: &str,
        name: &str,
        primary_id: &str,
        reason: &str,
        target: Option<(String, String)>,
    ) {
        let now = self.now;
        let Some(svc) = self.service_mut(key, name) else {
            return;
        };
        let primary = &mut svc.deployments[0];
        primary.rollout_state = RolloutState::Failed;
        primary.rollout_state_reason = format!("ECS deployment circuit breaker: {reason}.");
        primary.updated_at = now;
        if let Some((id, td)) = target.clone() {
            start_deployment(svc, id.clone(), td, now);
            svc.deployments[0].rollout_state_reason =
                format!("ECS deployment circuit breaker: rolling back to deploymentId {id}.");
        }
        svc.steady = false;
        self.push_event(
            key,
            name,
            format!("(service {name}) (deployment {primary_id}) deployment failed: {reason}."),
        );
        if let Some((id, _)) = target {
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) (deployment {primary_id}) rolling back to deployment {id}."
                ),
            );
        }
    }

    /// Every task of the primary deployment runs and is healthy, and the old ones are gone.
    fn complete_rollout(&mut self, key: &str, name: &str, primary_id: &str) {
        let now = self.now;
        let Some(svc) = self.service_mut(key, name) else {
            return;
        };
        svc.deployments.truncate(1);
        let primary = &mut svc.deployments[0];
        primary.rollout_state = RolloutState::Completed;
        primary.rollout_state_reason = format!("ECS deployment {primary_id} completed.");
        primary.updated_at = now;
        svc.last_completed = Some((primary_id.to_string(), primary.task_definition_arn.clone()));
        self.push_event(
            key,
            name,
            format!("(service {name}) (deployment {primary_id}) deployment completed."),
        );
    }

    /// Whether the service is steady now; said when it becomes so, and again every six hours
    /// while it stays so. Old deployments with no tasks left go once the primary has moved on.
    fn note_steady(&mut self, key: &str, name: &str, was_steady: bool) {
        let now = self.now;
        let svc = &self.clusters[key].services[name];
        let is_steady = svc.deployments.len() == 1
            && svc.deployments[0].running_count == svc.desired_count
            && svc.deployments[0].healthy_count == svc.desired_count
            && svc.deployments[0].pending_count == 0;
        let repeat_due = svc
            .last_steady_event
            .is_none_or(|at| now >= at + Duration::seconds(EVENT_REPEAT_SECONDS));
        if is_steady && (!was_steady || repeat_due) {
            self.push_event(
                key,
                name,
                format!("(service {name}) has reached a steady state."),
            );
            if let Some(svc) = self.service_mut(key, name) {
                svc.last_steady_event = Some(now);
            }
        }
        if let Some(svc) = self.service_mut(key, name) {
            svc.steady = is_steady;
            if svc.deployments.len() > 1
                && svc.deployments[0].rollout_state != RolloutState::InProgress
            {
                let primary = svc.deployments[0].clone();
                svc.deployments
                    .retain(|d| d.id == primary.id || d.running_count + d.pending_count > 0);
            }
        }
    }
}

#[cfg(test)]
mod tests;
