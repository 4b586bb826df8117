//! Cost review: what the fleet costs at today's allocations, from the in-memory snapshot, or
//! over a recorded period, from the allocation history; priced at the console's prices and the
//! spot market's last read. The reports never wait on AWS; the consolidation plan reads the task
//! definitions the services run (through the ECS read cache).

mod providers;
pub mod reconciliation;
pub mod sealing;

use std::collections::HashMap;

use placement::resources::Needs;
use serde_json::{Map, Value};

use crate::{
    model::{
        arn::TaskDefinitionId,
        cost::{
            check_cluster,
            consolidate::{self, ConsolidationPlan, PlanQuery},
            history, report as price, CostQuery, CostReport, HoldingKind, PriceBook,
        },
        ServiceError, ServiceRef,
    },
    service::{context::ServiceContext, lookup, task_definitions::find_revision},
};

/// The console's prices with the Price List's and the spot market's latest in.
fn book(context: &ServiceContext) -> PriceBook {
    context
        .prices
        .with_list(&context.markets.list())
        .with_market(&context.markets.spot())
}

/// The consolidation plan for `query`, from the latest snapshot: the task definition each
/// service runs is read once (all at once) for what its tasks need besides GPUs; a revision that
/// cannot be read leaves that service checked by its GPUs only, and the plan says so.
pub async fn plan(
    context: &ServiceContext,
    query: &PlanQuery,
) -> Result<ConsolidationPlan, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    let prices = book(context);
    let services: Vec<(String, ServiceRef)> = snapshot
        .clusters
        .iter()
        .filter(|c| query.cluster.as_ref().is_none_or(|name| &c.name == name))
        .flat_map(|c| c.service_list.iter().map(|s| (c.name.clone(), s.clone())))
        .collect();
    let mut arns: Vec<&str> = services
        .iter()
        .map(|(_, s)| s.task_definition_arn.as_str())
        .collect();
    arns.sort_unstable();
    arns.dedup();
    let read = futures::future::join_all(arns.iter().map(|arn| async move {
        let id = TaskDefinitionId::parse(arn)?;
        find_revision(context, &id.family, id.revision)
            .await
            .ok()
            .flatten()
            .map(|source| source.task)
    }))
    .await;
    let tasks: HashMap<&str, Map<String, Value>> = arns
        .into_iter()
        .zip(read)
        .filter_map(|(arn, task)| Some((arn, task?)))
        .collect();
    let needs: HashMap<(String, String), Needs> = services
        .iter()
        .filter_map(|(cluster, service)| {
            let task = tasks.get(service.task_definition_arn.as_str())?;
            let needs =
                placement::resources::needs_of(task, &service.placement_constraints).ok()?;
            Some(((cluster.clone(), service.name.clone()), needs))
        })
        .collect();
    let query = query.clone();
    let planned = snapshot.clone();
    let mut plan = context
        .heavy
        .run(move || consolidate::plan(&planned, &prices, &needs, &query))
        .await?
        .map_err(ServiceError::invalid)?;
    providers::advise(context, &snapshot, &mut plan).await;
    Ok(plan)
}

/// The detailed CSV of `query`'s recorded period: a line per day and row.
pub async fn daily_csv(
    context: &ServiceContext,
    query: &CostQuery,
) -> Result<String, ServiceError> {
    let (recorded, books) = recorded_period(context, query, "a daily CSV").await?;
    Ok(history::daily_csv(&recorded, &books, query))
}

/// `query`'s recorded period in FOCUS's columns: a line per day and row.
pub async fn focus_csv(
    context: &ServiceContext,
    query: &CostQuery,
) -> Result<String, ServiceError> {
    let (recorded, books) = recorded_period(context, query, "a FOCUS export").await?;
    Ok(crate::model::cost::focus::focus_csv(
        &recorded, &books, query,
    ))
}

