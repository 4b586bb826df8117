//! The console's share of ECS's request budget. ECS throttles each account and region with one
//! token bucket per group of actions, shared by every caller (deploy pipelines, autoscaling, the
//! AWS console, this one). The fleet refresher paces its own calls to a share of each group's
//! sustained rate (and the same share of its burst), slows down when ECS throttles it anyway
//! (halving that group's pace, then recovering over about ten seconds), and lets background
//! work (the periodic full read that checks the incremental state) use only what the
//! foreground refresh leaves.
//!
//! The share is per console process: two replicas use twice the share.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use ecs_facts::throttling::{group_of, Group};

/// Which work a call is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The refresh the pages wait for (and the first full read).
    Foreground,
    /// Checks that can wait: they take a token only while half the bucket is left for the
    /// foreground.
    Background,
}

#[derive(Debug)]
struct Pace {
    tokens: f64,
    at: Instant,
    /// 1 normally; halved by each throttled call (down to 1/16), recovering by 0.1 a second.
    slow: f64,
}

/// The pacing of every ECS group, at `share` of ECS's documented rates.
#[derive(Debug)]
pub struct Budget {
    share: f64,
    paces: Mutex<HashMap<&'static str, Pace>>,
    waited_ms: AtomicU64,
    throttled: AtomicU64,
}

impl Budget {
    /// A budget at `share_percent` (1 to 100) of each group's rates.
    pub fn new(share_percent: u32) -> Budget {
        Budget {
            share: f64::from(share_percent.clamp(1, 100)) / 100.0,
            paces: Mutex::new(HashMap::new()),
            waited_ms: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
        }
    }

    /// The share of ECS's rates, as a percentage.
    pub fn share_percent(&self) -> u32 {
        (self.share * 100.0).round() as u32
    }

    /// The burst and sustained rate this budget allows a group.
    fn limits(&self, group: &Group, slow: f64) -> (f64, f64) {
        let burst = (f64::from(group.burst) * self.share).max(1.0);
        let rate = f64::from(group.sustained) * self.share * slow;
        (burst, rate.max(0.01))
    }

    /// How long to wait before `action` may be sent at `now` (zero: it has taken its token).
    fn try_take(&self, action: &str, lane: Lane, now: Instant) -> Duration {
        let Some(group) = group_of(action) else {
            return Duration::ZERO;
        };
        let mut paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        let pace = paces.entry(group.name).or_insert_with(|| Pace {
            tokens: (f64::from(group.burst) * self.share).max(1.0),
            at: now,
            slow: 1.0,
        });
        let elapsed = now.saturating_duration_since(pace.at).as_secs_f64();
        pace.slow = (pace.slow + elapsed * 0.1).min(1.0);
        let (burst, rate) = self.limits(group, pace.slow);
        pace.tokens = (pace.tokens + elapsed * rate).min(burst);
        pace.at = pace.at.max(now);
        let needed = match lane {
            Lane::Foreground => 1.0,
            Lane::Background => 1.0 + (burst / 2.0).floor(),
        };
        if pace.tokens >= needed {
            pace.tokens -= 1.0;
            Duration::ZERO
        } else {
            Duration::from_secs_f64(((needed - pace.tokens) / rate).min(60.0))
                .max(Duration::from_millis(1))
        }
    }

    /// Waits until `action` may be sent within the budget, then takes its token.
    pub async fn take(&self, action: &str, lane: Lane) {
        let started = Instant::now();
        loop {
            let wait = self.try_take(action, lane, Instant::now());
            if wait.is_zero() {
                break;
            }
            tokio::time::sleep(wait).await;
        }
        let waited = started.elapsed().as_millis() as u64;
        if waited > 0 {
            self.waited_ms.fetch_add(waited, Ordering::Relaxed);
        }
    }

    /// ECS throttled a call of `action` anyway (other callers used the bucket): this group's
    /// pace halves, down to a sixteenth, and recovers over about ten seconds.
    pub fn throttled(&self, action: &str) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
        let Some(group) = group_of(action) else {
            return;
        };
        let mut paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pace) = paces.get_mut(group.name) {
            pace.slow = (pace.slow / 2.0).max(1.0 / 16.0);
            pace.tokens = pace.tokens.min(0.0);
        }
    }

    /// Milliseconds spent waiting for the budget so far.
    pub fn waited_ms(&self) -> u64 {
        self.waited_ms.load(Ordering::Relaxed)
    }

    /// Throttled calls reported so far.
    pub fn throttled_calls(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(budget: &Budget, action: &str, lane: Lane, now: Instant, n: usize) -> usize {
        (0..n)
            .filter(|_| budget.try_take(action, lane, now).is_zero())
            .count()
    }

    #[test]
    fn a_quarter_share_allows_a_quarter_of_the_burst_then_a_quarter_of_the_rate() {
        let budget = Budget::new(25);
        let start = Instant::now();
        // Cluster resource reads: 100 burst, 20 a second → 25 at once, then 5 a second.
        assert_eq!(
            taken(&budget, "DescribeTasks", Lane::Foreground, start, 40),
            25
        );
        let wait = budget.try_take("ListTasks", Lane::Foreground, start);
        assert!(
            (Duration::from_millis(150)..=Duration::from_millis(250)).contains(&wait),
            "{wait:?}"
        );
        let later = start + Duration::from_secs(2);
        assert_eq!(taken(&budget, "ListTasks", Lane::Foreground, later, 40), 10);
        // Another group has its own bucket.
        assert_eq!(
            taken(&budget, "DescribeServices", Lane::Foreground, later, 40),
            25
        );
    }

    #[test]
    fn background_work_leaves_half_the_bucket_to_the_foreground() {
        let budget = Budget::new(25);
        let now = Instant::now();
        assert_eq!(taken(&budget, "ListTasks", Lane::Background, now, 40), 13);
        assert_eq!(taken(&budget, "ListTasks", Lane::Foreground, now, 40), 12);
    }

    #[test]
    fn throttling_halves_the_pace_and_it_recovers() {
        let budget = Budget::new(100);
        let start = Instant::now();
        assert_eq!(
            taken(&budget, "DescribeServices", Lane::Foreground, start, 200),
            100
        );
        budget.throttled("DescribeServices");
        budget.throttled("ListServices");
        assert_eq!(budget.throttled_calls(), 2);
        // A quarter of 20 a second: 5 in the next second, not 20.
        let second = start + Duration::from_secs(1);
        let after = taken(&budget, "DescribeServices", Lane::Foreground, second, 50);
        assert!((5..=8).contains(&after), "{after}");
        // Recovered after some seconds of no throttling.
        let much_later = start + Duration::from_secs(60);
        assert_eq!(
            taken(
                &budget,
                "DescribeServices",
                Lane::Foreground,
                much_later,
                200
            ),
            100
        );
    }

    #[test]
    fn actions_outside_the_groups_are_never_paced() {
        let budget = Budget::new(1);
        let now = Instant::now();
        assert_eq!(
            taken(&budget, "GetMetricData", Lane::Foreground, now, 1000),
            1000
        );
    }
}
