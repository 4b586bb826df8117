//! Cost review: what the fleet costs at today's allocations, from the in-memory snapshot, or
//! over a recorded period, from the allocation history; priced at the console's prices and the
//! spot market's last read. The reports never wait on AWS; the consolidation plan reads the task
//! definitions the services run (through the ECS read cache).

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

/// The console's prices with the spot market's latest added.
fn book(context: &ServiceContext) -> PriceBook {
    context.prices.with_market(&context.spot.quote())
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
    consolidate::plan(&snapshot, &prices, &needs, query).map_err(ServiceError::invalid)
}

/// The detailed CSV of `query`'s recorded period: a line per day and row.
pub async fn daily_csv(
    context: &ServiceContext,
    query: &CostQuery,
) -> Result<String, ServiceError> {
    let range = history::resolve(query, chrono::Utc::now(), context.history.retention_days())
        .map_err(ServiceError::invalid)?
        .ok_or_else(|| {
            ServiceError::invalid(
                "a daily CSV is of a recorded period: give period=7d, 30d, this_month, last_month or custom",
            )
        })?;
    let recorded = context.history.recorded(range.from, range.to).await?;
    let prices = book(context);
    Ok(history::daily_csv(&recorded, &prices, query))
}

/// The report for `query`: today's allocations from the snapshot (an error that says to wait
/// before the first one), or a recorded period from the history.
pub async fn report(
    context: &ServiceContext,
    query: &CostQuery,
) -> Result<CostReport, ServiceError> {
    let state = context.fleet.state();
    let prices = book(context);
    let range = history::resolve(query, chrono::Utc::now(), context.history.retention_days())
        .map_err(ServiceError::invalid)?;
    let Some(range) = range else {
        let Some(snapshot) = state.snapshot else {
            return Err(ServiceError::unavailable(
                "the fleet has not been read yet, so there is nothing to price; try again in a few seconds",
            ));
        };
        return price(&snapshot, &prices, query).map_err(ServiceError::invalid);
    };
    let previous = range.previous();
    let (recorded, before) = futures::future::try_join(
        context.history.recorded(range.from, range.to),
        context.history.recorded(previous.from, previous.to),
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
    let mut report = history::report(&recorded, &before, &prices, query, range);
    report.clusters = clusters;
    report.taken_at = crate::service::clock::now();
    report.replaying = context.history.replaying();
    Ok(report)
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
}
