//! The allocation history: minutes recorded once whatever the replicas, hours summed in place,
//! on SQLite and PostgreSQL; the recorder over the emulator's replayed past, and over a day with
//! a scale-up, a deploy and a drained instance made through the API, checked
//! against figures worked out by hand.

use std::{path::Path, sync::Arc};

use crate::support::{temp_dir, Postgres};

use app::model::cost::{
    history, Amounts, CostQuery, HoldingKey, HoldingKind, Holdings, Period, PriceBook,
};
use app::service::ports::CostHistory;
use gpushare::{audit::SqlAuditLog, config::EmulatorArgs, cost_history::SqlCostHistory};

fn key(kind: HoldingKind, team: &str, service: &str) -> HoldingKey {
    HoldingKey {
        cluster: "prod".into(),
        instance_type: "g5.12xlarge".into(),
        lifecycle: Some(app::model::cost::Lifecycle::OnDemand),
        kind,
        team: team.into(),
        service: service.into(),
    }
}

/// One g5.12xlarge for an hour, half a GPU of it held by team x's service a.
fn an_hour() -> Holdings {
    let mut holdings = Holdings::new();
    holdings.insert(
        key(HoldingKind::Capacity, "", ""),
        Amounts {
            instance_hours: 1.0,
            gpu_hours: 4.0,
            ..Amounts::default()
        },
    );
    holdings.insert(
        key(HoldingKind::Held, "x", "a"),
        Amounts {
            gpu_hours: 0.5,
            memory_mib_hours: 12_000.0,
            usage_gpu_hours: 0.5,
            unused_gpu_hours: 0.25,
            estimated_unused_gpu_hours: 0.25,
            max_rule_gpu_hours: 0.8,
            ..Amounts::default()
        },
    );
    holdings
}

/// Two replicas record overlapping minutes at once: every minute counts once.
async fn check_replicas(first: SqlAuditLog, second: SqlAuditLog) {
    assert_ne!(first.replica, second.replica);
    let a = SqlCostHistory::new(&first, 400);
    let b = SqlCostHistory::new(&second, 400);
    // 2026-11-30 00:00 UTC, in minutes.
    let base = 1_796_083_200 / 60;
    let holdings = an_hour();
    let (one, two) = tokio::join!(
        a.record(&holdings, base..base + 120),
        b.record(&holdings, base + 60..base + 180)
    );
    let (one, two) = (one.expect("records"), two.expect("records"));
    assert_eq!(one + two, 180, "{one} + {two}");
    // Again: nothing new.
    assert_eq!(
        a.record(&holdings, base..base + 180).await.expect("again"),
        0
    );
    let recorded = b.select(base * 60, (base + 240) * 60).await.expect("reads");
    assert_eq!(recorded.minutes.values().sum::<u32>(), 180);
    assert_eq!(recorded.first, Some(base * 60));
    let total = recorded.total();
    let capacity = &total[&key(HoldingKind::Capacity, "", "")];
    let held = &total[&key(HoldingKind::Held, "x", "a")];
    assert!((capacity.instance_hours - 3.0).abs() < 1e-9, "{capacity:?}");
    assert!((capacity.gpu_hours - 12.0).abs() < 1e-9, "{capacity:?}");
    assert!((held.gpu_hours - 1.5).abs() < 1e-9, "{held:?}");
    assert!((held.memory_mib_hours - 36_000.0).abs() < 1e-6, "{held:?}");
    assert!((held.unused_gpu_hours - 0.75).abs() < 1e-9, "{held:?}");
    assert!(
        (held.estimated_unused_gpu_hours - 0.75).abs() < 1e-9,
        "{held:?}"
    );
    assert!((held.max_rule_gpu_hours - 2.4).abs() < 1e-9, "{held:?}");
    assert_eq!(held.max_rule_unknown_gpu_hours, 0.0, "{held:?}");
    // Over whole days the daily rows are read, with the hours at either end: the same sums.
    let wide = a
        .select(base * 60 - 86_400 + 7200, base * 60 + 2 * 86_400 + 3600)
        .await
        .expect("reads");
    assert_eq!(wide.minutes, recorded.minutes);
    for (key, amounts) in &wide.total() {
        let hourly = &total[key];
        assert!(
            (amounts.gpu_hours - hourly.gpu_hours).abs() < 1e-9
                && (amounts.instance_hours - hourly.instance_hours).abs() < 1e-9,
            "{key:?}: {amounts:?} vs {hourly:?}"
        );
    }
    // Three hours of a g5.12xlarge at $5.672: $17.016, of which x holds an eighth.
    let query = CostQuery {
        period: Period::Custom,
        ..CostQuery::default()
    };
    let range = history::Range {
        from: base * 60,
        to: (base + 240) * 60,
    };
    let report = history::report(
        &recorded,
        &app::model::cost::Recorded::default(),
        &PriceBook::builtin("us-east-1").into(),
        &query,
        range,
    );
    assert_eq!(report.total_cents, 1702);
    let x = report.rows.iter().find(|r| r.name == "x").expect("x");
    assert_eq!(x.cost_cents, 213, "{report:?}");
    assert!(
        report.notes.iter().any(|n| n.contains("75 %")),
        "{:?}",
        report.notes
    );
    check_bill(&a, &b, base).await;
    // Pruned past the retention: nothing left.
    a.prune((base + 400 * 1440 + 600) * 60)
        .await
        .expect("prunes");
    let after = a.select(base * 60, (base + 240) * 60).await.expect("reads");
    assert!(
        after.days.is_empty() && after.minutes.is_empty(),
        "{after:?}"
    );
}

