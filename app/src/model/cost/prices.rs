//! What an instance costs an hour: a built-in table of on-demand estimates, overridden or added
//! to by the operator's price file, and the notes that say what could not be priced.

use serde::{Deserialize, Serialize};

use crate::model::words::Lifecycle;

/// When the built-in table was taken, and from where.
pub const BUILTIN_SOURCE: &str =
    "built-in estimate: AWS on-demand Linux, us-east-1, as of 2026-11 (give --prices for your rates)";

/// The region the built-in table is for.
pub const BUILTIN_REGION: &str = "us-east-1";

/// On-demand Linux hourly prices in us-east-1 (USD), estimates for the GPU instance types ECS
/// runs. Shipped as a default only: a price file replaces any of them.
const BUILTIN: &[(&str, f64)] = &[
    ("g4dn.xlarge", 0.526),
    ("g4dn.2xlarge", 0.752),
    ("g4dn.12xlarge", 3.912),
    ("g4dn.metal", 7.824),
    ("g5.xlarge", 1.006),
    ("g5.2xlarge", 1.212),
    ("g5.12xlarge", 5.672),
    ("g5.24xlarge", 8.144),
    ("g5.48xlarge", 16.288),
    ("g6.xlarge", 0.805),
    ("g6.2xlarge", 0.978),
    ("g6.12xlarge", 4.602),
    ("g6.48xlarge", 13.35),
    ("g6e.xlarge", 1.861),
    ("g6e.12xlarge", 10.493),
    ("g6e.48xlarge", 30.131),
    ("p4d.24xlarge", 21.958),
    ("p5.48xlarge", 55.04),
];

/// Where a price comes from, as the API and the exports name it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriceSource {
    /// AWS's Price List Query API (`pricing:GetProducts`), read daily.
    PriceListApi,
    /// Cost Explorer's amortized cost of the instances.
    CostExplorer,
    /// The operator's price file (`--prices`).
    File,
    /// The table built into the console: the offline fallback.
    #[default]
    BuiltIn,
    /// EC2's spot price history.
    SpotHistory,
}

impl PriceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PriceSource::PriceListApi => "price-list-api",
            PriceSource::CostExplorer => "cost-explorer",
            PriceSource::File => "file",
            PriceSource::BuiltIn => "built-in",
            PriceSource::SpotHistory => "spot-history",
        }
    }
}

/// A commitment a rate is under: its instances keep being billed when they stop running, until
/// the commitment's term ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Commitment {
    SavingsPlan,
    ReservedInstance,
}

impl Commitment {
    pub fn as_str(self) -> &'static str {
        match self {
            Commitment::SavingsPlan => "savings-plan",
            Commitment::ReservedInstance => "reserved-instance",
        }
    }

    /// As a sentence says it.
    pub fn words(self) -> &'static str {
        match self {
            Commitment::SavingsPlan => "a Savings Plan",
            Commitment::ReservedInstance => "a Reserved Instance",
        }
    }

    /// The word as written in a price file.
    pub fn parse(value: &str) -> Option<Commitment> {
        match value {
            "savings-plan" => Some(Commitment::SavingsPlan),
            "reserved-instance" => Some(Commitment::ReservedInstance),
            _ => None,
        }
    }
}

/// One instance type's hourly price.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub instance_type: String,
    pub lifecycle: Lifecycle,
    pub usd_per_hour: f64,
    /// What ECS Managed Instances charges an hour on top, for an instance of a Managed
    /// Instances provider; `None` when the price file does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_instances_usd_per_hour: Option<f64>,
    /// Where the figure comes from.
    pub source: PriceSource,
    /// The source in words: which file, table, region, date or zones.
    pub detail: String,
    /// The commitment the rate is under (an effective rate from the price file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commitment: Option<Commitment>,
    /// When the rate took effect (`YYYY-MM-DD`), when its source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
}

impl Price {
    /// How the instances it prices are billed, in words: `on-demand`, `spot`,
    /// `capacity-block`, or `on-demand, under a Savings Plan`.
    pub fn billed(&self) -> String {
        match self.commitment {
            Some(commitment) => {
                format!("{}, under {}", self.lifecycle.as_str(), commitment.words())
            }
            None => self.lifecycle.as_str().to_string(),
        }
    }

