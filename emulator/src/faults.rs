//! Fault injection per operation: added latency, throttling, server errors, dropped connections.

use std::{collections::BTreeMap, time::Duration};

use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// The faults of one operation (or of all, as the default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fault {
    /// Added to every request, in milliseconds.
    pub latency_ms: u64,
    /// Up to this much more, at random, in milliseconds.
    pub jitter_ms: u64,
    /// Share of requests answered `ThrottlingException` (HTTP 400), 0 to 1.
    pub throttle_rate: f64,
    /// Share of requests answered with a server error (HTTP 500), 0 to 1.
    pub error_rate: f64,
    /// Share of requests whose connection is dropped before the answer, 0 to 1.
    pub drop_rate: f64,
    /// Share of requests that are carried out and whose answer is then lost (the connection is
    /// dropped), 0 to 1: the caller cannot tell whether the change was made.
    pub lost_answer_rate: f64,
}

/// What a request meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Answer,
    Throttle,
    ServerError,
    Drop,
    /// Carried out, then the connection dropped.
    LoseAnswer,
}

impl Outcome {
    /// How the emulator's status names the fault, `None` for an answer.
    pub fn fault_name(self) -> Option<&'static str> {
        match self {
            Outcome::Answer => None,
            Outcome::Throttle => Some("throttled"),
            Outcome::ServerError => Some("server error"),
            Outcome::Drop => Some("dropped before running"),
            Outcome::LoseAnswer => Some("ran, answer lost"),
        }
    }
}

impl Fault {
    /// Checks rates and sizes, with a message that says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        for (name, rate) in [
            ("throttle_rate", self.throttle_rate),
            ("error_rate", self.error_rate),
            ("drop_rate", self.drop_rate),
            ("lost_answer_rate", self.lost_answer_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("{name} must be between 0 and 1, not {rate}"));
            }
        }
        if self.throttle_rate + self.error_rate + self.drop_rate + self.lost_answer_rate > 1.0 {
            return Err(
                "throttle_rate + error_rate + drop_rate + lost_answer_rate must not exceed 1"
                    .into(),
            );
        }
        if self.latency_ms > 60_000 || self.jitter_ms > 60_000 {
            return Err("latency_ms and jitter_ms must be at most 60000".into());
        }
        Ok(())
    }

    /// The delay for one request.
    pub fn delay(&self) -> Duration {
        let jitter = if self.jitter_ms > 0 {
            rand::rng().random_range(0..=self.jitter_ms)
        } else {
            0
        };
        Duration::from_millis(self.latency_ms + jitter)
    }

    /// Draws what one request meets.
    pub fn draw(&self) -> Outcome {
        let roll: f64 = rand::rng().random();
        if roll < self.throttle_rate {
            Outcome::Throttle
        } else if roll < self.throttle_rate + self.error_rate {
            Outcome::ServerError
        } else if roll < self.throttle_rate + self.error_rate + self.drop_rate {
            Outcome::Drop
        } else if roll
            < self.throttle_rate + self.error_rate + self.drop_rate + self.lost_answer_rate
        {
            Outcome::LoseAnswer
        } else {
            Outcome::Answer
        }
    }
}

/// The faults of every operation: a default, and overrides by operation name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    #[serde(rename = "default")]
    pub all: Fault,
    pub operations: BTreeMap<String, Fault>,
    /// ECS's request throttling (token buckets per group of actions, as ECS documents them):
    /// on, off, or `None` for the scenario's default (on in `large`).
    pub rate_limits: Option<bool>,
}

impl Faults {
    /// The faults for one operation.
    pub fn for_operation(&self, operation: &str) -> &Fault {
        self.operations.get(operation).unwrap_or(&self.all)
    }

    pub fn validate(&self) -> Result<(), String> {
        self.all.validate().map_err(|e| format!("default: {e}"))?;
        for (operation, fault) in &self.operations {
            fault.validate().map_err(|e| format!("{operation}: {e}"))?;
        }
        Ok(())
    }

    /// Adds one `--fault` flag: `OPERATION:key=value,…` where OPERATION is an operation name or
    /// `*` for all, and keys are `latency`, `jitter` (ms), `throttle`, `error`, `drop`, `lost`
    /// (0 to 1); or `rate-limits=on|off` for ECS's request throttling.
    pub fn add_spec(&mut self, spec: &str) -> Result<(), String> {
        if let Some(value) = spec.strip_prefix("rate-limits=") {
            self.rate_limits = Some(match value {
                "on" => true,
                "off" => false,
                other => {
                    return Err(format!(
                        "rate-limits={other} must be rate-limits=on or rate-limits=off"
                    ))
                }
            });
            return Ok(());
        }
        let (operation, settings) = spec.split_once(':').ok_or_else(|| {
            format!("fault {spec:?} must look like OPERATION:latency=40,throttle=0.1")
        })?;
        let mut fault = Fault::default();
        for setting in settings.split(',').filter(|s| !s.is_empty()) {
            let (key, value) = setting
                .split_once('=')
                .ok_or_else(|| format!("fault setting {setting:?} must look like key=value"))?;
            let number = |v: &str| {
                v.trim_end_matches("ms")
                    .parse::<f64>()
                    .map_err(|_| format!("{key}={v} is not a number"))
            };
            match key {
                "latency" => fault.latency_ms = number(value)? as u64,
                "jitter" => fault.jitter_ms = number(value)? as u64,
                "throttle" => fault.throttle_rate = number(value)?,
                "error" => fault.error_rate = number(value)?,
                "drop" => fault.drop_rate = number(value)?,
                "lost" => fault.lost_answer_rate = number(value)?,
                other => {
                    return Err(format!(
                    "unknown fault setting {other:?}; use latency, jitter, throttle, error, drop or lost"
                ))
                }
            }
        }
        fault.validate()?;
        if operation == "*" {
            self.all = fault;
        } else {
            self.operations.insert(operation.to_string(), fault);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let mut faults = Faults::default();
        faults.add_spec("*:latency=40ms,jitter=5").expect("valid");
        faults
            .add_spec("DescribeTasks:throttle=0.5,error=0.25")
            .expect("valid");
        assert_eq!(faults.for_operation("ListTasks").latency_ms, 40);
        assert_eq!(faults.for_operation("DescribeTasks").throttle_rate, 0.5);
        assert!(faults
            .add_spec("nothing")
            .expect_err("invalid")
            .contains("OPERATION:"));
        assert!(faults
            .add_spec("X:throttle=2")
            .expect_err("invalid")
            .contains("between 0 and 1"));
        assert!(faults
            .add_spec("X:speed=1")
            .expect_err("invalid")
            .contains("unknown fault setting"));
        assert_eq!(faults.rate_limits, None);
        faults.add_spec("rate-limits=off").expect("valid");
        assert_eq!(faults.rate_limits, Some(false));
        assert!(faults
            .add_spec("rate-limits=maybe")
            .expect_err("invalid")
            .contains("rate-limits=on"));
    }

    #[test]
    fn draws_follow_the_rates() {
        let always = Fault {
            throttle_rate: 1.0,
            ..Fault::default()
        };
        assert!((0..50).all(|_| always.draw() == Outcome::Throttle));
        let never = Fault::default();
        assert!((0..50).all(|_| never.draw() == Outcome::Answer));
        let half = Fault {
            error_rate: 0.5,
            ..Fault::default()
        };
        let errors = (0..2000)
            .filter(|_| half.draw() == Outcome::ServerError)
            .count();
        assert!((800..1200).contains(&errors), "{errors}");
    }
}
