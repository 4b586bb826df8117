//! A badge in the header that says where the fleet comes from, so a simulated fleet is never
//! mistaken for a real one.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::server_fns::console::console_status;

/// "Simulated fleet (demo)" or "AWS eu-west-1".
#[component]
pub fn FleetSourceBadge() -> impl IntoView {
    let status = fetched(|| (), |_| console_status());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                status
                    .await
                    .ok()
                    .map(|status| {
                        let simulated = status.fleet_source.is_simulated();
                        let title = if simulated {
                            "Everything shown comes from gpushare's embedded ECS and CloudWatch \
                             emulator. Start gpushare with --aws to see your own account."
                        } else {
                            "The fleet of your AWS account, read through ECS and CloudWatch."
                        };
                        view! {
                            <span
                                class="source-badge"
                                class:simulated=simulated
                                data-testid="fleet-source"
                                title=title
                            >
                                {status.fleet_source.label()}
                            </span>
                        }
                    })
            })}
        </Suspense>
    }
}
