//! The rolling update simulated round by round as ECS runs it: old tasks stopped and new ones
//! placed within the deployment's minimum and maximum percent, each new task placed with the
//! placement rules.

use super::{growth::Grower, *};

/// Simulated rounds at most; a rollout that has not finished by then stalls.
pub(super) const MAX_STEPS: u32 = 1_000;

/// Simulates the rolling update of `plan` on `cluster`.
pub fn simulate(cluster: &Cluster, plan: &RolloutPlan) -> (Verdict, Vec<RolloutStep>) {
    let (verdict, steps, _) = simulate_growing(cluster, plan);
    (verdict, steps)
}

/// Simulates the rolling update of `plan` on `cluster`, with what the service's capacity
/// provider launches for new tasks that fit nowhere.
pub fn simulate_growing(
    cluster: &Cluster,
    plan: &RolloutPlan,
) -> (Verdict, Vec<RolloutStep>, Option<GrowthPlan>) {
    let mut grower = plan.growth.as_ref().map(Grower::new);
    let (verdict, steps) = run(cluster, plan, grower.as_mut());
    (verdict, steps, grower.and_then(Grower::finish))
}

fn run(
    cluster: &Cluster,
    plan: &RolloutPlan,
    mut grower: Option<&mut Grower<'_>>,
) -> (Verdict, Vec<RolloutStep>) {
    let mut hosts = cluster.hosts.clone();
    let mut old = cluster.old(plan.running);
    let desired = plan.desired;
    let (upper, lower) = bounds(plan);
    if let Some(never) = never_fits(cluster, plan, &mut hosts, grower.as_deref_mut()) {
        return (never, Vec::new());
    }
    let mut new_running = 0_u32;
    let mut steps = Vec::new();
    for step in 1..=MAX_STEPS {
        if new_running >= desired && old.is_empty() {
            return (Verdict::Completes, steps);
        }
        // Start new tasks while the upper bound allows.
        let total = old.len() as u32 + new_running;
        let room = upper
            .saturating_sub(total)
            .min(desired.saturating_sub(new_running));
        let (started, unplaced, blocked) = start_new(&mut hosts, plan, room);
        new_running += started;
        // The provider launches for what waits; those tasks are placed in the next step. A
        // task that fails at start was placed: nothing is launched for it.
        let launched = matches!(blocked, Some(Miss::NoRoom(_)))
            && grower
                .as_deref_mut()
                .is_some_and(|g| g.grow(&mut hosts, plan, unplaced));
        // Stop old tasks while the lower bound allows (new tasks count once they are running).
        let healthy = old.len() as u32 + new_running;
        let can_stop = healthy.saturating_sub(lower).min(old.len() as u32);
        let stopped = stop_old(&mut hosts, &mut old, can_stop, &plan.old_needs);
        steps.push(RolloutStep {
            step,
            started,
            stopped,
            unplaced,
            old_running: old.len() as u32,
            new_running,
        });
        if started == 0 && stopped == 0 && !launched {
            let reason = match blocked {
                Some(Miss::Impaired(host)) => impaired_stall(plan, &host),
                Some(Miss::NoRoom(why)) if unplaced > 0 => format!(
                    "{unplaced} new {} could not be placed: no instance of {} has room for {} while {} old and {new_running} new tasks run, and the minimum healthy percent ({} %) keeps the old ones. {why}",
                    if unplaced == 1 { "task" } else { "tasks" },
                    plan.cluster,
                    describe(&plan.new),
                    old.len(),
                    plan.minimum_healthy_percent,
                ) + &growth_limit(plan, grower.as_deref()),
                _ => format!(
                    "The bounds allow no step: at most {upper} tasks ({} %) and at least {lower} healthy ({} %) of {desired}.",
                    plan.maximum_percent, plan.minimum_healthy_percent
                ),
            };
            return (Verdict::Stalls { step, reason }, steps);
        }
    }
    (
        Verdict::Stalls {
            step: MAX_STEPS,
            reason: format!("The rollout had not finished after {MAX_STEPS} steps."),
        },
        steps,
    )
}

/// ECS's reason for an MPS task stopped at start on an instance whose MPS daemon is impaired.
const MPS_NOT_RESPONDING: &str = "MPS control daemon is not responding on this instance";