    /// The source as the exports write it: `file: price file prices.toml`.
    pub fn provenance(&self) -> String {
        format!("{}: {}", self.source.as_str(), self.detail)
    }

    /// Whether the instances it prices keep being billed after they stop: a commitment's, or a
    /// Capacity Block's, paid for its reserved hours.
    pub fn keeps_billing(&self) -> bool {
        self.commitment.is_some() || self.lifecycle == Lifecycle::CapacityBlock
    }
}

/// The prices a report uses, for the console's region.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceBook {
    pub region: String,
    pub prices: Vec<Price>,
    /// What the operator should know about these prices (a region without built-in prices,
    /// price file entries for other regions).
    pub notes: Vec<String>,
    /// The part of each instance's price that goes to its CPU and memory (0–0.9), split half by
    /// the tasks' CPU reservations and half by their memory reservations; the rest goes to the
    /// GPUs. 0 puts the whole price on the GPUs.
    #[serde(default)]
    pub host_share: f64,
}

/// The largest part of an instance's price that may go to its CPU and memory, percent.
pub const HOST_SHARE_MAX_PERCENT: f64 = 90.0;

impl PriceBook {
    /// The built-in table, when `region` is the one it is for; otherwise no prices and a note.
    pub fn builtin(region: &str) -> PriceBook {
        if region != BUILTIN_REGION {
            return PriceBook {
                region: region.to_string(),
                prices: Vec::new(),
                notes: vec![format!(
                    "The built-in prices are for {BUILTIN_REGION} only; the console runs in {region}, so every instance type needs a price from --prices."
                )],
                host_share: 0.0,
            };
        }
        PriceBook {
            region: region.to_string(),
            prices: BUILTIN
                .iter()
                .map(|(instance_type, usd)| Price {
                    instance_type: (*instance_type).to_string(),
                    lifecycle: Lifecycle::OnDemand,
                    usd_per_hour: *usd,
                    source: PriceSource::BuiltIn,
                    detail: BUILTIN_SOURCE.to_string(),
                    ..Price::default()
                })
                .collect(),
            notes: Vec::new(),
            host_share: 0.0,
        }
    }

    /// This book with `percent` of each instance's price going to its CPU and memory; an error
    /// names the range when `percent` is outside 0–90.
    pub fn with_host_share(mut self, percent: f64) -> Result<PriceBook, String> {
        if !percent.is_finite() || !(0.0..=HOST_SHARE_MAX_PERCENT).contains(&percent) {
            return Err(format!(
                "the CPU and memory share {percent} is not between 0 and {HOST_SHARE_MAX_PERCENT} percent"
            ));
        }
        self.host_share = percent / 100.0;
        Ok(self)
    }

    /// Replaces or adds the price file's entries for this book's region; entries for other
    /// regions are left out and named in a note.
    pub fn with_file(mut self, file: &PriceFile) -> PriceBook {
        let mut elsewhere = Vec::new();
        for entry in &file.prices {
            let region = entry.region.as_deref().unwrap_or(&self.region);
            if region != self.region {
                elsewhere.push(format!("{} ({region})", entry.instance_type));
                continue;
            }
            let price = Price {
                instance_type: entry.instance_type.clone(),
                lifecycle: entry.lifecycle,
                usd_per_hour: entry.usd_per_hour,
                managed_instances_usd_per_hour: entry.managed_instances_usd_per_hour,
                source: PriceSource::File,
                detail: match &entry.source {
                    Some(source) => format!("{source} (price file {})", file.name),
                    None => format!("price file {}", file.name),
                },
                commitment: entry.commitment,
                effective: None,
            };
            match self
                .prices
                .iter_mut()
                .find(|p| p.instance_type == price.instance_type && p.lifecycle == price.lifecycle)
            {
                Some(existing) => *existing = price,
                None => self.prices.push(price),
            }
        }
        if !elsewhere.is_empty() {
            self.notes.push(format!(
                "The price file {} also prices {} — not used: the console runs in {}.",
                file.name,
                elsewhere.join(", "),
                self.region
            ));
        }
        self.prices.sort_by(|a, b| {
            (a.instance_type.as_str(), a.lifecycle).cmp(&(b.instance_type.as_str(), b.lifecycle))
        });
        self
    }

