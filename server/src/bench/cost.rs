//! `gpushare bench cost`: the allocation history's figures — the recorder's cost per minute
//! recorded, its storage for a month of the scenario, a 30-day report's time — and the demo's
//! start-up with the replay of its past.

use std::time::Instant;

use super::{print_table, Row};

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(at).copied().unwrap_or(0.0)
}

/// `p50 ms / p95 ms` of `samples`.
fn p50_p95(samples: &mut [f64]) -> String {
    let p50 = percentile(samples, 0.5);
    format!("{p50:.1} ms / {:.1} ms", percentile(samples, 0.95))
}

/// The consolidation plan on `scenario`, made the way the page makes it (the services' task
/// definitions read through the SDK from the emulator): the time of each plan, and the plan.
async fn plan_on(
    scenario: &str,
    rounds: u32,
) -> anyhow::Result<(Vec<f64>, app::model::cost::consolidate::ConsolidationPlan)> {
    use anyhow::Context;
    let (context, dir) = super::scenario_context(scenario, "plan").await?;
    let query = app::model::cost::consolidate::PlanQuery::default();
    let mut times = Vec::new();
    let mut plan = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let made = app::service::cost::plan(&context, &query)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        plan = Some(made);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((times, plan.context("no round")?))
}

/// `gpushare bench cost`.
pub async fn cost(args: crate::config::BenchCostArgs) -> anyhow::Result<()> {
    use app::model::cost::holdings;
    let snapshot = super::scenario_snapshot(&args.scenario).await?;
    let per_hour = holdings::of_snapshot(&snapshot, 1.0);
    let seen = crate::cost_history::bill::seen_instances(&snapshot);
    let dir = std::env::temp_dir().join(format!("gpushare-bench-cost-{}", std::process::id()));
    let audit = crate::audit::SqlAuditLog::open(args.database_url.as_deref(), &dir).await?;
    let store = crate::cost_history::SqlCostHistory::new(&audit, 400);
    let end_hour = chrono::Utc::now().timestamp().div_euclid(3600);
    let (filled, mut minute_ms) = fill(&store, &per_hour, &seen, args.days, end_hour).await?;
    let billed_days = bill_days(&store, &seen, end_hour * 3600).await?;
    let storage = store.storage_bytes(audit.backend).await?;
    let (mut report, rows) = time_reports(&store, args.rounds).await?;
    let (minutes, replay) = time_replay(args.replay_days, &dir).await?;
    let (ce_instances, ce_calls) = cost_explorer_calls(&args.scenario, &dir).await?;
    let _ = std::fs::remove_dir_all(&dir);
    let plans = plan_rows(args.rounds.min(10)).await?;
    print_table(
        &format!(
            "gpushare bench cost — {} ({} holdings per hour), {} days on {}",
            args.scenario,
            per_hour.len(),
            args.days,
            audit.backend
        ),
        &[
            Row {
                what: format!("history of {} days written, an hour at a time", args.days),
                value: format!("{filled:.1} s"),
            },
            Row {
                what: "recorder: one minute recorded, p50 / p95".into(),
                value: format!(
                    "{:.2} ms / {:.2} ms",
                    percentile(&mut minute_ms.clone(), 0.5),
                    percentile(&mut minute_ms, 0.95)
                ),
            },
            Row {
                what: format!("storage for {} days", args.days),
                value: super::mib(u64::try_from(storage).unwrap_or(0)),
            },
        ]
        .into_iter()
        .chain(report_rows(&mut report, rows, billed_days))
        .chain([
            Row {
                what: format!(
                    "Cost Explorer requests for a day of {} ({ce_instances} instances billed)",
                    args.scenario
                ),
                value: format!("{ce_calls}"),
            },
            Row {
                what: format!(
                    "demo start-up with {} days of past replayed ({minutes} minutes)",
                    args.replay_days
                ),
                value: format!("{replay:.1} s"),
            },
        ])
        .chain(plans)
        .collect::<Vec<_>>(),
    );
    Ok(())
}

