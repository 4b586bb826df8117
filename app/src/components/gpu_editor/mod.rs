//! The editor of a revision: a form with a row per container (none, whole GPUs, or MPS memory
//! and compute limit), or the whole JSON for power users; a change description and a cluster;
//! then Check (ECS's rules, the changes, the JSON diff, the fit on the fleet, the exports) and
//! Register. Errors sit next to their fields or name their line and column; the editor keeps
//! what the user typed whatever the answer.

mod answer;
mod fit_cluster;
mod json_editor;
mod mode_tabs;
mod settings_form;

use leptos::prelude::*;

use answer::{CheckAnswer, EditErrors, RegisterRefusal};
use fit_cluster::FitCluster;
use json_editor::JsonEditor;
use mode_tabs::ModeTabs;
use settings_form::{Row, SettingsForm};

use crate::{
    model::{
        identity::Permission,
        task_definition::{EditCheck, EditResult, FieldError, RevisionDetail},
    },
    server_fns::task_definitions::{
        check_gpu_edit, check_task_definition_json, register_gpu_edit,
        register_task_definition_json,
    },
};

/// What the editor holds when the user asks: the form's rows as typed, or the whole JSON.
#[derive(Clone)]
enum Edit {
    Form(Vec<crate::model::task_definition::EditInput>),
    Json(String),
}

/// Which of the two answers came last: the errors shown are that answer's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Checked,
    Registered,
}

/// The editor for `revision`, whose RegisterTaskDefinition JSON is `json` (masked unless
/// `reveal`); the fit check starts on `cluster` and offers `clusters`; `registered` gets the new
/// revision once it is registered. Without `permission` to change the family, the edit can be
/// neither checked (a check's diff would confirm a guessed masked value) nor registered, and the
/// editor says why; `may_reveal` offers the unmasked exports.
#[component]
pub fn GpuEditor(
    revision: RevisionDetail,
    json: String,
    reveal: bool,
    clusters: Vec<String>,
    cluster: String,
    registered: Callback<RevisionDetail>,
    permission: Permission,
    may_reveal: bool,
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
    let last = RwSignal::new(None::<Last>);
    let check = check_action(family.clone(), number, reveal, last);
    let register = register_action(family, number, registered, last);
    let checked = check.value();
    // A registration's answer counts until the next check.
    let outcome = Memo::new(move |_| {
        (last.get() == Some(Last::Registered))
            .then(|| register.value().get())
            .flatten()
    });
    let errors = latest_errors(outcome, check);
    let edit = edit_of(rows.clone(), json_mode, text);
    let on_check = {
        let edit = edit.clone();
        move |_| {
            check.dispatch((edit(), cluster.get_untracked()));
        }
    };
    let on_register = move |_| {
        register.dispatch((edit(), description.get_untracked()));
    };
    let busy = move || check.pending().get() || register.pending().get();
    let may_check = permission.allowed;
    let refused = refusal(check, permission);
    view! {
        <section class="card" data-testid="gpu-editor" aria-labelledby="editor-heading">
            <h2 id="editor-heading">{format!("Edit revision {number}")}</h2>
            <noscript><p class="banner info">"The editor needs JavaScript. The JSON API (POST /api/v1/task-definitions/{family}/{revision}/check and /register) works without it."</p></noscript>
            <ModeTabs json_mode />
            <div hidden=move || json_mode.get()><SettingsForm rows errors /></div>
            <JsonEditor text hidden=Signal::derive(move || !json_mode.get()) />
            <label class="edit-description">
                <span>"Why (kept as the tag gpushare:change on the new revision)"</span>
                <input type="text" maxlength="256" data-testid="edit-description"
                    prop:value=move || description.get()
                    value=description.get_untracked()
                    on:input=move |ev| description.set(event_target_value(&ev)) />
            </label>
            <FitCluster cluster clusters />
            <div class="edit-actions">
                <button type="button" data-testid="edit-check" on:click=on_check
                    disabled=move || busy() || !may_check>"Check"</button>
                <button type="button" data-testid="edit-register" on:click=on_register
                    disabled=move || busy() || refused.with(Option::is_some)
                    title=move || refused.get().unwrap_or_default()>
                    {format!("Register revision {}", number + 1)}
                </button>
            </div>
            {move || refused.get().map(|reason| view! { <p class="not-allowed" role="note" data-testid="edit-not-allowed">{reason}</p> })}
            <EditErrors errors json_mode />
            {move || checked.get().map(|answer| check_answer(answer, may_reveal))}
            {move || outcome.get().map(|answer| match answer {
                Ok(result) => view! { <RegisterRefusal result /> }.into_any(),
                Err(error) => view! { <p class="banner error" role="alert">{format!("Registering failed: {error}. Your edit is still here.")}</p> }.into_any(),
            })}
        </section>
    }
}

