//! On-demand prices from AWS's Price List Query API (`pricing:GetProducts`, aws-sdk-pricing):
//! the Linux, shared-tenancy price of each instance type the fleet runs, in the console's region,
//! with the date it took effect. Each price read is stored (per region, type and effective date),
//! so a restart needs no call and the prices of past months stay known; a type is read again a
//! day after it was last read. Until a type has a list price the built-in table prices it, as the
//! offline fallback, and the cost page says so.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use app::model::cost::{Lifecycle, ListQuote, Price, PriceSource};
use aws_sdk_pricing::types::{Filter, FilterType};
use serde_json::Value;
use sqlx::{AnyPool, Row};

use crate::fleet::store::SnapshotStore;

/// How long a type's list price stands before it is read again.
pub const REFRESH: Duration = Duration::from_secs(24 * 3600);
/// How often the fleet is looked at for a type without a list price, or one due again.
const CHECK: Duration = Duration::from_secs(300);

/// The product attributes that make a price the one EC2 bills an on-demand Linux instance of
/// shared tenancy at: no Windows, no dedicated host, no unused capacity reservation, no SQL
/// Server.
const ON_DEMAND_LINUX: [(&str, &str); 5] = [
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("capacitystatus", "Used"),
    ("preInstalledSw", "NA"),
    ("licenseModel", "No License required"),
];

/// The Price List's prices read so far, shared with the cost review.
pub struct ListPrices {
    client: aws_sdk_pricing::Client,
    region: String,
    pool: AnyPool,
    /// Per type: the prices known, by effective date (`YYYY-MM-DD`), and when it was last read
    /// (Unix seconds; 0 when only stored).
    known: Mutex<BTreeMap<String, Known>>,
    quote: RwLock<ListQuote>,
    /// Whether the Price List has been asked once since the start (answered or not).
    asked: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Known {
    prices: BTreeMap<String, f64>,
    read_at: i64,
    /// The list has no product for the type in the region.
    missing: bool,
}

impl ListPrices {
    pub fn new(
        client: aws_sdk_pricing::Client,
        region: &str,
        audit: &crate::audit::SqlAuditLog,
    ) -> ListPrices {
        ListPrices {
            client,
            region: region.to_string(),
            pool: audit.pool().clone(),
            known: Mutex::default(),
            quote: RwLock::default(),
            asked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Takes in the prices stored before, with when each type was read.
    pub async fn load(&self) -> Result<usize, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT instance_type, effective, usd_per_hour, read_at FROM list_prices WHERE region = $1",
        )
        .bind(&self.region)
        .fetch_all(&self.pool)
        .await?;
        let count = rows.len();
        {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            for row in rows {
                let entry = known.entry(row.try_get::<String, _>(0)?).or_default();
                entry.prices.insert(row.try_get(1)?, row.try_get(2)?);
                entry.read_at = entry.read_at.max(row.try_get(3)?);
            }
        }
        self.publish(None);
        Ok(count)
    }

    /// Reads the list price of each of `types` not read within [`REFRESH`] of `now` (Unix
    /// seconds) and stores it. On a failure the prices read before stay, and the quote's note
    /// says why the rest are missing. Returns how many types were read.
    pub async fn refresh(&self, types: &BTreeSet<String>, now: i64) -> Result<usize, String> {
        let read = self.read_due(types, now).await;
        self.asked.store(true, std::sync::atomic::Ordering::Release);
        read
    }

    async fn read_due(&self, types: &BTreeSet<String>, now: i64) -> Result<usize, String> {
        let due: Vec<String> = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            types
                .iter()
                .filter(|t| {
                    known
                        .get(*t)
                        .is_none_or(|k| now - k.read_at >= REFRESH.as_secs() as i64)
                })
                .cloned()
                .collect()
        };
        for instance_type in &due {
            let found = match self.ask(instance_type).await {
                Ok(found) => found,
                Err(why) => {
                    self.publish(Some(why.clone()));
                    return Err(why);
                }
            };
            self.store(instance_type, &found, now)
                .await
                .map_err(|e| format!("the Price List's prices could not be stored: {e}"))?;
        }
        self.publish(None);
        Ok(due.len())
    }

