//! `/`: every GPU of the fleet as a heatmap — an overview that fits the fleet on a screen, or
//! the detail of a group or an instance — with the summary, filters, a GPU's details and live
//! updates. The filters, colour mode, grouping, order, zoom and selected GPU live in the URL.

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
    let overview = Resource::new(move || (view.get(), live.get()), |(q, _)| fleet_overview(q));
    let detail = Resource::new(
        move || (selected.get(), live.get()),
        |(key, _)| async move {
            match key {
                Some(key) => gpu_detail(key).await,
                None => Ok(None),
            }
        },
    );
    let navigate = use_navigate();
    let on_select = Callback::new(move |key: String| {
        let url = format!(
            "/{}",
            FleetQuery {
                gpu: Some(key),
                ..query.get_untracked()
            }
            .to_query_string()
        );
        navigate(
            &url,
            NavigateOptions {
                replace: true,
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    });
    let navigate = use_navigate();
    // Opening a part is a new page in the history: Back returns to the overview.
    let on_zoom = Callback::new(move |(zoom, gpu): (Zoom, Option<String>)| {
        let url = format!(
            "/{}",
            FleetQuery {
                zoom: Some(zoom),
                gpu,
                ..view.get_untracked()
            }
            .to_query_string()
        );
        navigate(
            &url,
            NavigateOptions {
                scroll: false,
                ..NavigateOptions::default()
            },
        );
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
        {move || {
            parsed
                .with(|(_, notes)| notes.clone())
                .into_iter()
                .map(|note| view! { <p class="banner info" role="status" data-testid="query-note">{note}</p> })
                .collect_view()
        }}
        <Transition fallback=|| view! { <p class="muted">"Reading the fleet…"</p> }>
            {move || Suspend::new(async move {
                match overview.await {
                    Ok(overview) => view! { <Overview overview query /> }.into_any(),
                    Err(error) => view! {
                        <p class="banner error" role="alert">
                            {format!("The fleet could not be shown: {error}. Reload the page to try again.")}
                        </p>
                    }.into_any(),
                }
            })}
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
                    match detail.await {
                        Ok(Some(detail)) => view! { <GpuPanel detail close=close.get_untracked() /> }.into_any(),
                        Ok(None) if selected.get_untracked().is_some() => view! {
                            <aside class="card gpu-panel" role="status" data-testid="gpu-panel">
                                <p>{format!("There is no GPU {:?} in the fleet now. Pick one in the heatmap.", selected.get_untracked().unwrap_or_default())}</p>
                                <a class="button" href=close.get_untracked()>"Close"</a>
                            </aside>
                        }.into_any(),
                        Ok(None) => ().into_any(),
                        Err(error) => view! {
                            <aside class="card gpu-panel" role="alert"><p>{format!("The GPU could not be read: {error}")}</p></aside>
                        }.into_any(),
                    }
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
    overview: Resource<Result<FleetOverview, crate::model::ServiceError>>,
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

/// "Updated 5 s ago", counting on in the browser, and the banners about stale or failing data.
#[component]
fn Freshness(overview: FleetOverview) -> impl IntoView {
    let ticks = RwSignal::new(0_i64);
    #[cfg(feature = "hydrate")]
    {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                ticks.try_update(|t| *t += 1);
            },
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || handle.clear());
        }
    }
    let interval = overview.refresh_interval_seconds;
    let base = overview.age_seconds;
    let age = move || base.map(|a| a + ticks.get());
    let stale_by_age = move || age().is_some_and(|a| a > 3 * interval.max(1) as i64);
    let error = overview.last_error.clone();
    let behind = overview.behind.clone();
    // While backing off, the budget banner says when the next refresh comes.
    let retry = if behind.is_some() {
        "gpushare retries as the ECS API budget allows".to_string()
    } else {
        format!("gpushare keeps retrying every {interval} s")
    };
    let usage_error = overview.usage_error.clone();
    let server_stale = overview.stale;
    view! {
        <p class="freshness" data-testid="freshness">
            {move || match age() {
                Some(age) => format!("Updated {} ago · refreshes every {interval} s", format_age(age)),
                None => "Reading the fleet for the first time…".to_string(),
            }}
        </p>
        <div class="banners">
            {behind.map(|why| view! {
                <p class="banner info" role="status" data-testid="budget-banner">
                    {format!("Fleet data {} old: {why}", format_age(base.unwrap_or(0)))}
                </p>
            })}
            {move || (server_stale || stale_by_age()).then(|| {
                let why = match &error {
                    Some(error) => format!("the last refresh failed: {error}"),
                    None => "no newer snapshot has arrived".to_string(),
                };
                view! {
                    <p class="banner warn" role="alert" data-testid="stale-banner">
                        {format!(
                            "Stale data: this snapshot is {} old and {why}. Showing the last good snapshot; {retry}.",
                            format_age(age().unwrap_or(0)),
                        )}
                    </p>
                }
            })}
            {usage_error.map(|error| view! {
                <p class="banner warn" role="status">
                    {format!("GPU usage could not be read from CloudWatch ({error}); usage shows as no data.")}
                </p>
            })}
            {(overview.unknown_gpu_ids > 0).then(|| view! {
                <p class="banner info" role="status">
                    {format!("{} containers name a GPU that no instance reports (an instance that left, or data in flux).", overview.unknown_gpu_ids)}
                </p>
            })}
        </div>
    }
}

/// `42 s`, `3 min`, `2 h`.
pub fn format_age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s} s"),
        s if s < 7_200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3_600),
    }
}

