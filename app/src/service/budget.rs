//! Team GPU budgets: what each team holds against its budget, and the gate a deploy or a change
//! of the desired count passes before it is sent.
//!
//! What a team holds is read from the fleet snapshot, which may be a refresh (or, for a service
//! that moves no task, a sweep) behind ECS, so every service also counts the changes the console
//! sent since ECS last described it (from the audit log, which every replica writes to before
//! anything is sent; see [`crate::model::sent`]). A change is judged and its audit intent written
//! under one lock per team and cluster — in this process and, through the database, across
//! replicas — so that two changes sent at once are judged one after the other, the second
//! counting the first. A new service counts from its `create` record (which names its team)
//! until the snapshot shows it; its creation holds the team's budget until ECS answers. A
//! snapshot too old to judge by is said, and nothing is sent.

use std::{collections::HashMap, sync::Arc, time::Duration};

use crate::{
    model::{
        arn::TaskDefinitionId,
        audit::Lock,
        budget::{
            judge, whole_gpu_mib, BudgetRule, BudgetUse, BudgetVerdict, Delta, ServiceHolding,
            TaskGpu,
        },
        identity::Actor,
        sent::{created_unseen, states, SentChange, SENT_MARGIN_SECONDS},
        task_definition::gpu_settings,
        FleetSnapshot, ServiceError, ServiceRef,
    },
    service::{
        context::ServiceContext, lookup, ports::AuditStore, task_definitions::find_revision,
    },
};

/// An approval a change is sent under: the request, who approved it, and the most the team's
/// use may reach (what the request showed).
#[derive(Clone, Debug)]
pub struct Approved {
    pub id: String,
    pub by: Actor,
    pub after_mib: u64,
}

/// The oldest snapshot a budget is judged by: older than this many refresh intervals (and at
/// least [`MIN_STALE_SECONDS`]), changes made outside the console since may be missed.
const STALE_INTERVALS: u64 = 4;
const MIN_STALE_SECONDS: u64 = 120;

/// How long a change waits for another replica's hold on its team's budget.
const HOLD_WAIT: Duration = Duration::from_secs(5);

/// What one task of the revision `arn` (an ARN or `family:N`) asks of the GPUs; `None` when
/// it cannot be read.
async fn task_gpu(context: &ServiceContext, arn: &str) -> Option<TaskGpu> {
    let id = TaskDefinitionId::parse(arn)?;
    match find_revision(context, &id.family, id.revision).await {
        Ok(Some(source)) => Some(TaskGpu::of(&gpu_settings(&source.task))),
        _ => None,
    }
}

/// A service being changed, as ECS says it is now (read live by the change).
#[derive(Clone, Copy, Debug)]
pub struct LiveNow<'a> {
    pub service: &'a str,
    pub desired: u32,
    pub runs: &'a TaskDefinitionId,
}

/// Refuses to judge by a snapshot older than the refresher should ever leave it.
fn fresh_enough(context: &ServiceContext) -> Result<(), ServiceError> {
    let state = context.fleet.state();
    let limit = (context.fleet.refresh_interval_seconds() * STALE_INTERVALS).max(MIN_STALE_SECONDS);
    let age = state
        .taken_at
        .map(|at| (chrono::Utc::now() - at).num_seconds().max(0) as u64);
    let failed = state
        .last_error
        .map(|e| format!(" The last refresh failed: {e}."))
        .unwrap_or_default();
    match age {
        Some(age) if age <= limit => Ok(()),
        Some(age) => Err(ServiceError::unavailable(format!(
            "The fleet data is {age} s old, too old to judge a team's GPU budget by (at most {limit} s is used): changes made outside the console since would not be counted.{failed} Nothing was sent; try again once the fleet has been read (the fleet page says when)."
        ))),
        None => Err(ServiceError::unavailable(format!(
            "The fleet has not been read yet, so a team's GPU budget cannot be judged.{failed} Nothing was sent; try again in a moment."
        ))),
    }
}

