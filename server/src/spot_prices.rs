//! The spot market through aws-sdk-ec2 (DescribeSpotPriceHistory): the price now of each spot
//! instance type the fleet runs, in the Availability Zones it runs them in, for the cost review.
//!
//! Asked with a `StartTime` of now, EC2 answers the price in effect then for each type and zone
//! (and any change since, none). A type's price is the mean over the fleet's spot instances of
//! that type of their zone's price, so that the instances together cost what EC2 bills; an
//! instance whose zone has no price (or is unknown) counts the mean over the zones that have one.
//! Read once an hour — spot prices change a few times a day at most — and again sooner after a
//! failure. Past hours are priced at today's spot price: the history keeps hours, not prices.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, RwLock},
    time::Duration,
};

use app::model::{
    cost::{Lifecycle, Price, PriceSource, SpotQuote},
    FleetSnapshot,
};
use aws_sdk_ec2::types::InstanceType;

use crate::fleet::store::SnapshotStore;

/// How often the prices are read again.
pub const REFRESH: Duration = Duration::from_secs(3600);
/// How soon after a failure.
const RETRY: Duration = Duration::from_secs(300);

/// The spot prices read last, shared with the cost review.
pub struct SpotPrices {
    ec2: aws_sdk_ec2::Client,
    quote: RwLock<SpotQuote>,
    /// Whether EC2 has been asked once since the start (answered or not).
    asked: std::sync::atomic::AtomicBool,
}

impl SpotPrices {
    pub fn new(ec2: aws_sdk_ec2::Client) -> SpotPrices {
        SpotPrices {
            ec2,
            quote: RwLock::new(SpotQuote::default()),
            asked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the spot prices have been asked for once since the start, answered or not.
    pub fn asked(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Acquire)
    }

    /// [`SpotPrices::read`], then marks the market asked.
    pub async fn refresh(&self, snapshot: &FleetSnapshot) -> Result<usize, String> {
        let read = self.read(snapshot).await;
        self.asked.store(true, std::sync::atomic::Ordering::Release);
        read
    }

    /// Reads the prices of the spot instances of `snapshot` and keeps them; on failure keeps
    /// the prices read before and says why the new ones are missing.
    async fn read(&self, snapshot: &FleetSnapshot) -> Result<usize, String> {
        // Spot instances by type and zone.
        let mut spot: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for instance in snapshot
            .instances()
            .filter(|i| i.lifecycle == Some(Lifecycle::Spot))
        {
            spot.entry(instance.instance_type.clone())
                .or_default()
                .push(instance.availability_zone.clone());
        }
        if spot.is_empty() {
            *self.quote.write().unwrap_or_else(|p| p.into_inner()) = SpotQuote::default();
            return Ok(0);
        }
        let now = chrono::Utc::now();
        let latest = self.latest_prices(&spot, now).await?;
        let (prices, missing) = fleet_means(&spot, &latest, now);
        let count = prices.len();
        *self.quote.write().unwrap_or_else(|p| p.into_inner()) = SpotQuote {
            prices,
            note: (!missing.is_empty()).then(|| {
                format!(
                    "EC2 has no spot price for {}: those spot instances are unpriced unless the price file gives a rate.",
                    missing.join(", ")
                )
            }),
        };
        Ok(count)
    }

    /// The newest spot price per instance type and zone, from EC2's price history. A failure
    /// is said in words, and noted on the quote while it has no prices from before.
    async fn latest_prices(
        &self,
        spot: &BTreeMap<String, Vec<Option<String>>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<BTreeMap<(String, String), (i64, f64)>, String> {
        let mut pages = self
            .ec2
            .describe_spot_price_history()
            .set_instance_types(Some(
                spot.keys()
                    .map(|t| InstanceType::from(t.as_str()))
                    .collect(),
            ))
            .product_descriptions("Linux/UNIX")
            .start_time(aws_sdk_ec2::primitives::DateTime::from_secs(
                now.timestamp(),
            ))
            .into_paginator()
            .send();
        // The newest price per type and zone.
        let mut latest: BTreeMap<(String, String), (i64, f64)> = BTreeMap::new();
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(page) => page,
                Err(error) => {
                    let why = format!(
                        "Spot prices unknown: {}. Spot instances without a price in the price file are listed as unpriced; allow ec2:DescribeSpotPriceHistory or give spot rates with --prices.",
                        crate::aws::errors::failure("EC2", "DescribeSpotPriceHistory", &error)
                    );
                    let mut quote = self.quote.write().unwrap_or_else(|p| p.into_inner());
                    if quote.prices.is_empty() {
                        quote.note = Some(why.clone());
                    }
                    return Err(why);
                }
            };
            for item in page.spot_price_history() {
                let (Some(kind), Some(zone), Some(price), Some(at)) = (
                    item.instance_type(),
                    item.availability_zone(),
                    item.spot_price().and_then(|p| p.parse::<f64>().ok()),
                    item.timestamp(),
                ) else {
                    continue;
                };
                if !price.is_finite() || price <= 0.0 {
                    continue;
                }
                let key = (kind.as_str().to_string(), zone.to_string());
                let seconds = at.secs();
                if latest.get(&key).is_none_or(|(t, _)| seconds > *t) {
                    latest.insert(key, (seconds, price));
                }
            }
        }
        Ok(latest)
    }
}