/// The bill as the cost report reads it: the instances seen on a day Cost Explorer was read
/// for, summed per type and lifecycle as priced (no lifecycle is on demand), with what Cost
/// Explorer billed for those it listed; a day not read has no sums.
async fn check_bill(a: &SqlCostHistory, b: &SqlCostHistory, base: i64) {
    use app::model::cost::Lifecycle;
    use gpushare::cost_history::bill::SeenInstance;
    let instance = |id: &str, instance_type: &str, lifecycle| SeenInstance {
        instance_id: id.into(),
        cluster: "prod".into(),
        instance_type: instance_type.into(),
        lifecycle,
    };
    let seen = [
        instance("i-a", "g5.12xlarge", Some(Lifecycle::OnDemand)),
        instance("i-b", "g5.12xlarge", None),
        instance("i-c", "p5.48xlarge", Some(Lifecycle::CapacityBlock)),
    ];
    // Two hours of each, on the day of `base`, and a minute on the next day.
    let day = base * 60;
    a.record_seen(&an_hour(), &seen, base + 300..base + 420)
        .await
        .expect("records");
    a.record_seen(&an_hour(), &seen, base + 1440..base + 1441)
        .await
        .expect("records");
    let lines =
        std::collections::BTreeMap::from([("i-a".to_string(), 10.25), ("i-c".to_string(), 30.5)]);
    assert!(a
        .store_billed(day, &lines, day + 2 * 86_400, 1)
        .await
        .expect("stores"));
    assert!(!b
        .store_billed(day, &lines, day + 2 * 86_400, 1)
        .await
        .expect("once"));
    let bill = CostHistory::bill(b, day - 86_400, day + 2 * 86_400)
        .await
        .expect("the bill");
    assert_eq!(bill.read.len(), 1);
    assert_eq!(
        bill.sums.keys().collect::<Vec<_>>(),
        vec![&day],
        "only the day read"
    );
    let g5 = &bill.sums[&day][&("g5.12xlarge".to_string(), Lifecycle::OnDemand)];
    assert_eq!((g5.minutes, g5.instances, g5.listed), (240, 2, 1), "{g5:?}");
    assert!((g5.usd - 10.25).abs() < 1e-9, "{g5:?}");
    let p5 = &bill.sums[&day][&("p5.48xlarge".to_string(), Lifecycle::CapacityBlock)];
    assert_eq!((p5.minutes, p5.instances, p5.listed), (120, 1, 1), "{p5:?}");
    assert!((p5.usd - 30.5).abs() < 1e-9, "{p5:?}");
    assert_eq!(bill.sums[&day].len(), 2);
    // The detail, for the reconciliation.
    let lines = CostHistory::billed_lines(b, day, day + 86_400)
        .await
        .expect("lines");
    assert_eq!(lines.len(), 2);
    let seen = CostHistory::seen(b, day, day + 2 * 86_400)
        .await
        .expect("seen");
    assert_eq!(seen.len(), 6);
}

