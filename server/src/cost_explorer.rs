//! Cost Explorer's amortized cost of each EC2 instance and day
//! (`ce:GetCostAndUsageWithResources`, daily, grouped by resource ID, `SERVICE` = EC2 compute),
//! read once per closed day and stored with the history, so that the cost review prices those
//! days at the bill (see `app::model::cost::billed`).
//!
//! When a day is read: once it has been closed (UTC) for [`SETTLE`] — Cost Explorer refreshes
//! its data at least once a day, and a day's figures may change until then; AWS documents no
//! moment after which a day is final, so the console takes this cautious reading and keeps the
//! first answer after it. Resource-level data reaches back 14 days only, so a day the console
//! was not running to read in time stays at list prices, and the reconciliation says so.
//! Each request costs $0.01; the calls are counted in `/metrics`
//! (`gpushare_aws_calls_total{service="ce"}`).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, RwLock},
    time::Duration,
};

use aws_sdk_costexplorer::{
    error::ProvideErrorMetadata,
    types::{
        DateInterval, Dimension, DimensionValues, Expression, Granularity, GroupDefinition,
        GroupDefinitionType,
    },
};

use app::service::ports::CostHistory;

use crate::cost_history::SqlCostHistory;

pub use app::model::cost::billed::{SETTLE_SECONDS as SETTLE, WINDOW_DAYS};
/// How often the reader looks for a day due.
const CHECK: Duration = Duration::from_secs(600);
/// How long the reader waits after Cost Explorer said resource-level data is off or not allowed.
const OFF_RETRY: i64 = 24 * 3600;
/// The service name resource-level data covers.
const EC2_COMPUTE: &str = "Amazon Elastic Compute Cloud - Compute";

/// Why a day has no figures from Cost Explorer, in words, when it is said once for all days.
#[derive(Clone, Debug, Default)]
struct State {
    off: Option<String>,
    /// When it was found off (Unix seconds).
    off_at: i64,
    /// Why the last attempt failed, when it did (a throttle, an outage): tried again soon.
    failed: Option<String>,
}

/// The reader.
pub struct CostExplorer {
    client: aws_sdk_costexplorer::Client,
    history: Arc<SqlCostHistory>,
    /// `--no-cost-explorer`.
    disabled: bool,
    state: RwLock<State>,
}

impl CostExplorer {
    pub fn new(
        client: aws_sdk_costexplorer::Client,
        history: Arc<SqlCostHistory>,
        disabled: bool,
    ) -> CostExplorer {
        CostExplorer {
            client,
            history,
            disabled,
            state: RwLock::default(),
        }
    }

    /// Why the console does not price days at the bill, when it does not: turned off, or Cost
    /// Explorer refused.
    pub fn off(&self) -> Option<String> {
        if self.disabled {
            return Some("Cost Explorer is not read (--no-cost-explorer): every figure is at list and price-file prices.".into());
        }
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        state.off.clone().or_else(|| {
            state.failed.as_ref().map(|why| {
                format!("Cost Explorer could not be read the last time ({why}); it is asked again within ten minutes.")
            })
        })
    }

    /// The days due at `now` (Unix seconds): closed for [`SETTLE`], within the 14 days, not
    /// before the history's first, not read yet.
    pub fn due(now: i64, first: i64, read: &BTreeSet<i64>) -> Vec<i64> {
        let today = now.div_euclid(86_400) * 86_400;
        // The start may not be earlier than 14 days ago: the day after that midnight, safely.
        let earliest = today - (WINDOW_DAYS - 1) * 86_400;
        let mut day = earliest.max(first);
        let mut out = Vec::new();
        while day + 86_400 + SETTLE <= now {
            if !read.contains(&day) {
                out.push(day);
            }
            day += 86_400;
        }
        out
    }

    /// Reads each day due at `now` and stores it. Returns how many days were read.
    pub async fn read_due(&self, now: i64) -> Result<usize, String> {
        if self.disabled {
            return Ok(0);
        }
        {
            let state = self.state.read().unwrap_or_else(|p| p.into_inner());
            if state.off.is_some() && now - state.off_at < OFF_RETRY {
                return Ok(0);
            }
        }
        let stored = |e: sqlx::Error| format!("the history could not be read or written: {e}");
        let Some(first) = self.history.first_day().await.map_err(stored)? else {
            return Ok(0);
        };
        let read: BTreeSet<i64> = self
            .history
            .read_days()
            .await
            .map_err(stored)?
            .into_iter()
            .collect();
        let mut count = 0;
        for day in CostExplorer::due(now, first, &read) {
            let (lines, calls) = match self.ask(day).await {
                Ok(answer) => answer,
                Err(Refusal::Off(why)) => {
                    let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
                    *state = State {
                        off: Some(why.clone()),
                        off_at: now,
                        failed: None,
                    };
                    return Err(why);
                }
                Err(Refusal::Failed(why)) => {
                    self.state.write().unwrap_or_else(|p| p.into_inner()).failed =
                        Some(why.clone());
                    return Err(why);
                }
            };
            self.history
                .store_billed(day, &lines, now, calls)
                .await
                .map_err(stored)?;
            count += 1;
        }
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = State::default();
        Ok(count)
    }

