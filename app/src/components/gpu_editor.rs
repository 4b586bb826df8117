//! The editor of a revision: a form with a row per container (none, whole GPUs, or MPS memory
//! and compute limit), or the whole JSON for power users; a change description and a cluster;
//! then Check (ECS's rules, the changes, the JSON diff, the fit on the fleet, the exports) and
//! Register. Errors sit next to their fields or name their line and column; the editor keeps
//! what the user typed whatever the answer.

use leptos::prelude::*;

use crate::{
    components::td_views::{DiffTable, Exports, GpuChanges},
    model::task_definition::{EditInput, FieldError, GpuSetting, RevisionDetail},
    server_fns::task_definitions::{
        CheckGpuEdit, CheckTaskDefinitionJson, EditCheck, EditResult, RegisterGpuEdit,
        RegisterTaskDefinitionJson,
    },
};

/// The form's own fields; an error about any other field is listed above the answer.
const FORM_FIELDS: [&str; 4] = ["kind", "count", "memory_mib", "compute_percent"];

/// One container's form fields.
#[derive(Clone, Copy)]
struct Row {
    kind: RwSignal<String>,
    count: RwSignal<String>,
    memory: RwSignal<String>,
    compute: RwSignal<String>,
}

impl Row {
    fn of(setting: &GpuSetting) -> Row {
        let (kind, count, memory, compute) = match setting {
            GpuSetting::None => ("none", "1".to_string(), String::new(), String::new()),
            GpuSetting::Whole { count } => {
                ("whole", count.to_string(), String::new(), String::new())
            }
            GpuSetting::Mps {
                memory_mib,
                max_compute_percent,
            } => (
                "mps",
                "1".to_string(),
                memory_mib.to_string(),
                max_compute_percent
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            ),
        };
        Row {
            kind: RwSignal::new(kind.to_string()),
            count: RwSignal::new(count),
            memory: RwSignal::new(memory),
            compute: RwSignal::new(compute),
        }
    }
}

/// `8192` as `= 8.0 GiB`.
fn gib_hint(memory: &str) -> String {
    memory
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|m| *m > 0.0)
        .map(|m| format!("= {:.1} GiB", m / 1024.0))
        .unwrap_or_default()
}