/// The stall of a rollout whose new MPS tasks may be placed on `host`, whose MPS daemon is
/// impaired.
fn impaired_stall(plan: &RolloutPlan, host: &str) -> String {
    format!(
        "New tasks may be placed on {host}, whose MPS daemon is impaired: an MPS task placed there fails at start (\"{MPS_NOT_RESPONDING}\"), and ECS places the next one by the same rules, so it may go there again while {} waits. Whether ECS avoids an impaired instance is not documented; this check assumes it does not.",
        describe(&plan.new)
    )
}

/// "Never": no instance could host one new task even empty, and the provider (if any) has no
/// type that could either.
fn never_fits(
    cluster: &Cluster,
    plan: &RolloutPlan,
    hosts: &mut Vec<Host>,
    grower: Option<&mut Grower<'_>>,
) -> Option<Verdict> {
    let could_grow = grower.as_ref().is_some_and(|g| g.could_host(plan));
    if plan.new == GpuRequest::None
        || could_grow
        || cluster.hosts.iter().any(|h| h.could_host(&plan.new))
    {
        return None;
    }
    let limit = grower
        .and_then(|g| {
            g.grow(hosts, plan, 1);
            g.limit()
        })
        .map(|limit| format!(" The capacity provider cannot help: {limit}."))
        .unwrap_or_default();
    Some(Verdict::Never {
        reason: format!(
            "No instance of {} could host one new task even empty: {}.{limit}",
            plan.cluster,
            describe(&plan.new)
        ),
    })
}

/// What stopped the provider from launching more, as the end of a stall's reason.
fn growth_limit(plan: &RolloutPlan, grower: Option<&Grower<'_>>) -> String {
    grower
        .and_then(Grower::limit)
        .map(|limit| {
            format!(
                " The capacity provider {} cannot launch more: {limit}.",
                plan.growth.as_ref().map_or("", |g| g.provider.as_str())
            )
        })
        .unwrap_or_default()
}

/// The most tasks that may run and the fewest that must stay healthy. ECS rounds the upper
/// bound down and the lower bound up. Blue/green, linear and canary start the whole new set
/// beside the old one and stop the old one after.
fn bounds(plan: &RolloutPlan) -> (u32, u32) {
    let desired = plan.desired;
    if plan.whole_new_set() {
        (desired.saturating_mul(2), desired)
    } else {
        (
            (u64::from(desired) * u64::from(plan.maximum_percent) / 100) as u32,
            (u64::from(desired) * u64::from(plan.minimum_healthy_percent)).div_ceil(100) as u32,
        )
    }
}

/// Why a new task did not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Miss {
    /// No instance had room; what ran out, in ECS's words, at the closest one.
    NoRoom(String),
    /// An instance that could take the task has an impaired MPS daemon: ECS may place it there
    /// (whether it avoids such an instance is not documented), and it then fails at start.
    Impaired(String),
}

/// Starts up to `room` new tasks: how many started, how many did not, and why.
fn start_new(hosts: &mut [Host], plan: &RolloutPlan, room: u32) -> (u32, u32, Option<Miss>) {
    let mut started = 0;
    for _ in 0..room {
        match place(hosts, &plan.new, &plan.new_needs) {
            Ok(()) => started += 1,
            Err(why) => return (started, room - started, Some(why)),
        }
    }
    (started, 0, None)
}

/// Stops `can_stop` old tasks, those that hold GPUs first (stopping them frees room): how many
/// stopped.
fn stop_old(hosts: &mut [Host], old: &mut Vec<OldTask>, can_stop: u32, needs: &Needs) -> u32 {
    old.sort_by_key(|t| t.host.is_none());
    let mut stopped = 0;
    for task in old.drain(..can_stop as usize) {
        if let Some(host) = task.host.and_then(|h| hosts.get_mut(h)) {
            release(&mut host.gpus, &task.request, &task.assignment);
            if let Some(room) = host.room.as_mut() {
                resources::give_back(room, needs);
            }
            host.service_tasks = host.service_tasks.saturating_sub(1);
        }
        stopped += 1;
    }
    stopped
}

