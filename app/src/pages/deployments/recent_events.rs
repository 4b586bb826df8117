//! The service's latest events, with links to the cluster's feed and stopped tasks.

use super::*;
use crate::resource::{fetched, JsonCodec};

/// The service's ten latest events, read beside the page's own data: created with the page's
/// resources, outside its `Suspense` (see [`crate::resource`]).
pub(super) fn recent_events(
    cluster: Memo<String>,
    service: Memo<String>,
) -> Resource<Result<EventFeed, ServiceError>, JsonCodec> {
    fetched(
        move || (cluster.get(), service.get()),
        |(cluster, service)| {
            cluster_events(
                cluster,
                EventFilter {
                    service: Some(service),
                    limit: Some(10),
                    ..EventFilter::default()
                },
            )
        },
    )
}

/// The service's latest events (from [`recent_events`]), with links to the cluster's feed and
/// stopped tasks.
#[component]
pub(super) fn RecentEvents(
    cluster: String,
    service: String,
    events: Resource<Result<EventFeed, ServiceError>, JsonCodec>,
) -> impl IntoView {
    let (c, s) = (encode(&cluster), encode(&service));
    view! {
        <section class="card" data-testid="recent-events">
            <h2>"Latest events"</h2>
            <p>
                <a href=format!("/clusters/{c}/events?service={s}")>"All of this service's events"</a>" · "
                <a href=format!("/clusters/{c}/stopped-tasks?service={s}")>"its stopped tasks"</a>" · "
                <a href=format!("/clusters/{c}/events")>"the cluster's events"</a>
            </p>
            <Suspense fallback=|| view! { <p class="muted">"Reading the events…"</p> }>
                {move || Suspend::new(async move {
                    match events.await {
                        Ok(feed) if feed.events.is_empty() => view! { <p class="muted">"No events."</p> }.into_any(),
                        Ok(feed) => view! {
                            <ul class="events">
                                {feed.events.into_iter().map(|e| view! {
                                    <li data-kind=e.kind.as_str()><span class="muted mono when" title=e.at.clone()>{when(&e.at)}</span>" "{e.message}</li>
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(error) => view! { <p class="banner warn" role="status">{format!("The events could not be read: {error}")}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
