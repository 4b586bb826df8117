//! `gpushare bench approvals`: what team budgets cost a deploy — the budget check on the
//! scenario's fleet (every team with a budget on every cluster it runs in) — and the time from an
//! approval to UpdateService answered and recorded, on the demo fleet.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use anyhow::Context;
use app::{
    model::{
        arn::{RevisionRef, TaskDefinitionId},
        budget::BudgetRule,
        deployment::DeployRequest,
        identity::{Actor, AuthMode, Role},
        policy::{Policy, RoleRule, TeamRule},
    },
    service::{approvals, budget, deployments, lookup, task_definitions::find_revision},
};

use super::{print_table, Row};

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(at).copied().unwrap_or(0.0)
}

fn person(subject: &str, groups: &[&str], role: Role, teams: &[&str]) -> Actor {
    Actor {
        subject: subject.into(),
        email: Some(format!("{subject}@example.com")),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        role,
        teams: teams.iter().map(|t| t.to_string()).collect(),
        auth: AuthMode::Proxy,
        ..Actor::default()
    }
}

/// A policy where every team of the snapshot has a budget of `mib` on every cluster it runs in,
/// approved by `<team>-leads`.
fn policy_for(snapshot: &app::model::FleetSnapshot, mib: impl Fn(&str, &str) -> u64) -> Policy {
    let mut pairs: BTreeMap<(String, String), ()> = BTreeMap::new();
    for cluster in &snapshot.clusters {
        for service in &cluster.service_list {
            if let Some(team) = &service.team {
                pairs.insert((team.clone(), cluster.name.clone()), ());
            }
        }
    }
    let mut teams: Vec<String> = pairs.keys().map(|(t, _)| t.clone()).collect();
    teams.dedup();
    Policy {
        roles: vec![
            RoleRule {
                group: "platform".into(),
                role: Role::Admin,
            },
            RoleRule {
                group: "ml".into(),
                role: Role::Deployer,
            },
        ],
        teams: teams
            .iter()
            .map(|team| TeamRule {
                group: format!("{team}-eng"),
                team: team.clone(),
            })
            .collect(),
        budgets: pairs
            .into_keys()
            .map(|(team, cluster)| BudgetRule {
                gpu_memory_mib: mib(&team, &cluster),
                approvers: vec![format!("{team}-leads")],
                team,
                cluster,
                whole_gpus: None,
                monthly_cost_cents: None,
            })
            .collect(),
        ..Policy::default()
    }
}

