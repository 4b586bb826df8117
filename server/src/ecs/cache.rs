//! A short-lived cache of what pages read from ECS on demand, keyed by what they read. A fresh
//! entry answers at once and costs no ECS call; a stale one is read again, and when ECS takes
//! longer than [`STALE_WAIT`] (throttled, slow) or fails, the page gets the last good answer
//! while the read finishes in the background. Only a key never read waits for ECS.
//!
//! A task definition revision by ARN never changes, so it is kept until the cache is full.
//!
//! The cache is bounded by size, not only by count: each answer is weighed when it is kept (its
//! length as JSON, near what it holds on the heap), and past [`BUDGET`] bytes or [`CAPACITY`]
//! entries the answers read least lately go first, down to three quarters of the bound. A busy
//! console reads hundreds of services' events, tasks and revisions; kept by count alone, the
//! cache grew with every new one a page asked for until it held tens of megabytes.

use std::{
    any::Any,
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use app::model::ServiceError;
use futures::{future::BoxFuture, FutureExt as _};

/// How long a page waits for ECS when it has an older answer to show instead.
pub const STALE_WAIT: Duration = Duration::from_millis(900);

/// Entries kept at most.
const CAPACITY: usize = 2_000;

/// Bytes of answers (weighed as JSON) kept at most.
pub const BUDGET: usize = 12 * 1024 * 1024;

/// What an entry costs beyond its answer: the key, the map's slot, the pointer and the clocks.
const ENTRY_OVERHEAD: usize = 96;

/// How long pages say that they showed older answers, after the last one.
const STALE_SAID_FOR: Duration = Duration::from_secs(30);

/// The last time a page got a kept answer instead of a new one.
struct StaleServed {
    at: Instant,
    /// The answer's age then.
    age: Duration,
    reason: String,
}

struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    /// When it was read from ECS.
    at: Instant,
    /// When a page last asked for it.
    used: Instant,
    /// What it weighs: its answer as JSON and [`ENTRY_OVERHEAD`].
    bytes: usize,
}

/// The entries and what they weigh together.
#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    bytes: usize,
    /// Entries let go to stay within the bounds, since the start.
    evicted: u64,
}

impl Entries {
    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.map.remove(key) {
            self.bytes -= entry.bytes;
        }
    }

    /// Keeps `entry` for `key`, first letting go of the answers read least lately when it would
    /// not fit within the bounds.
    fn keep(&mut self, key: &str, entry: Entry, budget: usize) {
        self.remove(key);
        if self.map.len() >= CAPACITY || self.bytes + entry.bytes > budget {
            let mut by_use: Vec<(Instant, String)> =
                self.map.iter().map(|(k, e)| (e.used, k.clone())).collect();
            by_use.sort_unstable();
            let (count, bytes) = (CAPACITY * 3 / 4, budget * 3 / 4);
            for (_, key) in by_use {
                if self.map.len() < count && self.bytes + entry.bytes <= bytes {
                    break;
                }
                self.remove(&key);
                self.evicted += 1;
            }
        }
        self.bytes += entry.bytes;
        self.map.insert(key.to_string(), entry);
    }
}

/// What the cache holds, for `/metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSize {
    pub entries: usize,
    pub bytes: usize,
    pub evicted: u64,
}

/// Counts the bytes written to it and keeps none.
struct Weigher(usize);

impl std::io::Write for Weigher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `value` weighs in the cache: its length as JSON (without building it) and the entry's.
fn weigh<T: serde::Serialize>(key: &str, value: &T) -> usize {
    let mut weigher = Weigher(0);
    // Writing to the weigher cannot fail; a value that will not serialize weighs its key alone.
    let _ = serde_json::to_writer(&mut weigher, value);
    weigher.0 + key.len() + ENTRY_OVERHEAD
}

/// The cache of on-demand ECS reads.
pub struct ReadCache {
    entries: Mutex<Entries>,
    /// Bytes kept at most ([`BUDGET`], smaller in tests).
    budget: usize,
    /// Reads of keys never read, in flight: whoever asks for the same key meanwhile waits for
    /// that read's answer instead of sending another (after a start every key is cold, and a
    /// busy page would otherwise send ECS the same call once per request).
    first_reads: Mutex<HashMap<String, Box<dyn Any + Send + Sync>>>,
    /// Keys being read again in the background.
    reading: Mutex<std::collections::HashSet<String>>,
    stale: Mutex<Option<StaleServed>>,
}

