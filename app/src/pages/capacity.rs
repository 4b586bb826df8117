//! `/capacity`: each cluster's capacity providers — their type, what they may launch, how ECS
//! looks after their instances, their size and limit, the tasks that wait, and the instances that
//! arrived lately or are leaving — and the cluster's default strategy.

mod new_provider_form;
mod provider_card;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::capacity::{ClusterCapacity, LaunchOption, ProviderView, StrategyItem},
    server_fns::capacity::list_capacity,
};

use self::{new_provider_form::NewProviderForm, provider_card::ProviderCard};

/// The capacity providers page; `?cluster=` shows one cluster's.
#[component]
pub fn CapacityPage() -> impl IntoView {
    let query = use_query_map();
    let cluster = Memo::new(move |_| query.with(|q| q.get("cluster").filter(|c| !c.is_empty())));
    let read = fetched(move || cluster.get(), list_capacity);
    view! {
        <Title text="Capacity providers" />
        <h1>"Capacity providers"</h1>
        <p class="muted">"Where each cluster's GPU capacity comes from: ECS Managed Instances providers launch the most cost-effective type their requirements match and replace instances whose MPS daemon is impaired; Auto Scaling group providers grow their group by managed scaling, up to its MaxSize. Instances registered by hand belong to no provider."</p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the capacity providers…"</p> }>
            {move || Suspend::new(async move {
                match read.await {
                    Ok(clusters) if clusters.is_empty() => view! { <p>"The fleet has no cluster."</p> }.into_any(),
                    Ok(clusters) => clusters.into_iter().map(|c| view! { <ClusterProviders cluster=c /> }).collect_view().into_any(),
                    Err(error) => view! { <ErrorBanner error lead="The capacity providers could not be read: " /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A capacity provider strategy in words, or `none` when it is empty.
pub(crate) fn strategy_text(strategy: &[StrategyItem], none: &str) -> String {
    if strategy.is_empty() {
        return none.to_string();
    }
    strategy
        .iter()
        .map(|s| {
            format!(
                "{} (weight {}, base {})",
                s.capacity_provider, s.weight, s.base
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One cluster's providers and default strategy.
#[component]
fn ClusterProviders(cluster: ClusterCapacity) -> impl IntoView {
    let strategy = strategy_text(
        &cluster.default_strategy,
        "none: services without a strategy or launch type use the EC2 launch type",
    );
    let name = cluster.cluster.clone();
    view! {
        <section class="card" data-testid="capacity-cluster" data-cluster=name.clone()>
            <h2>{name.clone()}</h2>
            <p class="muted">{format!("Default capacity provider strategy: {strategy}.")}</p>
            {cluster.notes.into_iter().map(|n| view! { <p class="banner warn" role="status">{n}</p> }).collect_view()}
            {if cluster.providers.is_empty() {
                view! { <p data-testid="capacity-none">"No capacity provider: every instance was registered by hand, and the fleet does not grow by itself."</p> }.into_any()
            } else {
                cluster.providers.into_iter().map(|p| view! { <ProviderCard provider=p /> }).collect_view().into_any()
            }}
            <NewProviderForm cluster=name.clone() />
        </section>
    }
}

/// "4 × NVIDIA L4 (22,491 MiB), 48 vCPUs, 192 GiB".
pub(crate) fn type_text(option: &LaunchOption) -> String {
    let f = &option.facts;
    format!(
        "{} × {} ({} MiB), {} vCPUs, {} GiB",
        f.gpus,
        f.accelerator_name.to_uppercase(),
        f.total_gpu_memory_mib / f.gpus.max(1) as u32,
        f.vcpus,
        f.memory_mib / 1024
    )
}

/// How the provider's type is said in the table's first column.
pub(crate) fn kind_text(provider: &ProviderView) -> &'static str {
    provider.kind.label()
}
