//! A banner that says when a page shows kept ECS answers because ECS did not answer in time
//! (throttled, slow or failing), and how old they are.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::server_fns::console::console_status;

/// Asks the server, once the page's own data is read, whether the on-demand ECS reads lately
/// answered from older data; says so when they did. Place it where the page's data has
/// arrived, so that it speaks of that read.
#[component]
pub fn StaleReadsBanner() -> impl IntoView {
    let status = fetched(|| (), |_| console_status());
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
