//! The console's share of ECS's request budget. ECS throttles each account and region with one
//! token bucket per group of actions, shared by every caller (deploy pipelines, autoscaling, the
//! AWS console, this one). The fleet refresher paces its own calls to a share of each group's
//! sustained rate (and the same share of its burst), slows down when ECS throttles many of its
//! calls anyway (halving that group's pace, then recovering over about ten seconds), and lets background
//! work (the periodic full read that checks the incremental state) use only what the
//! foreground refresh leaves. The pages' own reads of ECS (task definitions, a service now, a
//! cluster's events) come out of the same share: they use what the refresher leaves, wait a few
//! seconds at most, and until the first snapshot has landed take only what the refresher leaves
//! untouched.
//!
//! The share is per console process: two replicas use twice the share.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
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
    /// A page's own read of ECS: it takes a token only while a quarter of the bucket is left for
    /// the refresher; until the refresher's first snapshot has landed, only from a bucket the
    /// refresher has left full (after a start every page read is cold, and they would otherwise
    /// use up the rate the first read needs; a refresher that cannot read at all still leaves
    /// the pages their reads).
    OnDemand,
}

#[derive(Debug)]
struct Pace {
    tokens: f64,
    at: Instant,
    /// 1 normally; halved when ECS throttles many of the group's calls (down to 1/16),
    /// recovering by 0.1 a second.
    slow: f64,
    /// The calls paced and the throttling answers seen in the current window.
    window: Window,
}

/// How ECS answered a group's calls lately: a throttling answer now and then (a fault, a
/// moment's contention) is tried again; most of a window's attempts throttled mean the bucket is
/// empty, and the pace halves, at most once a window.
///
/// Every attempt counts, the SDK's and the console's retries too (they are throttled as often as
/// first tries), and only a window with a few of them is judged: one in five calls throttled at
/// random met the old test (more than a third of the paced calls, retries not counted) in most
/// windows of a few calls, and the pages' reads gave up after half a second.
#[derive(Debug)]
struct Window {
    started: Instant,
    attempts: u32,
    throttled: u32,
    /// Whether the pace was halved in this window already.
    cut: bool,
}

/// The span over which throttling answers are counted.
const WINDOW: Duration = Duration::from_secs(2);

/// The attempts a window needs before its throttling answers can halve the pace.
const JUDGED_AFTER: u32 = 8;

impl Window {
    fn new(now: Instant) -> Window {
        Window {
            started: now,
            attempts: 0,
            throttled: 0,
            cut: false,
        }
    }

    /// Starts a new window when this one is over.
    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.started) >= WINDOW {
            *self = Window::new(now);
        }
    }

    /// Notes an attempt's answer; whether the pace should halve now: the window has had at least
    /// [`JUDGED_AFTER`] attempts, more than two thirds of them throttled, and it has not halved
    /// yet. (With one attempt in five throttled at random, a window of eight meets that about
    /// once in a thousand; an empty bucket throttles nearly all.)
    fn answered(&mut self, throttled: bool, now: Instant) -> bool {
        self.roll(now);
        self.attempts += 1;
        self.throttled += u32::from(throttled);
        let many = self.attempts >= JUDGED_AFTER && self.throttled * 3 > self.attempts * 2;
        let cut = many && !self.cut;
        self.cut |= cut;
        cut
    }
}

/// The pacing of every ECS group, at `share` of ECS's documented rates.
#[derive(Debug)]
pub struct Budget {
    share: f64,
    paces: Mutex<HashMap<&'static str, Pace>>,
    waited_ms: AtomicU64,
    throttled: AtomicU64,
    /// Whether the refresher's first snapshot has landed.
    snapshot_taken: AtomicBool,
    /// Page reads that gave up waiting for the budget.
    turned_away: AtomicU64,
}

