//! Deployments through aws-sdk-ecs: the checks before UpdateService (the revision the user saw,
//! the capacity pre-check, the deploy lock), the audit record around it, and a watch per
//! rollout that polls DescribeServices on the server — so nothing depends on a browser staying
//! open — until the rollout succeeds, fails, or is rolled back (a failure).

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use app::{
    model::{
        audit::{AuditAction, AuditIntent, AuditOutcome},
        deployment::{
            rollout_result, DeployAnswer, DeployRequest, LiveDeployment, LiveEvent, LiveService,
            WatchState,
        },
        rollout::Verdict,
    },
    ssr::{
        audit::AuditLog,
        console::ConsoleContext,
        deployments::{family_revision, pre_check, DeployRefusal, Deployer},
        fleet::FleetFeed,
        task_definitions::BoxFuture,
    },
};
use aws_sdk_ecs::{error::ProvideErrorMetadata, operation::RequestId};

use crate::activity::{deployment_tasks, Places};
use tokio::sync::watch;

/// How often a watch reads the service while the rollout runs.
pub const POLL: Duration = Duration::from_secs(1);
/// The longest wait between reads when ECS keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How often a watch reads the deployment's tasks when its counts do not change.
const TASKS_EVERY: Duration = Duration::from_secs(10);

/// Deployments over ECS, with their watches.
pub struct EcsDeployer {
    ecs: aws_sdk_ecs::Client,
    audit: Arc<dyn AuditLog>,
    /// Names the instances and GPUs the deployment's tasks were placed on.
    fleet: Arc<dyn FleetFeed>,
    watches: Mutex<HashMap<String, watch::Sender<WatchState>>>,
    poll: Duration,
}

