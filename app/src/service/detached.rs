//! Changes that run to their end whatever the request does: once a change's intent is in the
//! audit log, the AWS call and its outcome run as a task of their own, so that a closed tab, a
//! dropped connection or the request timeout cannot cut it between the call and the record. The
//! records whose change runs in this process are known, so that a reconcile leaves them alone.

use std::{future::Future, sync::Arc};

use crate::{
    model::ServiceError,
    service::{context::ServiceContext, process::InFlight},
};

/// Takes record `id` off the in-flight list when its change ends, however it ends.
struct Running {
    in_flight: Arc<InFlight>,
    id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.in_flight.end(&self.id);
    }
}

/// Runs `change`, the rest of the change of audit record `id`, as a task of its own: it runs to
/// its end even when the request that started it goes away. The change's answer, when the
/// request still waits for it.
pub async fn run_to_end<T, F>(
    context: &ServiceContext,
    id: &str,
    change: F,
) -> Result<T, ServiceError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, ServiceError>> + Send + 'static,
{
    context.in_flight.start(id);
    let running = Running {
        in_flight: context.in_flight.clone(),
        id: id.to_string(),
    };
    let task = tokio::spawn(async move {
        let _running = running;
        change.await
    });
    task.await.unwrap_or_else(|stopped| {
        Err(ServiceError::Internal {
            message: format!(
                "the change of audit record {id} stopped unexpectedly ({}); the next reconcile asks ECS what happened and settles the record",
                if stopped.is_panic() { "a failure in the console" } else { "the server is stopping" }
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::service::fake::Fake;

    #[tokio::test]
    async fn a_change_runs_to_its_end_when_the_request_goes_away() {
        let context = Fake::new().context();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let request = {
            let context = context.clone();
            async move {
                run_to_end(&context, "r1", async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = done_tx.send("made");
                    Ok(())
                })
                .await
            }
        };
        // The request is dropped while its change runs.
        let cut = tokio::time::timeout(Duration::from_millis(5), request).await;
        assert!(cut.is_err(), "the request was cut before the change ended");
        assert!(context.in_flight.contains("r1"));
        assert_eq!(done_rx.await, Ok("made"));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(
            context.in_flight.is_empty(),
            "the record left the in-flight list"
        );
    }

    #[tokio::test]
    async fn a_change_that_fails_unexpectedly_says_the_record_is_settled_later() {
        let context = Fake::new().context();
        let answer: Result<(), ServiceError> = run_to_end(&context, "r2", async {
            panic!("a bug");
        })
        .await;
        let error = answer.expect_err("the task panicked");
        assert!(error.message().contains("reconcile"), "{error}");
        assert!(context.in_flight.is_empty());
    }
}