#[tokio::test]
async fn replicas_on_sqlite_count_each_minute_once() {
    let dir = temp_dir("history-sqlite");
    let first = SqlAuditLog::open(None, &dir).await.expect("opens");
    let second = SqlAuditLog::open(None, &dir).await.expect("opens");
    check_replicas(first, second).await;
}

/// Hours recorded before the larger-share split and the estimated unused were (their columns
/// NULL) read as held by memory share and as estimated, and are counted as such.
#[tokio::test]
async fn hours_recorded_before_compute_shares_count_by_memory() {
    let dir = temp_dir("history-before");
    let log = SqlAuditLog::open(None, &dir).await.expect("opens");
    let history = SqlCostHistory::new(&log, 400);
    let base = 1_796_083_200 / 60;
    history
        .record(&an_hour(), base..base + 60)
        .await
        .expect("records");
    let raw = sqlx::AnyPool::connect(&format!("sqlite://{}", dir.join("gpushare.db").display()))
        .await
        .expect("the database");
    for table in ["cost_hours", "cost_days"] {
        sqlx::query(&format!(
            "UPDATE {table} SET max_rule_gpu_hours = NULL, estimated_unused_gpu_hours = NULL"
        ))
        .execute(&raw)
        .await
        .expect("as before the columns");
    }
    let recorded = history
        .select(base * 60, (base + 60) * 60)
        .await
        .expect("reads");
    let held = recorded.total()[&key(HoldingKind::Held, "x", "a")];
    assert_eq!(held.max_rule_gpu_hours, held.gpu_hours, "{held:?}");
    assert_eq!(held.max_rule_unknown_gpu_hours, held.gpu_hours, "{held:?}");
    assert_eq!(held.estimated_unused_gpu_hours, held.unused_gpu_hours);
}

#[tokio::test]
async fn replicas_on_postgresql_count_each_minute_once() {
    let server = Postgres::start();
    let first = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens");
    let second = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens");
    assert_eq!(first.backend, "postgres");
    check_replicas(first, second).await;
}