/// `days` of hours of `per_hour` and `seen` written, ending at `end_hour`, an hour at a time,
/// then 30 minutes after it one at a time as the recorder writes them: the seconds the hours
/// took, and each minute's milliseconds.
async fn fill(
    store: &crate::cost_history::SqlCostHistory,
    per_hour: &app::model::cost::Holdings,
    seen: &[crate::cost_history::bill::SeenInstance],
    days: u32,
    end_hour: i64,
) -> anyhow::Result<(f64, Vec<f64>)> {
    let hours = i64::from(days) * 24;
    let started = Instant::now();
    for hour in end_hour - hours..end_hour {
        store
            .record_seen(per_hour, seen, hour * 60..hour * 60 + 60)
            .await?;
    }
    let filled = started.elapsed().as_secs_f64();
    let mut minute_ms = Vec::new();
    let base = end_hour * 60;
    for minute in base..base + 30 {
        let started = Instant::now();
        store
            .record_seen(per_hour, seen, minute..minute + 1)
            .await?;
        minute_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((filled, minute_ms))
}

/// The 30-day report's rows of the table: its time and its parts'.
fn report_rows(report: &mut ReportTimes, rows: usize, billed_days: usize) -> Vec<Row> {
    vec![
        Row {
            what: format!(
                "30-day report with the previous period and chart ({rows} rows; {billed_days} days at Cost Explorer's bill), p50 / p95"
            ),
            value: p50_p95(&mut report.total),
        },
        Row {
            what: "  of which reading the history and the bill, p50 / p95".into(),
            value: p50_p95(&mut report.read),
        },
        Row {
            what: "  of which the billed days' prices, p50 / p95".into(),
            value: p50_p95(&mut report.books),
        },
        Row {
            what: "  of which pricing both periods and the chart, p50 / p95".into(),
            value: p50_p95(&mut report.priced),
        },
    ]
}

/// The 30-day report's times, per round (ms): all of it, and its phases.
#[derive(Default)]
struct ReportTimes {
    total: Vec<f64>,
    /// Reading both periods' history and the bill from the database.
    read: Vec<f64>,
    /// Making the books: each billed day's prices.
    books: Vec<f64>,
    /// Pricing both periods and the chart.
    priced: Vec<f64>,
}

/// The 30-day report, both periods read, priced and charted as the page asks, `rounds` times:
/// each one's times, and the report's rows.
async fn time_reports(
    store: &crate::cost_history::SqlCostHistory,
    rounds: u32,
) -> anyhow::Result<(ReportTimes, usize)> {
    use app::{
        model::cost::{history, Books, CostQuery, PriceBook},
        service::ports::CostHistory,
    };
    let query = CostQuery::default();
    let mut times = ReportTimes::default();
    let mut rows = 0;
    let ms = |since: Instant| since.elapsed().as_secs_f64() * 1000.0;
    for _ in 0..rounds {
        let started = Instant::now();
        let range =
            history::resolve(&query, chrono::Utc::now(), 400).map_err(anyhow::Error::msg)?;
        let Some(range) = range else { break };
        let previous = range.previous();
        // The bill as the page reads it: the days' sums, not the instances' lines.
        let bill = async {
            CostHistory::bill(store, previous.from, range.to)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))
        };
        let (now, before, bill) = tokio::try_join!(
            async { Ok(store.select(range.from, range.to).await?) },
            async { Ok(store.select(previous.from, previous.to).await?) },
            bill
        )?;
        times.read.push(ms(started));
        let phase = Instant::now();
        let book = Books::from(PriceBook::builtin("us-east-1")).with_bill(&bill);
        times.books.push(ms(phase));
        let phase = Instant::now();
        let report = history::report(&now, &before, &book, &query, range);
        times.priced.push(ms(phase));
        rows = report.rows.len();
        times.total.push(ms(started));
    }
    Ok((times, rows))
}

/// Cost Explorer's lines for each of the 14 days before `end` (Unix seconds), as its reader
/// stores them: each instance of `seen` a day at 80 % of its list price. The days stored.
async fn bill_days(
    store: &crate::cost_history::SqlCostHistory,
    seen: &[crate::cost_history::bill::SeenInstance],
    end: i64,
) -> anyhow::Result<usize> {
    let list = app::model::cost::PriceBook::builtin("us-east-1");
    let lines: std::collections::BTreeMap<String, f64> = seen
        .iter()
        .map(|i| {
            let usd = list
                .price(&i.instance_type, app::model::cost::Lifecycle::OnDemand)
                .map_or(1.0, |p| p.usd_per_hour);
            (i.instance_id.clone(), usd * 24.0 * 0.8)
        })
        .collect();
    let today = end.div_euclid(86_400) * 86_400;
    let calls = u32::try_from(lines.len().div_ceil(200)).unwrap_or(u32::MAX);
    let mut days = 0;
    for ago in 1..=14 {
        if store
            .store_billed(today - ago * 86_400, &lines, end, calls)
            .await?
        {
            days += 1;
        }
    }
    Ok(days)
}