    /// The hourly price of `instance_type` billed as `lifecycle`, if known. A spot or Capacity
    /// Block instance is never priced at the on-demand rate: without a rate of its own it is
    /// unknown.
    pub fn price(&self, instance_type: &str, lifecycle: Lifecycle) -> Option<&Price> {
        self.prices
            .iter()
            .find(|p| p.instance_type == instance_type && p.lifecycle == lifecycle)
    }
}

/// What the spot market says now: a price per spot instance type the fleet runs, read from
/// EC2's spot price history, and why there is none when it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpotQuote {
    pub prices: Vec<Price>,
    /// Why spot prices are unknown, in words, when they are.
    pub note: Option<String>,
}

impl PriceBook {
    /// This book with the spot market's prices added for the spot instance types it does not
    /// price itself: a price file's spot rate (a negotiated one, say) wins over the market's.
    pub fn with_market(&self, quote: &SpotQuote) -> PriceBook {
        let mut book = self.clone();
        for price in &quote.prices {
            if price.lifecycle == Lifecycle::Spot
                && book.price(&price.instance_type, Lifecycle::Spot).is_none()
            {
                book.prices.push(price.clone());
            }
        }
        book.prices.sort_by(|a, b| {
            (a.instance_type.as_str(), a.lifecycle).cmp(&(b.instance_type.as_str(), b.lifecycle))
        });
        if let Some(note) = &quote.note {
            book.notes.push(note.clone());
        }
        book
    }
}

/// What AWS's Price List says: the on-demand Linux price of each instance type the fleet runs
/// in the console's region, with the date it took effect, and why there is none when it could
/// not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListQuote {
    pub prices: Vec<Price>,
    /// Why the Price List's prices are missing or partial, in words.
    pub note: Option<String>,
}

impl PriceBook {
    /// This book with the Price List's on-demand prices in place of the built-in table's: a
    /// price file's rate (a negotiated one, a commitment's) wins over the list. Where the list
    /// has no price the built-in table, the offline fallback, stays, and a note says so.
    pub fn with_list(&self, quote: &ListQuote) -> PriceBook {
        let mut book = self.clone();
        for price in &quote.prices {
            match book
                .prices
                .iter_mut()
                .find(|p| p.instance_type == price.instance_type && p.lifecycle == price.lifecycle)
            {
                Some(existing) if existing.source == PriceSource::File => {}
                Some(existing) => {
                    // The Managed Instances charge is the file's, kept beside the list's rate.
                    let fee = existing.managed_instances_usd_per_hour;
                    *existing = price.clone();
                    existing.managed_instances_usd_per_hour = fee;
                }
                None => book.prices.push(price.clone()),
            }
        }
        book.prices.sort_by(|a, b| {
            (a.instance_type.as_str(), a.lifecycle).cmp(&(b.instance_type.as_str(), b.lifecycle))
        });
        if let Some(note) = &quote.note {
            book.notes.push(note.clone());
        }
        book
    }
}

/// A price file, checked: what `--prices` gives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceFile {
    /// The file's name, for the sources and notes.
    pub name: String,
    pub prices: Vec<PriceEntry>,
}

/// One `[[price]]` of a price file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceEntry {
    pub instance_type: String,
    /// Default: the console's region.
    pub region: Option<String>,
    pub lifecycle: Lifecycle,
    pub usd_per_hour: f64,
    pub source: Option<String>,
    /// The Managed Instances charge an hour on top of `usd_per_hour`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_instances_usd_per_hour: Option<f64>,
    /// The commitment `usd_per_hour` is the effective rate of, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commitment: Option<Commitment>,
}

/// The longest price a file may give an hour: far above any GPU instance, so a price in cents
/// or a misplaced digit is caught.
const MAX_USD_PER_HOUR: f64 = 1_000.0;

