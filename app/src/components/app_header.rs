//! The header on every page: the product name, the navigation and the theme switch.

mod theme_toggle;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_router::{components::A, hooks::use_location};

use crate::{
    components::{fleet_source_badge::FleetSourceBadge, identity_badge::IdentityBadge},
    server_fns::approvals::approvals_waiting,
};
use theme_toggle::ThemeToggle;

/// The sections of the console, in the order the navigation lists them.
const SECTIONS: [(&str, &str); 6] = [
    ("/", "Fleet"),
    ("/capacity", "Capacity"),
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
                    <li>
                        <A href="/approvals">"Approvals"<WaitingCount /></A>
                    </li>
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

/// How many requests wait on the person (theirs to decide, or their own), read again on each
/// navigation; nothing when none.
#[component]
fn WaitingCount() -> impl IntoView {
    let location = use_location();
    let waiting = fetched(move || location.pathname.get(), |_| approvals_waiting());
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                waiting.await.ok().filter(|n| *n > 0).map(|n| view! {
                    " "<span class="nav-count" data-testid="approvals-waiting" aria-label=format!("{n} waiting")>{n}</span>
                })
            })}
        </Transition>
    }
}