/// Cost Explorer read for one day of `scenario` as the console reads it, from the emulator (a
/// minute recorded, the clock moved on two days so that the day is due): the instances it
/// billed, and the requests it took.
async fn cost_explorer_calls(
    scenario: &str,
    dir: &std::path::Path,
) -> anyhow::Result<(usize, u32)> {
    let args = crate::config::EmulatorArgs {
        scenario: scenario.to_string(),
        ..crate::config::EmulatorArgs::default()
    };
    let emulator = crate::build_emulator(&args, 0).await?;
    let (_, clients) = crate::serve_emulator(&emulator).await?;
    let audit = crate::audit::SqlAuditLog::open(None, &dir.join("cost-explorer")).await?;
    let store = std::sync::Arc::new(crate::cost_history::SqlCostHistory::new(&audit, 400));
    let now = emulator.now();
    let minute = now.timestamp().div_euclid(60);
    store
        .record(&app::model::cost::Holdings::new(), minute..minute + 1)
        .await?;
    let later = now + chrono::Duration::days(2);
    emulator.advance_to(later);
    let explorer = crate::cost_explorer::CostExplorer::new(
        clients.cost_explorer.clone(),
        store.clone(),
        false,
    );
    explorer
        .read_due(later.timestamp())
        .await
        .map_err(anyhow::Error::msg)?;
    let lines = store.select_lines(0, later.timestamp()).await?;
    let (read, _) = store.select_bill_sums(0, later.timestamp()).await?;
    let calls = read.iter().map(|r| r.calls).sum::<u32>();
    Ok((lines.len(), calls))
}

/// The demo's start-up with the replay of `days` days of its past: the minutes replayed, and
/// the seconds it took.
async fn time_replay(days: u32, dir: &std::path::Path) -> anyhow::Result<(u32, f64)> {
    let started = Instant::now();
    let emulator_args = crate::config::EmulatorArgs {
        history_days: days,
        ..crate::config::EmulatorArgs::default()
    };
    let emulator = crate::build_emulator(&emulator_args, days).await?;
    let (_, clients) = crate::serve_emulator(&emulator).await?;
    let replay_audit = crate::audit::SqlAuditLog::open(None, &dir.join("replay")).await?;
    let replay_store =
        std::sync::Arc::new(crate::cost_history::SqlCostHistory::new(&replay_audit, 400));
    let reader = crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_usage(crate::fleet::usage::UsageReader::new(
            clients.cloudwatch.clone(),
            "host",
            crate::fleet::usage::CONCURRENCY,
        ))
        .with_ec2(crate::fleet::ec2::Ec2Reader::new(clients.ec2.clone()));
    let minutes =
        crate::cost_history::replay(emulator, reader, replay_store, chrono::Utc::now()).await?;
    Ok((minutes, started.elapsed().as_secs_f64()))
}

/// The consolidation plan on the demo and on the large fleet: its time and its saving.
async fn plan_rows(rounds: u32) -> anyhow::Result<Vec<Row>> {
    let mut plans = Vec::new();
    for scenario in ["demo", "large"] {
        let (mut times, plan) = plan_on(scenario, rounds).await?;
        let instances: u32 = plan.clusters.iter().map(|c| c.instances_before).sum();
        plans.push(Row {
            what: format!("consolidation plan on {scenario} ({instances} instances), p50 / p95"),
            value: format!(
                "{:.0} ms / {:.0} ms",
                percentile(&mut times.clone(), 0.5),
                percentile(&mut times, 0.95)
            ),
        });
        plans.push(Row {
            what: format!(
                "  its saving: {} instances drained, {} tasks moved, of {} a month",
                plan.drains.len(),
                plan.tasks_moved,
                app::model::cost::money(plan.monthly_before_cents)
            ),
            value: format!(
                "{} a month",
                app::model::cost::money(plan.saving_cents_per_month)
            ),
        });
    }
    Ok(plans)
}
