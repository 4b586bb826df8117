//! The GPU heatmap: one server-rendered SVG. Hydration adds selection by click or keyboard,
//! tooltips, and replacing the SVG when the view or the snapshot changes.

use leptos::prelude::*;

use crate::model::fleet_view::{FleetQuery, GpuDetail};

/// The heatmap of `view` (filters and colour mode), with the GPU `selected` marked. Calls
/// `on_select` with a GPU's key when the user picks one. `live` changes when a newer snapshot
/// exists.
#[component]
pub fn Heatmap(
    view: Memo<FleetQuery>,
    selected: Memo<Option<String>>,
    live: ReadSignal<u64>,
    on_select: Callback<String>,
) -> impl IntoView {
    // The server renders the SVG from its snapshot right here; the browser keeps that markup
    // when it hydrates (an `inner_html` is not rewritten then) and fetches a new one only when
    // the view or the snapshot changes. So the SVG is never sent twice.
    #[cfg(feature = "ssr")]
    let initial = use_context::<crate::service::ServiceContext>()
        .map(|context| {
            crate::service::fleet::heatmap(
                &context,
                &FleetQuery {
                    gpu: selected.get_untracked(),
                    ..view.get_untracked()
                },
            )
        })
        .unwrap_or_default();
    #[cfg(not(feature = "ssr"))]
    let initial = String::new();
    let svg = RwSignal::new(initial);
    let host = NodeRef::<leptos::html::Div>::new();
    let tip = NodeRef::<leptos::html::Div>::new();
    let hovered = RwSignal::new(None::<GpuDetail>);

    #[cfg(feature = "hydrate")]
    client::follow(view, selected, live, svg, host);
    #[cfg(not(feature = "hydrate"))]
    let _ = (live, tip);

    view! {
        <div class="heatmap-scroll">
            <div
                class="heatmap"
                data-testid="heatmap"
                node_ref=host
                tabindex="0"
                role="group"
                aria-label="GPU heatmap. Arrow keys move between GPUs; Enter shows the GPU's details."
                inner_html=move || svg.get()
                on:click=move |event| {
                    #[cfg(feature = "hydrate")]
                    if let Some(key) = client::cell_key(&event) {
                        on_select.run(key);
                    }
                    #[cfg(not(feature = "hydrate"))]
                    let _ = (event, on_select);
                }
                on:keydown=move |event| {
                    #[cfg(feature = "hydrate")]
                    client::keydown(&event, host, on_select);
                    #[cfg(not(feature = "hydrate"))]
                    let _ = event;
                }
                on:mouseover=move |event| {
                    #[cfg(feature = "hydrate")]
                    client::hover(&event, tip, hovered);
                    #[cfg(not(feature = "hydrate"))]
                    let _ = event;
                }
                on:mouseleave=move |_| hovered.set(None)
            ></div>
        </div>
        <div class="tip" node_ref=tip role="tooltip" data-testid="tooltip" hidden=move || hovered.with(Option::is_none)>
            {move || hovered.get().map(|detail| view! { <TipBody detail /> })}
        </div>
    }
}

/// A tooltip's essentials.
#[component]
fn TipBody(detail: GpuDetail) -> impl IntoView {
    let gpu = &detail.gpu;
    let utilization = gpu
        .usage
        .and_then(|u| u.utilization_percent)
        .map_or("no data".to_string(), |r| format!("{:.0} %", r.latest));
    let services = if detail.gpu_services.is_empty() {
        "none".to_string()
    } else {
        detail.gpu_services.join(", ")
    };
    view! {
        <strong>{format!("{} · GPU {}", detail.instance.ec2_instance_id, gpu.index)}</strong>
        <span>{gpu.mode.as_str()}</span>
        <span>
            {format!(
                "Memory {} of {} MiB allocated",
                match gpu.mode {
                    crate::model::SharingMode::Dedicated => gpu.total_memory_mib,
                    _ => gpu.allocated_memory_mib(),
                },
                gpu.total_memory_mib,
            )}
        </span>
        <span>{format!("Compute {} %", gpu.compute_allocated_percent)}</span>
        <span>{format!("Utilisation {utilization}")}</span>
        <span>{format!("Services: {services}")}</span>
    }
}

