//! ECS's request throttling groups: the groups of actions that share a token bucket, per account
//! and region, with their bucket sizes (burst) and refill rates (sustained, tokens per second),
//! as the developer guide's page "Request throttling for the Amazon ECS API" lists them.

/// One group of ECS actions sharing a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub name: &'static str,
    /// Bucket maximum capacity (the burst rate).
    pub burst: u32,
    /// Bucket refill rate, tokens per second (the sustained rate).
    pub sustained: u32,
    pub actions: &'static [&'static str],
}

/// ECS's groups, as the developer guide lists them.
pub const GROUPS: &[Group] = &[
    Group {
        name: "Cluster modify actions",
        burst: 20,
        sustained: 1,
        actions: &[
            "CreateCluster",
            "DeleteCluster",
            "PutClusterCapacityProviders",
            "UpdateCluster",
            "UpdateClusterSettings",
        ],
    },
    Group {
        name: "Cluster read actions",
        burst: 50,
        sustained: 20,
        actions: &["DescribeClusters", "ListClusters"],
    },
    Group {
        name: "Task definition modify actions",
        burst: 20,
        sustained: 1,
        actions: &["DeregisterTaskDefinition", "RegisterTaskDefinition"],
    },
    Group {
        name: "Task definition read actions",
        burst: 50,
        sustained: 20,
        actions: &[
            "DescribeTaskDefinition",
            "ListTaskDefinitions",
            "ListTaskDefinitionFamilies",
        ],
    },
    Group {
        name: "Task definition deletion actions",
        burst: 5,
        sustained: 1,
        actions: &["DeleteTaskDefinitions"],
    },
    Group {
        name: "Capacity provider modify actions",
        burst: 10,
        sustained: 1,
        actions: &[
            "CreateCapacityProvider",
            "DeleteCapacityProvider",
            "UpdateCapacityProvider",
        ],
    },
    Group {
        name: "Capacity provider read actions",
        burst: 50,
        sustained: 20,
        actions: &["DescribeCapacityProviders"],
    },
    Group {
        name: "Tag modify actions",
        burst: 20,
        sustained: 10,
        actions: &["TagResource", "UntagResource"],
    },
    Group {
        name: "Tag read actions",
        burst: 50,
        sustained: 20,
        actions: &["ListTagsForResource"],
    },
    Group {
        name: "Setting modify actions",
        burst: 10,
        sustained: 1,
        actions: &[
            "DeleteAccountSetting",
            "PutAccountSetting",
            "PutAccountSettingDefault",
        ],
    },
    Group {
        name: "Setting read actions",
        burst: 50,
        sustained: 20,
        actions: &["ListAccountSettings"],
    },
    Group {
        name: "Cluster resource modify actions",
        burst: 100,
        sustained: 40,
        actions: &[
            "DeleteAttributes",
            "DeregisterContainerInstance",
            "ExecuteCommand",
            "PutAttributes",
            "RunTask",
            "StartTask",
            "StopTask",
            "UpdateContainerAgent",
            "UpdateContainerInstancesState",
        ],
    },
    Group {
        name: "Cluster resource read actions",
        burst: 100,
        sustained: 20,
        actions: &[
            "DescribeContainerInstances",
            "DescribeTasks",
            "ListAttributes",
            "ListContainerInstances",
            "ListTasks",
        ],
    },
    Group {
        name: "Agent modify actions",
        burst: 200,
        sustained: 120,
        actions: &[
            "RegisterContainerInstance",
            "SubmitAttachmentStateChanges",
            "SubmitContainerStateChange",
            "SubmitTaskStateChange",
        ],
    },
    Group {
        name: "Service modify actions",
        burst: 50,
        sustained: 5,
        actions: &["CreateService", "DeleteService", "UpdateService"],
    },
    Group {
        name: "Service read actions",
        burst: 100,
        sustained: 20,
        actions: &["DescribeServices", "ListServices"],
    },
    Group {
        name: "Service deployment actions",
        burst: 50,
        sustained: 20,
        actions: &["DescribeServiceDeployments", "ListServiceDeployments"],
    },
    Group {
        name: "Service revision actions",
        burst: 50,
        sustained: 20,
        actions: &["DescribeServiceRevisions"],
    },
    Group {
        name: "Task protection actions",
        burst: 200,
        sustained: 80,
        actions: &["UpdateTaskProtection", "GetTaskProtection"],
    },
    Group {
        name: "Cluster service resource read actions",
        burst: 10,
        sustained: 1,
        actions: &["ListServicesByNamespace"],
    },
];

/// The group an ECS action belongs to; `None` for an action the page does not list.
pub fn group_of(action: &str) -> Option<&'static Group> {
    GROUPS.iter().find(|g| g.actions.contains(&action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_is_in_one_group_at_most() {
        let mut seen = std::collections::HashSet::new();
        for group in GROUPS {
            for action in group.actions {
                assert!(seen.insert(*action), "{action} is in two groups");
            }
        }
        assert_eq!(group_of("DescribeTasks").map(|g| g.burst), Some(100));
        assert_eq!(
            group_of("ListContainerInstances").map(|g| g.name),
            group_of("DescribeTasks").map(|g| g.name),
            "instances and tasks share a bucket"
        );
        assert_eq!(
            group_of("RegisterTaskDefinition").map(|g| (g.burst, g.sustained)),
            Some((20, 1))
        );
        assert!(group_of("NoSuchAction").is_none());
    }
}
