//! Work that holds a core for a while — the capacity pre-check's simulation, the fit check,
//! the consolidation plan, the checks of a task definition's JSON — takes turns: a few at once
//! on the blocking pool, so that the async workers keep serving pages, and a bounded number
//! waiting. Past that bound a request is refused at once ("busy, try again in a few seconds")
//! instead of queueing without end behind a burst.

use std::{
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::model::ServiceError;

/// Turns at heavy work: `at_once` run, at most `max_waiting` wait.
#[derive(Debug)]
pub struct Turns {
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_waiting: usize,
}

/// How many heavy pieces of work run at once by default: the machine's cores are shared with
/// the pages and the fleet refresher.
pub const AT_ONCE: usize = 2;

/// How many wait for a turn at most by default.
pub const MAX_WAITING: usize = 32;

impl Default for Turns {
    fn default() -> Self {
        Turns::new(AT_ONCE, MAX_WAITING)
    }
}

/// Counts a request among those waiting until it has its turn or goes away.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Turns {
    pub fn new(at_once: usize, max_waiting: usize) -> Turns {
        Turns {
            permits: Arc::new(Semaphore::new(at_once.max(1))),
            waiting: AtomicUsize::new(0),
            max_waiting,
        }
    }

    /// How many wait for a turn now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    fn busy(&self) -> ServiceError {
        ServiceError::unavailable(format!(
            "The server is busy: {} checks are already waiting for a turn. Nothing was done; try again in a few seconds.",
            self.max_waiting
        ))
    }

    /// Waits for a turn, or refuses at once when too many wait. A request that goes away while
    /// it waits leaves the queue.
    async fn turn(&self) -> Result<OwnedSemaphorePermit, ServiceError> {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(self.busy());
        }
        let _waiting = Waiting(&self.waiting);
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ServiceError::unavailable("The server is stopping; try again."))
    }

    /// Waits for a turn (or refuses when too many wait) and holds it while `work` runs.
    pub async fn with_turn<T>(&self, work: impl Future<Output = T>) -> Result<T, ServiceError> {
        let permit = self.turn().await?;
        let answer = work.await;
        drop(permit);
        Ok(answer)
    }

    /// Runs `work` on the blocking pool in its turn. Nothing starts before the turn comes (a
    /// refused or abandoned request does no work), and the turn is held until the work ends,
    /// even when the request goes away meanwhile: the pool's thread is busy until then. A panic
    /// in it is an error, not a crash.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let permit = self.turn().await?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|_| {
            ServiceError::internal(
                "a check stopped unexpectedly; it has been logged, try again and report it if it happens again",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_waiting_bound_a_request_is_refused_at_once() {
        let turns = Arc::new(Turns::new(1, 3));
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let running = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.with_turn(async { hold.await.ok() }).await })
        };
        // Wait until the first holds its turn.
        while turns.permits.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let turns = turns.clone();
                tokio::spawn(async move { turns.run(|| 7).await })
            })
            .collect();
        while turns.waiting() < 3 {
            tokio::task::yield_now().await;
        }
        let refused = turns.run(|| 7).await.expect_err("a fourth waiter");
        assert_eq!(refused.status(), 503);
        assert!(refused.message().contains("busy"), "{refused}");
        release.send(()).ok();
        assert!(running.await.expect("joined").is_ok());
        for waiter in waiters {
            assert_eq!(waiter.await.expect("joined").expect("its turn"), 7);
        }
        assert_eq!(turns.waiting(), 0);
    }

    /// Takes every turn there is (the tests' turns have one), so that the next request waits.
    async fn every_turn(turns: &Turns) -> OwnedSemaphorePermit {
        turns
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("a permit")
    }

    #[tokio::test]
    async fn a_request_that_goes_away_leaves_the_queue() {
        let turns = Turns::new(1, 1);
        let permit = every_turn(&turns).await;
        let gone =
            tokio::time::timeout(std::time::Duration::from_millis(20), turns.run(|| ())).await;
        assert!(gone.is_err(), "still waiting when dropped");
        assert_eq!(turns.waiting(), 0);
        drop(permit);
        assert!(turns.run(|| ()).await.is_ok());
    }

    #[tokio::test]
    async fn work_refused_or_abandoned_before_its_turn_never_runs() {
        let turns = Turns::new(1, 1);
        let ran = Arc::new(AtomicUsize::new(0));
        let permit = every_turn(&turns).await;
        let work = |ran: &Arc<AtomicUsize>| {
            let ran = ran.clone();
            move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        // One waits and goes away; one more is refused at once while it waits.
        let waiting = {
            let turns = &turns;
            let work = work(&ran);
            async move { turns.run(work).await }
        };
        let refused = async {
            while turns.waiting() < 1 {
                tokio::task::yield_now().await;
            }
            turns.run(work(&ran)).await
        };
        let (gone, refused) = tokio::join!(
            tokio::time::timeout(std::time::Duration::from_millis(50), waiting),
            refused
        );
        assert!(gone.is_err(), "still waiting when dropped");
        assert_eq!(refused.expect_err("refused").status(), 503);
        // The blocking pool has had every chance to run what was handed to it.
        drop(permit);
        turns.run(|| ()).await.expect("its turn");
        assert_eq!(ran.load(Ordering::SeqCst), 0, "work ran without a turn");
    }

    #[tokio::test]
    async fn a_turn_is_held_until_the_work_ends_even_when_the_request_goes_away() {
        let turns = Arc::new(Turns::new(1, 4));
        let (started, on_start) = std::sync::mpsc::channel::<()>();
        let (finish, on_finish) = std::sync::mpsc::channel::<()>();
        let first = {
            let turns = turns.clone();
            tokio::spawn(async move {
                turns
                    .run(move || {
                        started.send(()).ok();
                        on_finish.recv().ok();
                    })
                    .await
            })
        };
        tokio::task::spawn_blocking(move || on_start.recv())
            .await
            .expect("joined")
            .expect("the work started");
        // The request goes away while its work runs on the pool.
        first.abort();
        let _ = first.await;
        let second =
            tokio::time::timeout(std::time::Duration::from_millis(50), turns.run(|| 2)).await;
        assert!(
            second.is_err(),
            "a second turn while the first work still runs"
        );
        finish.send(()).expect("the work waits");
        assert_eq!(turns.run(|| 3).await.expect("its turn"), 3);
    }

    #[tokio::test]
    async fn a_panic_in_the_work_is_an_error() {
        let turns = Turns::default();
        let error = turns
            .run(|| -> u32 { panic!("a bug") })
            .await
            .expect_err("panicked");
        assert_eq!(error.status(), 500);
    }
}