/// The changes sent to `cluster`'s services since the oldest read of `services`, less the
/// margin a change may take to reach ECS.
async fn sent_to(
    audit: &dyn AuditStore,
    cluster: &str,
    services: &[&ServiceRef],
    taken_at: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Vec<SentChange>, ServiceError> {
    let read = |s: &&ServiceRef| {
        s.read_at
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .map(|at| at.with_timezone(&chrono::Utc))
            .or(taken_at)
    };
    // From the oldest read of the team's services, or of the snapshot, so that services created
    // since the snapshot was taken are found too.
    let Some(oldest) = services.iter().filter_map(read).chain(taken_at).min() else {
        return Ok(Vec::new());
    };
    let since = oldest - chrono::Duration::seconds(SENT_MARGIN_SECONDS);
    Ok(audit
        .changes_since(cluster.to_string(), since)
        .await?
        .iter()
        .filter_map(|record| SentChange::of(record, cluster))
        .collect())
}

/// What a team's services hold against `rule`, counting what was sent since each was read
/// (and, for the service `live` names, what ECS says now), and what its waiting requests add,
/// leaving out those for `except` (a `cluster/service` whose change is being judged). With
/// `live`, also the most that service holds by the snapshot and what was sent, leaving out
/// what ECS says now.
async fn budget_use(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    rule: &BudgetRule,
    live: Option<LiveNow<'_>>,
    except: Option<String>,
) -> Result<(BudgetUse, u64), ServiceError> {
    let whole = whole_gpu_mib(snapshot, &rule.cluster);
    let services: Vec<&ServiceRef> = snapshot
        .clusters
        .iter()
        .filter(|c| c.name == rule.cluster)
        .flat_map(|c| c.service_list.iter())
        .filter(|s| s.team.as_deref() == Some(rule.team.as_str()))
        .collect();
    let sent = sent_to(
        context.audit.as_ref(),
        &rule.cluster,
        &services,
        context.fleet.state().taken_at,
    )
    .await?;
    // Each service's possible states: as read, after what was sent, and (last) as ECS says now.
    let states_of: Vec<Vec<(u32, String)>> = services
        .iter()
        .map(|service| {
            let mut all = states(service, &sent);
            if let Some(now) = live.filter(|l| l.service == service.name) {
                all.push((now.desired, now.runs.to_string()));
            }
            all
        })
        .collect();
    let per_arn = task_gpus(context, &states_of).await;
    let mut usage = BudgetUse {
        team: rule.team.clone(),
        cluster: rule.cluster.clone(),
        budget_mib: rule.gpu_memory_mib,
        whole_gpus_budget: rule.whole_gpus,
        monthly_cost_cents: rule.monthly_cost_cents,
        whole_gpu_mib: whole,
        ..BudgetUse::default()
    };
    let mut recorded_most = 0;
    for (service, states) in services.iter().zip(&states_of) {
        // Each state's memory; one that cannot be read is said.
        let sized: Vec<Option<(u32, TaskGpu, u64)>> = states
            .iter()
            .map(|(desired, arn)| {
                per_arn
                    .get(arn.as_str())
                    .copied()
                    .flatten()
                    .map(|task| (*desired, task, u64::from(*desired) * task.budget_mib(whole)))
            })
            .collect();
        if states
            .iter()
            .zip(&sized)
            .any(|((desired, _), size)| size.is_none() && *desired > 0)
        {
            usage.unknown.push(service.name.clone());
        }
        if live.is_some_and(|l| l.service == service.name) {
            // The last state is what ECS says now; the others were read or sent.
            let recorded = sized.len().saturating_sub(1);
            recorded_most = sized[..recorded]
                .iter()
                .flatten()
                .map(|(_, _, mib)| *mib)
                .max()
                .unwrap_or(0);
        }
        let holding = largest_holding(service, &sized);
        usage.held_mib += holding.memory_mib;
        usage.held_whole_gpus += holding.whole_gpus;
        usage.services.push(holding);
    }
    add_created(context, snapshot, rule, &sent, &mut usage).await;
    add_pending(context, rule, except, &mut usage).await?;
    Ok((usage, recorded_most))
}

/// The GPUs of each task definition the states name, read once each; `None` for one that
/// cannot be read.
async fn task_gpus(
    context: &ServiceContext,
    states_of: &[Vec<(u32, String)>],
) -> HashMap<String, Option<TaskGpu>> {
    let mut arns: Vec<&str> = states_of
        .iter()
        .flatten()
        .map(|(_, arn)| arn.as_str())
        .collect();
    arns.sort_unstable();
    arns.dedup();
    let found = futures::future::join_all(arns.iter().map(|arn| task_gpu(context, arn))).await;
    arns.into_iter().map(str::to_string).zip(found).collect()
}

/// What `service` holds: the largest of its possible states (`sized`, each with its desired
/// count, its tasks' GPUs and its memory), the earliest among equals; nothing known when none
/// could be read.
fn largest_holding(service: &ServiceRef, sized: &[Option<(u32, TaskGpu, u64)>]) -> ServiceHolding {
    let largest = sized
        .iter()
        .enumerate()
        .filter_map(|(at, size)| size.map(|s| (at, s)))
        .max_by_key(|(at, (_, _, mib))| (*mib, std::cmp::Reverse(*at)));
    let (desired, per_task, memory, at) = match largest {
        Some((at, (desired, task, mib))) => (desired, Some(task), mib, at),
        None => (service.desired, None, 0, 0),
    };
    ServiceHolding {
        service: service.name.clone(),
        desired,
        per_task,
        memory_mib: memory,
        whole_gpus: per_task.map_or(0, |t| u64::from(desired) * u64::from(t.whole_gpus)),
        counts_sent: at > 0,
    }
}

/// Adds the services the console created for the rule's team that the snapshot does not show
/// yet: what their creation asked for.
async fn add_created(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    rule: &BudgetRule,
    sent: &[SentChange],
    usage: &mut BudgetUse,
) {
    let shown: std::collections::HashSet<&str> = snapshot
        .clusters
        .iter()
        .filter(|c| c.name == rule.cluster)
        .flat_map(|c| c.service_list.iter().map(|s| s.name.as_str()))
        .collect();
    for created in created_unseen(sent, &rule.team, |name| shown.contains(name)) {
        let desired = created.desired.unwrap_or(0);
        let per_task = task_gpu(context, &created.task_definition).await;
        if per_task.is_none() && desired > 0 {
            usage.unknown.push(created.service.clone());
        }
        let memory = per_task.map_or(0, |t| {
            u64::from(desired) * t.budget_mib(usage.whole_gpu_mib)
        });
        let whole = per_task.map_or(0, |t| u64::from(desired) * u64::from(t.whole_gpus));
        usage.held_mib += memory;
        usage.held_whole_gpus += whole;
        usage.services.push(ServiceHolding {
            service: created.service.clone(),
            desired,
            per_task,
            memory_mib: memory,
            whole_gpus: whole,
            counts_sent: true,
        });
    }
}

/// Adds the requests of the rule's team on its cluster waiting for approval (but `except`).
async fn add_pending(
    context: &ServiceContext,
    rule: &BudgetRule,
    except: Option<String>,
    usage: &mut BudgetUse,
) -> Result<(), ServiceError> {
    for count in context
        .approvals
        .pending_counts(String::new(), except)
        .await?
        .into_iter()
        .filter(|c| c.team == rule.team && c.cluster == rule.cluster)
    {
        usage.pending_requests += u32::try_from(count.count).unwrap_or(u32::MAX);
        usage.pending_mib = usage.pending_mib.saturating_add(count.memory_mib);
        usage.pending_whole_gpus = usage.pending_whole_gpus.saturating_add(count.whole_gpus);
    }
    Ok(())
}

/// Every budget of the policy with what its team holds and waits for, by team then cluster.
pub async fn budgets(context: &ServiceContext) -> Result<Vec<BudgetUse>, ServiceError> {
    if context.policy.budgets.is_empty() {
        return Ok(Vec::new());
    }
    let snapshot = lookup::snapshot(context)?;
    let mut rules: Vec<&BudgetRule> = context.policy.budgets.iter().collect();
    rules.sort_by(|a, b| (&a.team, &a.cluster).cmp(&(&b.team, &b.cluster)));
    let mut uses = Vec::with_capacity(rules.len());
    for rule in rules {
        uses.push(budget_use(context, &snapshot, rule, None, None).await?.0);
    }
    Ok(uses)
}

/// A change to judge: `service` of `cluster` going from `before` (its desired count and the
/// revision it runs, as ECS says now) to `after`, in words `what` ("this deploy").
pub struct Change<'a> {
    pub cluster: &'a str,
    pub service: &'a ServiceRef,
    pub before: (u32, &'a TaskDefinitionId),
    pub after: (u32, &'a TaskDefinitionId),
    pub what: &'a str,
}

/// The budget's verdict on `change`, with what it adds; `None` when the service has no team
/// or its team no budget on the cluster. A snapshot too old to judge by is refused.
pub async fn judge_change(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    change: Change<'_>,
) -> Result<Option<(Delta, BudgetVerdict)>, ServiceError> {
    let Some(team) = change.service.team.as_deref() else {
        return Ok(None);
    };
    let Some(rule) = context.policy.budget(team, change.cluster) else {
        return Ok(None);
    };
    fresh_enough(context)?;
    let unreadable = |id: &TaskDefinitionId| {
        ServiceError::unavailable(format!(
            "the budget check cannot read {id}'s GPU settings; nothing was sent, try again"
        ))
    };
    let (desired_before, from) = change.before;
    let (desired_after, to) = change.after;
    let before = task_gpu(context, &from.to_string())
        .await
        .ok_or_else(|| unreadable(from))?;
    let after = task_gpu(context, &to.to_string())
        .await
        .ok_or_else(|| unreadable(to))?;
    // A request waiting for this same service would be replaced by this change (both cannot
    // happen: each expects the service as it is now), so it is not counted twice.
    let live = LiveNow {
        service: &change.service.name,
        desired: desired_before,
        runs: from,
    };
    let except = Some(format!("{}/{}", change.cluster, change.service.name));
    let (mut usage, recorded) = budget_use(context, snapshot, rule, Some(live), except).await?;
    let whole = usage.whole_gpu_mib;
    let delta = Delta::of(desired_before, before, desired_after, after, whole);
    // The service is counted at the largest of what was read, what was sent and what ECS says
    // now; after the change it holds the larger of what was read or sent and what the change
    // makes it. The arithmetic starts from a "held" such that held + delta is that total.
    if let Some(counted) = usage
        .services
        .iter()
        .find(|h| h.service == change.service.name)
        .map(|h| h.memory_mib)
    {
        let now = u64::from(desired_before) * before.budget_mib(whole);
        let then = u64::from(desired_after) * after.budget_mib(whole);
        let total = usage.held_mib - counted + recorded.max(then);
        debug_assert!(total >= then && then == now.saturating_add_signed(delta.memory_mib));
        usage.held_mib = total.saturating_add_signed(-delta.memory_mib);
    }
    Ok(Some((delta, judge(&usage, delta, change.what))))
}

/// The budget's verdict on a new service of `team` on `cluster` with `desired` tasks of
/// `per_task` each, with what it adds; `None` when the team has no budget there. A snapshot too
/// old to judge by is refused.
pub async fn judge_new(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    cluster: &str,
    team: &str,
    desired: u32,
    per_task: TaskGpu,
    what: &str,
) -> Result<Option<(Delta, BudgetVerdict)>, ServiceError> {
    let Some(rule) = context.policy.budget(team, cluster) else {
        return Ok(None);
    };
    fresh_enough(context)?;
    let (usage, _) = budget_use(context, snapshot, rule, None, None).await?;
    let delta = Delta::of(0, per_task, desired, per_task, usage.whole_gpu_mib);
    Ok(Some((delta, judge(&usage, delta, what))))
}

/// Whether an approval still covers what the change would take the team to: not past what the
/// request showed.
pub fn covers(approved: &Approved, verdict: &BudgetVerdict) -> Result<(), ServiceError> {
    if verdict.after_mib <= approved.after_mib {
        return Ok(());
    }
    Err(ServiceError::conflict(format!(
        "the team's use grew since the request: {} The approval covered {}; ask again.",
        verdict.arithmetic,
        crate::model::budget::mib_words(approved.after_mib)
    )))
}

/// The hold of one team's budget on one cluster: while it lives, no other change of the team's
/// use there is judged, in this process or another replica. Dropping it lets go.
pub struct BudgetHold {
    _local: tokio::sync::OwnedMutexGuard<()>,
    audit: Arc<dyn AuditStore>,
    /// The database's lock, until it is given back.
    lock: Option<Lock>,
    id: String,
}

impl BudgetHold {
    /// Lets go of the hold, the database's lock first.
    pub async fn release(mut self) {
        let Some(lock) = self.lock.take() else {
            return;
        };
        if let Err(error) = self.audit.unlock(lock, std::mem::take(&mut self.id)).await {
            tracing::warn!(%error, "a hold on a team's budget could not be given back; it lapses with its replica");
        }
    }
}

impl Drop for BudgetHold {
    /// A hold dropped on an early return (an error, a request for approval) gives its database
    /// lock back in the background.
    fn drop(&mut self) {
        let Some(lock) = self.lock.take() else {
            return;
        };
        let (audit, id) = (self.audit.clone(), std::mem::take(&mut self.id));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = audit.unlock(lock, id).await {
                    tracing::warn!(%error, "a hold on a team's budget could not be given back; it lapses with its replica");
                }
            });
        }
    }
}

