//! ECS errors, with the type names the AWS SDKs map to their typed errors.

/// An error ECS would answer with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EcsError {
    /// The request is wrong for a reason other than a parameter's value.
    #[error("{0}")]
    Client(String),
    /// A parameter has a wrong value.
    #[error("{0}")]
    InvalidParameter(String),
    #[error("Cluster not found.")]
    ClusterNotFound,
    #[error("Service not found.")]
    ServiceNotFound,
    #[error("Service was not ACTIVE.")]
    ServiceNotActive,
    /// The resource of a tagging call does not exist.
    #[error("{0}")]
    ResourceNotFound(String),
    /// A capacity provider that tasks or services still use.
    #[error("{0}")]
    ResourceInUse(String),
    #[error("{0}")]
    Server(String),
    #[error("Rate exceeded")]
    Throttling,
}

impl EcsError {
    /// The `__type` the SDK reads to pick the error's kind.
    pub fn type_name(&self) -> &'static str {
        match self {
            EcsError::Client(_) => "ClientException",
            EcsError::InvalidParameter(_) => "InvalidParameterException",
            EcsError::ClusterNotFound => "ClusterNotFoundException",
            EcsError::ServiceNotFound => "ServiceNotFoundException",
            EcsError::ServiceNotActive => "ServiceNotActiveException",
            EcsError::ResourceNotFound(_) => "ResourceNotFoundException",
            EcsError::ResourceInUse(_) => "ResourceInUseException",
            EcsError::Server(_) => "ServerException",
            EcsError::Throttling => "ThrottlingException",
        }
    }

    /// The HTTP status ECS answers with.
    pub fn status(&self) -> u16 {
        match self {
            EcsError::Server(_) => 500,
            _ => 400,
        }
    }
}

/// Whether `name` is a name ECS takes for a cluster, a task definition family or a capacity
/// provider: 1 to 255 letters, numbers, hyphens and underscores.
pub fn is_ecs_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Shorthand for an [`EcsError::InvalidParameter`].
pub fn invalid(message: impl Into<String>) -> EcsError {
    EcsError::InvalidParameter(message.into())
}
