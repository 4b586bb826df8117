//! `/clusters/:cluster/events`: every service's events in one feed, newest first, filtered by
//! service, kind, words and time; and `/clusters/:cluster/stopped-tasks`: the tasks that
//! stopped recently with their stop code, reason, exit codes and GPUs. Both filters are GET
//! forms, so they work without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::{error_banner::ErrorBanner, stale_reads::StaleReadsBanner},
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

/// A `service` select over the cluster's services.
#[component]
fn ServiceSelect(
    services: Vec<String>,
    selected: Option<String>,
    testid: &'static str,
) -> impl IntoView {
    view! {
        <select name="service" data-testid=testid>
            <option value="">"every service"</option>
            {services.into_iter().map(|s| {
                let chosen = selected.as_deref() == Some(s.as_str());
                view! { <option value=s.clone() selected=chosen>{s.clone()}</option> }
            }).collect_view()}
        </select>
    }
}

/// The links between a cluster's services, events and stopped tasks.
#[component]
fn ClusterTabs(cluster: Memo<String>, current: &'static str) -> impl IntoView {
    let tab = move |href: String, label: &'static str, name: &'static str| {
        view! {
            <a href=href aria-current=(name == current).then_some("page")>{label}</a>
        }
    };
    view! {
        <p><a href="/deployments">"← Deployments"</a></p>
        <h1>{move || format!("Cluster {}", cluster.get())}</h1>
        <nav class="tabs" aria-label="Cluster activity" data-testid="cluster-tabs">
            {move || {
                let c = encode(&cluster.get());
                view! {
                    {tab(format!("/deployments?cluster={c}"), "Services", "services")}
                    {tab(format!("/clusters/{c}/events"), "Events", "events")}
                    {tab(format!("/clusters/{c}/stopped-tasks"), "Stopped tasks", "stopped")}
                }
            }}
        </nav>
    }
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
    let feed = Resource::new(
        move || (cluster.get(), filter.get()),
        |(cluster, filter)| async move {
            match filter {
                Ok(filter) => cluster_events(cluster, filter).await,
                Err(problem) => Err(problem),
            }
        },
    );
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
                    <input type="search" name="q" maxlength="200" data-testid="events-q" prop:value=move || text("q").unwrap_or_default() />
                </label>
                <label><span>"Within"</span>
                    <input type="text" name="since" size="5" placeholder="6h" data-testid="events-since" title="30m, 6h or 2d" prop:value=move || text("since").unwrap_or_default() />
                </label>
                <label><span>"Rows"</span>
                    <input type="text" name="limit" size="4" inputmode="numeric" placeholder="200" prop:value=move || text("limit").unwrap_or_default() />
                </label>
                <button type="submit" data-testid="events-apply">"Filter and refresh"</button>
            </form>
        }
    };
    view! {
        <Title text=move || format!("Events · {}", cluster.get()) />
        <ClusterTabs cluster current="events" />
        <p class="muted">"Every service's events in this cluster, newest first. ECS keeps the latest 100 events of each service."</p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the services' events…"</p> }>
            {move || Suspend::new(async move {
                match feed.await {
                    Ok(feed) => {
                        let shown = feed.events.len();
                        view! {
                            <StaleReadsBanner />
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

#[component]
fn EventTable(events: Vec<ClusterEvent>, cluster: String) -> impl IntoView {
    if events.is_empty() {
        return view! { <p data-testid="events-empty">"No event matches."</p> }.into_any();
    }
    view! {
        <table class="data-table compact" data-testid="events-table">
            <thead><tr>
                <th scope="col">"When (UTC)"</th>
                <th scope="col">"Service"</th>
                <th scope="col">"Kind"</th>
                <th scope="col">"Message"</th>
            </tr></thead>
            <tbody>
                {events.into_iter().map(|e| view! {
                    <tr data-kind=e.kind.as_str() data-service=e.service.clone()>
                        <td class="mono when" title=e.at.clone()>{when(&e.at)}</td>
                        <td><a href=format!("/deployments/{}/{}", encode(&cluster), encode(&e.service))>{e.service.clone()}</a></td>
                        <td><span class=format!("event-kind event-{}", e.kind.as_str())>{e.kind.as_str()}</span></td>
                        <td>{e.message.clone()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// The recently stopped tasks of one cluster.
#[component]
pub fn StoppedTasksPage() -> impl IntoView {
    let (cluster, text) = cluster_and_query();
    let filter = Memo::new(move |_| {
        limit_of(text("limit")).map(|limit| StoppedFilter {
            service: text("service"),
            stop_code: text("stop_code"),
            q: text("q"),
            limit,
        })
    });
    let stopped = Resource::new(
        move || (cluster.get(), filter.get()),
        |(cluster, filter)| async move {
            match filter {
                Ok(filter) => cluster_stopped_tasks(cluster, filter).await,
                Err(problem) => Err(problem),
            }
        },
    );
    // Inside the suspense, so that the server and the browser render the same options. Its one
    // button reads ECS again with what the form holds, so nothing typed is lost.
    let form = move |services: Vec<String>| {
        view! {
            <form class="compare-picker card" method="get" data-testid="stopped-filter">
                <label><span>"Service"</span>
                    <ServiceSelect services selected=text("service") testid="stopped-service" />
                </label>
                <label><span>"Stop code"</span>
                    <select name="stop_code" data-testid="stopped-code">
                        <option value="">"any"</option>
                        {StopCode::KNOWN.map(|code| {
                            let (name, value, chosen) = (code.to_string(), code.to_string(), code.to_string());
                            view! {
                                <option value=value selected=move || text("stop_code").as_deref() == Some(chosen.as_str())>{name}</option>
                            }
                        }).collect_view()}
                    </select>
                </label>
                <label><span>"Reason or task contains"</span>
                    <input type="search" name="q" maxlength="200" data-testid="stopped-q" prop:value=move || text("q").unwrap_or_default() />
                </label>
                <label><span>"Rows"</span>
                    <input type="text" name="limit" size="4" inputmode="numeric" placeholder="200" prop:value=move || text("limit").unwrap_or_default() />
                </label>
                <button type="submit" data-testid="stopped-apply">"Filter and refresh"</button>
            </form>
        }
    };
    view! {
        <Title text=move || format!("Stopped tasks · {}", cluster.get()) />
        <ClusterTabs cluster current="stopped" />
        <p class="muted">"Tasks that stopped recently, most recent first, with ECS's stop code and reason, each container's exit code and reason, and the GPUs the task held. ECS keeps stopped tasks for about an hour."</p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the stopped tasks…"</p> }>
            {move || Suspend::new(async move {
                match stopped.await {
                    Ok(found) => view! {
                        <StaleReadsBanner />
                        {form(found.services.clone())}
                        <p class="muted" data-testid="stopped-count">{format!("{} of {} stopped tasks · read at {}", found.tasks.len(), found.total, found.read_at)}</p>
                        <TaskTable tasks=found.tasks stopped=true />
                    }.into_any(),
                    Err(problem) => view! {
                        {form(text("service").into_iter().collect())}
                        <ErrorBanner error=problem testid="stopped-error" />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Tasks with their containers and GPUs; with stop codes and reasons when `stopped`.
#[component]
pub fn TaskTable(tasks: Vec<TaskInfo>, stopped: bool) -> impl IntoView {
    if tasks.is_empty() {
        return view! { <p data-testid="tasks-empty">{if stopped { "No stopped task matches." } else { "No task yet." }}</p> }.into_any();
    }
    view! {
        <table class="data-table compact" data-testid="task-table">
            <thead><tr>
                <th scope="col">"Task"</th>
                <th scope="col">"Service"</th>
                <th scope="col">"Revision"</th>
                <th scope="col">"Status"</th>
                <th scope="col">"Instance"</th>
                <th scope="col">"GPUs"</th>
                {stopped.then(|| view! {
                    <th scope="col">"Stopped (UTC)"</th>
                    <th scope="col">"Stop code"</th>
                    <th scope="col">"Why"</th>
                })}
            </tr></thead>
            <tbody>
                {tasks.into_iter().map(|t| {
                    let instance = t.instance.clone();
                    let gpus = t.containers.iter().flat_map(|c| c.gpus.iter().map(move |g| (c.name.clone(), g.clone()))).map(|(container, g)| {
                        let place = match g.index {
                            Some(index) => (format!("{instance} GPU {index}"), format!("/?gpu={}", encode(&format!("{instance}:{index}")))),
                            None => (g.uuid.clone(), format!("/?gpu={}", encode(&g.uuid))),
                        };
                        view! { <div><a class="mono" href=place.1 title=g.uuid.clone()>{place.0}</a>{format!(" ({container})")}</div> }
                    }).collect_view();
                    let why = t.containers.iter().filter(|c| c.exit_code.is_some() || c.reason.is_some()).map(|c| {
                        view! { <div class="muted">{format!("{}: {}{}", c.name, c.exit_code.map(|e| format!("exit {e}")).unwrap_or_default(), c.reason.as_ref().map(|r| format!(" {r}")).unwrap_or_default())}</div> }
                    }).collect_view();
                    view! {
                        <tr data-task=t.id.clone() data-stop-code=t.stop_code.as_ref().map(StopCode::to_string).unwrap_or_default()>
                            <td class="mono" title=t.arn.clone()>{t.id.clone()}</td>
                            <td>{t.service.clone().unwrap_or_else(|| "—".into())}</td>
                            <td class="mono">{t.task_definition.clone()}</td>
                            <td>{t.last_status.clone()}</td>
                            <td class="mono">{t.instance.clone()}</td>
                            <td data-testid="task-gpus">{gpus}</td>
                            {stopped.then(|| view! {
                                <td class="mono when" title=t.stopped_at.clone()>{t.stopped_at.as_deref().map_or_else(|| "—".into(), when)}</td>
                                <td>{t.stop_code.as_ref().map_or_else(|| "—".into(), StopCode::to_string)}</td>
                                <td>{t.stopped_reason.clone().unwrap_or_default()}{why}</td>
                            })}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
