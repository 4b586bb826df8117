//! `/`: every GPU of the fleet as a heatmap — an overview that fits the fleet on a screen, or
//! the detail of a group or an instance — with the summary, filters, a GPU's details and live
//! updates. The filters, colour mode, grouping, order, zoom and selected GPU live in the URL.

mod filters;
mod fit_table;
mod freshness;
mod legend;
mod overview;
mod summary;
mod zoom_trail;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::{
    hooks::{use_navigate, use_query_map},
    NavigateOptions,
};

use crate::{
    components::budget_bars::BudgetBars,
    components::{
        cluster_table::ClusterTable, console_status::ConsoleStatusCard, gpu_panel::GpuPanel,
        heatmap::Heatmap,
    },
    model::fleet_view::{
        ColourMode, FleetOptions, FleetOverview, FleetQuery, FleetSummary, Grouping, SortKey, Zoom,
    },
    model::SharingMode,
    server_fns::fleet::{fleet_overview, gpu_detail},
};

pub use self::freshness::format_age;
use self::{
    filters::Filters, fit_table::FitTable, freshness::Freshness, legend::Legend,
    overview::Overview, summary::mib_as_gib, summary::Summary, zoom_trail::ZoomTrail,
};

/// The fleet page.
#[component]
pub fn FleetPage() -> impl IntoView {
    let params = use_query_map();
    let parsed = Memo::new(move |_| params.with(|p| FleetQuery::from_params(|name| p.get(name))));
    let query = Memo::new(move |_| parsed.with(|(q, _)| q.clone()));
    let selected = Memo::new(move |_| query.with(|q| q.gpu.clone()));
    // The view without the selection: selecting a GPU re-renders nothing but the panel.
    let view = Memo::new(move |_| FleetQuery {
        gpu: None,
        ..query.get()
    });
    let (live, set_live) = signal(0_u64);
    let overview = fetched(move || (view.get(), live.get()), |(q, _)| fleet_overview(q));
    let detail = detail_of(selected, live);
    let select_to = query_navigator(true);
    let on_select = Callback::new(move |key: String| {
        select_to(FleetQuery {
            gpu: Some(key),
            ..query.get_untracked()
        })
    });
    // Opening a part is a new page in the history: Back returns to the overview.
    let zoom_to = query_navigator(false);
    let on_zoom = Callback::new(move |(zoom, gpu): (Zoom, Option<String>)| {
        zoom_to(FleetQuery {
            zoom: Some(zoom),
            gpu,
            ..view.get_untracked()
        })
    });
    let close = Memo::new(move |_| format!("/{}", view.get().to_query_string()));

    #[cfg(feature = "hydrate")]
    live_updates(overview, set_live);
    #[cfg(not(feature = "hydrate"))]
    let _ = set_live;

    view! {
        <Title text="Fleet" />
        <div class="page-title">
            <h1>"Fleet"</h1>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    overview.await.ok().map(|o| view! { <Freshness overview=o /> })
                })}
            </Transition>
        </div>
        {move || query_notes(parsed.with(|(_, notes)| notes.clone()))}
        <Transition fallback=|| view! { <p class="muted">"Reading the fleet…"</p> }>
            {move || Suspend::new(async move { overview_or_error(overview.await, query) })}
        </Transition>
        <div class="fleet-body">
            <section class="card heatmap-card" aria-labelledby="heatmap-heading">
                <h2 id="heatmap-heading" class="visually-hidden">"GPUs"</h2>
                <div class="heatmap-head">
                    <ZoomTrail view />
                    <Legend colour=Signal::derive(move || query.with(|q| q.colour)) />
                </div>
                <Heatmap view selected live on_select on_zoom />
            </section>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    selected_gpu(detail.await, selected.get_untracked(), close.get_untracked())
                })}
            </Transition>
        </div>
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                overview.await.ok().and_then(|o| o.summary).map(|summary| view! { <FitTable summary /> })
            })}
        </Transition>
        <BudgetBars cluster=None />
        <ClusterTable />
        <ConsoleStatusCard />
    }
}

/// The selected GPU's details, read again with each live update.
fn detail_of(
    selected: Memo<Option<String>>,
    live: ReadSignal<u64>,
) -> Resource<
    Result<Option<crate::model::fleet_view::GpuDetail>, crate::model::ServiceError>,
    crate::resource::JsonCodec,