/// The demo's last five days replayed through the SDK into the recorder: the instances' hours
/// are every recorded hour of every instance, and embed-api holds what its tasks reserve — 8
/// tasks of 4,096 MiB all day once search scaled it up, 5 before.
#[tokio::test]
async fn the_recorder_over_the_emulators_past_matches_figures_worked_out_by_hand() {
    let days = 5;
    let args = EmulatorArgs {
        history_days: days,
        ..EmulatorArgs::default()
    };
    let now = chrono::Utc::now();
    let emulator = gpushare::build_emulator(&args, days)
        .await
        .expect("the demo");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");
    let dir = temp_dir("history-replay");
    let audit = SqlAuditLog::open(None, &dir).await.expect("opens");
    let history = Arc::new(SqlCostHistory::new(&audit, 400));
    let reader = gpushare::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_usage(gpushare::fleet::usage::UsageReader::new(
            clients.cloudwatch.clone(),
            "host",
            4,
        ))
        .with_ec2(gpushare::fleet::ec2::Ec2Reader::new(clients.ec2.clone()));
    let minutes = gpushare::cost_history::replay(emulator.clone(), reader, history.clone(), now)
        .await
        .expect("replays");
    assert!(minutes >= 5 * 1440 - 30, "{minutes}");

    let recorded = history
        .select(now.timestamp() - 6 * 86_400, now.timestamp() + 3600)
        .await
        .expect("reads");
    let hours = recorded.recorded_hours();
    assert!((hours - f64::from(minutes) / 60.0).abs() < 1e-9);
    let instances = emulator.status().container_instances as f64;
    let total = recorded.total();
    let instance_hours: f64 = total
        .iter()
        .filter(|(k, _)| k.kind == HoldingKind::Capacity)
        .map(|(_, a)| a.instance_hours)
        .sum();
    assert!(
        (instance_hours - instances * hours).abs() < 1e-6,
        "{instance_hours} instance-hours for {instances} instances over {hours} h"
    );

    // embed-api's memory, day by day: 8 × 4,096 MiB on the days after the scale-up (four days
    // ago at 09:00 UTC), 5 × 4,096 on the day before, and on the day itself 9 hours of 5 and
    // 15 of 8, to within the replay's 15-minute step.
    let embed = |day: i64| -> f64 {
        recorded.days[&day]
            .iter()
            .filter(|(k, _)| k.kind == HoldingKind::Held && k.service == "embed-api")
            .map(|(_, a)| a.memory_mib_hours)
            .sum()
    };
    let today = now.timestamp().div_euclid(86_400) * 86_400;
    let mib = 4096.0;
    for ago in [1, 2, 3] {
        let day = today - ago * 86_400;
        assert!(
            (embed(day) - 8.0 * mib * 24.0).abs() < 1.0,
            "{ago} days ago: {}",
            embed(day)
        );
    }
    let change_day = embed(today - 4 * 86_400);
    let by_hand = 5.0 * mib * 9.0 + 8.0 * mib * 15.0;
    assert!(
        (change_day - by_hand).abs() <= 3.0 * mib * 0.25 + 1.0,
        "{change_day} vs {by_hand}"
    );

    // Priced: every on-demand instance's price for every recorded hour, to the cent.
    let book = PriceBook::builtin("us-east-1");
    let snapshot = gpushare::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_ec2(gpushare::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
        .refresh()
        .await
        .expect("reads")
        .snapshot;
    let by_hand: f64 = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .filter_map(|i| {
            book.price(
                &i.instance_type,
                app::model::cost::Lifecycle::priced_as(i.lifecycle),
            )
        })
        .map(|p| p.usd_per_hour * hours)
        .sum();
    let range = history::Range {
        from: now.timestamp() - 6 * 86_400,
        to: now.timestamp() + 3600,
    };
    let report = history::report(
        &recorded,
        &app::model::cost::Recorded::default(),
        &book.clone().into(),
        &CostQuery::default(),
        range,
    );
    assert!(
        (report.total_cents as f64 - by_hand * 100.0).abs() <= 1.0,
        "{} vs {by_hand}",
        report.total_cents
    );
    assert_eq!(
        report.rows.iter().map(|r| r.cost_cents).sum::<i64>(),
        report.total_cents
    );

    // The daily CSV: a line per day and service; the days add up to the period, to the cent.
    let by_service = CostQuery {
        group: app::model::cost::Grouping::Service,
        ..CostQuery::default()
    };
    let csv = history::daily_csv(&recorded, &book.clone().into(), &by_service);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "day,service,kind,cost_usd,gpu_hours,unused_usd,recorded_hours"
    );
    assert!(lines
        .iter()
        .any(|l| l.contains(",inference-prod/embed-api,allocated,")));
    let cents: i64 = lines[1..]
        .iter()
        .map(|l| {
            let usd = l.split(',').nth(3).unwrap_or_default();
            let (dollars, cents) = usd.split_once('.').unwrap_or((usd, "0"));
            dollars.parse::<i64>().unwrap_or(0) * 100 + cents.parse::<i64>().unwrap_or(0)
        })
        .sum();
    assert_eq!(cents, report.total_cents, "the days add up to the period");
}