/// The editor for `revision`, whose RegisterTaskDefinition JSON is `json` (masked unless
/// `reveal`); the fit check starts on `cluster` and offers `clusters`; `registered` gets the new
/// revision once it is registered.
#[component]
pub fn GpuEditor(
    revision: RevisionDetail,
    json: String,
    reveal: bool,
    clusters: Vec<String>,
    cluster: String,
    registered: Callback<RevisionDetail>,
) -> impl IntoView {
    let family = revision.family.clone();
    let number = revision.revision;
    let rows: Vec<(String, Row)> = revision
        .containers
        .iter()
        .map(|c| (c.name.clone(), Row::of(&c.gpu)))
        .collect();
    let json_mode = RwSignal::new(false);
    let text = RwSignal::new(json);
    let description = RwSignal::new(String::new());
    let cluster = RwSignal::new(cluster);
    let check_form = ServerAction::<CheckGpuEdit>::new();
    let check_json = ServerAction::<CheckTaskDefinitionJson>::new();
    let register_form = ServerAction::<RegisterGpuEdit>::new();
    let register_json = ServerAction::<RegisterTaskDefinitionJson>::new();
    // The last answer of either mode.
    let checked = RwSignal::new(None::<Result<EditCheck, String>>);
    let outcome = RwSignal::new(None::<Result<EditResult, String>>);
    Effect::new(move |_| {
        if let Some(answer) = check_form.value().get() {
            checked.set(Some(answer.map_err(|e| e.to_string())));
            outcome.set(None);
        }
    });
    Effect::new(move |_| {
        if let Some(answer) = check_json.value().get() {
            checked.set(Some(answer.map_err(|e| e.to_string())));
            outcome.set(None);
        }
    });
    let on_registered = move |answer: Result<EditResult, ServerFnError>| {
        if let Ok(Some(new)) = answer.as_ref().map(|r| r.registered.clone()) {
            registered.run(new);
        }
        outcome.set(Some(answer.map_err(|e| e.to_string())));
    };
    Effect::new(move |_| {
        if let Some(answer) = register_form.value().get() {
            on_registered(answer);
        }
    });
    Effect::new(move |_| {
        if let Some(answer) = register_json.value().get() {
            on_registered(answer);
        }
    });
    let inputs = {
        let rows = rows.clone();
        move || {
            rows.iter()
                .map(|(name, row)| EditInput {
                    container: name.clone(),
                    kind: row.kind.get_untracked(),
                    count: row.count.get_untracked(),
                    memory_mib: row.memory.get_untracked(),
                    compute_percent: row.compute.get_untracked(),
                })
                .collect::<Vec<_>>()
        }
    };
    // The errors of whichever answer came last.
    let errors = Memo::new(move |_| {
        let from_register = outcome.with(|o| {
            o.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|r| r.errors.clone())
                .unwrap_or_default()
        });
        if !from_register.is_empty() {
            return from_register;
        }
        checked.with(|c| {
            c.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|r| r.errors.clone())
                .unwrap_or_default()
        })
    });
    let field_error = move |container: String, field: &'static str| {
        move || {
            errors.with(|list: &Vec<FieldError>| {
                list.iter()
                    .find(|e| e.container.as_deref() == Some(container.as_str()) && e.field == field)
                    .map(|e| view! { <span class="field-error" role="alert">{e.message.clone()}</span> })
            })
        }
    };
    let on_check = {
        let (family, inputs) = (family.clone(), inputs.clone());
        move |_| {
            let picked = Some(cluster.get_untracked());
            if json_mode.get_untracked() {
                check_json.dispatch(CheckTaskDefinitionJson {
                    family: family.clone(),
                    revision: number,
                    text: text.get_untracked(),
                    cluster: picked,
                    reveal,
                });
            } else {
                check_form.dispatch(CheckGpuEdit {
                    family: family.clone(),
                    revision: number,
                    edits: inputs(),
                    cluster: picked,
                    reveal,
                });
            }
        }
    };
    let on_register = {
        let (family, inputs) = (family.clone(), inputs.clone());
        move |_| {
            if json_mode.get_untracked() {
                register_json.dispatch(RegisterTaskDefinitionJson {
                    family: family.clone(),
                    revision: number,
                    text: text.get_untracked(),
                    description: description.get_untracked(),
                });
            } else {
                register_form.dispatch(RegisterGpuEdit {
                    family: family.clone(),
                    revision: number,
                    edits: inputs(),
                    description: description.get_untracked(),
                });
            }
        }
    };
    let rows_view = rows
        .into_iter()
        .map(|(name, row)| {
            let [kind_id, count_id, memory_id, compute_id] =
                ["kind", "count", "memory", "compute"].map(|field| format!("edit-{field}-{name}"));
            view! {
                <fieldset class="edit-row" data-testid=format!("edit-row-{name}")>
                    <legend>{name.clone()}</legend>
                    <label>
                        <span>"GPU"</span>
                        <select
                            data-testid=kind_id
                            prop:value=move || row.kind.get()
                            on:change=move |ev| row.kind.set(event_target_value(&ev))
                        >
                            <option value="none" selected=move || row.kind.get() == "none">"No GPU"</option>
                            <option value="whole" selected=move || row.kind.get() == "whole">"Whole GPUs"</option>
                            <option value="mps" selected=move || row.kind.get() == "mps">"Shared with MPS"</option>
                        </select>
                        {field_error(name.clone(), "kind")}
                    </label>
                    <Show when=move || row.kind.get() == "whole">
                        <label>
                            <span>"GPUs"</span>
                            <input type="text" inputmode="numeric" size="4" data-testid=count_id.clone()
                                prop:value=move || row.count.get()
                                on:input=move |ev| row.count.set(event_target_value(&ev)) />
                        </label>
                    </Show>
                    {field_error(name.clone(), "count")}
                    <Show when=move || row.kind.get() == "mps">
                        <label>
                            <span>"GPU memory, MiB"</span>
                            <input type="text" inputmode="numeric" size="8" data-testid=memory_id.clone()
                                prop:value=move || row.memory.get()
                                on:input=move |ev| row.memory.set(event_target_value(&ev)) />
                            <span class="muted">{move || gib_hint(&row.memory.get())}</span>
                        </label>
                        <label>
                            <span>"Max compute %"</span>
                            <input type="text" inputmode="numeric" size="4" data-testid=compute_id.clone()
                                placeholder="none"
                                prop:value=move || row.compute.get()
                                on:input=move |ev| row.compute.set(event_target_value(&ev)) />
                            <span class="muted">"a limit, not a reservation"</span>
                        </label>
                    </Show>
                    {field_error(name.clone(), "memory_mib")}
                    {field_error(name.clone(), "compute_percent")}
                </fieldset>
            }
            .into_any()
        })
        .collect_view();
    let busy = move || {
        check_form.pending().get()
            || check_json.pending().get()
            || register_form.pending().get()
            || register_json.pending().get()
    };
    let cluster_options = clusters
        .into_iter()
        .map(|name| {
            let value = name.clone();
            view! { <option value=value.clone() selected=move || cluster.get() == value>{name}</option> }
        })
        .collect_view();
    view! {
        <section class="card" data-testid="gpu-editor" aria-labelledby="editor-heading">
            <h2 id="editor-heading">{format!("Edit revision {number}")}</h2>
            <noscript><p class="banner info">"The editor needs JavaScript. The JSON API (POST /api/v1/task-definitions/{family}/{revision}/check and /register) works without it."</p></noscript>
            <div class="tabs" role="tablist" aria-label="Edit with">
                <button type="button" role="tab" data-testid="mode-form"
                    aria-selected=move || (!json_mode.get()).to_string()
                    on:click=move |_| json_mode.set(false)>"GPU settings"</button>
                <button type="button" role="tab" data-testid="mode-json"
                    aria-selected=move || json_mode.get().to_string()
                    on:click=move |_| json_mode.set(true)>"JSON"</button>
            </div>
            <div hidden=move || json_mode.get()>{rows_view}</div>
            <div hidden=move || !json_mode.get()>
                <label class="json-editor">
                    <span>"The whole RegisterTaskDefinition request. Masked values ("{crate::model::task_definition_json::MASK}") keep the source revision's value."</span>
                    <textarea rows="24" spellcheck="false" data-testid="edit-json"
                        prop:value=move || text.get()
                        on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                </label>
            </div>
            <label class="edit-description">
                <span>"Why (kept as the tag gpushare:change on the new revision)"</span>
                <input type="text" maxlength="256" data-testid="edit-description"
                    prop:value=move || description.get()
                    on:input=move |ev| description.set(event_target_value(&ev)) />
            </label>
            <label>
                <span>"Check the fit in"</span>
                <select data-testid="edit-cluster"
                    prop:value=move || cluster.get()
                    on:change=move |ev| cluster.set(event_target_value(&ev))>
                    <option value="" selected=move || cluster.get().is_empty()>"the whole fleet"</option>
                    {cluster_options}
                </select>
            </label>
            <div class="edit-actions">
                <button type="button" data-testid="edit-check" on:click=on_check disabled=busy>"Check"</button>
                <button type="button" data-testid="edit-register" on:click=on_register disabled=busy>
                    {format!("Register revision {}", number + 1)}
                </button>
            </div>
            {move || errors.with(|list| {
                let general: Vec<_> = list.iter().filter(|e| json_mode.get() || e.container.is_none() || !FORM_FIELDS.contains(&e.field.as_str())).cloned().collect();
                (!general.is_empty()).then(|| view! {
                    <ul class="banner error" data-testid="edit-errors">
                        {general.into_iter().map(|e| {
                            let at = match (e.line, e.column) {
                                (Some(line), Some(column)) => format!("line {line}, column {column}: "),
                                _ => String::new(),
                            };
                            let field = if e.field.is_empty() || FORM_FIELDS.contains(&e.field.as_str()) { String::new() } else { format!("{}: ", e.field) };
                            view! { <li>{at}<code>{field}</code>{e.message}</li> }
                        }).collect_view()}
                    </ul>
                })
            })}
            {move || checked.get().map(|answer| match answer {
                Ok(check) if check.errors.is_empty() => view! { <CheckResult check /> }.into_any(),
                Ok(_) => ().into_any(),
                Err(error) => view! { <p class="banner error" role="alert">{format!("The check failed: {error}")}</p> }.into_any(),
            })}
            {move || outcome.get().map(|answer| match answer {
                Ok(result) => match (result.registered, result.ecs_error) {
                    (Some(_), _) => ().into_any(),
                    (None, Some(error)) => view! {
                        <p class="banner error" role="alert" data-testid="edit-ecs-error">
                            {format!("{error}. Your edit is still here; fix it and register again.")}
                        </p>
                    }.into_any(),
                    (None, None) => ().into_any(),
                },
                Err(error) => view! { <p class="banner error" role="alert">{format!("Registering failed: {error}. Your edit is still here.")}</p> }.into_any(),
            })}
        </section>
    }
}

#[component]
fn CheckResult(check: EditCheck) -> impl IntoView {
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
                <p class="muted">
                    {format!("Instance types that could ever host it: {}",
                        fit.instance_types.iter().filter(|t| t.fits_when_empty).map(|t| t.instance_type.clone()).collect::<Vec<_>>().join(", "))}
                </p>
            </div>
        }.into_any())}
        <h3>"Export the new revision"</h3>
        <Exports json=check.export_json cloudformation=check.cloudformation masked=check.masked reveal_href=Some("?reveal=true".to_string()) />
    }
}