    /// Each instance's amortized cost on `day`, and the requests it took.
    async fn ask(&self, day: i64) -> Result<(BTreeMap<String, f64>, u32), Refusal> {
        let date = |t: i64| {
            chrono::DateTime::from_timestamp(t, 0)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default()
        };
        let built = |e: aws_sdk_costexplorer::error::BuildError| {
            Refusal::Failed(format!("a Cost Explorer request could not be built: {e}"))
        };
        let period = DateInterval::builder()
            .start(date(day))
            .end(date(day + 86_400))
            .build()
            .map_err(built)?;
        let filter = Expression::builder()
            .dimensions(
                DimensionValues::builder()
                    .key(Dimension::Service)
                    .values(EC2_COMPUTE)
                    .build(),
            )
            .build();
        let group = GroupDefinition::builder()
            .r#type(GroupDefinitionType::Dimension)
            .key("RESOURCE_ID")
            .build();
        let mut lines = BTreeMap::new();
        let mut token: Option<String> = None;
        let mut calls = 0;
        loop {
            calls += 1;
            let page = self
                .client
                .get_cost_and_usage_with_resources()
                .time_period(period.clone())
                .granularity(Granularity::Daily)
                .filter(filter.clone())
                .metrics("AmortizedCost")
                .group_by(group.clone())
                .set_next_page_token(token.clone())
                .send()
                .await
                .map_err(|error| Refusal::of(&error))?;
            for result in page.results_by_time() {
                for group in result.groups() {
                    let (Some(id), Some(amount)) = (
                        group.keys().first(),
                        group
                            .metrics()
                            .and_then(|m| m.get("AmortizedCost"))
                            .and_then(|m| m.amount()),
                    ) else {
                        continue;
                    };
                    if let Ok(usd) = amount.parse::<f64>() {
                        if usd.is_finite() {
                            *lines.entry(id.clone()).or_default() += usd;
                        }
                    }
                }
            }
            token = page.next_page_token().map(str::to_string);
            if token.is_none() || calls >= 1000 {
                break;
            }
        }
        Ok((lines, calls))
    }
}

/// Why Cost Explorer gave no answer.
enum Refusal {
    /// Resource-level data is off, or the console may not ask: not asked again for a day.
    Off(String),
    /// Anything else: asked again at the next check.
    Failed(String),
}

impl Refusal {
    fn of<E, R>(error: &aws_sdk_costexplorer::error::SdkError<E, R>) -> Refusal
    where
        E: std::error::Error + ProvideErrorMetadata + 'static,
        R: std::fmt::Debug,
    {
        let said =
            crate::aws::errors::failure("Cost Explorer", "GetCostAndUsageWithResources", error);
        match error.code() {
            Some("DataUnavailableException") => Refusal::Off(format!(
                "Cost Explorer's resource-level data is off for this account ({said}): turn on \"Hourly and resource level data\" for EC2-Instances in Billing and Cost Management → Cost Explorer → Preferences; until then every figure is at list and price-file prices."
            )),
            Some("AccessDeniedException") | Some("AccessDenied") => Refusal::Off(format!(
                "The console may not read Cost Explorer ({said}): allow ce:GetCostAndUsageWithResources, or start it with --no-cost-explorer; until then every figure is at list and price-file prices."
            )),
            _ => Refusal::Failed(said),
        }
    }
}

/// Reads the days due once the history has a first minute, then every [`CHECK`], for as long
/// as the server runs; not while the emulator's past is replayed (it is still writing those
/// days).
pub fn spawn(reader: Arc<CostExplorer>) {
    tokio::spawn(async move {
        loop {
            if reader.history.replaying().is_none() {
                match reader.read_due(chrono::Utc::now().timestamp()).await {
                    Ok(0) => {}
                    Ok(days) => tracing::info!(days, "Cost Explorer's amortized cost read"),
                    Err(why) => tracing::warn!("{why}"),
                }
                tokio::time::sleep(CHECK).await;
            } else {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    });
}

#[cfg(test)]
mod tests;