impl Default for ReadCache {
    fn default() -> ReadCache {
        ReadCache::with_budget(BUDGET)
    }
}

impl ReadCache {
    /// A cache that keeps at most `budget` bytes of answers.
    pub fn with_budget(budget: usize) -> ReadCache {
        ReadCache {
            entries: Mutex::default(),
            budget,
            first_reads: Mutex::default(),
            reading: Mutex::default(),
            stale: Mutex::default(),
        }
    }

    /// How many answers it keeps, what they weigh, and how many it let go.
    pub fn size(&self) -> CacheSize {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        CacheSize {
            entries: entries.map.len(),
            bytes: entries.bytes,
            evicted: entries.evicted,
        }
    }

    fn get<T: Clone + Send + Sync + 'static>(&self, key: &str) -> Option<(T, Duration)> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.map.get_mut(key)?;
        let value = entry.value.downcast_ref::<T>()?.clone();
        entry.used = Instant::now();
        Some((value, entry.at.elapsed()))
    }

    fn put<T: serde::Serialize + Send + Sync + 'static>(&self, key: &str, value: T) {
        let bytes = weigh(key, &value);
        let now = Instant::now();
        let entry = Entry {
            value: Arc::new(value),
            at: now,
            used: now,
            bytes,
        };
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keep(key, entry, self.budget);
    }

    /// Whether pages lately got kept answers (in the last [`STALE_SAID_FOR`]), with the age of
    /// that answer now and why ECS did not give a new one.
    pub fn stale(&self) -> Option<app::model::StaleReads> {
        let stale = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        let served = stale.as_ref().filter(|s| s.at.elapsed() < STALE_SAID_FOR)?;
        Some(app::model::StaleReads {
            age_seconds: (served.age + served.at.elapsed()).as_secs(),
            reason: served.reason.clone(),
        })
    }

    /// A page got a kept answer `age` old, because of `reason` (none: the reason already
    /// known, as when an earlier read of the same thing has not answered yet).
    fn served_stale(&self, age: Duration, reason: Option<String>) {
        let mut stale = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        let reason = reason
            .or_else(|| stale.as_ref().map(|s| s.reason.clone()))
            .unwrap_or_else(|| "ECS has not yet answered an earlier read of it".into());
        *stale = Some(StaleServed {
            at: Instant::now(),
            age,
            reason,
        });
    }

    /// A read that a page stopped waiting for failed: the reason pages give from now on.
    fn failed_late(&self, error: &str) {
        if let Some(served) = self
            .stale
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            served.reason = error.to_string();
        }
    }

    /// ECS answered in time: pages no longer say that they show older answers.
    fn answered(&self) {
        *self.stale.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Notes that `key` happened now (an answer with nothing to keep but its time).
    pub fn remember(&self, key: &str) {
        self.put(key, ());
    }

    /// Whether `key` was noted less than `ttl` ago.
    pub fn fresh(&self, key: &str, ttl: Duration) -> bool {
        self.get::<()>(key).is_some_and(|((), age)| age < ttl)
    }

    /// Changes the answer kept for `key` with `change`, keeping its age, so that it is read
    /// again from ECS when it would have been; whether one was kept. After a write whose answer
    /// says what changed, pages show it at once and nobody waits for ECS meanwhile (forgetting
    /// the entry made every page that needed it wait for a read of its own).
    pub fn amend<T: serde::Serialize + Clone + Send + Sync + 'static>(
        &self,
        key: &str,
        change: impl FnOnce(&mut T),
    ) -> bool {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = entries.map.get_mut(key) else {
            return false;
        };
        let Some(value) = entry.value.downcast_ref::<T>() else {
            return false;
        };
        let mut value = value.clone();
        change(&mut value);
        let (before, after) = (entry.bytes, weigh(key, &value));
        entry.value = Arc::new(value);
        entry.bytes = after;
        entries.bytes = entries.bytes - before + after;
        true
    }

    /// Puts `value` as the answer for `key`, read now.
    pub fn insert<T: serde::Serialize + Send + Sync + 'static>(&self, key: &str, value: T) {
        self.put(key, value);
    }

    /// Forgets every entry whose key starts with `prefix` (after a write that changes it).
    pub fn forget(&self, prefix: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Entries { map, bytes, .. } = &mut *entries;
        map.retain(|key, entry| {
            let keep = !key.starts_with(prefix);
            if !keep {
                *bytes -= entry.bytes;
            }
            keep
        });
    }

    /// The answer for `key`: cached while younger than `ttl` (`None`: for ever), else read by
    /// `fetch`, waiting at most [`STALE_WAIT`] when an older answer exists.
    pub async fn read<T, F>(
        self: &Arc<Self>,
        key: String,
        ttl: Option<Duration>,
        fetch: F,
    ) -> Result<T, ServiceError>
    where
        T: serde::Serialize + Clone + Send + Sync + 'static,
        F: Future<Output = Result<T, ServiceError>> + Send + 'static,
    {
        let cached = self.get::<T>(&key);
        if let Some((value, age)) = &cached {
            if ttl.is_none_or(|ttl| *age < ttl) {
                return Ok(value.clone());
            }
        }
        let Some((stale, age)) = cached else {
            return self.first_read(key, fetch).await;
        };
        // One background read per key at a time; others answer from the cache meanwhile.
        if !self
            .reading
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone())
        {
            self.served_stale(age, None);
            return Ok(stale);
        }
        let cache = self.clone();
        let task_key = key.clone();
        let handle = tokio::spawn(async move {
            let result = fetch.await;
            match &result {
                Ok(value) => cache.put(&task_key, value.clone()),
                // A page that stopped waiting said only that ECS was slow: now it is known why.
                Err(error) => cache.failed_late(error.message()),
            }
            cache
                .reading
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&task_key);
            result
        });
        match tokio::time::timeout(STALE_WAIT, handle).await {
            Ok(Ok(Ok(value))) => {
                self.answered();
                Ok(value)
            }
            Ok(Ok(Err(error))) => {
                tracing::warn!(%key, %error, "an ECS read failed; the page shows the last good answer");
                self.served_stale(age, Some(error.message().to_string()));
                Ok(stale)
            }
            // Still reading (or the read stopped): the last good answer now.
            _ => {
                self.served_stale(
                    age,
                    Some(format!(
                        "ECS took longer than {:.1} s to answer",
                        STALE_WAIT.as_secs_f64()
                    )),
                );
                Ok(stale)
            }
        }
    }
}