/// Holds the budget of `service`'s team on `cluster` while a change of it is judged and its
/// intent written; `None` when the team has no budget there (nothing to hold).
pub async fn hold(
    context: &ServiceContext,
    cluster: &str,
    service: &ServiceRef,
) -> Result<Option<BudgetHold>, ServiceError> {
    let Some(team) = service.team.as_deref() else {
        return Ok(None);
    };
    if context.policy.budget(team, cluster).is_none() {
        return Ok(None);
    }
    let key = format!("{team}@{cluster}");
    let local = context.budget_locks.of(&key).lock_owned().await;
    let lock = Lock::Budget {
        team: team.to_string(),
        cluster: cluster.to_string(),
    };
    let id = format!("hold-{}", uuid_like());
    let started = std::time::Instant::now();
    loop {
        if context.audit.lock(lock.clone(), id.clone()).await? {
            return Ok(Some(BudgetHold {
                _local: local,
                audit: context.audit.clone(),
                lock: Some(lock),
                id,
            }));
        }
        if started.elapsed() >= HOLD_WAIT {
            return Err(ServiceError::conflict(format!(
                "Another change of team {team}'s GPU use on {cluster} is being judged on another replica of the console right now. Nothing was sent; try again in a moment."
            )));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// An id for a hold, unique enough that a late release of one never lets go of another's.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
