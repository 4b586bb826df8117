//! The HTML document and the top-level component with its routes.

#[cfg(feature = "ssr")]
mod request;
#[cfg(feature = "ssr")]
pub use request::CspNonce;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, Meta, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

use crate::components::app_header::AppHeader;
use crate::pages::{
    activity::{ClusterEventsPage, StoppedTasksPage},
    approvals::{ApprovalPage, ApprovalsPage},
    audit::AuditPage,
    capacity::CapacityPage,
    cost::CostPage,
    cost_months::CostMonthsPage,
    cost_plan::CostPlanPage,
    cost_reconciliation::CostReconciliationPage,
    deployments::{DeploymentWatchPage, DeploymentsPage, NewServicePage, ServicePage},
    fleet::FleetPage,
    not_found::NotFound,
    task_definitions::{
        TaskDefinitionComparePage, TaskDefinitionFamilyPage, TaskDefinitionRevisionPage,
        TaskDefinitionsPage,
    },
};

/// The whole HTML document, rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    request::provide_request_nonce();
    #[cfg(feature = "ssr")]
    let theme = request::request_theme();
    // The theme toggle labels itself with the theme the page is rendered with.
    #[cfg(feature = "ssr")]
    provide_context(theme);
    #[cfg(not(feature = "ssr"))]
    let theme = crate::model::Theme::System;

    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=theme.attribute()>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The console: the header with its navigation, and one page per route.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    mark_hydrated();

    view! {
        <Stylesheet id="gpushare-style" href="/pkg/gpushare.css" />
        <Link rel="icon" type_="image/svg+xml" href="/favicon.svg" />
        <Meta name="color-scheme" content="light dark" />
        <Meta
            name="description"
            content="gpushare: the GPUs of your Amazon ECS fleet and how their tasks share them."
        />
        <Title formatter=|page: String| {
            if page.is_empty() { "gpushare".to_string() } else { format!("{page} · gpushare") }
        } />
        <Router>
            <a class="skip-link" href="#main">
                "Skip to content"
            </a>
            <AppHeader />
            <main id="main" class="page">
                <Routes fallback=|| view! { <NotFound /> }>
                    <Route path=path!("/") view=FleetPage ssr=SsrMode::Async />
                    <Route
                        path=path!("/task-definitions")
                        view=TaskDefinitionsPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=path!("/task-definitions/:family")
                        view=TaskDefinitionFamilyPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=path!("/task-definitions/:family/compare")
                        view=TaskDefinitionComparePage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=path!("/task-definitions/:family/:revision")
                        view=TaskDefinitionRevisionPage
                        ssr=SsrMode::Async
                    />
                    <Route path=path!("/deployments") view=DeploymentsPage ssr=SsrMode::Async />
                    <Route path=path!("/deployments/new") view=NewServicePage ssr=SsrMode::Async />
                    <Route
                        path=path!("/deployments/:cluster/:service")
                        view=ServicePage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=path!("/clusters/:cluster/events")
                        view=ClusterEventsPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=path!("/clusters/:cluster/stopped-tasks")
                        view=StoppedTasksPage
                        ssr=SsrMode::Async
                    />
                    <Route path=path!("/rollouts/:id") view=DeploymentWatchPage ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=AuditPage ssr=SsrMode::Async />
                    <Route path=path!("/approvals") view=ApprovalsPage ssr=SsrMode::Async />
                    <Route path=path!("/approvals/:id") view=ApprovalPage ssr=SsrMode::Async />
                    <Route path=path!("/capacity") view=CapacityPage ssr=SsrMode::Async />
                    <Route path=path!("/cost") view=CostPage ssr=SsrMode::Async />
                    <Route path=path!("/cost/plan") view=CostPlanPage ssr=SsrMode::Async />
                    <Route path=path!("/cost/months") view=CostMonthsPage ssr=SsrMode::Async />
                    <Route path=path!("/cost/reconciliation") view=CostReconciliationPage ssr=SsrMode::Async />
                </Routes>
            </main>
        </Router>
    }
}

/// Marks `<body data-hydrated="true">` once the WebAssembly half has taken over the page, for
/// end-to-end tests and for measuring the time to interactive. Effects never run on the server.
fn mark_hydrated() {
    Effect::new(|_| {
        #[cfg(feature = "hydrate")]
        if let Some(body) = document().body() {
            // Setting an attribute on <body> cannot fail in a browser.
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
}
