//! A banner that says when a page shows kept ECS answers because ECS did not answer in time
//! (throttled, slow or failing), and how old they are.

use crate::resource::{fetched, JsonCodec};
use leptos::prelude::*;
use serde::{de::DeserializeOwned, Serialize};

use crate::model::{ConsoleStatus, ServiceError};
use crate::server_fns::console::console_status;

/// The console's status, asked once `page` (the page's own data) has been read, so that it
/// speaks of that read. Create it beside the page's own resource, outside any `Suspense`: a
/// resource created inside a `Suspend` may be created again on the server when the resource the
/// `Suspend` awaits resolves, and the browser would then read another resource's answer (see
/// [`crate::resource`]).
pub fn stale_reads_after<T>(
    page: Resource<T, JsonCodec>,
) -> Resource<Result<ConsoleStatus, ServiceError>, JsonCodec>
where
    T: Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fetched(
        || (),
        move |_| async move {
            let _ = page.await;
            console_status().await
        },
    )
}

/// Says, when the on-demand ECS reads lately answered from older data, that the page shows
/// kept answers and how old they are. `status` comes from [`stale_reads_after`].
#[component]
pub fn StaleReadsBanner(
    status: Resource<Result<ConsoleStatus, ServiceError>, JsonCodec>,
) -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                status.await.ok().and_then(|s| s.stale_reads).map(|stale| view! {
                    <p class="banner warn" role="status" data-testid="stale-reads">
                        {stale.sentence()}
                    </p>
                })
            })}
        </Suspense>
    }
}