/// A simulated day of the demo recorded through the SDK in 15-minute steps, with three changes
/// made through ECS's API between steps: rerank scaled from 4 to 5 tasks, then deployed with
/// 6,144 MiB per task instead of 8,192, then one instance holding a rerank task drained. The
/// recorder's rerank memory-hours match the hand-computed sum over the four stretches (within
/// the rollout's overlap, at most two steps per change), and the instance-hours are every
/// instance's every recorded hour — a drained instance is still billed.
#[tokio::test]
#[allow(clippy::unwrap_used)]
async fn the_recorder_follows_a_scale_up_a_deploy_and_a_drain_over_a_day() {
    use app::service::ports::{EcsReads, EcsWrites};
    use aws_sdk_ecs::types::ContainerInstanceStatus;

    let args = EmulatorArgs {
        history_days: 1,
        ..EmulatorArgs::default()
    };
    let emulator = gpushare::build_emulator(&args, 1).await.expect("the demo");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");
    let dir = temp_dir("history-day");
    let audit = SqlAuditLog::open(None, &dir).await.expect("opens");
    let history = Arc::new(SqlCostHistory::new(&audit, 400));
    let clock = emulator.clone();
    let reader = || {
        gpushare::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
            .with_ec2(gpushare::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
    };
    let step = gpushare::cost_history::REPLAY_STEP_MINUTES * 60;
    let begin = emulator.now().timestamp().div_euclid(step) * step + step;
    let at = |hours: i64| chrono::DateTime::from_timestamp(begin + hours * 3600, 0).unwrap();
    let replay =
        |until| gpushare::cost_history::replay(emulator.clone(), reader(), history.clone(), until);
    let now_reader = {
        let clock = clock.clone();
        reader().with_clock(Arc::new(move || clock.now()))
    };
    let rerank = |snapshot: &app::model::FleetSnapshot| {
        snapshot.clusters[1]
            .service_list
            .iter()
            .find(|s| s.name == "rerank")
            .cloned()
            .unwrap()
    };
    let settled = |what: &str, snapshot: &app::model::FleetSnapshot, desired: u32| {
        let service = rerank(snapshot);
        assert_eq!(snapshot.clusters[1].name, "inference-prod");
        assert_eq!(
            (service.desired, service.running, service.pending),
            (desired, desired, 0),
            "{what}: {service:?}"
        );
    };

    // 6 hours as built: 4 tasks of 8,192 MiB.
    replay(at(6)).await.expect("replays");
    settled("as built", &now_reader.refresh().await.unwrap().snapshot, 4);
    clients
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("rerank")
        .desired_count(5)
        .send()
        .await
        .expect("scales");
    // 6 hours at 5 tasks.
    replay(at(12)).await.expect("replays");
    let snapshot = now_reader.refresh().await.unwrap().snapshot;
    settled("scaled up", &snapshot, 5);
    let store = Arc::new(gpushare::fleet::store::SnapshotStore::new(
        std::time::Duration::from_secs(15),
    ));
    store.store(snapshot.clone(), chrono::Utc::now());
    let ecs = gpushare::ecs::Ecs::new(clients.ecs.clone(), "team", store);
    let running =
        app::model::arn::TaskDefinitionId::parse(&rerank(&snapshot).task_definition_arn).unwrap();
    let mut task = ecs
        .revision(running.family.clone(), running.revision)
        .await
        .unwrap()
        .unwrap()
        .task;
    let text = serde_json::to_string(&task).unwrap();
    assert!(text.contains("\"memory\":8192"), "{text}");
    let cpu_per_task = f64::from(placement::resources::needs_of(&task, &[]).unwrap().cpu);
    assert!(cpu_per_task > 0.0, "{text}");
    let containers = task["containerDefinitions"].as_array_mut().unwrap();
    for container in containers {
        if let Some(mps) =
            container.pointer_mut("/resourceRequirements/0/sharingStrategy/nvidiaMps/memory")
        {
            *mps = serde_json::json!(6144);
        }
    }
    let registered = ecs.register(task).await.expect("registers");
    ecs.update_service(
        "inference-prod".into(),
        "rerank".into(),
        format!(
            "{}:{}",
            registered.revision.family, registered.revision.revision
        ),
        false,
    )
    .await
    .expect("deploys");
    // 6 hours at 5 tasks of 6,144 MiB.
    replay(at(18)).await.expect("replays");
    let snapshot = now_reader.refresh().await.unwrap().snapshot;
    settled("deployed", &snapshot, 5);
    let drained = snapshot.clusters[1]
        .instances
        .iter()
        .find(|i| {
            i.gpus
                .iter()
                .flat_map(|g| g.containers.iter())
                .any(|c| c.service.as_deref() == Some("rerank"))
        })
        .unwrap();
    clients
        .ecs
        .update_container_instances_state()
        .cluster("inference-prod")
        .container_instances(drained.arn.clone())
        .status(ContainerInstanceStatus::Draining)
        .send()
        .await
        .expect("drains");
    // The rest of the day with that instance drained.
    let end = chrono::Utc::now();
    let minutes_total = replay(end).await.expect("replays");
    let snapshot = now_reader.refresh().await.unwrap().snapshot;
    settled("drained", &snapshot, 5);
    assert!(snapshot.clusters[1]
        .instances
        .iter()
        .find(|i| i.arn == drained.arn)
        .unwrap()
        .gpus
        .iter()
        .flat_map(|g| g.containers.iter())
        .all(|c| c.service.as_deref() != Some("rerank")));

    let recorded = history
        .select(begin - 86_400, end.timestamp() + 3600)
        .await
        .expect("reads");
    let hours = recorded.recorded_hours();
    assert!(
        hours > 23.0,
        "{hours} hours recorded ({minutes_total} minutes in the last stretch)"
    );
    let total = recorded.total();
    // What rerank held, over every key it was recorded under.
    let mut rerank = Amounts::default();
    for (_, amounts) in total.iter().filter(|(k, _)| {
        k.kind == HoldingKind::Held && k.cluster == "inference-prod" && k.service == "rerank"
    }) {
        rerank.add(amounts);
    }
    let rerank_mib_hours = rerank.memory_mib_hours;
    let last = hours - 18.0;
    let by_hand = 6.0 * 4.0 * 8192.0 + 6.0 * 5.0 * 8192.0 + (6.0 + last) * 5.0 * 6144.0;
    // The rollout runs old and new tasks together for a step or two.
    let overlap = 2.0 * 0.25 * 5.0 * (8192.0 + 6144.0);
    assert!(
        rerank_mib_hours >= by_hand - 1.0 && rerank_mib_hours <= by_hand + overlap,
        "rerank held {rerank_mib_hours} MiB-hours; by hand {by_hand} (+ up to {overlap} of overlap)"
    );
    // The CPU its tasks reserve, the same per task in both revisions.
    let rerank_cpu_hours = rerank.cpu_hours;
    let by_hand = (6.0 * 4.0 + 6.0 * 5.0 + (6.0 + last) * 5.0) * cpu_per_task;
    let overlap = 2.0 * 0.25 * 5.0 * 2.0 * cpu_per_task;
    assert!(
        rerank_cpu_hours >= by_hand - 1.0 && rerank_cpu_hours <= by_hand + overlap,
        "rerank reserved {rerank_cpu_hours} CPU unit-hours; by hand {by_hand} (+ up to {overlap} of overlap)"
    );
    let instances = emulator.status().container_instances as f64;
    let instance_hours: f64 = total
        .iter()
        .filter(|(k, _)| k.kind == HoldingKind::Capacity)
        .map(|(_, a)| a.instance_hours)
        .sum();
    assert!(
        (instance_hours - instances * hours).abs() < 1e-6,
        "{instance_hours} instance-hours for {instances} instances over {hours} h, one drained"
    );
}