#[cfg(feature = "hydrate")]
mod client {
    use std::collections::HashMap;

    use leptos::{prelude::*, task::spawn_local, wasm_bindgen::JsCast};
    use web_sys::{Element, KeyboardEvent, MouseEvent};

    use crate::{
        model::fleet_view::{FleetQuery, GpuDetail},
        server_fns::fleet::{fleet_heatmap, gpu_detail},
    };

    /// Fetches a new SVG when the view or the snapshot changes (not at hydration, when the
    /// server's markup is current), and moves the selection mark.
    pub fn follow(
        view: Memo<FleetQuery>,
        selected: Memo<Option<String>>,
        live: ReadSignal<u64>,
        svg: RwSignal<String>,
        host: NodeRef<leptos::html::Div>,
    ) {
        Effect::new(move |previous: Option<()>| {
            let query = view.get();
            live.track();
            let filled = host
                .get_untracked()
                .is_some_and(|div| div.child_element_count() > 0);
            if previous.is_none() && filled {
                return;
            }
            let selected = selected.get_untracked();
            spawn_local(async move {
                if let Ok(markup) = fleet_heatmap(FleetQuery {
                    gpu: selected,
                    ..query
                })
                .await
                {
                    svg.try_set(markup);
                }
            });
        });
        Effect::new(move |_| {
            let key = selected.get();
            let Some(div) = host.get() else { return };
            if let Ok(Some(old)) = div.query_selector("rect.sel") {
                let _ = old.class_list().remove_1("sel");
            }
            if let Some(cell) = key.as_deref().and_then(|k| cell_for(&div, k)) {
                let _ = cell.class_list().add_1("sel");
            }
        });
    }

    /// The cell of `key` (`<EC2 instance ID>:<index>`) in the heatmap.
    fn cell_for(div: &Element, key: &str) -> Option<Element> {
        let crate::model::fleet_view::GpuKey {
            instance: host,
            index,
        } = crate::model::fleet_view::GpuKey::parse(key)?;
        let rows = div.query_selector_all("g[data-i]").ok()?;
        let row = (0..rows.length())
            .filter_map(|n| rows.item(n)?.dyn_into::<Element>().ok())
            .find(|g| g.get_attribute("data-i").as_deref() == Some(host))?;
        row.query_selector(&format!("rect[data-x=\"{index}\"]"))
            .ok()
            .flatten()
    }

    /// The key of a cell.
    fn key_of(cell: &Element) -> Option<String> {
        if cell.tag_name() != "rect" {
            return None;
        }
        let index = cell.get_attribute("data-x")?;
        let host = cell.parent_element()?.get_attribute("data-i")?;
        Some(format!("{host}:{index}"))
    }

    /// The key of the cell an event happened on.
    pub fn cell_key(event: &MouseEvent) -> Option<String> {
        key_of(&event.target()?.dyn_into::<Element>().ok()?)
    }

    thread_local! {
        static DETAILS: std::cell::RefCell<(u64, HashMap<String, GpuDetail>)> =
            std::cell::RefCell::new((0, HashMap::new()));
    }

