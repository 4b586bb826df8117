//! What a cost view is asked for: the grouping, the period, the sort and the filters, read from the
//! page's query parameters with a reason for every value refused.

use super::*;

/// How the rows are grouped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    #[default]
    Team,
    Service,
    Cluster,
    InstanceType,
}

impl Grouping {
    pub const ALL: [Grouping; 4] = [
        Grouping::Team,
        Grouping::Service,
        Grouping::Cluster,
        Grouping::InstanceType,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Grouping::Team => "team",
            Grouping::Service => "service",
            Grouping::Cluster => "cluster",
            Grouping::InstanceType => "instance_type",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Grouping::Team => "Team",
            Grouping::Service => "Service",
            Grouping::Cluster => "Cluster",
            Grouping::InstanceType => "Instance type",
        }
    }

    pub fn parse(text: &str) -> Result<Grouping, String> {
        Grouping::ALL
            .into_iter()
            .find(|g| g.as_str() == text)
            .ok_or_else(|| {
                format!("group {text:?} is not one of team, service, cluster, instance_type")
            })
    }
}

/// The span the run rate is given for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    Hour,
    Day,
    #[default]
    Month,
}

impl Span {
    pub const ALL: [Span; 3] = [Span::Hour, Span::Day, Span::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Span::Hour => "hour",
            Span::Day => "day",
            Span::Month => "month",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Span::Hour => "an hour",
            Span::Day => "a day",
            Span::Month => "a month (730 hours)",
        }
    }

    pub fn hours(self) -> u32 {
        match self {
            Span::Hour => 1,
            Span::Day => 24,
            Span::Month => super::MONTH_HOURS,
        }
    }

    pub fn parse(text: &str) -> Result<Span, String> {
        Span::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("span {text:?} is not one of hour, day, month"))
    }
}

/// The column the rows are sorted by, largest first (name: A to Z).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    #[default]
    Cost,
    Name,
    GpuHours,
    Unused,
}

impl SortKey {
    pub const ALL: [SortKey; 4] = [
        SortKey::Cost,
        SortKey::Name,
        SortKey::GpuHours,
        SortKey::Unused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Cost => "cost",
            SortKey::Name => "name",
            SortKey::GpuHours => "gpu_hours",
            SortKey::Unused => "unused",
        }
    }

    pub fn parse(text: &str) -> Result<SortKey, String> {
        SortKey::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("sort {text:?} is not one of cost, name, gpu_hours, unused"))
    }
}

/// How an MPS GPU's cost is shared among the containers on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitRule {
    /// By each container's share of the GPU's memory, what ECS reserves.
    #[default]
    Memory,
    /// By the larger of its memory share and its compute limit (`maxComputePercent` ÷ 100),
    /// scaled down where a GPU's shares add up to more than the whole GPU.
    Max,
}

impl SplitRule {
    pub const ALL: [SplitRule; 2] = [SplitRule::Memory, SplitRule::Max];

    pub fn as_str(self) -> &'static str {
        match self {
            SplitRule::Memory => "memory",
            SplitRule::Max => "max",
        }
    }

    /// As the page's picker and the exports name it.
    pub fn label(self) -> &'static str {
        match self {
            SplitRule::Memory => "memory share",
            SplitRule::Max => "larger of memory and compute share",
        }
    }

    pub fn parse(text: &str) -> Result<SplitRule, String> {
        SplitRule::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                format!("split {text:?} is not memory (memory share) or max (the larger of memory and compute share)")
            })
    }
}

/// What a report asks for; every field has a default, so `/cost` alone is a report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostQuery {
    /// The period: today's allocations (for `span`) or a recorded one.
    pub period: Period,
    /// A custom period's first and last day, `YYYY-MM-DD`.
    pub from: Option<String>,
    pub to: Option<String>,
    pub group: Grouping,
    pub span: Span,
    pub sort: SortKey,
    /// Share each cluster's idle cost out to its rows in proportion to their cost, instead of
    /// idle rows.
    pub share_idle: bool,
    /// Only this cluster.
    pub cluster: Option<String>,
    /// How MPS GPUs are shared among their containers.
    pub split: SplitRule,
}

impl CostQuery {
    /// The URL parameters a query reads, for the page, the API and their messages.
    pub const KEYS: [&'static str; 9] = [
        "period", "from", "to", "group", "span", "sort", "idle", "cluster", "split",
    ];