/// Per spot instance type of the fleet (its instances' zones in `spot`): the mean of the prices
/// of its instances' zones (a zone without a price takes the mean over the zones that have
/// one), and the types without any price.
fn fleet_means(
    spot: &BTreeMap<String, Vec<Option<String>>>,
    latest: &BTreeMap<(String, String), (i64, f64)>,
    now: chrono::DateTime<chrono::Utc>,
) -> (Vec<Price>, Vec<String>) {
    let read_at = now.format("%Y-%m-%d %H:%M UTC");
    let mut prices = Vec::new();
    let mut missing = Vec::new();
    for (kind, zones) in spot {
        let known: BTreeMap<&str, f64> = latest
            .iter()
            .filter(|((k, _), _)| k == kind)
            .map(|((_, z), (_, p))| (z.as_str(), *p))
            .collect();
        if known.is_empty() {
            missing.push(kind.clone());
            continue;
        }
        let mean = known.values().sum::<f64>() / known.len() as f64;
        let each: Vec<f64> = zones
            .iter()
            .map(|z| {
                z.as_deref()
                    .and_then(|z| known.get(z))
                    .copied()
                    .unwrap_or(mean)
            })
            .collect();
        let used: BTreeSet<&str> = zones
            .iter()
            .filter_map(|z| z.as_deref())
            .filter(|z| known.contains_key(z))
            .collect();
        prices.push(Price {
            instance_type: kind.clone(),
            lifecycle: Lifecycle::Spot,
            usd_per_hour: each.iter().sum::<f64>() / each.len() as f64,
            source: PriceSource::SpotHistory,
            effective: Some(now.format("%Y-%m-%d").to_string()),
            managed_instances_usd_per_hour: None,
            commitment: None,
            detail: format!(
                "EC2 spot price history, {} (mean over the fleet's instances), read {read_at}",
                if used.is_empty() {
                    "all zones".to_string()
                } else {
                    used.into_iter().collect::<Vec<_>>().join(", ")
                }
            ),
        });
    }
    (prices, missing)
}

impl SpotPrices {
    /// The prices read last, and why there are none when they could not be read.
    pub fn quote(&self) -> SpotQuote {
        self.quote.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Reads the spot prices once the fleet has been read, then every [`REFRESH`] (sooner after a
/// failure), for as long as the server runs.
pub fn spawn(prices: Arc<SpotPrices>, fleet: Arc<SnapshotStore>) {
    tokio::spawn(async move {
        let mut changes = fleet.subscribe();
        loop {
            let Some(snapshot) = fleet.state().snapshot else {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            };
            let wait = match prices.refresh(&snapshot).await {
                Ok(_) => REFRESH,
                Err(why) => {
                    tracing::warn!("{why}");
                    RETRY
                }
            };
            tokio::time::sleep(wait).await;
        }
    });
}