/// The summary and the filters.
#[component]
fn Overview(overview: FleetOverview, query: Memo<FleetQuery>) -> impl IntoView {
    let notes = overview.notes.clone();
    view! {
        {notes
            .into_iter()
            .map(|note| view! { <p class="banner info" role="status" data-testid="filter-note">{note}</p> })
            .collect_view()}
        <Filters options=overview.options.clone() applied=overview.applied.clone() query />
        {match overview.summary {
            Some(summary) => view! { <Summary summary /> }.into_any(),
            None => view! {
                <p class="banner info" role="status">
                    {match overview.last_error {
                        Some(error) => format!("The fleet could not be read yet: {error}. Check the AWS credentials, region and permissions; gpushare keeps retrying."),
                        None => "Reading the fleet for the first time; this page fills in by itself.".to_string(),
                    }}
                </p>
            }.into_any(),
        }}
    }
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

/// A summary figure that should be zero is highlighted when it is not.
fn stat_class(count: u32) -> &'static str {
    if count > 0 {
        "stat alert"
    } else {
        "stat"
    }
}

fn mib_as_gib(mib: u64) -> String {
    if mib < 10 * 1024 {
        format!("{:.1} GiB", mib as f64 / 1024.0)
    } else {
        format!("{} GiB", thousands((mib + 512) / 1024))
    }
}

