//! `/task-definitions`: every family with its GPU use, team and services; and
//! `/task-definitions/:family`: its revisions with each container's GPU setting.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::{
    components::gpu_editor::GpuEditor,
    model::task_definition::{FamilyDetail, FamilySummary, RevisionDetail},
    server_fns::task_definitions::{task_definition_families, task_definition_family},
};

/// The list of families.
#[component]
pub fn TaskDefinitionsPage() -> impl IntoView {
    let families = Resource::new(|| (), |_| task_definition_families());
    view! {
        <Title text="Task definitions" />
        <h1>"Task definitions"</h1>
        <p class="muted">
            "Each family's latest active revision: the GPU settings of its containers, its team and the services that run it."
        </p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the task definitions…"</p> }>
            {move || Suspend::new(async move {
                match families.await {
                    Ok(list) if list.is_empty() => view! {
                        <p data-testid="no-families">"There are no active task definitions in this account and region."</p>
                    }.into_any(),
                    Ok(list) => view! { <FamilyTable families=list /> }.into_any(),
                    Err(error) => view! {
                        <p class="banner error" role="alert">{format!("The task definitions could not be read: {error}")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn FamilyTable(families: Vec<FamilySummary>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="family-table">
            <thead>
                <tr>
                    <th scope="col">"Family"</th>
                    <th scope="col" class="num">"Latest"</th>
                    <th scope="col">"GPU"</th>
                    <th scope="col">"Team"</th>
                    <th scope="col">"Services"</th>
                </tr>
            </thead>
            <tbody>
                {families.into_iter().map(|f| {
                    let uses_gpu = !f.gpu.is_empty();
                    view! {
                        <tr data-gpu=if uses_gpu { "yes" } else { "no" }>
                            <th scope="row"><a href=format!("/task-definitions/{}", f.family)>{f.family.clone()}</a></th>
                            <td class="num">{f.latest_revision}</td>
                            <td>
                                {if uses_gpu {
                                    view! { <span class="badge gpu">"GPU"</span>" "{f.gpu.join("; ")}}.into_any()
                                } else {
                                    view! { <span class="muted">"no GPU"</span> }.into_any()
                                }}
                            </td>
                            <td>{f.team.unwrap_or_else(|| "—".into())}</td>
                            <td>{if f.services.is_empty() { "—".to_string() } else { f.services.join(", ") }}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// One family's revisions.
#[component]
pub fn TaskDefinitionFamilyPage() -> impl IntoView {
    let params = use_params_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let detail = Resource::new(move || family.get(), task_definition_family);
    // Kept here: the editor is rebuilt for the new revision once the revisions are read again.
    let last_registered = RwSignal::new(None::<String>);
    let registered = Callback::new(move |new: RevisionDetail| {
        last_registered.set(Some(format!(
            "Registered revision {} ({}).",
            new.revision, new.arn
        )));
        detail.refetch();
    });
    view! {
        <Title text=move || format!("{} · Task definitions", family.get()) />
        <p><a href="/task-definitions">"← Task definitions"</a></p>
        <h1>{move || family.get()}</h1>
        {move || last_registered.get().map(|message| view! {
            <p class="banner info" role="status" data-testid="edit-registered">{message}</p>
        })}
        <Suspense fallback=|| view! { <p class="muted">"Reading the revisions…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(Some(detail)) => view! { <FamilyRevisions detail registered /> }.into_any(),
                    Ok(None) => {
                        #[cfg(feature = "ssr")]
                        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                            response.set_status(http::StatusCode::NOT_FOUND);
                        }
                        view! {
                            <p class="banner info" role="status" data-testid="no-family">
                                {format!("There is no active task definition family {:?}. ", family.get_untracked())}
                                <a href="/task-definitions">"See the families that exist."</a>
                            </p>
                        }.into_any()
                    }
                    Err(error) => view! {
                        <p class="banner error" role="alert">{format!("The revisions could not be read: {error}")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn FamilyRevisions(detail: FamilyDetail, registered: Callback<RevisionDetail>) -> impl IntoView {
    let newest = detail.revisions.first().cloned();
    view! {
        <p class="muted" data-testid="family-services">
            {if detail.services.is_empty() {
                "No service runs this family.".to_string()
            } else {
                format!("Run by: {}", detail.services.join(", "))
            }}
        </p>
        {newest.map(|revision| view! { <GpuEditor revision registered /> }.into_any())}
        {detail.revisions.into_iter().map(|revision| view! { <Revision revision /> }.into_any()).collect_view()}
    }
}

#[component]
fn Revision(revision: RevisionDetail) -> impl IntoView {
    view! {
        <section class="card" data-testid="revision" data-revision=revision.revision>
            <div class="card-title">
                <h2>{format!("Revision {}", revision.revision)}</h2>
                <span class="muted">{revision.registered_at.clone().unwrap_or_default()}</span>
            </div>
            <dl class="facts">
                <dt>"Compatibility"</dt>
                <dd>{if revision.compatibilities.is_empty() { "—".to_string() } else { revision.compatibilities.join(", ") }}</dd>
                <dt>"Task size"</dt>
                <dd>{format!("{} CPU units, {} MiB", revision.cpu.clone().unwrap_or_else(|| "—".into()), revision.memory.clone().unwrap_or_else(|| "—".into()))}</dd>
                <dt>"Team"</dt>
                <dd>{revision.team.clone().unwrap_or_else(|| "—".into())}</dd>
                {revision.change.clone().map(|change| view! { <dt>"Change"</dt><dd>{change}</dd> })}
            </dl>
            <table class="data-table compact">
                <thead>
                    <tr>
                        <th scope="col">"Container"</th>
                        <th scope="col">"GPU"</th>
                        <th scope="col" class="num">"CPU units"</th>
                        <th scope="col" class="num">"Memory MiB"</th>
                        <th scope="col">"Image"</th>
                    </tr>
                </thead>
                <tbody>
                    {revision.containers.into_iter().map(|c| view! {
                        <tr>
                            <th scope="row">{c.name}</th>
                            <td data-testid="container-gpu">{c.gpu.describe()}</td>
                            <td class="num">{c.cpu}</td>
                            <td class="num">{c.memory_mib.map_or("—".to_string(), |m| m.to_string())}</td>
                            <td class="mono">{c.image}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
