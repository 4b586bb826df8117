//! `/deployments`: every service with its revision, GPU setting, task counts, rollout state and
//! deployment configuration; and `/deployments/:cluster/:service`: a revision of its family
//! compared with what runs, and the capacity pre-check of rolling it out.

mod cluster_links;
mod deploy_form;
mod growth_view;
mod new_service_page;
mod pre_check_view;
mod recent_events;
mod retire_form;
mod scale_form;
mod service_page;
mod service_rollout;
mod service_table;
mod watch;
mod watch_page;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::budget_bars::BudgetBars,
    components::{
        error_banner::{set_status, ErrorBanner},
        stale_reads::{stale_reads_after, StaleReadsBanner},
        td_views::{DiffTable, GpuChanges},
    },
    model::{
        activity::{when, EventFeed, EventFilter},
        arn::{arn_tail, RevisionRef},
        audit::AuditAction,
        budget::mib_words,
        cost::money,
        deployment::{
            DeployRequest, PreCheck, RestartRequest, RolloutResult, ScaleRequest, ServiceRow,
            WatchState,
        },
        fleet_view::encode,
        retire::{RetirePreview, RetireRequest},
        rollout::{GrowthPlan, RolloutCheck, Verdict},
        ServiceError,
    },
    pages::activity::TaskTable,
    server_fns::activity::cluster_events,
    server_fns::deployments::{
        deployment_state, list_services, pre_check_rollout, CheckNewService, CreateNewService,
        DeployService, PreviewRetirement, RestartService, RetireService, ScaleService,
    },
};

pub use self::new_service_page::NewServicePage;
pub use self::service_page::ServicePage;
pub use self::watch_page::DeploymentWatchPage;
use self::{
    cluster_links::ClusterLinks,
    deploy_form::DeployForm,
    growth_view::GrowthView,
    pre_check_view::PreCheckView,
    recent_events::{recent_events, RecentEvents},
    retire_form::RetireForm,
    scale_form::ScaleForm,
    service_rollout::ServiceRollout,
    service_table::ServiceTable,
    watch::Watch,
};

/// The services page.
#[component]
pub fn DeploymentsPage() -> impl IntoView {
    let query = use_query_map();
    let cluster = Memo::new(move |_| query.with(|q| q.get("cluster").filter(|c| !c.is_empty())));
    let rows = fetched(move || cluster.get(), list_services);
    let stale = stale_reads_after(rows);
    view! {
        <Title text="Deployments" />
        <h1>"Deployments"</h1>
        <p><a class="button" href="/deployments/new" data-testid="new-service-link">"New GPU service"</a></p>
        <p class="muted">
            "Every service with the revision it runs, that revision's GPU settings, its tasks, its rollout and its deployment configuration. Open a service to check whether a revision's rolling update fits the fleet."
        </p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the services…"</p> }>
            {move || Suspend::new(async move {
                match rows.await {
                    Ok(rows) if rows.is_empty() => view! {
                        <p data-testid="no-services">"There are no services in this fleet."</p>
                    }.into_any(),
                    Ok(rows) => view! { <StaleReadsBanner status=stale /><ClusterLinks rows=rows.clone() /><ServiceTable rows /> }.into_any(),
                    Err(error) => view! {
                        <p class="banner error" role="alert" data-testid="services-error">{format!("The services could not be read: {error}")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
        <BudgetBars cluster=cluster.get_untracked() />
    }
}
