//! ECS's closed vocabularies that the console decides by, typed: a deployment's status and
//! rollout state, a service's deployment strategy, a task's and a container instance's status,
//! and the lifecycle an instance is billed by.
//!
//! Each keeps a word ECS adds after this console was written as `Other`, shown as ECS wrote it
//! and never refused. Serde reads and writes ECS's own word, so the JSON API, the audit log and
//! the database keep the strings they had.

/// Declares a vocabulary: its known words, an `Other` for any later word, the conversions from
/// and to ECS's string, and `Display` as ECS writes it.
macro_rules! vocabulary {
    (
        $(#[$doc:meta])*
        $name:ident (default $default:ident) {
            $($(#[$variant_doc:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($(#[$variant_doc])* $variant,)+
            /// A word ECS added after this console was written, kept as ECS wrote it.
            Other(String),
        }

        impl $name {
            /// Every known word, in ECS's order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// ECS's word.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $word,)+
                    $name::Other(word) => word,
                }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::$default
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> $name {
                match word {
                    $($word => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl From<String> for $name {
            fn from(word: String) -> $name {
                $name::from(word.as_str())
            }
        }

        impl From<$name> for String {
            fn from(word: $name) -> String {
                word.as_str().to_string()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// A deployment's status in DescribeServices.
    DeploymentStatus (default Primary) {
        /// The deployment the service is moving to (or has reached).
        Primary = "PRIMARY",
        /// An older deployment still running tasks.
        Active = "ACTIVE",
        /// A deployment whose tasks are all gone.
        Inactive = "INACTIVE",
    }
}

vocabulary! {
    /// A deployment's rollout state (with the circuit breaker, or on a rolling update).
    RolloutState (default InProgress) {
        InProgress = "IN_PROGRESS",
        Completed = "COMPLETED",
        Failed = "FAILED",
    }
}

vocabulary! {
    /// `deploymentConfiguration.strategy`: how a service replaces its tasks.
    DeploymentStrategy (default Rolling) {
        /// Old tasks replaced a few at a time, within the minimum and maximum percent.
        Rolling = "ROLLING",
        /// A whole new set of tasks beside the old ones, then the traffic moved.
        BlueGreen = "BLUE_GREEN",
        Linear = "LINEAR",
        Canary = "CANARY",
    }
}

vocabulary! {
    /// A service's status.
    ServiceStatus (default Active) {
        Active = "ACTIVE",
        /// Deleted, its tasks stopping.
        Draining = "DRAINING",
        /// Deleted.
        Inactive = "INACTIVE",
    }
}

vocabulary! {
    /// A task's `lastStatus` (and `desiredStatus`).
    TaskStatus (default Pending) {
        Provisioning = "PROVISIONING",
        Pending = "PENDING",
        Activating = "ACTIVATING",
        Running = "RUNNING",
        Deactivating = "DEACTIVATING",
        Stopping = "STOPPING",
        Deprovisioning = "DEPROVISIONING",
        Stopped = "STOPPED",
        Deleted = "DELETED",
    }
}

vocabulary! {
    /// A container instance's status.
    InstanceStatus (default Active) {
        Registering = "REGISTERING",
        RegistrationFailed = "REGISTRATION_FAILED",
        Active = "ACTIVE",
        Inactive = "INACTIVE",
        Deregistering = "DEREGISTERING",
        Draining = "DRAINING",
    }
}

impl InstanceStatus {
    /// Whether the instance holds tasks that count: ACTIVE or DRAINING.
    pub fn holds_tasks(&self) -> bool {
        matches!(self, InstanceStatus::Active | InstanceStatus::Draining)
    }
}

impl DeploymentStrategy {
    /// Whether the service replaces its tasks a few at a time (also when no strategy is given).
    pub fn is_rolling(strategy: Option<&DeploymentStrategy>) -> bool {
        strategy.is_none_or(|s| *s == DeploymentStrategy::Rolling)
    }
}

impl TaskStatus {
    /// Between being asked for and running: counted as pending.
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            TaskStatus::Provisioning | TaskStatus::Pending | TaskStatus::Activating
        )
    }

    /// Whether a task in this status is on its way out or gone.
    pub fn is_leaving(&self) -> bool {
        matches!(
            self,
            TaskStatus::Deactivating
                | TaskStatus::Stopping
                | TaskStatus::Deprovisioning
                | TaskStatus::Stopped
                | TaskStatus::Deleted
        )
    }
}

/// How EC2 bills an instance, as the console prices it: EC2's `instanceLifecycle` `spot` or
/// `capacity-block`, and `on-demand` for everything EC2 leaves without one. Closed: a price is
/// for one of these. A Capacity Block is paid up front for its reserved hours, at a rate of its
/// own: it is never priced at the on-demand rate.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Lifecycle {
    #[default]
    OnDemand,
    Spot,
    CapacityBlock,
}

impl Lifecycle {
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::OnDemand => "on-demand",
            Lifecycle::Spot => "spot",
            Lifecycle::CapacityBlock => "capacity-block",
        }
    }

    /// How an instance is priced: without a lifecycle (EC2 could not be read) it is taken as
    /// on demand; the cost report says so.
    pub fn priced_as(known: Option<Lifecycle>) -> Lifecycle {
        known.unwrap_or_default()
    }

    /// The word as written in a prices file or stored with cost history.
    pub fn parse(value: &str) -> Option<Lifecycle> {
        match value {
            "on-demand" => Some(Lifecycle::OnDemand),
            "spot" => Some(Lifecycle::Spot),
            "capacity-block" => Some(Lifecycle::CapacityBlock),
            _ => None,
        }
    }
}

vocabulary! {
    /// A capacity provider's type.
    ProviderType (default AutoScalingGroup) {
        /// An EC2 Auto Scaling group the provider scales.
        AutoScalingGroup = "EC2_AUTOSCALING",
        /// Instances ECS launches, repairs and retires itself.
        ManagedInstances = "MANAGED_INSTANCES",
        Fargate = "FARGATE",
        FargateSpot = "FARGATE_SPOT",
    }
}

impl ProviderType {
    /// The type in words.
    pub fn label(&self) -> &'static str {
        match self {
            ProviderType::AutoScalingGroup => "Auto Scaling group",
            ProviderType::ManagedInstances => "ECS Managed Instances",
            ProviderType::Fargate => "Fargate",
            ProviderType::FargateSpot => "Fargate Spot",
            ProviderType::Other(_) => "a type this console does not know",
        }
    }

    /// Whether tasks on it can share GPUs: EC2 capacity only, never Fargate.
    pub fn can_share_gpus(&self) -> bool {
        matches!(
            self,
            ProviderType::AutoScalingGroup | ProviderType::ManagedInstances
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_reads_and_writes_as_ecs_spells_it_and_a_new_one_is_kept() {
        for status in DeploymentStatus::KNOWN {
            let json = serde_json::to_string(status).expect("serializes");
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            let back: DeploymentStatus = serde_json::from_str(&json).expect("reads back");
            assert_eq!(&back, status);
        }
        let later: RolloutState = serde_json::from_str("\"PAUSED\"").expect("a later word");
        assert_eq!(later, RolloutState::Other("PAUSED".into()));
        assert_eq!(
            serde_json::to_string(&later).expect("serializes"),
            "\"PAUSED\""
        );
        assert_eq!(RolloutState::from("FAILED"), RolloutState::Failed);
        assert_eq!(TaskStatus::from("RUNNING").to_string(), "RUNNING");
        assert!(InstanceStatus::from("draining") != InstanceStatus::Draining);
    }

    #[test]
    fn a_service_without_a_strategy_rolls() {
        assert!(DeploymentStrategy::is_rolling(None));
        assert!(DeploymentStrategy::is_rolling(Some(
            &DeploymentStrategy::Rolling
        )));
        assert!(!DeploymentStrategy::is_rolling(Some(
            &DeploymentStrategy::BlueGreen
        )));
        assert!(!DeploymentStrategy::is_rolling(Some(
            &DeploymentStrategy::from("SOMETHING_NEW")
        )));
        assert!(TaskStatus::Stopping.is_leaving() && !TaskStatus::Running.is_leaving());
        assert!(TaskStatus::Activating.is_pending() && !TaskStatus::Running.is_pending());
        assert!(InstanceStatus::Draining.holds_tasks() && !InstanceStatus::Inactive.holds_tasks());
        assert!(ProviderType::from("MANAGED_INSTANCES").can_share_gpus());
        assert!(!ProviderType::FargateSpot.can_share_gpus());
        assert!(!ProviderType::from("SOMETHING_NEW").can_share_gpus());
    }
}
