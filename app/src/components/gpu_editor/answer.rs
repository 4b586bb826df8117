//! What the editor shows of the server's answers: the errors that belong to no form field
//! (with their JSON line and column), the check's changes, fit and exports, and a refused
//! registration.

use leptos::prelude::*;

use super::settings_form::FORM_FIELDS;
use crate::{
    components::td_views::{DiffTable, Exports, GpuChanges},
    model::{
        rollout::OneLaunch,
        task_definition::{EditCheck, EditResult, FieldError},
    },
};

/// The errors of the last answer that are not shown beside a form field: all of them in JSON
/// mode.
#[component]
pub fn EditErrors(errors: Memo<Vec<FieldError>>, json_mode: RwSignal<bool>) -> impl IntoView {
    move || {
        errors.with(|list| {
            let general: Vec<FieldError> = list
                .iter()
                .filter(|e| {
                    json_mode.get()
                        || e.container.is_none()
                        || !FORM_FIELDS.contains(&e.field.as_str())
                })
                .cloned()
                .collect();
            (!general.is_empty()).then(|| view! {
                <ul class="banner error" data-testid="edit-errors">
                    {general.into_iter().map(|e| {
                        let at = match (e.line, e.column) {
                            (Some(line), Some(column)) => format!("line {line}, column {column}: "),
                            _ => String::new(),
                        };
                        let field = if e.field.is_empty() || FORM_FIELDS.contains(&e.field.as_str()) {
                            String::new()
                        } else {
                            format!("{}: ", e.field)
                        };
                        view! { <li>{at}<code>{field}</code>{e.message}</li> }
                    }).collect_view()}
                </ul>
            })
        })
    }
}

/// A check that passed ECS's rules: the GPU settings that change, the JSON diff, the fit on
/// the fleet and the exports of the new revision.
#[component]
pub fn CheckAnswer(check: EditCheck, may_reveal: bool) -> impl IntoView {
    view! {
        <div data-testid="edit-changes">
            <h3>"GPU settings"</h3>
            <GpuChanges changes=check.changes />
            <h3>"Every change to the JSON"</h3>
            <DiffTable entries=check.diff />
        </div>
        {check.fit.map(|fit| view! {
            <div data-testid="edit-fit">
                <h3>{format!("Fit in {}", fit.cluster.clone().unwrap_or_else(|| "the whole fleet".into()))}</h3>
                {fit.never.clone().map(|never| view! { <p class="banner error" role="alert">{never}</p> })}
                {fit.fragmented.clone().map(|warning| view! { <p class="banner warn" role="status">{warning}</p> })}
                <p data-testid="edit-fit-summary">
                    {format!(
                        "One task could be placed now on {} instances; {} more tasks would fit.",
                        fit.placeable_instances, fit.more_tasks
                    )}
                </p>
                {(!fit.placeable.is_empty()).then(|| view! {
                    <p class="muted mono">{format!("For example: {}", fit.placeable.join(", "))}</p>
                })}
                {(!fit.blocked.is_empty()).then(|| view! {
                    <p data-testid="edit-fit-blocked">
                        {format!("Instances whose GPUs have room but that cannot take it: {}.", fit.blocked.join("; "))}
                    </p>
                })}
                {(!fit.needs.is_empty()).then(|| view! {
                    <p class="muted">{format!("Besides GPUs, one task needs {} of its instance; the count allows for that where the fleet data has it.", fit.needs)}</p>
                })}
                <p class="muted">
                    {format!("Instance types that could ever host it: {}",
                        fit.instance_types.iter().filter(|t| t.fits_when_empty).map(|t| t.instance_type.clone()).collect::<Vec<_>>().join(", "))}
                </p>
                <FitGrowth growth=fit.growth.clone() unread=fit.growth_unread.clone() />
            </div>
        }.into_any())}
        <h3>"Export the new revision"</h3>
        <Exports json=check.export_json cloudformation=check.cloudformation masked=check.masked reveal_href=may_reveal.then(|| "?reveal=true".to_string()) />
    }
}

/// One provider's launch for a task, in words: "inference-prod/gpu-mi would launch a
/// g6.xlarge (1 GPU of 22,888 MiB), up in about 3 min, $0.98 an hour".
fn launch_text(launch: &OneLaunch) -> String {
    let name = format!("{}/{}", launch.cluster, launch.provider);
    match (&launch.instance_type, &launch.limit) {
        (Some(kind), _) => format!(
            "{name} would launch a {kind} ({} {} of {} MiB), up in about {} min, {}",
            launch.gpus,
            if launch.gpus == 1 { "GPU" } else { "GPUs" },
            launch.gpu_memory_mib,
            launch.seconds.div_ceil(60).max(1),
            match launch.cents_per_hour {
                Some(cents) => format!("${}.{:02} an hour on demand", cents / 100, cents % 100),
                None => "at a price the console does not know".into(),
            }
        ),
        (None, Some(limit)) => format!("{name} would launch nothing: {limit}"),
        (None, None) => format!("{name} would launch nothing"),
    }
}

/// What the checked clusters' capacity providers would launch for a task that no instance has
/// room for: a service on one of them does not stall there, it waits for the launch.
#[component]
fn FitGrowth(growth: Vec<OneLaunch>, unread: Option<String>) -> impl IntoView {
    let assumed: Vec<String> = growth
        .iter()
        .flat_map(|g| g.assumed.iter().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let launching = growth.iter().filter(|g| g.instance_type.is_some()).count();
    view! {
        {unread.map(|why| view! { <p class="banner warn" role="status" data-testid="edit-fit-growth-unread">{why}</p> })}
        {(!growth.is_empty()).then(|| view! {
            <div data-testid="edit-fit-growth" data-launching=launching>
                <p>"For a service on a capacity provider, a task that no instance has room for waits in PROVISIONING while the provider launches:"</p>
                <ul>
                    {growth.iter().map(|launch| view! {
                        <li data-provider=launch.provider.clone()>{launch_text(launch)}</li>
                    }).collect_view()}
                </ul>
                {(!assumed.is_empty()).then(|| view! {
                    <p class="muted">{format!("Assumed: {}.", assumed.join("; "))}</p>
                })}
            </div>
        })}
    }
}

/// A registration ECS refused, with its code; the edit stays in the editor.
#[component]
pub fn RegisterRefusal(result: EditResult) -> impl IntoView {
    match (result.registered, result.ecs_error) {
        (None, Some(error)) => view! {
            <p class="banner error" role="alert" data-testid="edit-ecs-error">
                {format!("{error}. Your edit is still here; fix it and register again.")}
            </p>
        }
        .into_any(),
        _ => ().into_any(),
    }
}