/// Places one task on the first instance that takes it (ECS's checks besides GPUs, then the
/// GPU rules); or says what ran out, in ECS's words, at the closest instance: one short only
/// of GPUs before one short of anything else.
pub(super) fn place(hosts: &mut [Host], request: &GpuRequest, needs: &Needs) -> Result<(), Miss> {
    let mut closest: Option<(u8, String)> = None;
    let mut note = |rank: u8, text: String| {
        if closest.as_ref().is_none_or(|(r, _)| rank > *r) {
            closest = Some((rank, text));
        }
    };
    // The instance the emulator would pick: the lowest fit score, the first of equals.
    let mut best: Option<(u64, usize, GpuAssignment)> = None;
    // An impaired instance that could take an MPS task: ECS's strategy may pick it whatever
    // the fit score says, so the task may fail at start.
    let mut impaired: Option<&str> = None;
    for (index, host) in hosts.iter().enumerate() {
        if let Some(reason) = &host.not_placing {
            note(0, format!("The closest instance {} is {reason}.", host.id));
            continue;
        }
        if let Some(room) = &host.room {
            if let Err(why) = resources::check(room, needs, host.service_tasks) {
                note(
                    1,
                    format!(
                        "Out of {}: the closest matching container-instance {} {}.",
                        why.resource(),
                        host.id,
                        why.ecs_words()
                    ),
                );
                continue;
            }
        }
        match find_gpus(&host.gpus, host.mps_capable, request) {
            Ok(assignment) => {
                if host.impaired && matches!(request, GpuRequest::Mps(_)) {
                    impaired.get_or_insert(host.id.as_str());
                }
                let score = placement::fit_score(&host.gpus, request, &assignment);
                if best.as_ref().is_none_or(|(s, _, _)| score < *s) {
                    best = Some((score, index, assignment));
                    if *request == GpuRequest::None {
                        break;
                    }
                }
            }
            Err(_) => note(
                2,
                format!("Out of GPU memory or GPUs: {}.", describe(request)),
            ),
        }
    }
    if let Some(host) = impaired {
        return Err(Miss::Impaired(host.to_string()));
    }
    match best {
        Some((_, index, assignment)) => {
            let host = &mut hosts[index];
            allocate(&mut host.gpus, request, &assignment);
            take(host, needs);
            Ok(())
        }
        None => Err(Miss::NoRoom(
            closest.map(|(_, text)| text).unwrap_or_default(),
        )),
    }
}

pub(super) fn take(host: &mut Host, needs: &Needs) {
    if let Some(room) = host.room.as_mut() {
        resources::take(room, needs);
    }
    host.service_tasks += 1;
}

/// What the pre-check of `plan` on `cluster` checked, and what it could not know.
pub(super) fn scope(cluster: &Cluster, plan: &RolloutPlan) -> (Vec<String>, Vec<String>) {
    let mut checked = vec![
        "GPUs: MPS memory on one GPU per task, whole GPUs idle, the GPU's sharing mode".to_string(),
        match &plan.strategy {
            Some(strategy) if plan.whole_new_set() => format!(
                "the deployment strategy {strategy}: the whole new set of {} tasks runs beside the old one",
                plan.desired
            ),
            _ => format!(
                "the rolling update's bounds: maximumPercent {} %, minimumHealthyPercent {} %",
                plan.maximum_percent, plan.minimum_healthy_percent
            ),
        },
    ];
    let mut unknown = Vec::new();
    room_scope(cluster, plan, &mut checked, &mut unknown);
    let left_out: Vec<String> = cluster
        .hosts
        .iter()
        .filter_map(|h| Some(format!("{} ({})", h.id, h.not_placing.as_ref()?)))
        .collect();
    checked.push(if left_out.is_empty() {
        "instance status: every instance ACTIVE with its agent connected".into()
    } else {
        format!(
            "instance status: left out, as ECS places nothing there: {}",
            left_out.join(", ")
        )
    });
    if plan.new_needs.distinct_instance {
        checked.push(
            "placement constraint distinctInstance: one task of the service per instance".into(),
        );
    }
    for expression in &plan.new_needs.member_of {
        checked.push(format!(
            "placement constraint memberOf({})",
            expression.text
        ));
    }
    mps_scope(cluster, plan, &mut checked, &mut unknown);
    if plan.new_needs.awsvpc {
        eni_scope(cluster, &mut checked, &mut unknown);
    }
    checked.push(format!(
        "placement strategy {}: it chooses among the instances that fit; every new task being alike, it changes which instances take them, not how many fit",
        if plan.placement_strategy.is_empty() {
            "spread(attribute:ecs.availability-zone) (ECS's default for services)".to_string()
        } else {
            plan.placement_strategy.join(", ")
        }
    ));
    unknown.push("which old tasks ECS stops first (it keeps the service balanced across Availability Zones), and so where room frees up: the check stops those holding GPUs first".into());
    unknown.push("how long new tasks take to pass health checks, and whether they do".into());
    if cluster.old_tasks.len() < plan.running as usize {
        unknown.push("where the old tasks without GPUs run: their CPU, memory and ports are not given back as they stop".into());
    }
    (checked, unknown)
}