#[component]
fn Summary(summary: FleetSummary) -> impl IntoView {
    let percent = |part: u64, whole: u64| (part * 100).checked_div(whole).unwrap_or(0);
    view! {
        <section class="summary" aria-label="Summary" data-testid="summary">
            <div class="stat"><span class="value" data-testid="gpu-count">{summary.gpus}</span><span class="label">"GPUs"</span></div>
            <div class="stat"><span class="value">{summary.idle}</span><span class="label">"idle"</span></div>
            <div class="stat"><span class="value">{summary.shared}</span><span class="label">"shared (MPS)"</span></div>
            <div class="stat"><span class="value">{summary.dedicated}</span><span class="label">"dedicated"</span></div>
            <div class="stat">
                <span class="value">{format!("{} %", percent(summary.memory_allocated_mib, summary.memory_total_mib))}</span>
                <span class="label">{format!("memory allocated: {} of {}", mib_as_gib(summary.memory_allocated_mib), mib_as_gib(summary.memory_total_mib))}</span>
            </div>
            <div class="stat" data-testid="over-limits">
                <span class="value">{summary.oversubscribed}</span>
                <span class="label">"Σ compute limits over 100 %"</span>
            </div>
            <div class=stat_class(summary.contended) data-testid="contended">
                <span class="value">{summary.contended}</span>
                <span class="label">{format!("contended (limits over 100 %, ≥ {} % busy)", summary.contention_threshold)}</span>
                {(summary.over_limits_unknown_use > 0).then(|| view! {
                    <span class="label muted">{format!("{} more without utilisation data", summary.over_limits_unknown_use)}</span>
                })}
            </div>
            <div class=stat_class(summary.impaired_instances)>
                <span class="value">{summary.impaired_instances}</span><span class="label">{format!("impaired of {} instances", summary.instances)}</span>
            </div>
            <div class="stat">
                <span class="value">{summary.without_usage}</span><span class="label">"GPUs without usage data"</span>
            </div>
        </section>
    }
}