impl Budget {
    /// A budget at `share_percent` (1 to 100) of each group's rates.
    pub fn new(share_percent: u32) -> Budget {
        Budget {
            share: f64::from(share_percent.clamp(1, 100)) / 100.0,
            paces: Mutex::new(HashMap::new()),
            waited_ms: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            snapshot_taken: AtomicBool::new(false),
            turned_away: AtomicU64::new(0),
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
            window: Window::new(now),
        });
        let elapsed = now.saturating_duration_since(pace.at).as_secs_f64();
        pace.slow = (pace.slow + elapsed * 0.1).min(1.0);
        let (burst, rate) = self.limits(group, pace.slow);
        pace.tokens = (pace.tokens + elapsed * rate).min(burst);
        pace.at = pace.at.max(now);
        let needed = match lane {
            Lane::Foreground => 1.0,
            Lane::Background => 1.0 + (burst / 2.0).floor(),
            // Before the first snapshot, only a bucket the refresher has left full.
            Lane::OnDemand if !self.snapshot_taken.load(Ordering::Relaxed) => burst,
            Lane::OnDemand => 1.0 + (burst / 4.0).floor(),
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
        self.take_within(action, lane, Duration::MAX).await;
    }

    /// Waits at most `limit` for `action`'s token; whether it was taken (a page that cannot
    /// wait longer says so instead of waiting out the refresher).
    pub async fn take_within(&self, action: &str, lane: Lane, limit: Duration) -> bool {
        let started = Instant::now();
        loop {
            let wait = self.try_take(action, lane, Instant::now());
            if wait.is_zero() {
                break;
            }
            let left = limit.saturating_sub(started.elapsed());
            if left.is_zero() {
                self.turned_away.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            tokio::time::sleep(wait.min(left)).await;
        }
        let waited = started.elapsed().as_millis() as u64;
        if waited > 0 && lane != Lane::OnDemand {
            self.waited_ms.fetch_add(waited, Ordering::Relaxed);
        }
        true
    }

    /// The refresher's first snapshot has landed: pages may read ECS within their lane.
    pub fn snapshot_taken(&self) {
        self.snapshot_taken.store(true, Ordering::Relaxed);
    }

    /// Whether the refresher's first snapshot has landed.
    pub fn has_snapshot(&self) -> bool {
        self.snapshot_taken.load(Ordering::Relaxed)
    }

    /// Whether `action`'s group is paced slower because ECS throttled many of its calls lately.
    pub fn slowed(&self, action: &str) -> bool {
        let Some(group) = group_of(action) else {
            return false;
        };
        let paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        paces.get(group.name).is_some_and(|pace| pace.slow < 1.0)
    }

    /// Page reads that gave up waiting for the budget so far.
    pub fn turned_away(&self) -> u64 {
        self.turned_away.load(Ordering::Relaxed)
    }

    /// ECS answered an attempt of `action`, throttling it or not. When it throttles most of the
    /// group's attempts (other callers use the bucket), the group's pace halves, at most once
    /// every two seconds and down to a sixteenth, and recovers over about ten seconds; a
    /// throttling answer now and then is only tried again (halving for each would starve the
    /// refresher: under a fault rate of one call in five, reads crept at a sixteenth of their
    /// pace).
    pub fn answered(&self, action: &str, throttled: bool) {
        self.answered_at(action, throttled, Instant::now());
    }

    fn answered_at(&self, action: &str, throttled: bool, now: Instant) {
        if throttled {
            self.throttled.fetch_add(1, Ordering::Relaxed);
        }
        let Some(group) = group_of(action) else {
            return;
        };
        let mut paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pace) = paces.get_mut(group.name) {
            if pace.window.answered(throttled, now) {
                pace.slow = (pace.slow / 2.0).max(1.0 / 16.0);
                pace.tokens = pace.tokens.min(0.0);
            }
        }
    }

    /// Milliseconds the refresher's calls spent waiting for the budget so far.
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
    fn pages_take_only_a_full_bucket_before_the_first_snapshot_then_leave_a_quarter() {
        let budget = Budget::new(100);
        let start = Instant::now();
        // Task definition reads: 50 burst, 20 a second. The bucket is full: one page read.
        assert_eq!(
            taken(&budget, "DescribeTaskDefinition", Lane::OnDemand, start, 10),
            1
        );
        // The refresher uses it; pages get nothing while it is not full again.
        assert_eq!(
            taken(
                &budget,
                "DescribeTaskDefinition",
                Lane::Foreground,
                start,
                10
            ),
            10
        );
        let soon = start + Duration::from_millis(500);
        assert_eq!(
            taken(&budget, "DescribeTaskDefinition", Lane::OnDemand, soon, 10),
            0
        );
        assert!(!budget.has_snapshot());
        budget.snapshot_taken();
        // 49 - 10 + 10 refilled = 49: pages take while 13 are left (1 + a quarter of 50), and
        // the last 12 are the refresher's.
        assert_eq!(
            taken(&budget, "DescribeTaskDefinition", Lane::OnDemand, soon, 100),
            37
        );
        assert_eq!(
            taken(
                &budget,
                "DescribeTaskDefinition",
                Lane::Foreground,
                soon,
                100
            ),
            12
        );
    }

