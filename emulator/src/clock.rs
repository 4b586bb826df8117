//! The simulated clock: runs faster than real time so that a rollout takes seconds to watch.

use std::time::Instant;

use chrono::{DateTime, Duration, Utc};

/// Simulated time: `start` plus real time elapsed since creation, times `speed`.
#[derive(Clone, Debug)]
pub struct SimClock {
    real_start: Instant,
    sim_start: DateTime<Utc>,
    speed: f64,
}

impl SimClock {
    /// A clock that starts at `sim_start` and runs `speed` times faster than real time.
    pub fn new(sim_start: DateTime<Utc>, speed: f64) -> SimClock {
        SimClock::since(sim_start, Instant::now(), speed)
    }

    /// A clock that read `sim_start` at the instant `real_start` (before the fleet was built,
    /// which takes seconds on a large scenario), so that at speed 1 it keeps the wall clock's
    /// time instead of lagging it by the build.
    pub fn since(sim_start: DateTime<Utc>, real_start: Instant, speed: f64) -> SimClock {
        SimClock {
            real_start,
            sim_start,
            speed: speed.max(0.0),
        }
    }

    /// A clock that starts now.
    pub fn starting_now(speed: f64) -> SimClock {
        SimClock::new(Utc::now(), speed)
    }

    /// The simulated time now.
    pub fn now(&self) -> DateTime<Utc> {
        let real = self.real_start.elapsed().as_secs_f64();
        let millis = (real * self.speed * 1000.0) as i64;
        self.sim_start + Duration::milliseconds(millis)
    }

    /// How many simulated seconds pass per real second.
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_faster_than_real_time() {
        let start = Utc::now();
        let clock = SimClock::new(start, 1000.0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let elapsed = clock.now() - start;
        assert!(elapsed >= Duration::seconds(19), "{elapsed}");
    }

    #[test]
    fn a_clock_since_an_earlier_instant_counts_the_time_before_it_was_made() {
        let real_start = Instant::now();
        let start = Utc::now();
        // A slow build between reading the time and making the clock.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let clock = SimClock::since(start, real_start, 1.0);
        let lag = Utc::now() - clock.now();
        assert!(
            lag < Duration::milliseconds(20),
            "lags the wall clock by {lag}"
        );
        let late = SimClock::new(start, 1.0);
        assert!(Utc::now() - late.now() >= Duration::milliseconds(45));
    }

    #[test]
    fn a_stopped_clock_stands_still() {
        let start = Utc::now();
        let clock = SimClock::new(start, 0.0);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(clock.now(), start);
    }
}