fn ecs_failed<E>(operation: &str, error: aws_sdk_ecs::error::SdkError<E>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
{
    crate::task_definitions::ecs_failed(operation, error)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl EcsDeployer {
    pub fn new(
        ecs: aws_sdk_ecs::Client,
        audit: Arc<dyn AuditLog>,
        fleet: Arc<dyn FleetFeed>,
        poll: Duration,
    ) -> Arc<Self> {
        Arc::new(EcsDeployer {
            ecs,
            audit,
            fleet,
            watches: Mutex::new(HashMap::new()),
            poll,
        })
    }

    /// The service now, from DescribeServices.
    pub async fn live(&self, cluster: &str, service: &str) -> Result<LiveService, String> {
        let out = self
            .ecs
            .describe_services()
            .cluster(cluster)
            .services(service)
            .send()
            .await
            .map_err(|e| ecs_failed("DescribeServices", e))?;
        let found = out
            .services()
            .first()
            .ok_or_else(|| format!("ECS has no service {service:?} in cluster {cluster:?}"))?;
        let count = |n: i32| n.max(0) as u32;
        Ok(LiveService {
            task_definition: found.task_definition().unwrap_or_default().to_string(),
            desired: count(found.desired_count()),
            running: count(found.running_count()),
            pending: count(found.pending_count()),
            deployments: found
                .deployments()
                .iter()
                .map(|d| LiveDeployment {
                    id: d.id().unwrap_or_default().to_string(),
                    status: d.status().unwrap_or_default().to_string(),
                    task_definition: d.task_definition().unwrap_or_default().to_string(),
                    desired: count(d.desired_count()),
                    running: count(d.running_count()),
                    pending: count(d.pending_count()),
                    failed_tasks: count(d.failed_tasks()),
                    rollout_state: d.rollout_state().map(|s| s.as_str().to_string()),
                    rollout_state_reason: d.rollout_state_reason().map(str::to_string),
                })
                .collect(),
            events: found
                .events()
                .iter()
                .map(|e| LiveEvent {
                    id: e.id().unwrap_or_default().to_string(),
                    at: e
                        .created_at()
                        .and_then(|at| {
                            at.fmt(aws_sdk_ecs::primitives::DateTimeFormat::DateTime)
                                .ok()
                        })
                        .unwrap_or_default(),
                    message: e.message().unwrap_or_default().to_string(),
                })
                .collect(),
        })
    }

    /// The watch of the deployment of audit record `id`, if this server holds one.
    pub fn subscribe(&self, id: &str) -> Option<watch::Receiver<WatchState>> {
        self.watches
            .lock()
            .ok()
            .and_then(|watches| watches.get(id).map(watch::Sender::subscribe))
    }

    /// Starts watching a rollout: reads the service until the rollout ends, publishes each
    /// state, and writes the result to the audit log.
    pub fn spawn_watch(
        self: &Arc<Self>,
        initial: WatchState,
        from_task_definition: String,
        known_events: HashSet<String>,
    ) -> watch::Receiver<WatchState> {
        let (sender, receiver) = watch::channel(initial.clone());
        if let Ok(mut watches) = self.watches.lock() {
            watches.insert(initial.audit_id.clone(), sender.clone());
        }
        let deployer = self.clone();
        tokio::spawn(async move {
            deployer
                .run_watch(sender, initial, from_task_definition, known_events)
                .await;
        });
        receiver
    }

    async fn run_watch(
        &self,
        sender: watch::Sender<WatchState>,
        mut state: WatchState,
        from: String,
        known_events: HashSet<String>,
    ) {
        let mut delay = self.poll;
        // The deployment's counts when its tasks were last read, and when.
        let mut tasks_read: Option<((u32, u32, u32), tokio::time::Instant)> = None;
        loop {
            match self.live(&state.cluster, &state.service).await {
                Ok(live) => {
                    delay = self.poll;
                    state.watch_error = None;
                    state.events = live
                        .events
                        .iter()
                        .filter(|e| !known_events.contains(&e.id))
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
                    let result = rollout_result(&live, &id, &from);
                    state.live = live;
                    let stale = tasks_read
                        .is_none_or(|(seen, at)| seen != counts || at.elapsed() >= TASKS_EVERY);
                    if !id.is_empty() && (stale || result.is_some()) {
                        match self.read_tasks(&state.cluster, &state.service, &id).await {
                            Ok((running, stopped)) => {
                                state.tasks = running;
                                state.stopped_tasks = stopped;
                                tasks_read = Some((counts, tokio::time::Instant::now()));
                            }
                            Err(error) => {
                                state.watch_error = Some(format!("{error}; still watching"));
                            }
                        }
                    }
                    state.read_at = now();
                    if let Some((result, reason)) = result {
                        self.finish_watch(&sender, state, result, reason).await;
                        return;
                    }
                }
                Err(error) => {
                    state.watch_error = Some(format!("{error}; still watching"));
                    delay = (delay * 2).min(MAX_BACKOFF);
                }
            }
            sender.send_replace(state.clone());
            tokio::time::sleep(delay).await;
        }
    }

    /// The tasks the deployment started: those meant to run, and those that stopped.
    async fn read_tasks(
        &self,
        cluster: &str,
        service: &str,
        deployment: &str,
    ) -> Result<
        (
            Vec<app::model::activity::TaskInfo>,
            Vec<app::model::activity::TaskInfo>,
        ),
        String,
    > {
        let places = Places::of(self.fleet.as_ref(), cluster);
        deployment_tasks(&self.ecs, &places, cluster, service, deployment).await
    }

    /// Publishes a rollout's result, with the events and stop reasons that explain a failure,
    /// and writes it to the audit log.
    async fn finish_watch(
        &self,
        sender: &watch::Sender<WatchState>,
        mut state: WatchState,
        result: String,
        reason: Option<String>,
    ) {
        let mut explaining: Vec<String> = state
            .events
            .iter()
            .filter(|e| {
                let m = e.message.to_ascii_lowercase();
                m.contains("fail")
                    || m.contains("unable")
                    || m.contains("rolling back")
                    || m.contains("stopped")
            })
            .map(|e| e.message.clone())
            .take(5)
            .collect();
        if result != "succeeded" {
            explaining.extend(stop_reasons(&state.stopped_tasks).into_iter().take(3));
        }
        let detail = match (reason, explaining.is_empty()) {
            (Some(reason), true) => Some(reason),
            (Some(reason), false) => Some(format!("{reason} Events: {}", explaining.join(" | "))),
            (None, _) if result != "succeeded" => Some(explaining.join(" | ")),
            (None, _) => None,
        };
        if result == "succeeded" {
            state.progress = 1.0;
        }
        state.result = Some(result.clone());
        state.detail = detail.clone();
        sender.send_replace(state.clone());
        let outcome = AuditOutcome {
            outcome: result,
            detail,
            ..AuditOutcome::default()
        };
        if let Err(error) = self.audit.finish(state.audit_id.clone(), outcome).await {
            tracing::warn!(%error, id = %state.audit_id, "the rollout's result could not be written to the audit log");
        }
    }

    async fn send_deploy(
        self: &Arc<Self>,
        context: &ConsoleContext,
        cluster: String,
        service: String,
        request: DeployRequest,
    ) -> Result<DeployAnswer, DeployRefusal> {
        if request.revision == 0 || request.expected_revision == 0 {
            return Err(DeployRefusal::BadRequest {
                message: "revision and expected_revision are revision numbers from 1".into(),
            });
        }
        let check = pre_check(context, &cluster, &service, Some(request.revision)).await?;
        let family = check.service.family.clone();
        let resource = format!("{cluster}/{service}");
        // What runs now, from ECS itself rather than the snapshot.
        let before = self
            .live(&cluster, &service)
            .await
            .map_err(|message| DeployRefusal::Unavailable { message })?;
        let running = family_revision(&before.task_definition)
            .map(|(_, revision)| revision)
            .unwrap_or_default();
        if running != request.expected_revision {
            return Err(DeployRefusal::Conflict {
                message: format!(
                    "{resource} now runs {family}:{running}, not {family}:{} as when you looked: another deploy changed it. Review the change against {family}:{running} and deploy again.",
                    request.expected_revision
                ),
            });
        }
        if request.revision == running {
            return Err(DeployRefusal::BadRequest {
                message: format!(
                    "{resource} already runs {family}:{running}; choose another revision"
                ),
            });
        }
        let verdict = match &check.rollout.verdict {
            Verdict::Completes => "completes".to_string(),
            Verdict::Stalls { step, reason } => format!("stalls at step {step}: {reason}"),
            Verdict::Never { reason } => format!("never fits: {reason}"),
        };
        if check.rollout.verdict != Verdict::Completes && !request.force {
            return Err(DeployRefusal::PreCheck {
                message: format!(
                    "The pre-check says the rollout will not complete ({verdict}). Send it with force to deploy anyway."
                ),
                check: Box::new(check.rollout),
            });
        }
        let action = if request.revision < running {
            AuditAction::Rollback
        } else {
            AuditAction::Deploy
        };
        let target = format!("{family}:{}", request.revision);
        let from = format!("{family}:{running}");
        let intent = AuditIntent {
            actor: "local".into(),
            action,
            resource: resource.clone(),
            from_revision: Some(from.clone()),
            to_revision: Some(target.clone()),
            diff: check
                .comparison
                .as_ref()
                .and_then(|c| serde_json::to_string(&c.diff).ok())
                .unwrap_or_else(|| "[]".into()),
            pre_check: Some(
                if request.force && check.rollout.verdict != Verdict::Completes {
                    format!("{verdict} (deployed anyway)")
                } else {
                    verdict
                },
            ),
            description: Some(request.description.trim().to_string()).filter(|d| !d.is_empty()),
        };
        // The intent first: a crash after it leaves a record the next start reconciles.
        let id = self
            .audit
            .begin(intent)
            .await
            .map_err(|message| DeployRefusal::Unavailable {
                message: format!("{message}; nothing was sent"),
            })?;
        let refuse = |outcome: &str, detail: String| AuditOutcome {
            outcome: outcome.into(),
            detail: Some(detail),
            ..AuditOutcome::default()
        };
        let locked = self
            .audit
            .lock(resource.clone(), id.clone())
            .await
            .map_err(|message| DeployRefusal::Unavailable { message })?;
        if !locked {
            let message = format!(
                "Another deploy of {resource} is being sent right now; wait for it and look again."
            );
            let _ = self
                .audit
                .finish(id, refuse("refused", message.clone()))
                .await;
            return Err(DeployRefusal::Conflict { message });
        }
        let sending = Sending {
            cluster: &cluster,
            service: &service,
            target: &target,
            from: &from,
            id: &id,
            action,
        };
        let sent = self.update(&sending, &before).await;
        let _ = self.audit.unlock(resource.clone()).await;
        match sent {
            Ok(answer) => Ok(answer),
            Err(refusal) => {
                let _ = self
                    .audit
                    .finish(id, refuse("refused", refusal.message().to_string()))
                    .await;
                Err(refusal)
            }
        }
    }

    /// Under the deploy lock: checks once more that the service runs `from`, sends
    /// UpdateService, records the deployment, and starts its watch.
    async fn update(
        self: &Arc<Self>,
        sending: &Sending<'_>,
        before: &LiveService,
    ) -> Result<DeployAnswer, DeployRefusal> {
        let Sending {
            cluster,
            service,
            target,
            from,
            id,
            action,
        } = *sending;
        let now_running = self
            .live(cluster, service)
            .await
            .map_err(|message| DeployRefusal::Unavailable { message })?;
        if now_running.task_definition != before.task_definition {
            return Err(DeployRefusal::Conflict {
                message: format!(
                    "{cluster}/{service} changed while this deploy was checked: it now runs {}. Look again.",
                    family_revision(&now_running.task_definition)
                        .map(|(f, r)| format!("{f}:{r}"))
                        .unwrap_or(now_running.task_definition)
                ),
            });
        }
        let out = self
            .ecs
            .update_service()
            .cluster(cluster)
            .service(service)
            .task_definition(target)
            .send()
            .await
            .map_err(|e| DeployRefusal::Ecs {
                message: ecs_failed("UpdateService", e),
            })?;
        let request_id = out.request_id().map(str::to_string);
        let deployment_id = out
            .service()
            .and_then(|s| {
                s.deployments()
                    .iter()
                    .find(|d| d.status() == Some("PRIMARY"))
            })
            .and_then(|d| d.id())
            .map(str::to_string);
        let _ = self
            .audit
            .finish(
                id.to_string(),
                AuditOutcome {
                    outcome: "in_progress".into(),
                    request_id: request_id.clone(),
                    deployment_id: deployment_id.clone(),
                    ..AuditOutcome::default()
                },
            )
            .await;
        let known: HashSet<String> = now_running.events.iter().map(|e| e.id.clone()).collect();
        self.spawn_watch(
            WatchState {
                audit_id: id.to_string(),
                cluster: cluster.to_string(),
                service: service.to_string(),
                action: action.as_str().to_string(),
                deployment_id: deployment_id.clone(),
                target: target.to_string(),
                from: from.to_string(),
                live: now_running,
                read_at: now(),
                ..WatchState::default()
            },
            before.task_definition.clone(),
            known,
        );
        Ok(DeployAnswer {
            audit_id: id.to_string(),
            deployment_id,
            request_id,
            action: action.as_str().to_string(),
        })
    }

    /// The state of a deployment no watch of this server holds: from its audit record and ECS.
    /// A rollout still in progress gets a watch again (after a restart).
    async fn read_state(self: &Arc<Self>, id: String) -> Result<Option<WatchState>, String> {
        if let Some(receiver) = self.subscribe(&id) {
            return Ok(Some(receiver.borrow().clone()));
        }
        let Some(record) = self.audit.get(id.clone()).await? else {
            return Ok(None);
        };
        if record.action == AuditAction::Register {
            return Ok(None);
        }
        let (cluster, service) = record
            .resource
            .split_once('/')
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .unwrap_or_default();
        let live = self.live(&cluster, &service).await.unwrap_or_default();
        let mut state = WatchState {
            audit_id: record.id.clone(),
            cluster,
            service,
            action: record.action.as_str().to_string(),
            deployment_id: record.deployment_id.clone(),
            target: record.to_revision.clone().unwrap_or_default(),
            from: record.from_revision.clone().unwrap_or_default(),
            live,
            read_at: now(),
            ..WatchState::default()
        };
        match record.outcome.as_str() {
            "succeeded" | "failed" | "rolled_back" | "refused" => {
                state.result = Some(record.outcome.clone());
                state.detail = record.detail.clone();
                state.progress = if record.outcome == "succeeded" {
                    1.0
                } else {
                    0.0
                };
                Ok(Some(state))
            }
            "in_progress" => {
                let from = full_arn(&state.live.task_definition, &state.from);
                let known = HashSet::new();
                let receiver = self.spawn_watch(state, from, known);
                let current = receiver.borrow().clone();
                Ok(Some(current))
            }
            _ => Ok(Some(state)),
        }
    }

    /// At start: every record left `pending` by a crash between its intent and its AWS call is
    /// settled by asking ECS what the service runs; every rollout `in_progress` is watched
    /// again.
    pub async fn reconcile(self: &Arc<Self>) -> Result<u32, String> {
        let mut settled = 0;
        // Both lists first: a pending record settled as sent is in progress next.
        let mut lists = Vec::new();
        for outcome in ["pending", "in_progress"] {
            let records = self
                .audit
                .list(app::model::audit::AuditFilter {
                    outcome: Some(outcome.into()),
                    limit: Some(10_000),
                    ..Default::default()
                })
                .await?;
            lists.push((outcome, records));
        }
        for (outcome, records) in lists {
            for record in records {
                if record.action == AuditAction::Register {
                    if outcome == "pending" {
                        let _ = self
                            .audit
                            .finish(
                                record.id.clone(),
                                AuditOutcome {
                                    outcome: "failed".into(),
                                    detail: Some("the server stopped before ECS answered; see the family's revisions for whether it was registered".into()),
                                    ..AuditOutcome::default()
                                },
                            )
                            .await;
                        settled += 1;
                    }
                    continue;
                }
                let Some((cluster, service)) = record.resource.split_once('/') else {
                    continue;
                };
                if outcome == "in_progress" {
                    let _ = self.read_state(record.id.clone()).await;
                    settled += 1;
                    continue;
                }
                let live = match self.live(cluster, service).await {
                    Ok(live) => live,
                    Err(_) => continue,
                };
                let target = record.to_revision.clone().unwrap_or_default();
                let primary = live
                    .deployments
                    .iter()
                    .find(|d| d.status == "PRIMARY")
                    .cloned();
                let sent = primary.as_ref().is_some_and(|d| {
                    family_revision(&d.task_definition)
                        .map(|(f, r)| format!("{f}:{r}"))
                        .as_deref()
                        == Some(target.as_str())
                });
                let outcome = if sent {
                    AuditOutcome {
                        outcome: "in_progress".into(),
                        deployment_id: primary.map(|d| d.id),
                        detail: Some("reconciled at start: ECS runs the deployment".into()),
                        ..AuditOutcome::default()
                    }
                } else {
                    AuditOutcome {
                        outcome: "refused".into(),
                        detail: Some(
                            "reconciled at start: the server stopped before UpdateService was sent"
                                .into(),
                        ),
                        ..AuditOutcome::default()
                    }
                };
                let resumed = sent;
                let _ = self.audit.finish(record.id.clone(), outcome).await;
                let _ = self.audit.unlock(record.resource.clone()).await;
                if resumed {
                    let _ = self.read_state(record.id.clone()).await;
                }
                settled += 1;
            }
        }
        Ok(settled)
    }
}

/// Why tasks stopped, in words, one line per distinct reason with how many tasks gave it:
/// failures first, then the tasks the scheduler stopped.
fn stop_reasons(tasks: &[app::model::activity::TaskInfo]) -> Vec<String> {
    let mut reasons: Vec<(bool, String, usize)> = Vec::new();
    for task in tasks {
        let mut words = match (&task.stop_code, &task.stopped_reason) {
            (Some(code), Some(reason)) => format!("({code}): {reason}"),
            (None, Some(reason)) => format!(": {reason}"),
            (Some(code), None) => format!("({code})"),
            (None, None) => continue,
        };
        for c in &task.containers {
            if let Some(code) = c.exit_code {
                words.push_str(&format!("; {} exited {code}", c.name));
            }
        }
        let scheduled = task.stop_code.as_deref() == Some("ServiceSchedulerInitiated");
        match reasons.iter_mut().find(|(_, w, _)| *w == words) {
            Some((_, _, count)) => *count += 1,
            None => reasons.push((scheduled, words, 1)),
        }
    }
    reasons.sort_by_key(|(scheduled, _, count)| (*scheduled, std::cmp::Reverse(*count)));
    reasons
        .into_iter()
        .map(|(_, words, count)| {
            let tasks = if count == 1 { "task" } else { "tasks" };
            format!("{count} {tasks} stopped {words}")
        })
        .collect()
}

#[cfg(test)]
mod stop_reason_tests {
    use super::stop_reasons;
    use app::model::activity::{TaskContainer, TaskInfo};

    fn task(code: &str, reason: &str, exit: Option<i32>) -> TaskInfo {
        TaskInfo {
            stop_code: Some(code.into()),
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
            task("ServiceSchedulerInitiated", "Scaling activity", None),
            task(
                "EssentialContainerExited",
                "Essential container in task exited",
                Some(3),
            ),
            task(
                "EssentialContainerExited",
                "Essential container in task exited",
                Some(3),
            ),
            task("TaskFailedToStart", "CannotPullContainerError", None),
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
}

/// A deploy being sent: where, what, from what, its audit record and its kind.
#[derive(Clone, Copy)]
struct Sending<'a> {
    cluster: &'a str,
    service: &'a str,
    target: &'a str,
    from: &'a str,
    id: &'a str,
    action: AuditAction,
}

/// The ARN of `family:revision` in the account and region of `like` (another task definition
/// ARN); `family_revision` itself when `like` is not an ARN.
fn full_arn(like: &str, family_revision: &str) -> String {
    match like.rsplit_once("task-definition/") {
        Some((prefix, _)) => format!("{prefix}task-definition/{family_revision}"),
        None => family_revision.to_string(),
    }
}

/// The deployer as the pages and the API reach it.
pub struct SharedDeployer(pub Arc<EcsDeployer>);

impl Deployer for SharedDeployer {
    fn deploy<'a>(
        &'a self,
        context: &'a ConsoleContext,
        cluster: String,
        service: String,
        request: DeployRequest,
    ) -> BoxFuture<'a, Result<DeployAnswer, DeployRefusal>> {
        Box::pin(self.0.send_deploy(context, cluster, service, request))
    }

    fn state(
        &self,
        _audit: &dyn AuditLog,
        id: String,
    ) -> BoxFuture<'_, Result<Option<WatchState>, String>> {
        Box::pin(self.0.read_state(id))
    }
}

#[cfg(test)]
mod tests {
    use super::full_arn;

    #[test]
    fn a_revision_gets_the_arn_of_its_account() {
        assert_eq!(
            full_arn(
                "arn:aws:ecs:us-east-1:123456789012:task-definition/embed:3",
                "embed:2"
            ),
            "arn:aws:ecs:us-east-1:123456789012:task-definition/embed:2"
        );
        assert_eq!(full_arn("", "embed:2"), "embed:2");
    }
}
