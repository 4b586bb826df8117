//! The filter form: a plain GET form, so it works without JavaScript; with it, a change applies at
//! once and the URL follows (without empty parameters).

use super::*;

/// The filter form: a plain GET form, so it works without JavaScript; with it, a change
/// applies at once and the URL follows (without empty parameters).
#[component]
pub(super) fn Filters(
    options: FleetOptions,
    applied: FleetQuery,
    query: Memo<FleetQuery>,
) -> impl IntoView {
    let select = filter_select;
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
    let apply = filters_applier();
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

/// One filter's `<select>`: every value, or one of `values` (value, text).
fn filter_select(
    name: &'static str,
    label: &'static str,
    all: &'static str,
    values: Vec<(String, String)>,
    current: Option<String>,
) -> impl IntoView {
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
}

/// With JavaScript, the form applied at once: the page goes to the form's query, without
/// scrolling.
fn filters_applier() -> impl Fn(leptos::ev::Event) + Clone + 'static {
    let navigate = use_navigate();
    move |event: leptos::ev::Event| {
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
    }
}