/// What the editor holds when asked: the form's rows as typed, or the JSON in JSON mode.
fn edit_of(
    rows: Vec<(String, Row)>,
    json_mode: RwSignal<bool>,
    text: RwSignal<String>,
) -> impl Fn() -> Edit + Clone + 'static {
    move || {
        if json_mode.get_untracked() {
            Edit::Json(text.get_untracked())
        } else {
            Edit::Form(rows.iter().map(|(name, row)| row.input(name)).collect())
        }
    }
}

/// A check's answer: what it found, nothing (its errors sit by their fields), or its failure.
fn check_answer(answer: Result<EditCheck, String>, may_reveal: bool) -> AnyView {
    match answer {
        Ok(check) if check.errors.is_empty() => view! { <CheckAnswer check may_reveal /> }.into_any(),
        Ok(_) => ().into_any(),
        Err(error) => view! { <p class="banner error" role="alert">{format!("The check failed: {error}")}</p> }
            .into_any(),
    }
}

/// The errors of whichever answer came last: the registration's (`outcome`, while it counts),
/// or the check's.
fn latest_errors(
    outcome: Memo<Option<Result<EditResult, String>>>,
    check: Action<(Edit, String), Result<EditCheck, String>>,
) -> Memo<Vec<FieldError>> {
    let errors_of = |answer: Option<Result<Vec<FieldError>, String>>| {
        answer.and_then(Result::ok).unwrap_or_default()
    };
    Memo::new(move |_| {
        let from_register = errors_of(outcome.get().map(|o| o.map(|r| r.errors)));
        if !from_register.is_empty() {
            return from_register;
        }
        errors_of(check.value().get().map(|c| c.map(|c| c.errors)))
    })
}

/// Why the edit may not be registered, if it may not. The last check can say more than the
/// family's ownership: a field only an admin changes.
fn refusal(
    check: Action<(Edit, String), Result<EditCheck, String>>,
    permission: Permission,
) -> Memo<Option<String>> {
    Memo::new(move |_| match check.value().get() {
        Some(Ok(check)) if check.errors.is_empty() && !check.register.allowed => {
            check.register.reason
        }
        _ => (!permission.allowed).then(|| permission.reason.clone().unwrap_or_default()),
    })
}

/// The check of an edit, as a form's rows or the whole JSON, on a cluster.
fn check_action(
    family: String,
    number: u32,
    reveal: bool,
    last: RwSignal<Option<Last>>,
) -> Action<(Edit, String), Result<EditCheck, String>> {
    Action::new(move |(edit, cluster): &(Edit, String)| {
        let (family, edit, cluster) = (family.clone(), edit.clone(), Some(cluster.clone()));
        async move {
            let answer = match edit {
                Edit::Form(edits) => check_gpu_edit(family, number, edits, cluster, reveal).await,
                Edit::Json(text) => {
                    check_task_definition_json(family, number, text, cluster, reveal).await
                }
            };
            last.set(Some(Last::Checked));
            answer.map_err(|e| e.to_string())
        }
    })
}

/// The registration of an edit with its description; `registered` gets the new revision.
fn register_action(
    family: String,
    number: u32,
    registered: Callback<RevisionDetail>,
    last: RwSignal<Option<Last>>,
) -> Action<(Edit, String), Result<EditResult, String>> {
    Action::new(move |(edit, description): &(Edit, String)| {
        let (family, edit, description) = (family.clone(), edit.clone(), description.clone());
        async move {
            let answer = match edit {
                Edit::Form(edits) => register_gpu_edit(family, number, edits, description).await,
                Edit::Json(text) => {
                    register_task_definition_json(family, number, text, description).await
                }
            };
            if let Ok(EditResult {
                registered: Some(new),
                ..
            }) = &answer
            {
                registered.run(new.clone());
            }
            last.set(Some(Last::Registered));
            answer.map_err(|e| e.to_string())
        }
    })
}
