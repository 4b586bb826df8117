//! The incremental refresh within ECS's API budget, on an emulator that enforces ECS's request
//! throttling: the first paced read, ECS calls per refresh at steady state and with 1 % of the
//! tasks changed (spread over the fleet, and on a few instances), the share of each bucket's
//! sustained rate that comes to at the refresh interval, and the age of the data when a task
//! starts.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use super::Row;
use crate::fleet::{ec2::Ec2Reader, events::EventFeed, reader::FleetReader, store::SnapshotStore};

/// The refresh interval the figures are for.
const INTERVAL: Duration = Duration::from_secs(15);

/// Calls per group of actions, from the emulator's status.
fn group_calls(em: &emulator::Emulator) -> Vec<(String, u32, u64, u64)> {
    em.status()
        .api_groups
        .into_iter()
        .map(|g| (g.group, g.sustained, g.calls, g.throttled))
        .collect()
}

/// Stops `count` live tasks: at random over the fleet, or all on as few instances as hold them.
fn stop_tasks(em: &emulator::Emulator, count: usize, concentrated: bool) -> usize {
    em.with_fleet(|fleet| {
        let mut picked: Vec<(String, String)> = Vec::new();
        let mut all: Vec<(String, String, String)> = fleet
            .clusters
            .iter()
            .flat_map(|(key, c)| {
                c.tasks
                    .values()
                    .filter(|t| t.is_live())
                    .map(|t| (key.clone(), t.arn.clone(), t.instance_arn.clone()))
            })
            .collect();
        if concentrated {
            all.sort_by(|a, b| a.2.cmp(&b.2).then(a.1.cmp(&b.1)));
            picked.extend(all.into_iter().take(count).map(|(k, a, _)| (k, a)));
        } else {
            let n = all.len().max(1);
            let step = (n / count.max(1)).max(1);
            picked.extend(
                all.into_iter()
                    .enumerate()
                    .filter(|(i, _)| i % step == 0)
                    .take(count)
                    .map(|(_, (k, a, _))| (k, a)),
            );
        }
        for (key, arn) in &picked {
            fleet.stop_task(key, arn, "stopped by the benchmark", "UserInitiated");
        }
        picked.len()
    })
}

/// Waits (up to 30 s) until the consumer has read and deleted every event on the queue.
async fn drained(em: &emulator::Emulator) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline
        && em
            .status()
            .events_queue
            .is_some_and(|q| q.visible + q.in_flight > 0)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The budget figures, on `em` (rate limits on) served at `endpoint`.
pub async fn rows(em: &emulator::Emulator, endpoint: &str, share: u32) -> anyhow::Result<Vec<Row>> {
    em.set_faults(emulator::Faults {
        rate_limits: Some(true),
        ..emulator::Faults::default()
    })
    .map_err(anyhow::Error::msg)?;
    let clients = crate::aws::Clients::with_share(
        &crate::aws::Target::Emulator {
            endpoint: endpoint.to_string(),
        },
        share,
    )
    .await;
    // The events feed is followed only from the second half on: until then the refresh polls.
    let path = em.enable_events_queue();
    let feed = Arc::new(EventFeed::new(
        clients.sqs.clone(),
        &format!("{endpoint}{path}"),
    ));
    let reader = FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_ec2(Ec2Reader::new(clients.ec2.clone()))
        .with_budget(clients.budget.clone())
        .with_events(feed.clone());
    let mut rows = Vec::new();
    let live = em.status().tasks;

    let started = Instant::now();
    let first = reader.refresh().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    rows.push(Row {
        what: format!("first full read, paced to {share} % of ECS's rates, ECS throttling on"),
        value: format!(
            "{:.1} s, {} ECS calls, {} throttled",
            started.elapsed().as_secs_f64(),
            first.snapshot.api_calls,
            clients
                .calls
                .total("ecs", crate::aws::calls::Outcome::Throttled)
        ),
    });

    steady_state(em, &reader, &mut rows).await?;
    one_percent_changed(em, &reader, &feed, &clients, live, &mut rows).await?;
    let store = data_age(em, Arc::new(reader), &mut rows).await;
    rows.push(Row {
        what: "ECS calls throttled in all of the above".into(),
        value: format!(
            "{} of {} attempts",
            clients
                .calls
                .total("ecs", crate::aws::calls::Outcome::Throttled),
            clients.calls.total("ecs", crate::aws::calls::Outcome::Ok)
                + clients
                    .calls
                    .total("ecs", crate::aws::calls::Outcome::Throttled)
        ),
    });
    drop(store);
    em.set_faults(emulator::Faults::default())
        .map_err(anyhow::Error::msg)?;
    Ok(rows)
}

