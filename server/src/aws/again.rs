//! Reads tried again. A read changes nothing, so a throttling answer, a server error or a lost
//! answer is no reason to give it up — and a fleet snapshot is whole or not at all: on a fleet of
//! a thousand instances it takes hundreds of calls, and with one in four meeting a fault, the
//! SDK's three attempts per call leave one call in sixty failing, so a first snapshot (after a
//! start, with nothing older to show) would almost never complete. A failed read is therefore
//! tried again here, a few times with growing pauses, on top of the SDK's own attempts.

use std::{future::Future, time::Duration};

use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};

/// Rounds of the SDK's attempts a read gets after its first, at most.
pub const READ_RETRIES: u32 = 4;

/// The first pause; each next one is twice as long, with up to as much again at random.
const FIRST_PAUSE: Duration = Duration::from_millis(200);

/// Whether `error` may pass: AWS throttled the call, failed on its side, or no answer came.
pub fn transient<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> bool {
    match error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(_) => {
            super::errors::is_throttling(error)
                || error
                    .code()
                    .is_some_and(|code| super::errors::SERVER_SIDE.contains(&code))
        }
        _ => false,
    }
}

/// Sends a read with `send`, again after a transient failure, at most [`READ_RETRIES`] more
/// times.
pub async fn read<T, E, R, F, Fut>(send: F) -> Result<T, SdkError<E, R>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, R>>>,
{
    retrying(send, READ_RETRIES, FIRST_PAUSE, transient).await
}

/// Sends a call with `send`, again when `again` says of its error, at most `retries` more times;
/// the pauses start at `first` and double, each with up to as much again at random.
pub async fn retrying<T, E, R, F, Fut>(
    mut send: F,
    retries: u32,
    first: Duration,
    again: fn(&SdkError<E, R>) -> bool,
) -> Result<T, SdkError<E, R>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, R>>>,
{
    let mut pause = first;
    let mut tried = 0;
    loop {
        match send().await {
            Err(error) if tried < retries && again(&error) => {
                tried += 1;
                let jitter = rand::random_range(0..=pause.as_millis() as u64);
                tokio::time::sleep(pause + Duration::from_millis(jitter)).await;
                pause *= 2;
            }
            answer => return answer,
        }
    }
}
