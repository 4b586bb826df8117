//! ECS's request throttling: one token bucket per group of actions, per account and region,
//! shared by every caller, with the groups, bucket sizes and refill rates of
//! [`ecs_facts::throttling`]. A request takes one token; with none left it is answered
//! `ThrottlingException` "Rate exceeded". The developer guide describes tokens added "every
//! second"; the buckets here refill continuously at the same rate, which allows the same average
//! and never more than the burst.

use std::{collections::BTreeMap, sync::Mutex, time::Instant};

use ecs_facts::throttling::{group_of, GROUPS};
use serde::{Deserialize, Serialize};

/// Calls of one group: answered and throttled, and the tokens it holds now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupStatus {
    pub group: String,
    pub burst: u32,
    pub sustained: u32,
    /// Requests that took a token (or, with the limits off, were answered).
    pub calls: u64,
    /// Requests answered `ThrottlingException`.
    pub throttled: u64,
    /// Tokens left now (the burst when the limits are off).
    pub tokens: f64,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
    calls: u64,
    throttled: u64,
}

/// Every group's bucket, and its counts.
#[derive(Debug, Default)]
pub struct Buckets {
    buckets: Mutex<BTreeMap<&'static str, Bucket>>,
}

impl Buckets {
    /// Takes a token for `action` at `now` when `enforce` is on; counts the call either way.
    /// Returns false when the request must be throttled. Actions in no group are never
    /// throttled.
    pub fn take(&self, action: &str, enforce: bool, now: Instant) -> bool {
        let Some(group) = group_of(action) else {
            return true;
        };
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets.entry(group.name).or_insert(Bucket {
            tokens: f64::from(group.burst),
            at: now,
            calls: 0,
            throttled: 0,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens =
            (bucket.tokens + elapsed * f64::from(group.sustained)).min(f64::from(group.burst));
        bucket.at = bucket.at.max(now);
        if !enforce {
            bucket.calls += 1;
            return true;
        }
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            bucket.calls += 1;
            true
        } else {
            bucket.throttled += 1;
            false
        }
    }

    /// Every group's counts, in the order of [`GROUPS`]; groups never called are left out.
    pub fn status(&self, enforce: bool, now: Instant) -> Vec<GroupStatus> {
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        GROUPS
            .iter()
            .filter_map(|group| {
                let bucket = buckets.get(group.name)?;
                let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
                let tokens = if enforce {
                    (bucket.tokens + elapsed * f64::from(group.sustained))
                        .min(f64::from(group.burst))
                } else {
                    f64::from(group.burst)
                };
                Some(GroupStatus {
                    group: group.name.to_string(),
                    burst: group.burst,
                    sustained: group.sustained,
                    calls: bucket.calls,
                    throttled: bucket.throttled,
                    tokens: (tokens * 10.0).floor() / 10.0,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_group_allows_its_burst_then_its_sustained_rate_and_shares_the_bucket() {
        let buckets = Buckets::default();
        let start = Instant::now();
        // Cluster read actions: 50 at once, whichever of the group's actions.
        let answered = (0..60)
            .filter(|n| {
                let action = if n % 2 == 0 {
                    "DescribeClusters"
                } else {
                    "ListClusters"
                };
                buckets.take(action, true, start)
            })
            .count();
        assert_eq!(answered, 50);
        // Another group is untouched.
        assert!(buckets.take("DescribeServices", true, start));
        // After half a second, 10 more (20 a second).
        let later = start + Duration::from_millis(500);
        let more = (0..20)
            .filter(|_| buckets.take("ListClusters", true, later))
            .count();
        assert_eq!(more, 10);
        // Refilled, never past the burst.
        let much_later = start + Duration::from_secs(3600);
        let refilled = (0..80)
            .filter(|_| buckets.take("DescribeClusters", true, much_later))
            .count();
        assert_eq!(refilled, 50);
        let status = buckets.status(true, much_later);
        let reads = status
            .iter()
            .find(|s| s.group == "Cluster read actions")
            .expect("counted");
        assert_eq!((reads.calls, reads.throttled), (110, 50));
        assert!(reads.tokens < 1.0);
    }

    #[test]
    fn with_the_limits_off_every_call_is_answered_and_counted() {
        let buckets = Buckets::default();
        let now = Instant::now();
        assert!((0..500).all(|_| buckets.take("ListTasks", false, now)));
        let status = buckets.status(false, now);
        assert_eq!(status.len(), 1);
        assert_eq!((status[0].calls, status[0].throttled), (500, 0));
    }
}