    /// The on-demand Linux prices of `instance_type` in the region, by effective date.
    async fn ask(&self, instance_type: &str) -> Result<BTreeMap<String, f64>, String> {
        let term = |field: &str, value: &str| {
            Filter::builder()
                .r#type(FilterType::TermMatch)
                .field(field)
                .value(value)
                .build()
                .map_err(|e| format!("a Price List filter could not be built: {e}"))
        };
        let mut filters = vec![
            term("instanceType", instance_type)?,
            term("regionCode", &self.region)?,
        ];
        for (field, value) in ON_DEMAND_LINUX {
            filters.push(term(field, value)?);
        }
        let mut pages = self
            .client
            .get_products()
            .service_code("AmazonEC2")
            .format_version("aws_v1")
            .set_filters(Some(filters))
            .into_paginator()
            .send();
        let mut prices = BTreeMap::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|error| {
                format!(
                    "The Price List could not be read ({}): instance types without a list price are priced from the built-in table (estimates for us-east-1, 2026-11), the offline fallback. Allow pricing:GetProducts, or give prices with --prices.",
                    crate::aws::errors::failure("Price List", "GetProducts", &error)
                )
            })?;
            for document in page.price_list() {
                prices.extend(on_demand_prices(document, instance_type, &self.region));
            }
        }
        Ok(prices)
    }

    /// Stores what was read of `instance_type` at `now`.
    async fn store(
        &self,
        instance_type: &str,
        found: &BTreeMap<String, f64>,
        now: i64,
    ) -> Result<(), sqlx::Error> {
        for (effective, usd) in found {
            sqlx::query(
                "INSERT INTO list_prices (region, instance_type, effective, usd_per_hour, read_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (region, instance_type, effective)
                 DO UPDATE SET usd_per_hour = excluded.usd_per_hour, read_at = excluded.read_at",
            )
            .bind(&self.region)
            .bind(instance_type)
            .bind(effective)
            .bind(usd)
            .bind(now)
            .execute(&self.pool)
            .await?;
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let entry = known.entry(instance_type.to_string()).or_default();
        entry
            .prices
            .extend(found.iter().map(|(d, p)| (d.clone(), *p)));
        entry.read_at = now;
        entry.missing = found.is_empty();
        Ok(())
    }

    /// Makes the quote from what is known: each type's price in effect today; `why` when the
    /// list could not be read.
    /// Whether the fleet's types have been asked for once since the start, answered or not.
    pub fn asked(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Acquire)
    }

    fn publish(&self, why: Option<String>) {
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let mut prices = Vec::new();
        let mut missing = Vec::new();
        for (instance_type, entry) in known.iter() {
            if entry.missing && entry.prices.is_empty() {
                missing.push(instance_type.clone());
            }
            let Some((effective, usd)) = entry.prices.range(..=today.clone()).next_back() else {
                continue;
            };
            prices.push(Price {
                instance_type: instance_type.clone(),
                lifecycle: Lifecycle::OnDemand,
                usd_per_hour: *usd,
                source: PriceSource::PriceListApi,
                detail: format!(
                    "AWS Price List, on-demand Linux, {}, effective {effective}",
                    self.region
                ),
                effective: Some(effective.clone()),
                ..Price::default()
            });
        }
        let mut notes = Vec::new();
        if let Some(why) = why {
            notes.push(why);
        }
        if !missing.is_empty() {
            notes.push(format!(
                "The Price List has no on-demand Linux price for {} in {}: priced from the built-in table where it has one, else give a price with --prices.",
                missing.join(", "),
                self.region
            ));
        }
        *self.quote.write().unwrap_or_else(|p| p.into_inner()) = ListQuote {
            prices,
            note: (!notes.is_empty()).then(|| notes.join(" ")),
        };
    }

    /// The quote now.
    pub fn quote(&self) -> ListQuote {
        self.quote.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The hourly USD prices, by effective date (`YYYY-MM-DD`), of the on-demand terms of one
/// product `document` of the Price List — only when it is the on-demand Linux product of
/// `instance_type` in `region` (the filters asked for it; a document is checked again rather
/// than trusted).
pub fn on_demand_prices(document: &str, instance_type: &str, region: &str) -> Vec<(String, f64)> {
    let Ok(product) = serde_json::from_str::<Value>(document) else {
        return Vec::new();
    };
    let attributes = &product["product"]["attributes"];
    let is = |field: &str, value: &str| attributes[field].as_str() == Some(value);
    if !is("instanceType", instance_type)
        || !is("regionCode", region)
        || !ON_DEMAND_LINUX.iter().all(|(f, v)| is(f, v))
    {
        return Vec::new();
    }
    let Some(terms) = product["terms"]["OnDemand"].as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for term in terms.values() {
        let Some(effective) = term["effectiveDate"].as_str().and_then(|d| d.get(..10)) else {
            continue;
        };
        let hourly = term["priceDimensions"]
            .as_object()
            .into_iter()
            .flat_map(|d| d.values())
            .filter(|d| d["unit"].as_str() == Some("Hrs"))
            .filter_map(|d| d["pricePerUnit"]["USD"].as_str()?.parse::<f64>().ok())
            .find(|usd| usd.is_finite() && *usd > 0.0);
        if let Some(usd) = hourly {
            out.push((effective.to_string(), usd));
        }
    }
    out
}

/// The instance types of the fleet now.
fn fleet_types(fleet: &SnapshotStore) -> Option<BTreeSet<String>> {
    let snapshot = fleet.state().snapshot?;
    Some(
        snapshot
            .instances()
            .map(|i| i.instance_type.clone())
            .collect(),
    )
}

/// Loads the stored prices, then reads the fleet's types once the fleet has been read and
/// looks every [`CHECK`] for a type due, for as long as the server runs.
pub fn spawn(prices: Arc<ListPrices>, fleet: Arc<SnapshotStore>) {
    tokio::spawn(async move {
        if let Err(error) = prices.load().await {
            tracing::warn!("the stored list prices could not be read: {error}");
        }
        let mut changes = fleet.subscribe();
        loop {
            let Some(types) = fleet_types(&fleet) else {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            };
            if let Err(why) = prices.refresh(&types, chrono::Utc::now().timestamp()).await {
                tracing::warn!("{why}");
            }
            tokio::time::sleep(CHECK).await;
        }
    });
}

#[cfg(test)]
mod tests;