/// What the history holds for `query`'s period, and the prices (sealed months' their own);
/// `what` is refused for today's allocations, which are a projection rather than cost incurred.
async fn recorded_period(
    context: &ServiceContext,
    query: &CostQuery,
    what: &str,
) -> Result<(history::Recorded, crate::model::cost::Books), ServiceError> {
    let range = history::resolve(query, chrono::Utc::now(), context.history.retention_days())
        .map_err(ServiceError::invalid)?
        .ok_or_else(|| {
            ServiceError::invalid(format!(
                "{what} is of a recorded period: give period=7d, 30d, this_month, last_month or custom (period=now is today's allocations held for a span, not cost incurred)"
            ))
        })?;
    let (recorded, (books, _)) = futures::future::try_join(
        context.history.recorded(range.from, range.to),
        reconciliation::books_for(context, range.from, range.to),
    )
    .await?;
    Ok((recorded, books))
}

/// The report for `query`: today's allocations from the snapshot (an error that says to wait
/// before the first one), or a recorded period from the history.
pub async fn report(
    context: &ServiceContext,
    query: &CostQuery,
) -> Result<CostReport, ServiceError> {
    let state = context.fleet.state();
    let range = history::resolve(query, chrono::Utc::now(), context.history.retention_days())
        .map_err(ServiceError::invalid)?;
    let prices = reconciliation::with_latest_bill(context, book(context)).await?;
    let Some(range) = range else {
        let Some(snapshot) = state.snapshot else {
            return Err(ServiceError::unavailable(
                "the fleet has not been read yet, so there is nothing to price; try again in a few seconds",
            ));
        };
        let mut report = price(&snapshot, &prices, query).map_err(ServiceError::invalid)?;
        report.budgets = burns(context, query, &prices).await?;
        return Ok(report);
    };
    let previous = range.previous();
    let (recorded, before, (books, bill)) = futures::future::try_join3(
        context.history.recorded(range.from, range.to),
        context.history.recorded(previous.from, previous.to),
        reconciliation::books_for(context, previous.from, range.to),
    )
    .await?;
    // The clusters there are now and those the period held.
    let mut clusters: std::collections::BTreeSet<String> = state
        .snapshot
        .iter()
        .flat_map(|s| s.clusters.iter().map(|c| c.name.clone()))
        .collect();
    for day in recorded.days.values() {
        clusters.extend(
            day.keys()
                .filter(|k| k.kind == HoldingKind::Capacity)
                .map(|k| k.cluster.clone()),
        );
    }
    let clusters: Vec<String> = clusters.into_iter().collect();
    check_cluster(query.cluster.as_ref(), &clusters).map_err(ServiceError::invalid)?;
    let mut report = history::report(&recorded, &before, &books, query, range);
    reconciliation::bill_notes(&mut report, &books, &bill, range);
    report.clusters = clusters;
    report.taken_at = crate::service::clock::now();
    report.replaying = context.history.replaying();
    report.budgets = burns(context, query, &prices).await?;
    Ok(report)
}