    /// From the URL's parameters (page and API alike); an unknown value is an error naming the
    /// ones that exist.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<CostQuery, String> {
        let mut query = CostQuery::default();
        let mut period = None;
        for (key, value) in params {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match key {
                "period" => period = Some(Period::parse(value)?),
                "from" => query.from = Some(day(key, value)?),
                "to" => query.to = Some(day(key, value)?),
                "group" => query.group = Grouping::parse(value)?,
                "span" => {
                    query.span = Span::parse(value)?;
                    // A span is for today's allocations: alone, it asks for them.
                    period.get_or_insert(Period::Now);
                }
                "sort" => query.sort = SortKey::parse(value)?,
                "idle" => {
                    query.share_idle = match value {
                        "row" => false,
                        "share" => true,
                        other => {
                            return Err(format!("idle {other:?} is not row or share"));
                        }
                    }
                }
                "cluster" => query.cluster = Some(value.to_string()),
                "split" => query.split = SplitRule::parse(value)?,
                _ => {}
            }
        }
        query.period = match period {
            Some(period) => period,
            // Days alone ask for a custom period.
            None if query.from.is_some() || query.to.is_some() => Period::Custom,
            None => Period::default(),
        };
        if query.period != Period::Custom {
            query.from = None;
            query.to = None;
        }
        Ok(query)
    }

    /// This query as URL parameters, defaults left out, for links and the CSV export.
    pub fn to_params(&self) -> String {
        let mut parts = Vec::new();
        let default = CostQuery::default();
        if self.period != default.period {
            parts.push(format!("period={}", self.period.as_str()));
        }
        if self.period == Period::Custom {
            for (key, value) in [("from", &self.from), ("to", &self.to)] {
                if let Some(value) = value {
                    parts.push(format!("{key}={value}"));
                }
            }
        }
        if self.group != default.group {
            parts.push(format!("group={}", self.group.as_str()));
        }
        if self.period == Period::Now && self.span != default.span {
            parts.push(format!("span={}", self.span.as_str()));
        }
        if self.sort != default.sort {
            parts.push(format!("sort={}", self.sort.as_str()));
        }
        if self.share_idle {
            parts.push("idle=share".to_string());
        }
        if let Some(cluster) = &self.cluster {
            parts.push(format!(
                "cluster={}",
                crate::model::fleet_view::encode(cluster)
            ));
        }
        if self.split != default.split {
            parts.push(format!("split={}", self.split.as_str()));
        }
        parts.join("&")
    }
}

/// A day as `YYYY-MM-DD`, checked for its shape here (the server checks it is a real day).
pub(super) fn day(key: &str, value: &str) -> Result<String, String> {
    let parts: Vec<&str> = value.split('-').collect();
    let number = |text: &str, digits: usize, range: std::ops::RangeInclusive<u32>| {
        text.len() == digits
            && text.bytes().all(|b| b.is_ascii_digit())
            && text.parse::<u32>().is_ok_and(|n| range.contains(&n))
    };
    match parts.as_slice() {
        [y, m, d] if number(y, 4, 1970..=9999) && number(m, 2, 1..=12) && number(d, 2, 1..=31) => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "{key} {value:?} is not a day: give it as YYYY-MM-DD, e.g. 2026-11-01"
        )),
    }
}

/// Which period a report covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    /// Today's allocations, held for the query's span (no history needed).
    Now,
    /// The last 7 days, up to now.
    Last7,
    /// The last 30 days, up to now.
    #[default]
    Last30,
    /// From the first of this month (UTC) to now.
    ThisMonth,
    /// The whole of last month (UTC).
    LastMonth,
    /// From one day to another, both included.
    Custom,
}

impl Period {
    pub const ALL: [Period; 6] = [
        Period::Now,
        Period::Last7,
        Period::Last30,
        Period::ThisMonth,
        Period::LastMonth,
        Period::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Now => "now",
            Period::Last7 => "7d",
            Period::Last30 => "30d",
            Period::ThisMonth => "this_month",
            Period::LastMonth => "last_month",
            Period::Custom => "custom",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Period::Now => "Today's allocations",
            Period::Last7 => "Last 7 days",
            Period::Last30 => "Last 30 days",
            Period::ThisMonth => "This month",
            Period::LastMonth => "Last month",
            Period::Custom => "Custom",
        }
    }

    pub fn parse(text: &str) -> Result<Period, String> {
        Period::ALL
            .into_iter()
            .find(|p| p.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "period {text:?} is not one of now, 7d, 30d, this_month, last_month, custom"
                )
            })
    }
}

#[cfg(test)]
mod tests;