/// The answer to a key's first read, shared by everyone who waits for it.
type FirstRead<T> = futures::future::Shared<BoxFuture<'static, Result<T, ServiceError>>>;

impl ReadCache {
    /// A key never read: one read of it at a time, its answer kept and given to every caller
    /// that asked meanwhile.
    async fn first_read<T, F>(self: &Arc<Self>, key: String, fetch: F) -> Result<T, ServiceError>
    where
        T: serde::Serialize + Clone + Send + Sync + 'static,
        F: Future<Output = Result<T, ServiceError>> + Send + 'static,
    {
        let read = {
            let mut first_reads = self.first_reads.lock().unwrap_or_else(|p| p.into_inner());
            match first_reads
                .get(&key)
                .and_then(|r| r.downcast_ref::<FirstRead<T>>())
            {
                Some(read) => read.clone(),
                None => {
                    let (cache, task_key) = (self.clone(), key.clone());
                    // On a task of its own: it finishes, and is kept, even when the caller
                    // that started it stops waiting.
                    let running = tokio::spawn(fetch);
                    let read: FirstRead<T> = async move {
                        let result = running.await.unwrap_or_else(|_| {
                            Err(ServiceError::unavailable(
                                "the read of ECS stopped before it answered; try again".to_string(),
                            ))
                        });
                        if let Ok(value) = &result {
                            cache.put(&task_key, value.clone());
                            cache.answered();
                        }
                        cache
                            .first_reads
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&task_key);
                        result
                    }
                    .boxed()
                    .shared();
                    first_reads.insert(key, Box::new(read.clone()));
                    read
                }
            }
        };
        read.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_key_never_read_is_read_once_however_many_ask_for_it_at_once() {
        let cache = Arc::new(ReadCache::default());
        let calls = Arc::new(AtomicU32::new(0));
        let asks = (0..20).map(|_| {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move {
                cache
                    .read("cold".into(), None, async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<u32, ServiceError>(7)
                    })
                    .await
            })
        });
        for answer in futures::future::join_all(asks).await {
            assert_eq!(answer.expect("joined"), Ok(7));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one read for twenty asks");
        // A failed first read is not kept: the next ask reads again.
        let failed = cache
            .read("bad".into(), None, async {
                Err::<u32, _>(ServiceError::unavailable("throttled".to_string()))
            })
            .await;
        assert!(failed.is_err());
        let again = cache
            .read("bad".into(), None, async { Ok::<u32, ServiceError>(3) })
            .await;
        assert_eq!(again, Ok(3));
    }

    #[tokio::test]
    async fn a_fresh_answer_costs_nothing_and_a_slow_or_failed_read_shows_the_last_good_one() {
        let cache = Arc::new(ReadCache::default());
        let calls = Arc::new(AtomicU32::new(0));
        let read = |answer: Result<u32, ServiceError>, delay: Duration| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                answer
            }
        };
        let ttl = Some(Duration::from_millis(50));
        let first = cache
            .read("k".into(), ttl, read(Ok(1), Duration::ZERO))
            .await;
        assert_eq!(first, Ok(1));
        let again = cache
            .read("k".into(), ttl, read(Ok(2), Duration::ZERO))
            .await;
        assert_eq!(again, Ok(1), "fresh: no read");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(60)).await;
        // Stale and ECS fails: the last good answer.
        let failed = cache
            .read(
                "k".into(),
                ttl,
                read(Err(ServiceError::unavailable("throttled")), Duration::ZERO),
            )
            .await;
        assert_eq!(failed, Ok(1));
        let said = cache.stale().expect("a kept answer is said");
        assert_eq!(said.reason, "throttled");
        assert!(said
            .sentence()
            .starts_with("throttled; showing data from 0 s ago"));
        // Stale and ECS is slow: the last good answer at once, the new one afterwards.
        let started = Instant::now();
        let slow = cache
            .read("k".into(), ttl, read(Ok(3), Duration::from_millis(1_500)))
            .await;
        assert_eq!(slow, Ok(1));
        assert!(started.elapsed() < Duration::from_millis(1_300));
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(cache
            .stale()
            .is_some_and(|s| s.reason.starts_with("ECS took longer than 0.9 s")));
        let later = cache
            .read("k".into(), None, read(Ok(4), Duration::ZERO))
            .await;
        assert_eq!(later, Ok(3), "the background read landed");
        // Never read: the error is the page's.
        let missing = cache
            .read::<u32, _>(
                "other".into(),
                ttl,
                read(Err(ServiceError::unavailable("throttled")), Duration::ZERO),
            )
            .await;
        assert_eq!(missing, Err(ServiceError::unavailable("throttled")));
        cache.forget("k");
        let forgotten = cache
            .read("k".into(), ttl, read(Ok(5), Duration::ZERO))
            .await;
        assert_eq!(forgotten, Ok(5));
        assert_eq!(cache.stale(), None, "ECS answered in time again");
    }

    #[tokio::test]
    async fn past_its_budget_the_answers_read_least_lately_go_and_what_it_holds_is_counted() {
        // Each answer weighs its 1,000 bytes of JSON (a 998-character string), its key and
        // the entry's overhead; twenty fit in the budget.
        let answer = "x".repeat(998);
        let weight = weigh("k00", &answer);
        let cache = Arc::new(ReadCache::with_budget(weight * 20));
        for i in 0..20 {
            cache.insert(&format!("k{i:02}"), answer.clone());
        }
        assert_eq!(
            cache.size(),
            CacheSize {
                entries: 20,
                bytes: weight * 20,
                evicted: 0
            }
        );
        // k00 is asked for again, so k01 is now the one read least lately.
        let kept = cache
            .read("k00".into(), None, async { Ok(String::new()) })
            .await;
        assert_eq!(kept.as_deref(), Ok(answer.as_str()));
        cache.insert("k20", answer.clone());
        let size = cache.size();
        assert!(
            size.bytes <= weight * 15,
            "down to three quarters: {size:?}"
        );
        assert_eq!(size.entries, 15);
        assert_eq!(size.evicted, 6);
        assert!(cache.get::<String>("k00").is_some(), "read lately: kept");
        assert!(cache.get::<String>("k20").is_some(), "the newest: kept");
        for gone in 1..=6 {
            assert!(cache.get::<String>(&format!("k{gone:02}")).is_none());
        }
        assert!(cache.get::<String>("k07").is_some());
        // Forgetting and amending keep the weight true.
        cache.forget("k1");
        assert_eq!(cache.size().entries, 5);
        assert_eq!(cache.size().bytes, weight * 5);
        assert!(cache.amend("k07", |s: &mut String| s.truncate(498)));
        assert_eq!(
            cache.size().bytes,
            weight * 4 + weigh("k07", &"x".repeat(498))
        );
        // Replacing an answer does not count it twice.
        cache.insert("k07", answer.clone());
        assert_eq!(cache.size().bytes, weight * 5);
    }
}
