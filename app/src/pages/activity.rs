//! `/clusters/:cluster/events`: every service's events in one feed, newest first, filtered by
//! service, kind, words and time; and `/clusters/:cluster/stopped-tasks`: the tasks that
//! stopped recently with their stop code, reason, exit codes and GPUs. Both filters are GET
//! forms, so they work without JavaScript.

mod cluster_tabs;
mod event_table;
mod service_select;
mod stopped_tasks_page;
mod task_table;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::{
        error_banner::ErrorBanner,
        stale_reads::{stale_reads_after, StaleReadsBanner},
    },
    model::{
        activity::{
            when, ClusterEvent, EventFilter, EventKind, StopCode, StoppedFilter, TaskInfo,
            MAX_LIMIT,
        },
        fleet_view::encode,
        ServiceError,
    },
    server_fns::activity::{cluster_events, cluster_stopped_tasks},
};

use self::{cluster_tabs::ClusterTabs, event_table::EventTable, service_select::ServiceSelect};
pub use self::{stopped_tasks_page::StoppedTasksPage, task_table::TaskTable};

/// A `limit` parameter: a whole number, or what is wrong with it.
fn limit_of(text: Option<String>) -> Result<Option<u32>, ServiceError> {
    match text.filter(|t| !t.trim().is_empty()) {
        None => Ok(None),
        Some(text) => text.trim().parse::<u32>().map(Some).map_err(|_| {
            ServiceError::invalid(format!(
                "limit {text:?} is not a whole number; give one from 1 to {MAX_LIMIT}."
            ))
        }),
    }
}

/// The page's cluster, and a reader of its non-empty query parameters.
fn cluster_and_query() -> (Memo<String>, impl Fn(&str) -> Option<String> + Copy) {
    let params = use_params_map();
    let query = use_query_map();
    let cluster = Memo::new(move |_| params.with(|p| p.get("cluster").unwrap_or_default()));
    let text = move |name: &str| query.with(|q| q.get(name).filter(|v| !v.trim().is_empty()));
    (cluster, text)
}

/// The events feed of one cluster.
#[component]
pub fn ClusterEventsPage() -> impl IntoView {
    let (cluster, text) = cluster_and_query();
    let filter = Memo::new(move |_| {
        limit_of(text("limit")).map(|limit| EventFilter {
            service: text("service"),
            kind: text("kind"),
            q: text("q"),
            since: text("since"),
            limit,
        })
    });
    let feed = fetched(
        move || (cluster.get(), filter.get()),
        |(cluster, filter)| async move {
            match filter {
                Ok(filter) => cluster_events(cluster, filter).await,
                Err(problem) => Err(problem),
            }
        },
    );
    let stale = stale_reads_after(feed);
    // Inside the suspense, so that the server and the browser render the same options. Its one
    // button reads ECS again with what the form holds, so nothing typed is lost.
    let form = move |services: Vec<String>| {
        view! {
            <form class="compare-picker card" method="get" data-testid="events-filter">
                <label><span>"Service"</span>
                    <ServiceSelect services selected=text("service") testid="events-service" />
                </label>
                <label><span>"Kind"</span>
                    <select name="kind" data-testid="events-kind">
                        <option value="">"any"</option>
                        {EventKind::ALL.map(|k| view! {
                            <option value=k.as_str() selected=move || text("kind").as_deref() == Some(k.as_str())>{k.as_str()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <label><span>"Message contains"</span>
                    <input type="search" name="q" maxlength="200" data-testid="events-q" prop:value=move || text("q").unwrap_or_default() value=move || text("q").unwrap_or_default() />
                </label>
                <label><span>"Within"</span>
                    <input type="text" name="since" size="5" placeholder="6h" data-testid="events-since" title="30m, 6h or 2d" prop:value=move || text("since").unwrap_or_default() value=move || text("since").unwrap_or_default() />
                </label>
                <label><span>"Rows"</span>
                    <input type="text" name="limit" size="4" inputmode="numeric" placeholder="200" prop:value=move || text("limit").unwrap_or_default() value=move || text("limit").unwrap_or_default() />
                </label>
                <button type="submit" data-testid="events-apply">"Filter and refresh"</button>
            </form>
        }
    };
    view! {
        <Title text={ let cluster = crate::pages::title_part(cluster); move || format!("Events · {}", cluster()) } />
        <ClusterTabs cluster current="events" />
        <p class="muted">"Every service's events in this cluster, newest first. ECS keeps the latest 100 events of each service."</p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the services' events…"</p> }>
            {move || Suspend::new(async move {
                match feed.await {
                    Ok(feed) => {
                        let shown = feed.events.len();
                        view! {
                            <StaleReadsBanner status=stale />
                            {form(feed.services.clone())}
                            <p class="muted" data-testid="events-count">{format!("{shown} of {} events · read at {}", feed.total, feed.read_at)}</p>
                            <EventTable events=feed.events cluster=feed.cluster />
                        }.into_any()
                    }
                    Err(problem) => view! {
                        {form(text("service").into_iter().collect())}
                        <ErrorBanner error=problem testid="events-error" />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