    /// Shows the tooltip of the cell under the pointer, asking the server once per GPU.
    pub fn hover(
        event: &MouseEvent,
        tip: NodeRef<leptos::html::Div>,
        hovered: RwSignal<Option<GpuDetail>>,
    ) {
        let Some(key) = cell_key(event) else {
            hovered.set(None);
            return;
        };
        if let Some(tip) = tip.get_untracked() {
            let style = web_sys::HtmlElement::style(&tip);
            let _ = style.set_property("left", &format!("{}px", event.client_x() + 14));
            let _ = style.set_property("top", &format!("{}px", event.client_y() + 14));
        }
        if hovered.with_untracked(|h| h.as_ref().is_some_and(|d| d.key == key)) {
            return;
        }
        if let Some(detail) = DETAILS.with(|d| d.borrow().1.get(&key).cloned()) {
            hovered.set(Some(detail));
            return;
        }
        spawn_local(async move {
            if let Ok(Some(detail)) = gpu_detail(key.clone()).await {
                DETAILS.with(|d| {
                    let mut cache = d.borrow_mut();
                    if cache.1.len() > 2_000 {
                        cache.1.clear();
                    }
                    cache.1.insert(key, detail.clone());
                });
                hovered.try_set(Some(detail));
            }
        });
    }

    /// Forgets the tooltips' details: the snapshot changed.
    pub fn forget_details(version: u64) {
        DETAILS.with(|d| {
            let mut cache = d.borrow_mut();
            if cache.0 != version {
                *cache = (version, HashMap::new());
            }
        });
    }

    /// Arrow keys move a cursor between cells; Enter or Space selects the cell under it.
    pub fn keydown(
        event: &KeyboardEvent,
        host: NodeRef<leptos::html::Div>,
        on_select: Callback<String>,
    ) {
        let Some(div) = host.get_untracked() else {
            return;
        };
        let current = div
            .query_selector("rect.cur")
            .ok()
            .flatten()
            .or_else(|| div.query_selector("rect.sel").ok().flatten());
        let key = event.key();
        if matches!(key.as_str(), "Enter" | " ") {
            if let Some(key) = current.as_ref().and_then(key_of) {
                event.prevent_default();
                on_select.run(key);
            }
            return;
        }
        let next = match (key.as_str(), &current) {
            ("ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown" | "Home", None) | ("Home", _) => {
                div.query_selector("rect").ok().flatten()
            }
            ("ArrowRight", Some(cell)) => sibling_cell(cell, true),
            ("ArrowLeft", Some(cell)) => sibling_cell(cell, false),
            ("ArrowDown", Some(cell)) => row_cell(&div, cell, true),
            ("ArrowUp", Some(cell)) => row_cell(&div, cell, false),
            _ => return,
        };
        event.prevent_default();
        let Some(next) = next else { return };
        if let Some(cell) = div.query_selector("rect.cur").ok().flatten() {
            let _ = cell.class_list().remove_1("cur");
        }
        let _ = next.class_list().add_1("cur");
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        next.scroll_into_view_with_scroll_into_view_options(&options);
    }

    fn sibling_cell(cell: &Element, forward: bool) -> Option<Element> {
        let mut next = if forward {
            cell.next_element_sibling()
        } else {
            cell.previous_element_sibling()
        };
        while let Some(element) = next {
            if element.tag_name() == "rect" {
                return Some(element);
            }
            next = if forward {
                element.next_element_sibling()
            } else {
                element.previous_element_sibling()
            };
        }
        None
    }

    /// The cell in the same column of the next or previous instance's row.
    fn row_cell(div: &Element, cell: &Element, down: bool) -> Option<Element> {
        let column = cell.get_attribute("data-x")?;
        let row = cell.parent_element()?;
        let rows = div.query_selector_all("g[data-i]").ok()?;
        let rows: Vec<Element> = (0..rows.length())
            .filter_map(|n| rows.item(n)?.dyn_into::<Element>().ok())
            .collect();
        let at = rows.iter().position(|r| r == &row)?;
        let target = if down {
            rows.get(at + 1)?
        } else {
            rows.get(at.checked_sub(1)?)?
        };
        target
            .query_selector(&format!("rect[data-x=\"{column}\"]"))
            .ok()
            .flatten()
            .or_else(|| {
                let cells = target.query_selector_all("rect").ok()?;
                cells.item(cells.length().checked_sub(1)?)?.dyn_into().ok()
            })
    }
}

#[cfg(feature = "hydrate")]
pub use client::forget_details;
