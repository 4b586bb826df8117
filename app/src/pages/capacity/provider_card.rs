//! One capacity provider: what it is, how it grows and is looked after, the GPU types it may
//! launch (and why not the others), and its instances that arrived lately or are leaving.

use super::*;

/// The provider's facts as label and value rows.
fn facts(provider: &ProviderView) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("Type", kind_text(provider).to_string()),
        ("Status", provider.status.clone()),
        (
            "GPU sharing",
            if provider.can_share_gpus {
                "yes (EC2 capacity)"
            } else {
                "no: GPU sharing does not run on Fargate"
            }
            .to_string(),
        ),
        (
            "Instances in the fleet",
            format!("{} ({} GPUs)", provider.instances, provider.gpus),
        ),
        (
            "Tasks not running yet",
            provider.tasks_not_running.to_string(),
        ),
    ];
    rows.extend(managed_rows(provider));
    rows.extend(group_rows(provider));
    rows
}

/// A Managed Instances provider's auto repair, scale-in delay and capacity option.
fn managed_rows(provider: &ProviderView) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if let Some(managed) = &provider.managed_instances {
        rows.push((
            "Launching",
            if provider.tasks_not_running > 0 {
                "not said: ECS names a Managed Instance only once it registers; tasks waiting for capacity are among those not running yet".to_string()
            } else {
                "nothing: no task waits".to_string()
            },
        ));
        rows.push((
            "Auto repair",
            match managed.auto_repair {
                Some(true) => {
                    "on: an instance whose MPS daemon is IMPAIRED is drained and replaced".into()
                }
                Some(false) => "off: impaired instances are reported, not replaced".into(),
                None => "ECS's default".into(),
            },
        ));
        rows.push((
            "Scale-in delay",
            match managed.scale_in_after_seconds {
                Some(-1) => "off: ECS does not retire idle instances".into(),
                Some(seconds) => format!("idle instances retire after {} min", seconds / 60),
                None => "ECS's default".into(),
            },
        ));
        rows.push((
            "Capacity option",
            managed
                .capacity_option
                .clone()
                .unwrap_or_else(|| "ON_DEMAND (ECS's default)".into()),
        ));
    }
    rows
}

/// An Auto Scaling group provider's managed scaling and group size.
fn group_rows(provider: &ProviderView) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if let Some(group) = &provider.auto_scaling_group {
        rows.push((
            "Managed scaling",
            if group.managed_scaling {
                format!(
                    "on: target {} %, steps {} to {}, warm-up {} s",
                    group.target_capacity_percent.unwrap_or(100),
                    group.minimum_scaling_step_size.unwrap_or(1),
                    group.maximum_scaling_step_size.unwrap_or(10_000),
                    group.instance_warmup_seconds.unwrap_or(300)
                )
            } else {
                "off: ECS does not grow the group for waiting tasks".into()
            },
        ));
        rows.push((
            "Group size",
            match &group.group {
                Some(size) => format!(
                    "{} of at most {} (at least {}){}{}",
                    size.desired_capacity,
                    size.max_size,
                    size.min_size,
                    if provider.launching > 0 {
                        format!(
                            "; {} launching (in the group, not yet registered with the cluster)",
                            provider.launching
                        )
                    } else {
                        String::new()
                    },
                    if size.desired_capacity >= size.max_size {
                        " — at its MaxSize: tasks that fit nowhere wait in PROVISIONING"
                    } else {
                        ""
                    }
                ),
                None => "not read".into(),
            },
        ));
    }
    rows
}

#[component]
pub(super) fn ProviderCard(provider: ProviderView) -> impl IntoView {
    let name = provider.name.clone();
    let rows = facts(&provider);
    let (matched, other): (Vec<LaunchOption>, Vec<LaunchOption>) = provider
        .may_launch
        .iter()
        .cloned()
        .partition(|o| o.not_matched.is_none() && o.shares_gpus);
    let changes = provider.changes.clone();
    view! {
        <article class="card" data-testid="capacity-provider" data-provider=name.clone()>
            <h3>{name.clone()}</h3>
            <dl class="facts">
                {rows.into_iter().map(|(label, value)| view! { <dt>{label}</dt><dd>{value}</dd> }).collect_view()}
            </dl>
            {(!matched.is_empty()).then(|| view! {
                <h4>"May launch"</h4>
                <table class="data-table compact" data-testid="capacity-may-launch">
                    <thead><tr><th scope="col">"Instance type"</th><th scope="col">"GPUs, vCPUs, memory"</th></tr></thead>
                    <tbody>
                        {matched.into_iter().map(|o| view! {
                            <tr><td>{o.facts.name.clone()}</td><td>{type_text(&o)}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
            {(!other.is_empty()).then(|| view! {
                <details data-testid="capacity-not-launched">
                    <summary>{format!("{} GPU types it does not launch, and why", other.len())}</summary>
                    <ul>
                        {other.into_iter().map(|o| view! {
                            <li>{format!("{}: {}", o.facts.name, o.not_matched.clone().unwrap_or_else(|| "ECS cannot share its GPUs".into()))}</li>
                        }).collect_view()}
                    </ul>
                </details>
            })}
            <h4>"Arrived lately or leaving"</h4>
            {if changes.is_empty() {
                view! { <p class="muted">"None of its instances arrived in the last 30 minutes or is leaving."</p> }.into_any()
            } else {
                view! {
                    <ul data-testid="capacity-changes">
                        {changes.into_iter().map(|c| view! {
                            <li data-change=c.change.label()>{format!("{} ({}): {} — {}", c.ec2_instance_id, c.instance_type, c.change.label(), c.text)}</li>
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
        </article>
    }
}
