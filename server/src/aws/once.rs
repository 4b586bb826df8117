//! ECS calls that change something are sent at most once per answer that proves ECS did not run
//! them. The SDK's standard retries also retry a call whose connection dropped after it was
//! sent, or that ECS answered with a server error — a call that may well have taken effect — so
//! a registration could make two revisions and a restart two deployments. Writes therefore go
//! out with the SDK's retries off, and only a throttling answer (ECS refused the call before
//! running it) is tried again here, a few times with growing pauses. Anything else that is not
//! an answer is left to the caller, which records it `unknown` and has it settled by asking ECS.

use std::{future::Future, time::Duration};

use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::retry::RetryConfig;

/// Throttling answers a write is tried again after, at most.
pub const THROTTLED_RETRIES: u32 = 4;

/// The first pause after a throttling answer; each next one is twice as long, with up to as much
/// again at random.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// The configuration a write is sent with: the client's, without the SDK's retries.
pub fn config() -> aws_sdk_ecs::config::Builder {
    aws_sdk_ecs::config::Builder::new().retry_config(RetryConfig::disabled())
}

/// Whether `error` proves the call was not run: AWS throttled it.
pub fn not_run<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> bool {
    matches!(error, SdkError::ServiceError(_)) && super::errors::is_throttling(error)
}

/// Sends a write with `send` (which must build the call with [`config`]), again after a
/// throttling answer, at most [`THROTTLED_RETRIES`] more times.
pub async fn send<T, E, R, F, Fut>(send: F) -> Result<T, SdkError<E, R>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, R>>>,
{
    super::again::retrying(send, THROTTLED_RETRIES, FIRST_PAUSE, not_run).await
}

/// Sends the ECS fluent builder `call` as a write named `action` (see [`send`]): built afresh
/// for each try with [`config`], its failure said as [`super::errors::ecs_write`] says it.
macro_rules! write_once {
    ($call:expr, $action:literal) => {
        $crate::aws::once::send(|| {
            $call
                .clone()
                .customize()
                .config_override($crate::aws::once::config())
                .send()
        })
        .await
        .map_err(|e| $crate::aws::errors::ecs_write($action, &e))
    };
}
pub(crate) use write_once;
