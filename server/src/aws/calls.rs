//! What the console's AWS calls cost: every attempt of every call through the SDK clients,
//! counted by service, operation and outcome (ok, throttled, error), and retries, for
//! `/metrics`. An SDK interceptor sees each attempt; a throttled one also slows the budget.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use aws_sdk_ecs::config::{
    interceptors::FinalizerInterceptorContextRef, ConfigBag, Intercept, RuntimeComponents,
};
use aws_smithy_runtime_api::client::{orchestrator::Metadata, retries::RequestAttempts};

use super::budget::Budget;

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    Throttled,
    Error,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Throttled => "throttled",
            Outcome::Error => "error",
        }
    }
}

/// Error codes with which AWS services say "slow down".
pub const THROTTLING_CODES: [&str; 6] = [
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "RequestThrottled",
    "RequestThrottledException",
];

/// Counts of AWS calls.
#[derive(Debug, Default)]
pub struct CallCounts {
    /// `(service, operation, outcome)` → attempts.
    attempts: Mutex<BTreeMap<(String, String, Outcome), u64>>,
    /// `(service, operation)` → attempts after the first of a call.
    retries: Mutex<BTreeMap<(String, String), u64>>,
}

impl CallCounts {
    /// Records one attempt.
    pub fn attempt(&self, service: &str, operation: &str, outcome: Outcome, retry: bool) {
        *self
            .attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((service.to_string(), operation.to_string(), outcome))
            .or_default() += 1;
        if retry {
            *self
                .retries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry((service.to_string(), operation.to_string()))
                .or_default() += 1;
        }
    }

    /// Every `(service, operation, outcome)` and its attempts.
    pub fn attempts(&self) -> Vec<(String, String, &'static str, u64)> {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|((s, o, outcome), n)| (s.clone(), o.clone(), outcome.label(), *n))
            .collect()
    }

    /// Every `(service, operation)` and its retries.
    pub fn retries(&self) -> Vec<(String, String, u64)> {
        self.retries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|((s, o), n)| (s.clone(), o.clone(), *n))
            .collect()
    }

    /// Attempts of one service and outcome, summed over operations.
    pub fn total(&self, service: &str, outcome: Outcome) -> u64 {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|((s, _, o), _)| s == service && *o == outcome)
            .map(|(_, n)| n)
            .sum()
    }
}

/// The outcome of an attempt from its HTTP answer: 2xx is ok; an error whose code (the
/// `x-amzn-errortype` header, or the body of a JSON, CBOR or XML error) is a throttling code
/// is throttled; anything else, or no answer, is an error.
pub fn outcome_of(status: Option<u16>, error_type: Option<&str>, body: Option<&[u8]>) -> Outcome {
    match status {
        Some(200..=299) => Outcome::Ok,
        Some(_) => {
            let named = |text: &str| THROTTLING_CODES.iter().any(|code| text.contains(code));
            let throttled = error_type.is_some_and(named)
                || body
                    .map(|b| String::from_utf8_lossy(&b[..b.len().min(2048)]).into_owned())
                    .is_some_and(|text| named(&text));
            if throttled {
                Outcome::Throttled
            } else {
                Outcome::Error
            }
        }
        None => Outcome::Error,
    }
}

/// The SDK interceptor that counts attempts and tells the budget of throttling.
#[derive(Debug, Clone)]
pub struct CountCalls {
    service: &'static str,
    counts: Arc<CallCounts>,
    budget: Option<Arc<Budget>>,
}

impl CountCalls {
    pub fn new(
        service: &'static str,
        counts: Arc<CallCounts>,
        budget: Option<Arc<Budget>>,
    ) -> CountCalls {
        CountCalls {
            service,
            counts,
            budget,
        }
    }
}

impl Intercept for CountCalls {
    fn name(&self) -> &'static str {
        "CountCalls"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_ecs::error::BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map_or_else(|| "unknown".to_string(), |m| m.name().to_string());
        // The orchestrator's count of this call's attempts, from 1.
        let attempt = cfg
            .load::<RequestAttempts>()
            .map_or(1, RequestAttempts::attempts);
        let response = context.response();
        let outcome = outcome_of(
            response.map(|r| r.status().as_u16()),
            response.and_then(|r| r.headers().get("x-amzn-errortype")),
            response.and_then(|r| r.body().bytes()),
        );
        self.counts
            .attempt(self.service, &operation, outcome, attempt > 1);
        if let Some(budget) = &self.budget {
            budget.answered(&operation, outcome == Outcome::Throttled);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_come_from_the_status_and_the_error_code() {
        assert_eq!(outcome_of(Some(200), None, None), Outcome::Ok);
        assert_eq!(
            outcome_of(
                Some(400),
                None,
                Some(br#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#)
            ),
            Outcome::Throttled
        );
        assert_eq!(
            outcome_of(Some(400), Some("ThrottlingException:http://x"), None),
            Outcome::Throttled
        );
        assert_eq!(
            outcome_of(
                Some(503),
                None,
                Some(b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>")
            ),
            Outcome::Throttled
        );
        assert_eq!(
            outcome_of(
                Some(400),
                None,
                Some(br#"{"__type":"ClusterNotFoundException"}"#)
            ),
            Outcome::Error
        );
        assert_eq!(outcome_of(None, None, None), Outcome::Error);
    }

    #[test]
    fn counts_add_up_by_service_operation_and_outcome() {
        let counts = CallCounts::default();
        counts.attempt("ecs", "ListTasks", Outcome::Ok, false);
        counts.attempt("ecs", "ListTasks", Outcome::Throttled, false);
        counts.attempt("ecs", "ListTasks", Outcome::Ok, true);
        counts.attempt("cloudwatch", "GetMetricData", Outcome::Ok, false);
        assert_eq!(counts.total("ecs", Outcome::Ok), 2);
        assert_eq!(counts.total("ecs", Outcome::Throttled), 1);
        assert_eq!(
            counts.retries(),
            vec![("ecs".to_string(), "ListTasks".to_string(), 1)]
        );
        assert_eq!(counts.attempts().len(), 3);
    }
}
