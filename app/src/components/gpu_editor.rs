//! The GPU settings editor of a revision: a row per container (none, whole GPUs, or MPS memory
//! and compute limit), a change description, then Check (ECS's rules, the changes, the fit on
//! the fleet) and Register. Errors sit next to their fields; the form keeps its values.

use leptos::prelude::*;

use crate::{
    model::task_definition::{EditInput, FieldError, GpuSetting, RevisionDetail},
    server_fns::task_definitions::{CheckGpuEdit, RegisterGpuEdit},
};

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

/// The editor for `revision`; `registered` gets the new revision once it is registered.
#[component]
pub fn GpuEditor(revision: RevisionDetail, registered: Callback<RevisionDetail>) -> impl IntoView {
    let family = revision.family.clone();
    let number = revision.revision;
    let rows: Vec<(String, Row)> = revision
        .containers
        .iter()
        .map(|c| (c.name.clone(), Row::of(&c.gpu)))
        .collect();
    let description = RwSignal::new(String::new());
    let cluster = RwSignal::new(String::new());
    let check = ServerAction::<CheckGpuEdit>::new();
    let register = ServerAction::<RegisterGpuEdit>::new();
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
        let from_register = register
            .value()
            .get()
            .and_then(|r| r.ok())
            .map(|r| r.errors)
            .unwrap_or_default();
        if !from_register.is_empty() {
            return from_register;
        }
        check
            .value()
            .get()
            .and_then(|r| r.ok())
            .map(|r| r.errors)
            .unwrap_or_default()
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
            check.dispatch(CheckGpuEdit {
                family: family.clone(),
                revision: number,
                edits: inputs(),
                cluster: Some(cluster.get_untracked()),
            });
        }
    };
    let on_register = {
        let (family, inputs) = (family.clone(), inputs.clone());
        move |_| {
            register.dispatch(RegisterGpuEdit {
                family: family.clone(),
                revision: number,
                edits: inputs(),
                description: description.get_untracked(),
            });
        }
    };
    Effect::new(move |_| {
        if let Some(Ok(result)) = register.value().get() {
            if let Some(new) = result.registered {
                registered.run(new);
            }
        }
    });
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
    view! {
        <section class="card" data-testid="gpu-editor" aria-labelledby="editor-heading">
            <h2 id="editor-heading">{format!("Edit the GPU settings of revision {number}")}</h2>
            <noscript><p class="banner info">"The editor needs JavaScript. POST /api/v1/task-definitions/validate and /fit-check work without it."</p></noscript>
            {rows_view}
            <label class="edit-description">
                <span>"Why (kept as the tag gpushare:change on the new revision)"</span>
                <input type="text" maxlength="256" data-testid="edit-description"
                    prop:value=move || description.get()
                    on:input=move |ev| description.set(event_target_value(&ev)) />
            </label>
            <label>
                <span>"Check the fit in cluster (empty: the whole fleet)"</span>
                <input type="text" size="20" data-testid="edit-cluster"
                    prop:value=move || cluster.get()
                    on:input=move |ev| cluster.set(event_target_value(&ev)) />
            </label>
            <div class="edit-actions">
                <button type="button" data-testid="edit-check" on:click=on_check>"Check"</button>
                <button type="button" data-testid="edit-register" on:click=on_register>
                    {format!("Register revision {}", number + 1)}
                </button>
            </div>
            {move || errors.with(|list| {
                let general: Vec<_> = list.iter().filter(|e| !matches!(e.field.as_str(), "kind" | "count" | "memory_mib" | "compute_percent")).cloned().collect();
                (!general.is_empty()).then(|| view! {
                    <ul class="banner error" data-testid="edit-errors">
                        {general.into_iter().map(|e| view! { <li>{e.message}</li> }).collect_view()}
                    </ul>
                })
            })}
            {move || check.value().get().map(|answer| match answer {
                Ok(check) if check.errors.is_empty() => view! { <CheckResult check /> }.into_any(),
                Ok(_) => ().into_any(),
                Err(error) => view! { <p class="banner error" role="alert">{format!("The check failed: {error}")}</p> }.into_any(),
            })}
            {move || register.value().get().map(|answer| match answer {
                Ok(result) => match (result.registered, result.ecs_error) {
                    (Some(_), _) => ().into_any(),
                    (None, Some(error)) => view! {
                        <p class="banner error" role="alert" data-testid="edit-ecs-error">
                            {format!("ECS refused the new revision: {error}. Your edit is still here; fix it and register again.")}
                        </p>
                    }.into_any(),
                    (None, None) => ().into_any(),
                },
                Err(error) => view! { <p class="banner error" role="alert">{format!("Registering failed: {error}")}</p> }.into_any(),
            })}
        </section>
    }
}

#[component]
fn CheckResult(check: crate::server_fns::task_definitions::EditCheck) -> impl IntoView {
    view! {
        <div data-testid="edit-changes">
            <h3>"Changes"</h3>
            {if check.changes.is_empty() {
                view! { <p class="muted">"Nothing changes."</p> }.into_any()
            } else {
                view! {
                    <table class="data-table compact diff">
                        <thead><tr><th scope="col">"Container"</th><th scope="col">"Before"</th><th scope="col">"After"</th></tr></thead>
                        <tbody>
                            {check.changes.into_iter().map(|c| view! {
                                <tr><th scope="row">{c.container}</th><td class="before">{c.before}</td><td class="after">{c.after}</td></tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
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
        })}
    }
}
