//! The fleet snapshot: every GPU joined to the containers, tasks, services and teams on it.

pub mod ec2;
pub mod events;
pub mod join;
pub mod names;
pub mod reader;
pub mod store;
pub mod usage;

/// Why a read of the fleet failed, for the banner and the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReadError {
    /// The call that failed.
    pub operation: &'static str,
    /// What failed, naming the call, in words a person can act on.
    pub message: String,
    /// ECS (or CloudWatch, EC2) throttled the call: the refresher backs off.
    pub throttled: bool,
}

/// Turns an ECS SDK error into a [`ReadError`] naming the operation.
pub fn ecs_failed<E, R>(
    operation: &'static str,
) -> impl FnOnce(aws_sdk_ecs::error::SdkError<E, R>) -> ReadError
where
    E: std::error::Error + aws_sdk_ecs::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    move |error| ReadError {
        operation,
        message: crate::aws::errors::ecs(operation, &error),
        throttled: crate::aws::errors::is_throttling(&error),
    }
}

/// Turns a CloudWatch SDK error into a [`ReadError`] naming the operation.
pub fn cloudwatch_failed<E, R>(
    operation: &'static str,
) -> impl FnOnce(aws_sdk_cloudwatch::error::SdkError<E, R>) -> ReadError
where
    E: std::error::Error + aws_sdk_cloudwatch::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    move |error| ReadError {
        operation,
        message: crate::aws::errors::cloudwatch(operation, &error),
        throttled: crate::aws::errors::is_throttling(&error),
    }
}
