//! `/task-definitions`: every family with its GPU use, team and services;
//! `/task-definitions/:family`: its revisions, a comparison picker and the editor;
//! `/task-definitions/:family/:revision`: one revision's JSON and exports; and
//! `/task-definitions/:family/compare?from=&to=`: two revisions compared.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::{
        error_banner::{set_status, ErrorBanner},
        gpu_editor::GpuEditor,
        stale_reads::StaleReadsBanner,
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
                    Ok(list) => view! { <StaleReadsBanner /><FamilyTable families=list /> }.into_any(),
                    Err(error) => view! {
                        <ErrorBanner error lead="The task definitions could not be read: " />
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

/// One family's revisions.
#[component]
pub fn TaskDefinitionFamilyPage() -> impl IntoView {
    let params = use_params_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let reveal = reveal_param();
    let data = Resource::new(
        move || (family.get(), reveal.get()),
        |(family, reveal)| family_data(family, reveal),
    );
    // Kept here: the editor is rebuilt for the new revision once the revisions are read again.
    let last_registered = RwSignal::new(None::<RevisionDetail>);
    let registered = Callback::new(move |new: RevisionDetail| {
        last_registered.set(Some(new));
        data.refetch();
    });
    view! {
        <Title text=move || format!("{} · Task definitions", family.get()) />
        <p><a href="/task-definitions">"← Task definitions"</a></p>
        <h1>{move || family.get()}</h1>
        {move || last_registered.get().map(|new| view! {
            <p class="banner info" role="status" data-testid="edit-registered">
                {format!("Registered revision {} ({}). ", new.revision, new.arn)}
                <a href=format!("/task-definitions/{}/compare?from={}&to={}", new.family, new.revision.saturating_sub(1), new.revision)>"See what changed"</a>
            </p>
        })}
        <Suspense fallback=|| view! { <p class="muted">"Reading the revisions…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(Some(data)) => view! { <StaleReadsBanner /><FamilyRevisions data reveal=reveal.get_untracked() registered /> }.into_any(),
                    Ok(None) => {
                        set_status(404);
                        view! {
                            <p class="banner info" role="status" data-testid="no-family">
                                {format!("There is no task definition family {:?}. ", family.get_untracked())}
                                <a href="/task-definitions">"See the families that exist."</a>
                            </p>
                        }.into_any()
                    }
                    Err(error) => view! {
                        <ErrorBanner error lead="The revisions could not be read: " />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn FamilyRevisions(
    data: FamilyData,
    reveal: bool,
    registered: Callback<RevisionDetail>,
) -> impl IntoView {
    let FamilyData {
        detail,
        source,
        clusters,
    } = data;
    // The fit check starts on the cluster the family's services run in.
    let home = detail
        .services
        .first()
        .and_then(|s| s.split_once('/'))
        .map(|(cluster, _)| cluster.to_string())
        .filter(|c| clusters.contains(c))
        .unwrap_or_default();
    let numbers: Vec<u32> = detail.revisions.iter().map(|r| r.revision).collect();
    let family = detail.family.clone();
    view! {
        <p class="muted" data-testid="family-services">
            {if detail.services.is_empty() {
                "No service runs this family.".to_string()
            } else {
                format!("Run by: {}", detail.services.join(", "))
            }}
        </p>
        <ComparePicker family=family.clone() numbers />
        {source.map(|source| view! {
            <GpuEditor revision=source.detail json=source.json reveal clusters cluster=home registered permission=source.register may_reveal=source.reveal.allowed />
        }.into_any())}
        {detail.revisions.into_iter().map(|revision| view! { <Revision revision /> }.into_any()).collect_view()}
    }
}

/// A GET form that opens the comparison of two revisions; works without JavaScript.
#[component]
fn ComparePicker(family: String, numbers: Vec<u32>) -> impl IntoView {
    if numbers.len() < 2 {
        return ().into_any();
    }
    let (newest, previous) = (numbers[0], numbers[1]);
    let options = |selected: u32| {
        numbers
            .iter()
            .map(|n| view! { <option value=n.to_string() selected=*n == selected>{format!("revision {n}")}</option> })
            .collect_view()
    };
    view! {
        <form class="compare-picker card" method="get" action=format!("/task-definitions/{family}/compare") data-testid="compare-picker">
            <label><span>"Compare"</span><select name="from" data-testid="compare-from">{options(previous)}</select></label>
            <label><span>"with"</span><select name="to" data-testid="compare-to">{options(newest)}</select></label>
            <button type="submit" data-testid="compare-open">"Compare"</button>
        </form>
    }
    .into_any()
}

#[component]
fn Revision(revision: RevisionDetail) -> impl IntoView {
    let link = format!(
        "/task-definitions/{}/{}",
        revision.family, revision.revision
    );
    let compare = (revision.revision > 1).then(|| {
        format!(
            "/task-definitions/{}/compare?from={}&to={}",
            revision.family,
            revision.revision - 1,
            revision.revision
        )
    });
    view! {
        <section class="card" data-testid="revision" data-revision=revision.revision data-active=revision.active.to_string()>
            <div class="card-title">
                <h2><a href=link.clone()>{format!("Revision {}", revision.revision)}</a></h2>
                {(!revision.active).then(|| view! { <span class="badge" data-testid="inactive">"inactive"</span> })}
                <span class="muted">{revision.registered_at.clone().unwrap_or_default()}</span>
            </div>
            <RevisionFacts revision=revision.clone() />
            <p class="links">
                <a href=link>"Full JSON and exports"</a>
                {compare.map(|href| view! { " · "<a href=href>"Compare with the previous revision"</a> })}
            </p>
        </section>
    }
}

/// A revision's facts and its containers' GPU settings, CPU, memory and image.
#[component]
fn RevisionFacts(revision: RevisionDetail) -> impl IntoView {
    view! {
        <dl class="facts">
            <dt>"Compatibility"</dt>
            <dd>{if revision.compatibilities.is_empty() { "—".to_string() } else { revision.compatibilities.join(", ") }}</dd>
            <dt>"Task size"</dt>
            <dd>{format!("{} CPU units, {} MiB", revision.cpu.clone().unwrap_or_else(|| "—".into()), revision.memory.clone().unwrap_or_else(|| "—".into()))}</dd>
            <dt>"Team"</dt>
            <dd>{revision.team.clone().unwrap_or_else(|| "—".into())}</dd>
            {revision.change.clone().map(|change| view! { <dt>"Change"</dt><dd data-testid="revision-change">{change}</dd> })}
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
    }
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

/// One revision: its facts, its JSON (masked unless revealed) and its exports.
#[component]
pub fn TaskDefinitionRevisionPage() -> impl IntoView {
    let params = use_params_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let number = Memo::new(move |_| params.with(|p| p.get("revision").unwrap_or_default()));
    let reveal = reveal_param();
    let view_data = Resource::new(
        move || (family.get(), number.get(), reveal.get()),
        |(family, number, reveal)| async move {
            match revision_number(&number) {
                Ok(revision) => task_definition_revision(family, revision, reveal)
                    .await
                    .map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    view! {
        <Title text=move || format!("{}:{} · Task definitions", family.get(), number.get()) />
        <p><a href=move || format!("/task-definitions/{}", family.get())>{move || format!("← {}", family.get())}</a></p>
        <h1>{move || format!("{}:{}", family.get(), number.get())}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Reading the revision…"</p> }>
            {move || Suspend::new(async move {
                let family = family.get_untracked();
                let missing = format!("{family} has no revision {}. ", number.get_untracked());
                lookup_view(view_data.await, family, missing, "The revision could not be read: ", |shown| {
                    view! { <RevisionJson shown reveal=reveal.get_untracked() /> }.into_any()
                })
            })}
        </Suspense>
    }
}

#[component]
fn RevisionJson(shown: RevisionView, reveal: bool) -> impl IntoView {
    let detail = shown.detail.clone();
    let toggle = if reveal {
        view! { <a href="?" data-testid="hide">"Hide secret-looking values"</a> }.into_any()
    } else {
        ().into_any()
    };
    view! {
        <section class="card" data-testid="revision-detail">
            <div class="card-title">
                <h2>{format!("Revision {}", detail.revision)}</h2>
                {(!detail.active).then(|| view! { <span class="badge" data-testid="inactive">"inactive"</span> })}
                <span class="muted mono">{detail.arn.clone()}</span>
            </div>
            <RevisionFacts revision=detail />
        </section>
        <section class="card">
            <h2>"JSON"</h2>
            <p class="muted">"The request that registers this revision again: what DescribeTaskDefinition answers, without the fields ECS sets itself, with its tags. "{toggle}</p>
            <Exports json=shown.json cloudformation=shown.cloudformation masked=shown.masked reveal_href=shown.reveal.allowed.then(|| "?reveal=true".to_string()) />
        </section>
    }
}

/// Two revisions of a family compared.
#[component]
pub fn TaskDefinitionComparePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let pair = Memo::new(move |_| {
        query.with(|q| {
            let from = revision_number(&q.get("from").unwrap_or_default());
            let to = revision_number(&q.get("to").unwrap_or_default());
            match (from, to) {
                (Ok(from), Ok(to)) => Ok((from, to)),
                (Err(e), _) => Err(format!("from: {e}")),
                (_, Err(e)) => Err(format!("to: {e}")),
            }
        })
    });
    let reveal = reveal_param();
    let comparison = Resource::new(
        move || (family.get(), pair.get(), reveal.get()),
        |(family, pair, reveal)| async move {
            match pair {
                Ok((from, to)) => compare_revisions(family, from, to, reveal).await.map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    view! {
        <Title text=move || format!("Compare {} · Task definitions", family.get()) />
        <p><a href=move || format!("/task-definitions/{}", family.get())>{move || format!("← {}", family.get())}</a></p>
        <h1>{move || match pair.get() {
            Ok((from, to)) => format!("{}: revision {from} → {to}", family.get()),
            Err(_) => format!("{}: compare revisions", family.get()),
        }}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Comparing…"</p> }>
            {move || Suspend::new(async move {
                let family = family.get_untracked();
                let missing = format!("{family} does not have both revisions. ");
                lookup_view(comparison.await, family, missing, "The revisions could not be read: ", |found| {
                    let pair = format!("?from={}&to={}", found.from.revision, found.to.revision);
                    view! {
                        <section class="card" data-testid="comparison">
                            <h2>"GPU settings"</h2>
                            <GpuChanges changes=found.gpu />
                            <h2>"Every difference of the JSON"</h2>
                            <p class="muted">
                                "GPU requirements first. Lists of named things (containers, variables, volumes, tags) are matched by name. "
                                {if reveal.get_untracked() {
                                    view! { <a href=pair data-testid="hide">"Hide secret-looking values"</a> }.into_any()
                                } else {
                                    view! { "Secret-looking values are masked. "<a href=format!("{pair}&reveal=true") data-testid="reveal">"Reveal values"</a> }.into_any()
                                }}
                            </p>
                            <DiffTable entries=found.diff />
                        </section>
                    }.into_any()
                })
            })}
        </Suspense>
    }
}
