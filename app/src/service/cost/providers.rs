//! The consolidation plan beside the capacity providers: a plan that drains instances a
//! provider owns is undone or duplicated by that provider unless told. ECS Managed Instances with
//! infrastructure optimization retire idle and under-used instances themselves; an Auto
//! Scaling group launches a replacement for an instance that leaves unless its desired capacity
//! is lowered.

use std::collections::BTreeMap;

use crate::{
    model::{
        capacity::{ClusterCapacity, ProviderView},
        cost::consolidate::ConsolidationPlan,
        FleetSnapshot,
    },
    service::context::ServiceContext,
};

/// Adds to `plan`'s warnings what each provider owning a drained instance does about it.
pub(super) async fn advise(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    plan: &mut ConsolidationPlan,
) {
    // The drained instances of each (cluster, provider).
    let mut owned: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for drain in &plan.drains {
        let provider = snapshot
            .clusters
            .iter()
            .filter(|c| c.name == drain.cluster)
            .flat_map(|c| &c.instances)
            .find(|i| i.ec2_instance_id == drain.ec2_instance_id)
            .and_then(|i| i.capacity_provider.clone());
        if let Some(provider) = provider {
            owned
                .entry((drain.cluster.clone(), provider))
                .or_default()
                .push(drain.ec2_instance_id.clone());
        }
    }
    if owned.is_empty() {
        return;
    }
    let clusters: Vec<String> = {
        let mut names: Vec<String> = owned.keys().map(|(c, _)| c.clone()).collect();
        names.dedup();
        names
    };
    let read = match context.ecs.capacity(clusters).await {
        Ok(read) => read,
        Err(error) => {
            plan.unknown.push(format!(
                "Some instances to drain belong to capacity providers, whose settings could not be read ({error}): whether a provider retires them itself or replaces them is not known."
            ));
            return;
        }
    };
    for ((cluster, provider), instances) in owned {
        let view = read
            .iter()
            .filter(|c: &&ClusterCapacity| c.cluster == cluster)
            .flat_map(|c| &c.providers)
            .find(|p| p.name == provider);
        let who = who_acts(&provider, view);
        for drain in plan
            .drains
            .iter_mut()
            .filter(|d| d.cluster == cluster && instances.contains(&d.ec2_instance_id))
        {
            drain.who_acts.clone_from(&who);
        }
        plan.warnings
            .push(advice(&cluster, &provider, view, &instances));
    }
}

/// Who must act on an instance of `provider` the plan drains, in a few words; the warning
/// says the rest.
fn who_acts(provider: &str, view: Option<&ProviderView>) -> String {
    if let Some(managed) = view.and_then(|v| v.managed_instances.as_ref()) {
        return match managed.scale_in_after_seconds {
            Some(-1) => format!("you: drain it; the Managed Instances provider {provider} does not retire idle instances"),
            _ => format!("ECS: the Managed Instances provider {provider} retires it once idle"),
        };
    }
    match view
        .and_then(|v| v.auto_scaling_group.as_ref())
        .and_then(|g| g.group.as_ref())
    {
        Some(size) => format!(
            "the Auto Scaling group {} ({provider}): lower its desired capacity",
            size.name
        ),
        None => format!("the capacity provider {provider}: its settings could not be read"),
    }
}

