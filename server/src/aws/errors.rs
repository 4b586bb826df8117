//! What an AWS call's failure means for a person, for ECS and CloudWatch alike: the service's
//! own code and message when it answered, otherwise what failed and where to look.

use aws_sdk_ecs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

/// `ECS refused ListTasks: ThrottlingException: Rate exceeded`, or `ListTasks failed (…);
/// check the AWS credentials, region and permissions`.
pub fn failure<E, R>(service: &str, operation: &str, error: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match (error.code(), error.message()) {
        (Some(code), message) => format!(
            "{service} refused {operation}: {code}: {}",
            message.unwrap_or("no message")
        ),
        _ => format!(
            "{operation} failed ({}); check the AWS credentials, region and permissions",
            DisplayErrorContext(error)
        ),
    }
}

/// [`failure`] of an ECS call.
pub fn ecs<E, R>(operation: &str, error: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    failure("ECS", operation, error)
}

/// [`failure`] of a CloudWatch call.
pub fn cloudwatch<E, R>(operation: &str, error: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    failure("CloudWatch", operation, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ecs::{
        error::ErrorMetadata, operation::list_tasks::ListTasksError,
        types::error::ClusterNotFoundException,
    };

    #[test]
    fn a_refusal_names_the_code_and_a_failure_where_to_look() {
        let refused: SdkError<ListTasksError, ()> = SdkError::service_error(
            ListTasksError::ClusterNotFoundException(
                ClusterNotFoundException::builder()
                    .message("Cluster not found.")
                    .meta(
                        ErrorMetadata::builder()
                            .code("ClusterNotFoundException")
                            .message("Cluster not found.")
                            .build(),
                    )
                    .build(),
            ),
            (),
        );
        assert_eq!(
            ecs("ListTasks", &refused),
            "ECS refused ListTasks: ClusterNotFoundException: Cluster not found."
        );
        let unreachable: SdkError<ListTasksError, ()> =
            SdkError::timeout_error("connect timed out");
        let text = ecs("ListTasks", &unreachable);
        assert!(text.starts_with("ListTasks failed ("), "{text}");
        assert!(text.ends_with("check the AWS credentials, region and permissions"));
    }
}