/// Instances that take no MPS task, and those whose MPS daemon is impaired, for an MPS rollout.
fn mps_scope(
    cluster: &Cluster,
    plan: &RolloutPlan,
    checked: &mut Vec<String>,
    unknown: &mut Vec<String>,
) {
    let no_mps: Vec<&str> = cluster
        .hosts
        .iter()
        .filter(|h| !h.mps_capable && h.gpus.iter().any(|g| g.total_memory_mib > 0))
        .map(|h| h.id.as_str())
        .collect();
    let impaired: Vec<&str> = cluster
        .hosts
        .iter()
        .filter(|h| h.impaired && h.not_placing.is_none())
        .map(|h| h.id.as_str())
        .collect();
    if matches!(plan.new, GpuRequest::Mps(_)) {
        if !no_mps.is_empty() {
            checked.push(format!(
                "instances without GPU sharing, which take no MPS task: {}",
                no_mps.join(", ")
            ));
        }
        if !impaired.is_empty() {
            unknown.push(format!(
                "whether ECS avoids an instance whose MPS daemon is impaired ({}): it is not documented, so the check counts each as a place a new task may go and fail at start (\"{MPS_NOT_RESPONDING}\")",
                impaired.join(", ")
            ));
        }
    }
}

/// CPU, memory and static host ports: checked where the fleet data has the instances' room.
fn room_scope(
    cluster: &Cluster,
    plan: &RolloutPlan,
    checked: &mut Vec<String>,
    unknown: &mut Vec<String>,
) {
    let with_room = cluster.hosts.iter().filter(|h| h.room.is_some()).count();
    if with_room == 0 {
        unknown.push(
            "CPU, memory and host ports: the fleet data has no remaining resources for this cluster"
                .into(),
        );
        return;
    }
    checked.push(format!(
        "CPU ({} units per task) and memory ({} MiB per task) left on each instance",
        plan.new_needs.cpu, plan.new_needs.memory_mib
    ));
    if !plan.new_needs.tcp_ports.is_empty() || !plan.new_needs.udp_ports.is_empty() {
        let ports: Vec<String> = plan
            .new_needs
            .tcp_ports
            .iter()
            .map(|p| format!("{p}/tcp"))
            .chain(plan.new_needs.udp_ports.iter().map(|p| format!("{p}/udp")))
            .collect();
        checked.push(format!("static host ports {}", ports.join(", ")));
    }
}

/// ENI attachment points for awsvpc tasks: checked where each instance's limit is known.
fn eni_scope(cluster: &Cluster, checked: &mut Vec<String>, unknown: &mut Vec<String>) {
    let placing = || cluster.hosts.iter().filter(|h| h.not_placing.is_none());
    let unknown_enis: Vec<&str> = placing()
        .filter(|h| h.room.as_ref().is_none_or(|r| r.enis_free.is_none()))
        .map(|h| h.id.as_str())
        .collect();
    let free: u32 = placing().filter_map(|h| h.room.as_ref()?.enis_free).sum();
    if unknown_enis.is_empty() {
        checked.push(format!(
            "ENI attachment points (awsvpc, one per task): {free} left in the cluster, from each instance type's network interfaces (EC2) less the primary one and the tasks' ENIs"
        ));
    } else {
        unknown.push(format!(
            "ENI attachment points (awsvpc, one per task) on {}: ENI trunking is on there, or EC2 DescribeInstanceTypes could not be read, so their limit is not known and the check counts none",
            unknown_enis.join(", ")
        ));
    }
}