/// What to do with `instances` of `provider` that the plan drains.
fn advice(
    cluster: &str,
    provider: &str,
    view: Option<&ProviderView>,
    instances: &[String],
) -> String {
    let list = instances.join(", ");
    let count = instances.len();
    if let Some(managed) = view.and_then(|v| v.managed_instances.as_ref()) {
        return match managed.scale_in_after_seconds {
            Some(-1) => format!(
                "{list} ({cluster}) belong to the Managed Instances provider {provider}, whose infrastructure optimization is off: drain them as planned, or set its scaleInAfter (for example 1800 seconds) and let ECS retire idle and under-used instances itself."
            ),
            after => format!(
                "{list} ({cluster}) belong to the Managed Instances provider {provider}: ECS retires idle and under-used instances itself {}. Leave them to ECS rather than draining them by hand.",
                after.map_or("(its default delay)".to_string(), |s| format!("after {s} seconds (scaleInAfter)"))
            ),
        };
    }
    if let Some(group) = view.and_then(|v| v.auto_scaling_group.as_ref()) {
        return match &group.group {
            Some(size) => format!(
                "{list} ({cluster}) belong to the Auto Scaling group {} behind {provider}: drained and terminated alone, the group launches replacements. Lower its desired capacity from {} to {} instead{}.",
                size.name,
                size.desired_capacity,
                size.desired_capacity.saturating_sub(count as u32).max(size.min_size),
                if group.managed_scaling {
                    " (with managed scaling on, ECS sets the desired capacity itself from CapacityProviderReservation; a lower target or the drains with managed draining lets it scale in)"
                } else {
                    ""
                }
            ),
            None => format!(
                "{list} ({cluster}) belong to the Auto Scaling group provider {provider}, whose group could not be read: lower the group's desired capacity by {count} rather than draining them alone, or the group launches replacements."
            ),
        };
    }
    format!(
        "{list} ({cluster}) belong to the capacity provider {provider}, whose settings could not be read: it may replace instances drained by hand."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::capacity::{AutoScalingGroup, GroupSize, ManagedInstances};

    fn managed(scale_in_after: Option<i64>) -> ProviderView {
        ProviderView {
            name: "mi".into(),
            managed_instances: Some(ManagedInstances {
                scale_in_after_seconds: scale_in_after,
                ..ManagedInstances::default()
            }),
            ..ProviderView::default()
        }
    }

    #[test]
    fn managed_instances_with_optimization_are_left_to_ecs_and_without_it_a_delay_is_proposed() {
        let ids = ["i-1".to_string(), "i-2".to_string()];
        let on = advice("prod", "mi", Some(&managed(Some(1800))), &ids);
        assert!(
            on.contains("Leave them to ECS") && on.contains("after 1800 seconds"),
            "{on}"
        );
        let default = advice("prod", "mi", Some(&managed(None)), &ids);
        assert!(default.contains("its default delay"), "{default}");
        let off = advice("prod", "mi", Some(&managed(Some(-1))), &ids);
        assert!(off.contains("set its scaleInAfter"), "{off}");
        assert!(who_acts("mi", Some(&managed(Some(1800)))).starts_with("ECS:"));
        assert!(who_acts("mi", Some(&managed(Some(-1)))).starts_with("you:"));
        assert!(who_acts("mi", None).contains("could not be read"));
    }

    #[test]
    fn an_auto_scaling_group_is_told_a_lower_desired_capacity_not_drains_it_would_undo() {
        let group = ProviderView {
            name: "asg".into(),
            auto_scaling_group: Some(AutoScalingGroup {
                managed_scaling: false,
                group: Some(GroupSize {
                    name: "gpu".into(),
                    min_size: 2,
                    max_size: 10,
                    desired_capacity: 3,
                    instance_types: vec!["g6.12xlarge".into()],
                }),
                ..AutoScalingGroup::default()
            }),
            ..ProviderView::default()
        };
        let ids = ["i-1".to_string(), "i-2".to_string()];
        let text = advice("batch", "asg", Some(&group), &ids);
        // Three less two is one, but the group keeps its minimum of two.
        assert!(text.contains("from 3 to 2"), "{text}");
        assert!(text.contains("launches replacements"), "{text}");
        let unread = advice("batch", "asg", None, &ids);
        assert!(unread.contains("could not be read"), "{unread}");
        assert_eq!(
            who_acts("asg", Some(&group)),
            "the Auto Scaling group gpu (asg): lower its desired capacity"
        );
    }
}
