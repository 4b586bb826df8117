//! What an AWS call's failure means for a person, for ECS and CloudWatch alike: the service's
//! own code and message when it answered, otherwise what failed and where to look.

use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};

/// What went wrong, for a person: each cause in the error's chain in its own words, joined by
/// ": ", without repeats and without the SDK's debug dump of its internals.
pub fn plain<E: std::error::Error + ?Sized>(error: &E) -> String {
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}

/// The most particular cause of `error`: the last in its chain that says anything (for a
/// connection that failed, "connection closed before message completed" rather than the SDK's
/// layers, "dispatch failure: other: client error (SendRequest): …").
pub fn root_cause<E: std::error::Error + ?Sized>(error: &E) -> String {
    let mut last = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !text.is_empty() {
            last = text;
        }
        next = cause.source();
    }
    last
}

/// Whether the service answered that it is throttling the caller's requests.
pub fn is_throttling<E, R>(error: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    error
        .code()
        .is_some_and(|code| crate::aws::calls::THROTTLING_CODES.contains(&code))
}

/// `ECS refused DescribeServices: ClusterNotFoundException: Cluster not found.`, `ECS is
/// throttling requests (ListTasks: Rate exceeded)`, or `ListTasks failed (…); check the AWS
/// credentials, region and permissions`.
pub fn failure<E, R>(service: &str, operation: &str, error: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    if is_throttling(error) {
        return format!(
            "{service} is throttling requests ({operation}: {}: {}); the account's request rate for this kind of call is used up, by this console or other callers",
            error.code().unwrap_or("ThrottlingException"),
            error.message().unwrap_or("Rate exceeded")
        );
    }
    match (error.code(), error.message()) {
        (Some(code), message) => format!(
            "{service} refused {operation}: {code}: {}",
            message.unwrap_or("no message")
        ),
        _ => format!(
            "{operation} failed ({}); check the AWS credentials, region and permissions",
            plain(error)
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

/// The failure of an ECS read, as the use cases must treat it: ECS refused it (a client error
/// such as AccessDeniedException or InvalidParameterException: asking again will not help, the
/// message says why), or ECS cannot answer now (throttling, a server-side error, no answer at
/// all: the page may show the last good answer and ask again).
pub fn ecs_read<E, R>(operation: &str, error: &SdkError<E, R>) -> app::model::ServiceError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    use app::model::ServiceError;
    let message = failure("ECS", operation, error);
    match error.code() {
        Some(code) if !is_throttling(error) && !SERVER_SIDE.contains(&code) => {
            ServiceError::refused_by_aws(message)
        }
        _ => ServiceError::unavailable(message),
    }
}

/// Codes with which ECS says it failed on its side: the call may or may not have taken effect.
pub(crate) const SERVER_SIDE: [&str; 4] = [
    "ServerException",
    "InternalFailure",
    "ServiceUnavailable",
    "InternalServerError",
];

/// The failure of an ECS call that changes something, as the use cases must treat it: refused
/// (ECS answered with a client error, or the request was never sent — nothing changed), or no
/// answer (a timeout, a lost connection, an unreadable answer or a server-side error — it may
/// have taken effect, and ECS must be asked).
pub fn ecs_write<E, R>(operation: &str, error: &SdkError<E, R>) -> app::model::ServiceError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    use app::model::ServiceError;
    let unknown = |why: String| {
        ServiceError::no_answer(format!(
            "{operation} was sent and {why}, so whether ECS made the change is not known; the console asks ECS and settles the audit record within a minute"
        ))
    };
    match error {
        SdkError::ConstructionFailure(_) => ServiceError::unavailable(format!(
            "{operation} could not be built ({}); nothing was sent",
            plain(error)
        )),
        SdkError::TimeoutError(_) => unknown("no answer came back in time".into()),
        SdkError::DispatchFailure(_) => {
            unknown(format!("the connection failed ({})", root_cause(error)))
        }
        SdkError::ResponseError(_) => {
            unknown(format!("its answer could not be read ({})", plain(error)))
        }
        _ => match error.code() {
            Some(code) if SERVER_SIDE.contains(&code) => unknown(format!(
                "ECS answered {code}: {}",
                error.message().unwrap_or("no message")
            )),
            Some(_) => ServiceError::refused_by_aws(ecs(operation, error)),
            None => unknown(format!("the answer had no error code ({})", plain(error))),
        },
    }
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
        assert!(!text.contains('{'), "no debug dump: {text}");
        assert!(text.ends_with("check the AWS credentials, region and permissions"));
        let throttled: SdkError<ListTasksError, ()> = SdkError::service_error(
            ListTasksError::generic(
                ErrorMetadata::builder()
                    .code("ThrottlingException")
                    .message("Rate exceeded")
                    .build(),
            ),
            (),
        );
        assert!(is_throttling(&throttled));
        assert!(!is_throttling(&refused));
        assert!(
            ecs("ListTasks", &throttled).starts_with(
                "ECS is throttling requests (ListTasks: ThrottlingException: Rate exceeded)"
            ),
            "{}",
            ecs("ListTasks", &throttled)
        );
    }

    /// An error in layers, each naming the next, as the SDK's are.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn the_root_cause_is_the_last_cause_that_says_anything() {
        let layers = Layer(
            "dispatch failure",
            Some(Box::new(Layer(
                "client error (SendRequest)",
                Some(Box::new(Layer(
                    "connection closed before message completed",
                    Some(Box::new(Layer("", None))),
                ))),
            ))),
        );
        assert_eq!(
            root_cause(&layers),
            "connection closed before message completed"
        );
        assert_eq!(root_cause(&Layer("alone", None)), "alone");
    }

    #[test]
    fn a_write_with_no_answer_is_unknown_and_a_client_error_is_refused() {
        use app::model::ServiceError;
        use aws_sdk_ecs::types::error::ServerException;
        let coded = |code: &str| -> SdkError<ListTasksError, ()> {
            let meta = ErrorMetadata::builder().code(code).message("m").build();
            let error = if code == "ServerException" {
                ListTasksError::ServerException(
                    ServerException::builder().message("m").meta(meta).build(),
                )
            } else {
                ListTasksError::ClusterNotFoundException(
                    ClusterNotFoundException::builder()
                        .message("m")
                        .meta(meta)
                        .build(),
                )
            };
            SdkError::service_error(error, ())
        };
        assert!(matches!(
            ecs_write("UpdateService", &coded("ClusterNotFoundException")),
            ServiceError::RefusedByAws { .. }
        ));
        let server = ecs_write("UpdateService", &coded("ServerException"));
        assert!(
            matches!(server, ServiceError::NoAnswer { .. }),
            "{server:?}"
        );
        assert!(server.message().contains("ServerException"), "{server}");
        let timeout: SdkError<ListTasksError, ()> = SdkError::timeout_error("timed out");
        let timeout = ecs_write("UpdateService", &timeout);
        assert!(matches!(timeout, ServiceError::NoAnswer { .. }));
        assert!(timeout.message().contains("not known"), "{timeout}");
        let unreadable: SdkError<ListTasksError, ()> = SdkError::response_error("bad XML", ());
        assert!(matches!(
            ecs_write("UpdateService", &unreadable),
            ServiceError::NoAnswer { .. }
        ));
        let unbuilt: SdkError<ListTasksError, ()> = SdkError::construction_failure("no region");
        let unbuilt = ecs_write("UpdateService", &unbuilt);
        assert!(matches!(unbuilt, ServiceError::Unavailable { .. }));
        assert!(unbuilt.message().contains("nothing was sent"), "{unbuilt}");
    }

    #[test]
    fn a_read_refused_stays_a_refusal_and_one_that_can_pass_later_is_unavailable() {
        use app::model::ServiceError;
        let refused: SdkError<ListTasksError, ()> = SdkError::service_error(
            ListTasksError::generic(
                ErrorMetadata::builder()
                    .code("AccessDeniedException")
                    .message("not authorized to perform ecs:ListTasks")
                    .build(),
            ),
            (),
        );
        let read = ecs_read("ListTasks", &refused);
        assert!(
            matches!(read, ServiceError::RefusedByAws { .. }),
            "{read:?}"
        );
        assert_eq!(read.status(), 502);
        assert!(read.message().contains("AccessDeniedException"), "{read}");
        for code in ["ThrottlingException", "ServerException"] {
            let later: SdkError<ListTasksError, ()> = SdkError::service_error(
                ListTasksError::generic(ErrorMetadata::builder().code(code).message("m").build()),
                (),
            );
            let read = ecs_read("ListTasks", &later);
            assert!(
                matches!(read, ServiceError::Unavailable { .. }),
                "{code}: {read:?}"
            );
        }
        let timeout: SdkError<ListTasksError, ()> = SdkError::timeout_error("timed out");
        assert!(matches!(
            ecs_read("ListTasks", &timeout),
            ServiceError::Unavailable { .. }
        ));
    }
}