> {
    fetched(
        move || (selected.get(), live.get()),
        |(key, _)| async move {
            match key {
                Some(key) => gpu_detail(key).await,
                None => Ok(None),
            }
        },
    )
}

/// What the URL's query could not mean, said as it was read.
fn query_notes(notes: Vec<String>) -> impl IntoView {
    notes
        .into_iter()
        .map(|note| view! { <p class="banner info" role="status" data-testid="query-note">{note}</p> })
        .collect_view()
}

/// The overview's summary and filters, or why the fleet could not be shown.
fn overview_or_error(
    overview: Result<FleetOverview, crate::model::ServiceError>,
    query: Memo<FleetQuery>,
) -> AnyView {
    match overview {
        Ok(overview) => view! { <Overview overview query /> }.into_any(),
        Err(error) => view! {
            <p class="banner error" role="alert">
                {format!("The fleet could not be shown: {error}. Reload the page to try again.")}
            </p>
        }
        .into_any(),
    }
}

/// A navigation to the fleet page at another query, without scrolling; `replace` keeps it
/// out of the history.
fn query_navigator(replace: bool) -> impl Fn(FleetQuery) + Clone + 'static {
    let navigate = use_navigate();
    move |query: FleetQuery| {
        navigate(
            &format!("/{}", query.to_query_string()),
            NavigateOptions {
                replace,
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    }
}

/// The selected GPU's panel; or, when the GPU is gone or could not be read, what happened.
fn selected_gpu(
    detail: Result<Option<crate::model::fleet_view::GpuDetail>, crate::model::ServiceError>,
    selected: Option<String>,
    close: String,
) -> AnyView {
    match detail {
        Ok(Some(detail)) => view! { <GpuPanel detail close /> }.into_any(),
        Ok(None) => match selected {
            Some(selected) => view! {
                <aside class="card gpu-panel" role="status" data-testid="gpu-panel">
                    <p>{format!("There is no GPU {selected:?} in the fleet now. Pick one in the heatmap.")}</p>
                    <a class="button" href=close>"Close"</a>
                </aside>
            }
            .into_any(),
            None => ().into_any(),
        },
        Err(error) => view! {
            <aside class="card gpu-panel" role="alert"><p>{format!("The GPU could not be read: {error}")}</p></aside>
        }
        .into_any(),
    }
}

/// What `/api/v1/fleet/events` says: the server's snapshot and whether it is stale.
#[cfg(feature = "hydrate")]
#[derive(serde::Deserialize)]
struct FleetNews {
    version: u64,
    #[serde(default)]
    stale: bool,
}

/// Listens to `/api/v1/fleet/events` and refetches when the server holds a newer snapshot (or
/// its refresh state changed); ticks the age shown.
#[cfg(feature = "hydrate")]
fn live_updates(
    overview: Resource<
        Result<FleetOverview, crate::model::ServiceError>,
        crate::resource::JsonCodec,
    >,
    set_live: WriteSignal<u64>,
) {
    use crate::client::{listen_json, Next};

    Effect::new(move |_| {
        listen_json("/api/v1/fleet/events", move |news: FleetNews| {
            let Some(shown) = overview.try_get_untracked() else {
                // The page is gone: stop listening.
                return Next::Stop;
            };
            let differs = match shown {
                Some(Ok(shown)) => shown.version != news.version || shown.stale != news.stale,
                _ => true,
            };
            if differs {
                crate::components::heatmap::forget_details(news.version);
                set_live.update(|n| *n += 1);
            }
            Next::Listen
        });
    });
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{format_age, thousands};

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(967_540), "967,540");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }

    #[test]
    fn memory_reads_in_gib() {
        assert_eq!(super::mib_as_gib(1_536), "1.5 GiB");
        assert_eq!(super::mib_as_gib(50_048_628), "48,876 GiB");
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(format_age(0), "0 s");
        assert_eq!(format_age(119), "119 s");
        assert_eq!(format_age(600), "10 min");
        assert_eq!(format_age(10_800), "3 h");
        assert_eq!(format_age(-5), "0 s");
    }
}