/// Steady state: ECS calls per refresh when nothing changes, and the most-used bucket's share.
async fn steady_state(
    em: &emulator::Emulator,
    reader: &FleetReader,
    rows: &mut Vec<Row>,
) -> anyhow::Result<()> {
    let before = group_calls(em);
    let mut steady = Vec::new();
    for _ in 0..8 {
        let refresh = reader.refresh().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        steady.push(refresh.snapshot.api_calls);
    }
    let after = group_calls(em);
    rows.push(Row {
        what: "ECS calls per refresh at steady state (no changes), 8 refreshes".into(),
        value: format!(
            "max {}, {:?}",
            steady.iter().max().copied().unwrap_or(0),
            steady
        ),
    });
    let mut shares: Vec<(f64, String)> = after
        .iter()
        .map(|(group, sustained, calls, _)| {
            let earlier = before
                .iter()
                .find(|(g, ..)| g == group)
                .map_or(0, |(_, _, c, _)| *c);
            let per_refresh = (calls - earlier) as f64 / steady.len() as f64;
            let per_second = per_refresh / INTERVAL.as_secs_f64();
            (
                per_second / f64::from(*sustained),
                format!(
                    "{group}: {per_refresh:.1} calls a refresh = {per_second:.2}/s of {sustained}/s"
                ),
            )
        })
        .collect();
    shares.sort_by(|a, b| b.0.total_cmp(&a.0));
    if let Some((share_used, text)) = shares.first() {
        rows.push(Row {
            what: format!(
                "most-used bucket's sustained rate at a {} s interval, steady state",
                INTERVAL.as_secs()
            ),
            value: format!("{:.1} % ({text})", share_used * 100.0),
        });
    }

    Ok(())
}

/// 1 % of the tasks change: stopped, and replaced by their services. First by polling alone,
/// then following ECS's task state change events through the SQS queue.
async fn one_percent_changed(
    em: &emulator::Emulator,
    reader: &FleetReader,
    feed: &Arc<EventFeed>,
    clients: &crate::aws::Clients,
    live: usize,
    rows: &mut Vec<Row>,
) -> anyhow::Result<()> {
    let changes = [
        ("spread over the fleet", false, false),
        ("on the fewest instances", true, false),
        ("spread over the fleet, with events", false, true),
        ("on the fewest instances, with events", true, true),
    ];
    for (label, concentrated, events) in changes {
        if events && !feed.following() {
            crate::fleet::events::spawn(feed);
            let deadline = Instant::now() + Duration::from_secs(30);
            while !feed.following() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // What the queue held from before: read, and the refresh brought level with it.
            drained(em).await;
            reader.refresh().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let count = (live / 100).max(1);
        let stopped = stop_tasks(em, count, concentrated);
        em.advance(20);
        let sqs_before = clients.calls.total("sqs", crate::aws::calls::Outcome::Ok);
        if events {
            // The consumer reads the events as they come; the refresh comes after them.
            drained(em).await;
        }
        let sqs_calls = clients.calls.total("sqs", crate::aws::calls::Outcome::Ok) - sqs_before;
        let before = group_calls(em);
        let refresh = reader.refresh().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let after = group_calls(em);
        let resource = |calls: &[(String, u32, u64, u64)]| {
            calls
                .iter()
                .find(|(g, ..)| g == "Cluster resource read actions")
                .map_or(0, |(_, _, c, _)| *c)
        };
        rows.push(Row {
            what: format!("ECS calls per refresh, 1 % of tasks changed {label}"),
            value: format!(
                "{} ({stopped} tasks stopped and replaced; {} cluster resource reads{})",
                refresh.snapshot.api_calls,
                resource(&after) - resource(&before),
                if events {
                    format!("; {sqs_calls} SQS calls to read the events")
                } else {
                    String::new()
                }
            ),
        });
        // Settle before the next measure.
        em.advance(60);
        reader.refresh().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    }

    Ok(())
}

/// The age of the data when a task starts: the refresher at its interval, a task started at a
/// random moment, the time until a snapshot shows it. The store, to stop its refresher.
async fn data_age(
    em: &emulator::Emulator,
    reader: Arc<FleetReader>,
    rows: &mut Vec<Row>,
) -> Arc<SnapshotStore> {
    let store = Arc::new(SnapshotStore::new(INTERVAL));
    crate::fleet::store::spawn_refresher(&store, reader.clone());
    let (cluster, definition, group) = em.with_fleet(|fleet| {
        let (key, cluster) = fleet.clusters.iter().next().expect("a cluster");
        let service = cluster.services.values().next().expect("a service");
        (
            key.clone(),
            service.task_definition_arn.clone(),
            "family:bench".to_string(),
        )
    });
    let mut ages = Vec::new();
    for n in 0..12_u64 {
        let offset = Duration::from_millis(1_000 + (n * 7_919) % 14_000);
        tokio::time::sleep(offset).await;
        let arn = em.with_fleet(|fleet| fleet.run_task(&cluster, &definition, group.clone(), None));
        let Ok(arn) = arn else {
            continue;
        };
        let started = Instant::now();
        let deadline = started + Duration::from_secs(120);
        loop {
            let seen = store.state().snapshot.is_some_and(|s| {
                s.clusters
                    .iter()
                    .flat_map(|c| c.instances.iter())
                    .flat_map(|i| i.gpus.iter())
                    .flat_map(|g| g.containers.iter())
                    .any(|c| c.task_arn == arn)
            });
            if seen || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ages.push(started.elapsed());
    }
    ages.sort();
    if !ages.is_empty() {
        let p95 = ages[((ages.len() as f64 * 0.95).ceil() as usize).clamp(1, ages.len()) - 1];
        rows.push(Row {
            what: format!(
                "age of the data when a task starts, {} tasks at random moments, {} s interval",
                ages.len(),
                INTERVAL.as_secs()
            ),
            value: format!(
                "p50 {:.1} s, p95 {:.1} s, max {:.1} s",
                ages[ages.len() / 2].as_secs_f64(),
                p95.as_secs_f64(),
                ages[ages.len() - 1].as_secs_f64()
            ),
        });
    }
    store
}
