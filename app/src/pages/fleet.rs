//! `/`: the fleet's clusters, and the console's status.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::{cluster_table::ClusterTable, console_status::ConsoleStatusCard};

/// The fleet page.
#[component]
pub fn FleetPage() -> impl IntoView {
    view! {
        <Title text="Fleet" />
        <h1>"Fleet"</h1>
        <ClusterTable />
        <ConsoleStatusCard />
    }
}
