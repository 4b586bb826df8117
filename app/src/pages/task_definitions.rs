//! `/task-definitions`: every family with its GPU use, team and services;
//! `/task-definitions/:family`: its revisions, a comparison picker and the editor;
//! `/task-definitions/:family/:revision`: one revision's JSON and exports; and
//! `/task-definitions/:family/compare?from=&to=`: two revisions compared.

mod compare_page;
mod compare_picker;
mod family_page;
mod family_revisions;
mod family_table;
mod revision;
mod revision_facts;
mod revision_json;
mod revision_page;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::{
        error_banner::{set_status, ErrorBanner},
        gpu_editor::GpuEditor,
        stale_reads::{stale_reads_after, StaleReadsBanner},
        td_views::{DiffTable, Exports, GpuChanges},
    },
    model::{
        task_definition::{FamilyDetail, FamilySummary, RevisionDetail, RevisionView},
        ServiceError,
    },
    server_fns::{
        clusters::list_clusters,
        task_definitions::{
            compare_revisions, task_definition_families, task_definition_family,
            task_definition_revision,
        },
    },
};

pub use self::{
    compare_page::TaskDefinitionComparePage, family_page::TaskDefinitionFamilyPage,
    revision_page::TaskDefinitionRevisionPage,
};
use self::{
    compare_picker::ComparePicker, family_revisions::FamilyRevisions, family_table::FamilyTable,
    revision::Revision, revision_facts::RevisionFacts, revision_json::RevisionJson,
};

/// The list of families.
#[component]
pub fn TaskDefinitionsPage() -> impl IntoView {
    let families = fetched(|| (), |_| task_definition_families());
    let stale = stale_reads_after(families);
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
                    Ok(list) => view! { <StaleReadsBanner status=stale /><FamilyTable families=list /> }.into_any(),
                    Err(error) => view! {
                        <ErrorBanner error lead="The task definitions could not be read: " />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Whether the URL asks to reveal secret-looking values.
fn reveal_param() -> Memo<bool> {
    let query = use_query_map();
    Memo::new(move |_| query.with(|q| q.get("reveal").is_some_and(|v| v == "true" || v == "1")))
}

/// What the family page needs: the revisions, the newest active revision's JSON for the editor,
/// and the clusters for the fit check.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct FamilyData {
    detail: FamilyDetail,
    source: Option<RevisionView>,
    clusters: Vec<String>,
}

async fn family_data(family: String, reveal: bool) -> Result<Option<FamilyData>, ServiceError> {
    let Some(detail) = task_definition_family(family.clone()).await? else {
        return Ok(None);
    };
    let newest_active = detail
        .revisions
        .iter()
        .find(|r| r.active)
        .map(|r| r.revision);
    let source = match newest_active {
        Some(revision) => task_definition_revision(family, revision, reveal).await?,
        None => None,
    };
    let clusters = list_clusters()
        .await
        .map(|list| list.into_iter().map(|c| c.name).collect())
        .unwrap_or_default();
    Ok(Some(FamilyData {
        detail,
        source,
        clusters,
    }))
}

/// A revision number from the URL, or what is wrong with it.
fn revision_number(text: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| format!("{text:?} is not a revision number: give a whole number from 1."))
}

/// The view of a lookup by revision: `found` when it exists; otherwise a 404 note that links to
/// the family, a 400 for a malformed revision number, or what failed.
fn lookup_view<T>(
    answer: Result<Result<Option<T>, String>, ServiceError>,
    family: String,
    missing: String,
    failed: &'static str,
    found: impl FnOnce(T) -> AnyView,
) -> AnyView {
    match answer {
        Ok(Ok(Some(value))) => found(value),
        Ok(Ok(None)) => {
            set_status(404);
            view! {
                <p class="banner info" role="status" data-testid="no-revision">
                    {missing}
                    <a href=format!("/task-definitions/{family}")>"See its revisions."</a>
                </p>
            }
            .into_any()
        }
        Ok(Err(message)) => {
            set_status(400);
            view! { <p class="banner error" role="alert" data-testid="bad-revision">{message}</p> }
                .into_any()
        }
        Err(error) => view! { <ErrorBanner error lead=failed /> }.into_any(),
    }
}
