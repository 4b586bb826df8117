//! The header on every page: the product name, the navigation and the theme switch.

mod theme_toggle;

use leptos::prelude::*;
use leptos_router::components::A;

use crate::components::{fleet_source_badge::FleetSourceBadge, identity_badge::IdentityBadge};
use theme_toggle::ThemeToggle;

/// The sections of the console, in the order the navigation lists them.
const SECTIONS: [(&str, &str); 5] = [
    ("/", "Fleet"),
    ("/task-definitions", "Task definitions"),
    ("/deployments", "Deployments"),
    ("/audit", "Audit log"),
    ("/cost", "Cost"),
];

/// The header with the product name, the navigation and the theme switch.
#[component]
pub fn AppHeader() -> impl IntoView {
    view! {
        <header class="app-header">
            <a class="brand" href="/" aria-label="gpushare home">
                <span class="brand-mark" aria-hidden="true"></span>
                "gpushare"
            </a>
            <nav class="app-nav" aria-label="Sections">
                <ul>
                    {SECTIONS
                        .into_iter()
                        .map(|(href, label)| {
                            view! {
                                <li>
                                    // A section stays current on its sub-pages; the fleet is `/` only.
                                    <A href=href exact=href == "/">
                                        {label}
                                    </A>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </nav>
            <div class="header-end">
                <FleetSourceBadge />
                <IdentityBadge />
                <ThemeToggle />
            </div>
        </header>
    }
}