/// Checks one entry of a price file; `at` names it in the message ("[[price]] 3").
pub fn check_entry(
    at: &str,
    instance_type: Option<&str>,
    region: Option<&str>,
    lifecycle: Option<&str>,
    usd_per_hour: Option<f64>,
    source: Option<&str>,
) -> Result<PriceEntry, String> {
    let instance_type = instance_type
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            format!("{at} has no instance_type: give one, as in instance_type = \"g5.xlarge\"")
        })?;
    if !is_instance_type(instance_type) {
        return Err(format!(
            "{at}: {instance_type:?} is not an EC2 instance type; write it as family.size, as in \"g5.xlarge\""
        ));
    }
    if let Some(region) = region {
        if !is_region(region) {
            return Err(format!(
                "{at}: {region:?} is not an AWS region; write it as in \"us-east-1\" or \"eu-west-1\""
            ));
        }
    }
    let lifecycle = match lifecycle {
        None => Lifecycle::OnDemand,
        Some(text) => Lifecycle::parse(text).ok_or_else(|| {
            format!("{at}: lifecycle {text:?} is not on-demand, spot or capacity-block")
        })?,
    };
    let usd_per_hour = usd_per_hour.ok_or_else(|| {
        format!("{at} ({instance_type}) has no usd_per_hour: give the hourly price in US dollars, as in usd_per_hour = 1.006")
    })?;
    if !usd_per_hour.is_finite() || usd_per_hour < 0.0 {
        return Err(format!(
            "{at} ({instance_type}): usd_per_hour {usd_per_hour} is not a price; give zero or more US dollars an hour"
        ));
    }
    if usd_per_hour > MAX_USD_PER_HOUR {
        return Err(format!(
            "{at} ({instance_type}): usd_per_hour {usd_per_hour} is more than {MAX_USD_PER_HOUR} an hour; is it in cents? Give US dollars an hour"
        ));
    }
    Ok(PriceEntry {
        instance_type: instance_type.to_string(),
        region: region.map(str::to_string),
        lifecycle,
        usd_per_hour,
        source: source.map(str::to_string).filter(|s| !s.trim().is_empty()),
        managed_instances_usd_per_hour: None,
        commitment: None,
    })
}

/// Checks the commitment of an entry: `savings-plan` or `reserved-instance`, and only for an
/// on-demand rate (a spot or Capacity Block instance is not under one).
pub fn check_commitment(
    at: &str,
    lifecycle: Lifecycle,
    commitment: Option<&str>,
) -> Result<Option<Commitment>, String> {
    let Some(text) = commitment else {
        return Ok(None);
    };
    let commitment = Commitment::parse(text).ok_or_else(|| {
        format!("{at}: commitment {text:?} is not savings-plan or reserved-instance")
    })?;
    if lifecycle != Lifecycle::OnDemand {
        return Err(format!(
            "{at}: a commitment's effective rate prices on-demand instances, not {} ones; leave lifecycle out, or leave commitment out for a {} rate",
            lifecycle.as_str(),
            lifecycle.as_str()
        ));
    }
    Ok(Some(commitment))
}

/// Checks the Managed Instances charge of an entry: zero or more US dollars an hour, below the
/// largest price a file may give.
pub fn check_managed_fee(at: &str, fee: Option<f64>) -> Result<Option<f64>, String> {
    match fee {
        Some(fee) if !fee.is_finite() || !(0.0..=MAX_USD_PER_HOUR).contains(&fee) => Err(format!(
            "{at}: managed_instances_usd_per_hour {fee} is not a charge; give zero or more US dollars an hour (at most {MAX_USD_PER_HOUR})"
        )),
        other => Ok(other),
    }
}

/// Refuses a file that prices one type, region and lifecycle twice.
pub fn check_duplicates(entries: &[PriceEntry]) -> Result<(), String> {
    for (i, a) in entries.iter().enumerate() {
        if let Some(b) = entries[i + 1..].iter().find(|b| {
            a.instance_type == b.instance_type && a.region == b.region && a.lifecycle == b.lifecycle
        }) {
            return Err(format!(
                "{} ({}, {}) is priced twice ({} and {}); keep one",
                a.instance_type,
                a.region.as_deref().unwrap_or("the console's region"),
                a.lifecycle.as_str(),
                a.usd_per_hour,
                b.usd_per_hour
            ));
        }
    }
    Ok(())
}

/// `family.size`: lowercase letters and digits (and `-`) on both sides of one dot.
fn is_instance_type(text: &str) -> bool {
    let mut parts = text.split('.');
    let ok = |part: Option<&str>| {
        part.is_some_and(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// `xx-name-N`, as AWS names regions (`us-east-1`, `ap-southeast-2`, `us-gov-west-1`).
fn is_region(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() >= 3
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