    #[tokio::test]
    async fn a_page_read_gives_up_after_its_wait_and_is_counted() {
        let budget = Budget::new(100);
        budget.snapshot_taken();
        let now = Instant::now();
        taken(&budget, "DescribeServices", Lane::Foreground, now, 100);
        let started = Instant::now();
        let took = budget
            .take_within(
                "DescribeServices",
                Lane::OnDemand,
                Duration::from_millis(50),
            )
            .await;
        assert!(!took);
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(budget.turned_away(), 1);
        // The refresher's own wait has no limit.
        budget.take("DescribeServices", Lane::Foreground).await;
        assert_eq!(budget.turned_away(), 1);
    }

    #[test]
    fn most_attempts_throttled_halve_the_pace_once_a_window_and_it_recovers() {
        let budget = Budget::new(100);
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let take = |now, n| taken(&budget, "DescribeServices", Lane::Foreground, now, n);
        let answers = |now, ok: usize, throttled: usize| {
            for _ in 0..ok {
                budget.answered_at("DescribeServices", false, now);
            }
            for _ in 0..throttled {
                budget.answered_at("ListServices", true, now);
            }
        };
        assert_eq!(take(start, 200), 100);
        // Two throttled attempts out of a hundred: tried again, the pace stays (20 a second).
        answers(start, 98, 2);
        assert_eq!(budget.throttled_calls(), 2);
        assert_eq!(take(at(1_000), 50), 20);
        assert!(!budget.slowed("DescribeServices"));
        // A new window: 40 attempts, 30 of them throttled — the bucket is empty. Half the pace,
        // once.
        assert_eq!(take(at(3_000), 50), 40);
        answers(at(3_000), 10, 30);
        // A second later: 0.5 + 0.1 recovered of 20 a second.
        assert_eq!(take(at(4_000), 50), 12);
        assert!(budget.slowed("DescribeServices"));
        // More throttling in the same window does not halve it again.
        answers(at(4_000), 0, 20);
        assert_eq!(take(at(4_500), 50), 6);
        // Recovered after some seconds of no throttling.
        assert_eq!(take(at(60_000), 200), 100);
        assert!(!budget.slowed("DescribeServices"));
    }

    #[test]
    fn a_few_throttled_attempts_in_a_quiet_window_do_not_halve_the_pace() {
        let budget = Budget::new(100);
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(
            taken(
                &budget,
                "DescribeTaskDefinition",
                Lane::Foreground,
                start,
                1
            ),
            1
        );
        // One call in five throttled at random, on a group the refresher hardly uses: windows of
        // three to five attempts with two or three throttled (the old test halved the pace for
        // each, and the pages' reads gave up after half a second).
        for (window, (ok, throttled)) in [(1, 2), (2, 2), (2, 3), (3, 2)].into_iter().enumerate() {
            let now = at(2 * window as u64 + 2);
            for n in 0..ok + throttled {
                budget.answered_at("DescribeTaskDefinition", n < throttled, now);
            }
        }
        assert!(!budget.slowed("DescribeTaskDefinition"));
        // Six of seven throttled: not judged yet. Eight attempts, six throttled: judged, and
        // more than two thirds were throttled.
        let now = at(20);
        for n in 0..7 {
            budget.answered_at("DescribeTaskDefinition", n < 6, now);
        }
        assert!(!budget.slowed("DescribeTaskDefinition"));
        budget.answered_at("DescribeTaskDefinition", false, now);
        assert!(budget.slowed("DescribeTaskDefinition"));
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