/// Per cluster, the largest MPS request that still fits on one GPU.
#[component]
fn FitTable(summary: FleetSummary) -> impl IntoView {
    view! {
        <table class="data-table compact fit-table" data-testid="fit-table">
            <caption>"Largest MPS request that still fits on one GPU (fragmentation)"</caption>
            <thead>
                <tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="num">"GPUs"</th>
                    <th scope="col" class="num">"Free GPU memory"</th>
                    <th scope="col" class="num">"Largest request on one GPU"</th>
                </tr>
            </thead>
            <tbody>
                {summary.clusters.into_iter().map(|fit| view! {
                    <tr>
                        <th scope="row">{fit.cluster}</th>
                        <td class="num">{fit.gpus}</td>
                        <td class="num">{mib_as_gib(fit.free_mib)}</td>
                        <td class="num">{format!("{} MiB", thousands(u64::from(fit.largest_mps_request_mib)))}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The filter form: a plain GET form, so it works without JavaScript; with it, a change
/// applies at once and the URL follows (without empty parameters).
#[component]
fn Filters(options: FleetOptions, applied: FleetQuery, query: Memo<FleetQuery>) -> impl IntoView {
    let select = move |name: &'static str,
                       label: &'static str,
                       all: &'static str,
                       values: Vec<(String, String)>,
                       current: Option<String>| {
        view! {
            <label>
                <span>{label}</span>
                <select name=name data-testid=format!("filter-{name}")>
                    <option value="" selected=current.is_none()>{all}</option>
                    {values.into_iter().map(|(value, text)| {
                        let is = current.as_deref() == Some(value.as_str());
                        view! { <option value=value selected=is>{text}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
    };
    let pairs = |values: Vec<String>| {
        values
            .into_iter()
            .map(|v| (v.clone(), v))
            .collect::<Vec<_>>()
    };
    let modes = [
        SharingMode::Idle,
        SharingMode::NvidiaMps,
        SharingMode::Dedicated,
    ]
    .into_iter()
    .map(|m| (m.as_str().to_string(), m.as_str().to_string()))
    .collect();
    let colour = query.with_untracked(|q| q.colour);
    let navigate = use_navigate();
    let apply = move |event: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use leptos::wasm_bindgen::JsCast;
            event.prevent_default();
            let form = event
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|e| e.closest("form").ok().flatten())
                .and_then(|f| f.dyn_into::<web_sys::HtmlFormElement>().ok());
            let Some(data) = form.and_then(|f| web_sys::FormData::new_with_form(&f).ok()) else {
                return;
            };
            let (next, _) = FleetQuery::from_params(|name| data.get(name).as_string());
            navigate(
                &format!("/{}", next.to_query_string()),
                NavigateOptions {
                    scroll: false,
                    ..NavigateOptions::default()
                },
            );
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (event, &navigate);
    };
    let on_change = apply.clone();
    view! {
        <form method="get" action="/" class="filters" data-testid="filters"
            on:submit=move |event| apply(event.into())
            on:change=on_change
        >
            {select("cluster", "Cluster", "All clusters", pairs(options.clusters), applied.cluster)}
            {select("team", "Team", "All teams", pairs(options.teams), applied.team)}
            {select("service", "Service", "All services", pairs(options.services), applied.service)}
            {select("instance_type", "Instance type", "All types", pairs(options.instance_types), applied.instance_type)}
            {select("mode", "Sharing", "All modes", modes, applied.mode.map(|m| m.as_str().to_string()))}
            <label>
                <span>"Colour by"</span>
                <select name="colour" data-testid="filter-colour">
                    {ColourMode::ALL.into_iter().map(|mode| view! {
                        <option value=mode.as_str() selected=mode == colour>{mode.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>
                <span>"Group by"</span>
                <select name="group" data-testid="filter-group">
                    {Grouping::ALL.into_iter().map(|g| view! {
                        <option value=g.as_str() selected=g == applied.group>{g.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>
                <span>"Sort by"</span>
                <select name="sort" data-testid="filter-sort">
                    {SortKey::ALL.into_iter().map(|s| view! {
                        <option value=s.as_str() selected=s == applied.sort>{s.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            {applied.zoom.as_ref().map(|zoom| view! { <input type="hidden" name="zoom" value=zoom.spelled() /> })}
            <button type="submit">"Apply"</button>
            <a class="button secondary" href="/">"Reset"</a>
        </form>
    }
}

/// Where the heatmap is: the whole fleet, or a part of it with a way back.
#[component]
fn ZoomTrail(view: Memo<FleetQuery>) -> impl IntoView {
    move || {
        let query = view.get();
        let whole = format!(
            "/{}",
            FleetQuery {
                zoom: None,
                ..query.clone()
            }
            .to_query_string()
        );
        match &query.zoom {
            None => view! {
                <p class="zoom-trail" data-testid="zoom-trail" title="Open a group or an instance (click, or the arrow keys and Enter) for its GPUs row by row; Shift+click two instances (or Shift+Enter) to open the range between them.">
                    <strong>"Whole fleet"</strong>
                    {format!(
                        " · by {} · sorted by {}",
                        query.group.label().to_lowercase(),
                        query.sort.phrase(),
                    )}
                </p>
            }
            .into_any(),
            Some(zoom) => view! {
                <nav class="zoom-trail" aria-label="Zoom" data-testid="zoom-trail">
                    <a href=whole data-testid="zoom-out">"Whole fleet"</a>
                    " › "
                    <span aria-current="page">{zoom.label()}</span>
                </nav>
            }
            .into_any(),
        }
    }
}

/// The legend: the colour scale of the mode, the special cells and the sharing-mode glyphs.
#[component]
fn Legend(colour: Signal<ColourMode>) -> impl IntoView {
    view! {
        <div class="legend" data-testid="legend">
            <span class="legend-title">{move || colour.get().label()}</span>
            <span class="scale" aria-hidden="true">
                {(0..10).map(|n| view! { <i class=format!("sw c{n}")></i> }).collect_view()}
            </span>
            <span class="ticks">"0 %"<span>"50 %"</span>"100 %"</span>
            {move || (colour.get() == ColourMode::Compute).then(|| view! {
                <span class="key"><i class="sw c9"></i>"100 % and over: limits are caps, not reservations"</span>
                <span class="key"><i class="sw ov"></i>"over 100 % and busy (contended)"</span>
            })}
            {move || matches!(colour.get(), ColourMode::Utilization | ColourMode::MemoryUsed | ColourMode::Unused).then(|| view! {
                <span class="key"><i class="sw nd"></i>"no data"</span>
            })}
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c6 s" /></svg>"NVIDIA_MPS"</span>
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c9 d" /></svg>"DEDICATED"</span>
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c0 i" /></svg>"IDLE"</span>
        </div>
    }
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