/// Each team's monthly cost budget (of `query`'s cluster, or all) against what the team's
/// share of the cluster cost this month so far, by the report's rule with idle as its own row,
/// and a forecast to the month's end at the recorded rate. Empty without such budgets.
async fn burns(
    context: &ServiceContext,
    query: &CostQuery,
    prices: &PriceBook,
) -> Result<Vec<crate::model::budget::BudgetBurn>, ServiceError> {
    use crate::model::{
        budget::BudgetBurn,
        cost::{Grouping, Period, RowKind},
    };
    let budgets: Vec<_> = context
        .policy
        .budgets
        .iter()
        .filter(|b| b.monthly_cost_cents.is_some())
        .filter(|b| query.cluster.as_deref().is_none_or(|c| b.cluster == c))
        .collect();
    if budgets.is_empty() {
        return Ok(Vec::new());
    }
    let now = chrono::Utc::now();
    let month = CostQuery {
        period: Period::ThisMonth,
        group: Grouping::Team,
        share_idle: false,
        ..CostQuery::default()
    };
    let Some(range) = history::resolve(&month, now, context.history.retention_days())
        .map_err(ServiceError::invalid)?
    else {
        return Ok(Vec::new());
    };
    let recorded = context.history.recorded(range.from, range.to).await?;
    let elapsed_hours = (now.timestamp() - range.from) as f64 / 3600.0;
    let month_hours = {
        use chrono::{Datelike, NaiveDate};
        let today = now.date_naive();
        let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1);
        let next = first.and_then(|f| f.checked_add_months(chrono::Months::new(1)));
        match (first, next) {
            (Some(first), Some(next)) => (next - first).num_days() as f64 * 24.0,
            _ => 30.0 * 24.0,
        }
    };
    let mut clusters: Vec<&str> = budgets.iter().map(|b| b.cluster.as_str()).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let mut burns = Vec::new();
    for cluster in clusters {
        let of_cluster = CostQuery {
            cluster: Some(cluster.to_string()),
            ..month.clone()
        };
        let report = history::report(
            &recorded,
            &crate::model::cost::Recorded::default(),
            &prices.clone().into(),
            &of_cluster,
            range,
        );
        for budget in budgets.iter().filter(|b| b.cluster == cluster) {
            let spent = report
                .rows
                .iter()
                .filter(|r| r.kind == RowKind::Allocated && r.name == budget.team)
                .map(|r| r.cost_cents)
                .sum();
            burns.push(BudgetBurn::of(
                &budget.team,
                cluster,
                budget.monthly_cost_cents.unwrap_or_default(),
                spent,
                report.recorded_hours,
                elapsed_hours,
                month_hours,
            ));
        }
    }
    burns.sort_by(|a, b| (&a.team, &a.cluster).cmp(&(&b.team, &b.cluster)));
    Ok(burns)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::service::fake::Fake;

    #[tokio::test]
    async fn the_report_prices_the_snapshot_and_refuses_an_unknown_cluster() {
        let fake = Fake::new();
        let context = fake.context();
        let now = CostQuery {
            period: crate::model::cost::Period::Now,
            ..CostQuery::default()
        };
        let report = report(&context, &now).await.unwrap();
        assert!(report.total_cents > 0, "{report:?}");
        assert_eq!(
            report.rows.iter().map(|r| r.cost_cents).sum::<i64>(),
            report.total_cents
        );
        let error = super::report(
            &context,
            &CostQuery {
                cluster: Some("nope".into()),
                ..now.clone()
            },
        )
        .await
        .unwrap_err();
        assert_eq!(error.status(), 400, "{error:?}");
    }

    /// Two recorded hours of today's fleet, in the last 7 days: the same cost as two hours at
    /// today's allocations, a note that the rest of the week was not recorded, and a chart.
    #[tokio::test]
    async fn a_recorded_period_costs_what_its_recorded_hours_held() {
        use crate::model::cost::{holdings, Period, Span};
        let fake = Fake::new();
        let context = fake.context();
        let snapshot = context.fleet.state().snapshot.unwrap();
        let per_hour = holdings::of_snapshot(&snapshot, 1.0);
        let now = chrono::Utc::now().timestamp().div_euclid(60) * 60;
        *fake.history.lock().unwrap() = (1..=120)
            .map(|m| (now - m * 60, per_hour.clone()))
            .collect();
        let hour = CostQuery {
            period: Period::Now,
            span: Span::Hour,
            ..CostQuery::default()
        };
        let one_hour = report(&context, &hour).await.unwrap();
        let week = CostQuery {
            period: Period::Last7,
            ..CostQuery::default()
        };
        let week = report(&context, &week).await.unwrap();
        assert!(
            (week.total_cents - 2 * one_hour.total_cents).abs() <= 1,
            "{} vs 2 × {}",
            week.total_cents,
            one_hour.total_cents
        );
        assert_eq!(
            week.rows.iter().map(|r| r.cost_cents).sum::<i64>(),
            week.total_cents
        );
        assert!((week.recorded_hours - 2.0).abs() < 1e-9);
        assert!(
            week.notes.iter().any(|n| n.contains("covers 1 %")),
            "{:?}",
            week.notes
        );
        assert!(week.previous_total_cents.is_none());
        let chart = week.chart.unwrap();
        assert!((7..=8).contains(&chart.days.len()), "{:?}", chart.days);
        let charted: i64 = chart.days.iter().flat_map(|d| d.cents.iter()).sum();
        assert!((charted - week.total_cents).abs() <= 2, "{charted}");
        // A custom period that is reversed, or after today, says so.
        for (from, to, says) in [
            ("2026-11-10", "2026-11-01", "reversed"),
            ("2999-01-01", "2999-01-02", "after today"),
            ("2020-01-01", "2020-01-02", "kept for 400 days"),
        ] {
            let query = CostQuery {
                period: Period::Custom,
                from: Some(from.into()),
                to: Some(to.into()),
                ..CostQuery::default()
            };
            let error = report(&context, &query).await.unwrap_err();
            assert_eq!(error.status(), 400);
            assert!(error.to_string().contains(says), "{error}");
        }
    }

    /// Search holds half of one GPU for the last two hours of this month: its budget's spend is
    /// its row of this month's report, and the forecast runs that rate to the month's end.
    #[tokio::test]
    async fn each_teams_monthly_budget_burns_by_this_months_spend() {
        use crate::model::{
            budget::BudgetRule,
            cost::{holdings, Grouping, Period},
            GpuContainer, SharingMode,
        };
        let fake = Fake::new();
        *fake.budgets.lock().unwrap() = vec![BudgetRule {
            team: "search".into(),
            cluster: "prod".into(),
            gpu_memory_mib: 1 << 20,
            whole_gpus: None,
            monthly_cost_cents: Some(50_000),
            approvers: Vec::new(),
        }];
        let context = fake.context();
        let mut snapshot = (*context.fleet.state().snapshot.unwrap()).clone();
        let gpu = &mut snapshot.clusters[0].instances[0].gpus[0];
        gpu.mode = SharingMode::NvidiaMps;
        gpu.remaining_memory_mib -= 11_000;
        gpu.containers.push(GpuContainer {
            task_arn: "arn:aws:ecs:us-east-1:1:task/prod/1".into(),
            container: "model".into(),
            service: Some("embed".into()),
            team: Some("search".into()),
            memory_mib: Some(11_000),
            compute_percent: 100,
            whole_gpu: false,
            started_at: None,
        });
        let per_hour = holdings::of_snapshot(&snapshot, 1.0);
        let now = chrono::Utc::now();
        let minute = now.timestamp().div_euclid(60) * 60;
        let month_start = {
            use chrono::Datelike;
            chrono::NaiveDate::from_ymd_opt(now.year(), now.month(), 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc()
                .timestamp()
        };
        let minutes = ((minute - month_start) / 60).clamp(1, 120);
        *fake.history.lock().unwrap() = (1..=minutes)
            .map(|m| (minute - m * 60, per_hour.clone()))
            .collect();
        let week = report(&context, &CostQuery::default()).await.unwrap();
        assert_eq!(week.budgets.len(), 1, "{:?}", week.budgets);
        let burn = &week.budgets[0];
        let month = report(
            &context,
            &CostQuery {
                period: Period::ThisMonth,
                group: Grouping::Team,
                cluster: Some("prod".into()),
                ..CostQuery::default()
            },
        )
        .await
        .unwrap();
        let search = month.rows.iter().find(|r| r.name == "search").unwrap();
        assert!(search.cost_cents > 0);
        assert_eq!(burn.spent_cents, search.cost_cents);
        assert!((burn.recorded_hours - minutes as f64 / 60.0).abs() < 1e-6);
        let expected = burn.spent_cents as f64
            + burn.spent_cents as f64 / burn.recorded_hours
                * (burn.month_hours - burn.elapsed_hours);
        assert!((burn.forecast_cents as f64 - expected).abs() <= 1.0);
        // Another cluster's report leaves the budget out.
        let other = report(
            &context,
            &CostQuery {
                cluster: Some("prod".into()),
                ..CostQuery::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(other.budgets.len(), 1);
    }
}
