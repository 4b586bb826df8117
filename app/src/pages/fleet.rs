//! `/`: every GPU in the fleet and how it is shared.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::console_status::ConsoleStatusCard;

/// The fleet page. Until a fleet source is configured it says so and shows the console's status.
#[component]
pub fn FleetPage() -> impl IntoView {
    view! {
        <Title text="Fleet" />
        <h1>"Fleet"</h1>
        <section class="card notice" data-testid="no-fleet" aria-labelledby="no-fleet-heading">
            <h2 id="no-fleet-heading">"No fleet is configured"</h2>
            <p>
                "gpushare shows every GPU of your Amazon ECS container instances: the memory and "
                "compute its tasks were given, what they actually use, and which services share it."
            </p>
            <p>
                "This server has no fleet to read yet. Start it against the embedded emulator "
                "or an AWS account once those sources are available in your build."
            </p>
        </section>
        <ConsoleStatusCard />
    }
}