/// The budget check of one deploy on `scenario`, `rounds` times: the first (its revisions not
/// read yet) and the rest.
async fn check_cost(scenario: &str, rounds: u32) -> anyhow::Result<(f64, Vec<f64>, String)> {
    let (mut context, dir) = super::scenario_context(scenario, "budget").await?;
    let snapshot = lookup::snapshot(&context).map_err(|e| anyhow::anyhow!("{e}"))?;
    context.policy = Arc::new(policy_for(&snapshot, |_, _| 64 * 1024));
    // The team and cluster with the most services: the largest sum a check makes.
    let (cluster, service) = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.service_list.iter().map(move |s| (c, s)))
        .filter(|(_, s)| s.team.is_some())
        .max_by_key(|(c, s)| c.service_list.iter().filter(|o| o.team == s.team).count())
        .context("no service with a team")?;
    let runs = TaskDefinitionId::parse(&service.task_definition_arn).context("an ARN")?;
    let services = cluster
        .service_list
        .iter()
        .filter(|o| o.team == service.team)
        .count();
    let mut times = Vec::new();
    let mut first = 0.0;
    let mut words = String::new();
    for round in 0..=rounds {
        let started = Instant::now();
        // As a deploy does it: the team's hold, the judgment counting what was sent since the
        // snapshot, and the hold given back.
        let hold = budget::hold(&context, &cluster.name, service)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let verdict = budget::judge_change(
            &context,
            &snapshot,
            budget::Change {
                cluster: &cluster.name,
                service,
                before: (service.desired, &runs),
                after: (service.desired + 1, &runs),
                what: "this scale-up",
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .context("the service's team has a budget")?;
        if let Some(hold) = hold {
            hold.release().await;
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if round == 0 {
            first = ms;
            words = format!(
                "{} services of team {} on {}",
                services,
                service.team.clone().unwrap_or_default(),
                cluster.name
            );
            let _ = verdict;
        } else {
            times.push(ms);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((first, times, words))
}

/// Sets every MPS memory of a RegisterTaskDefinition request to `mib`.
fn with_mps_memory(value: &mut serde_json::Value, mib: u64) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(mps) = map.get_mut("nvidiaMps").and_then(|m| m.as_object_mut()) {
                mps.insert("memory".into(), mib.into());
            }
            for child in map.values_mut() {
                with_mps_memory(child, mib);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                with_mps_memory(item, mib);
            }
        }
        _ => {}
    }
}

/// On the demo: `count` times, a deploy of embed-api past search's budget is asked for, approved
/// (timed: from the approval to UpdateService answered and the outcome recorded), and rolled
/// back (which frees memory, so it is sent at once).
async fn approval_times(count: u32) -> anyhow::Result<Vec<f64>> {
    let (mut context, dir) = super::scenario_context("demo", "approvals").await?;
    let snapshot = lookup::snapshot(&context).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Search may hold what it holds: any growth waits for approval.
    let held: BTreeMap<(String, String), u64> = {
        context.policy = Arc::new(policy_for(&snapshot, |_, _| u64::MAX / 4));
        let uses = budget::budgets(&context)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        uses.into_iter()
            .map(|u| ((u.team, u.cluster), u.held_mib))
            .collect()
    };
    context.policy = Arc::new(policy_for(&snapshot, |team, cluster| {
        held.get(&(team.to_string(), cluster.to_string()))
            .copied()
            .unwrap_or(0)
    }));
    let source = find_revision(&context, "embed-api", 1)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .context("embed-api:1")?;
    let mut task = serde_json::Value::Object(source.task);
    with_mps_memory(&mut task, 6144);
    let serde_json::Value::Object(task) = task else {
        anyhow::bail!("a task definition is an object");
    };
    let bigger = context
        .ecs_writes
        .register(task)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .revision
        .revision;
    let ana = person("ana", &["ml", "search-eng"], Role::Deployer, &["search"]);
    let cy = person("cy", &["search-leads"], Role::Viewer, &[]);
    let root = person("root", &["platform"], Role::Admin, &[]);
    let request = |revision: u32, expected: u32| DeployRequest {
        revision: RevisionRef::number(revision),
        expected_revision: RevisionRef::number(expected),
        description: "bench".into(),
        ..DeployRequest::default()
    };
    let mut times = Vec::new();
    for _ in 0..count {
        let asked = deployments::deploy(
            &context,
            &ana,
            "inference-prod",
            "embed-api",
            request(bigger, 1),
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        let id = asked.approval.context("the deploy waits for approval")?;
        let started = Instant::now();
        let done = approvals::approve(&context, &cy, &id, "bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(done.audit_id.is_some(), "the approval sent the deploy");
        let back = deployments::deploy(
            &context,
            &root,
            "inference-prod",
            "embed-api",
            request(1, bigger),
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::ensure!(
            back.approval.is_none(),
            "a rollback that frees memory is sent"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(times)
}

/// `gpushare bench approvals`.
pub async fn approvals(args: crate::config::BenchApprovalsArgs) -> anyhow::Result<()> {
    let (first, mut checks, words) = check_cost(&args.scenario, args.rounds).await?;
    let mut sent = approval_times(args.approvals).await?;
    print_table(
        &format!("gpushare bench approvals — budget checks on {}", args.scenario),
        &[
            Row {
                what: format!("budget judged under its hold, counting what was sent since the snapshot ({words}), first (revisions read)"),
                value: format!("{first:.2} ms"),
            },
            Row {
                what: format!("budget judged under its hold, then ({} rounds), p50 / p95", checks.len()),
                value: format!(
                    "{:.3} ms / {:.3} ms",
                    percentile(&mut checks.clone(), 0.5),
                    percentile(&mut checks, 0.95)
                ),
            },
            Row {
                what: format!(
                    "approval → UpdateService answered and recorded, on demo ({} approvals), p50 / p95",
                    sent.len()
                ),
                value: format!(
                    "{:.1} ms / {:.1} ms",
                    percentile(&mut sent.clone(), 0.5),
                    percentile(&mut sent, 0.95)
                ),
            },
        ],
    );
    Ok(())
}
