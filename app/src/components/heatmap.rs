//! The GPU heatmap: one server-rendered SVG, the overview of the fleet or the detail of a
//! part. Hydration adds zooming and selection by click or keyboard, tooltips, and replacing
//! the SVG when the view or the snapshot changes.

use leptos::prelude::*;

use crate::model::fleet_view::{FleetQuery, GpuDetail, Zoom};

/// The heatmap of `view` (filters, colour mode, grouping, order and zoom), with the GPU
/// `selected` marked. Calls `on_select` with a GPU's key when the user picks one in the
/// detail, and `on_zoom` with a part (and the GPU picked in it, if any) when the user opens a
/// group or an instance of the overview. `live` changes when a newer snapshot exists.
#[component]
pub fn Heatmap(
    view: Memo<FleetQuery>,
    selected: Memo<Option<String>>,
    live: ReadSignal<u64>,
    on_select: Callback<String>,
    on_zoom: Callback<(Zoom, Option<String>)>,
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
    // The keyboard's place: a block's instance ID in the overview, a GPU's key in the detail.
    // Kept apart from the markup, so a live update that replaces the SVG keeps it.
    let cursor = RwSignal::new(None::<String>);
    // The first block of a range being brushed (Shift+click or Shift+Enter on two blocks).
    let anchor = RwSignal::new(None::<String>);

    #[cfg(feature = "hydrate")]
    client::follow(view, selected, live, svg, host, cursor);
    #[cfg(not(feature = "hydrate"))]
    let _ = (live, tip, cursor, anchor);

    view! {
        <div class="heatmap-scroll">
            <div
                class="heatmap"
                data-testid="heatmap"
                node_ref=host
                tabindex="0"
                role="group"
                aria-label=move || if view.with(|v| v.zoom.is_some()) {
                    "GPU heatmap. Arrow keys move between GPUs; Enter shows the GPU's details."
                } else {
                    "GPU heatmap of the whole fleet, an instance a block. Arrow keys move between instances; Enter opens one; Shift+Enter on two instances opens the range between them. Tab reaches the groups."
                }
                inner_html=move || svg.get()
                on:click=move |event| {
                    #[cfg(feature = "hydrate")]
                    client::click(&event, host, anchor, on_select, on_zoom);
                    #[cfg(not(feature = "hydrate"))]
                    let _ = (event, on_select, on_zoom);
                }
                on:keydown=move |event| {
                    #[cfg(feature = "hydrate")]
                    client::keydown(&event, host, cursor, anchor, on_select, on_zoom);
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
        model::fleet_view::{FleetQuery, GpuDetail, Zoom},
        server_fns::fleet::{fleet_heatmap, gpu_detail},
    };

    /// Fetches a new SVG when the view or the snapshot changes (not at hydration, when the
    /// server's markup is current), keeping only the answer to the latest request, and moves the
    /// selection mark.
    pub fn follow(
        view: Memo<FleetQuery>,
        selected: Memo<Option<String>>,
        live: ReadSignal<u64>,
        svg: RwSignal<String>,
        host: NodeRef<leptos::html::Div>,
        cursor: RwSignal<Option<String>>,
    ) {
        // Which request is the latest: an answer to an older one (a live update's, say, that
        // lands after the answer to the zoom that followed it) is dropped, not shown.
        let latest = StoredValue::new(0_u64);
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
            let asked = latest.get_value().wrapping_add(1);
            latest.set_value(asked);
            spawn_local(async move {
                let answer = fleet_heatmap(FleetQuery {
                    gpu: selected,
                    ..query
                })
                .await;
                if let Ok(markup) = answer {
                    if latest.try_get_value() == Some(asked) {
                        svg.try_set(markup);
                    }
                }
            });
        });
        Effect::new(move |_| {
            let key = selected.get();
            svg.track();
            let Some(div) = host.get() else { return };
            if let Ok(Some(old)) = div.query_selector("rect.sel") {
                let _ = old.class_list().remove_1("sel");
            }
            if let Some(cell) = key.as_deref().and_then(|k| cell_for(&div, k)) {
                let _ = cell.class_list().add_1("sel");
            }
        });
        // A new SVG (the snapshot or the view changed): the cursor stays where it was.
        Effect::new(move |_| {
            svg.track();
            let Some(div) = host.get() else { return };
            let at = cursor.with_untracked(|c| c.clone());
            if let Some(element) = at.and_then(|key| cursor_element(&div, &key)) {
                mark_cursor(&div, &element);
            }
        });
    }

    /// Brushing: the first block marks the start of a range; the second opens every block
    /// between the two, in the overview's order.
    fn brush(
        div: &Element,
        anchor: RwSignal<Option<String>>,
        id: &str,
        on_zoom: Callback<(Zoom, Option<String>)>,
    ) {
        let Some(start) = anchor.get_untracked() else {
            if let Some(block) = block_for(div, id) {
                let _ = block.class_list().add_1("brush");
            }
            anchor.set(Some(id.to_string()));
            return;
        };
        anchor.set(None);
        let Ok(list) = div.query_selector_all("a[data-i]") else {
            return;
        };
        let ids: Vec<String> = (0..list.length())
            .filter_map(|n| {
                list.item(n)?
                    .dyn_into::<Element>()
                    .ok()?
                    .get_attribute("data-i")
            })
            .collect();
        let (Some(a), Some(b)) = (
            ids.iter().position(|i| *i == start),
            ids.iter().position(|i| i == id),
        ) else {
            return;
        };
        let (from, to) = (a.min(b), a.max(b));
        let mut range: Vec<String> = ids[from..=to].to_vec();
        // An instance split across groups (by team) appears once.
        let mut seen = std::collections::HashSet::new();
        range.retain(|i| seen.insert(i.clone()));
        range.truncate(crate::model::fleet_view::MAX_BRUSHED);
        on_zoom.run((Zoom::Instances(range), None));
    }

    /// Whether the heatmap shows the overview (blocks) rather than the detail (rows).
    fn is_overview(div: &Element) -> bool {
        div.query_selector("svg.packed").ok().flatten().is_some()
    }

    /// The block of instance `id` in the overview.
    fn block_for(div: &Element, id: &str) -> Option<Element> {
        let blocks = div.query_selector_all("a[data-i]").ok()?;
        (0..blocks.length())
            .filter_map(|n| blocks.item(n)?.dyn_into::<Element>().ok())
            .find(|a| a.get_attribute("data-i").as_deref() == Some(id))
    }

    /// The element the cursor `key` names: a GPU's cell, or in the overview an instance's block.
    fn cursor_element(div: &Element, key: &str) -> Option<Element> {
        if is_overview(div) {
            block_for(div, key)
        } else {
            cell_for(div, key)
        }
    }

    /// Moves the cursor mark to `element`.
    fn mark_cursor(div: &Element, element: &Element) {
        if let Ok(Some(old)) = div.query_selector(".cur") {
            let _ = old.class_list().remove_1("cur");
        }
        let _ = element.class_list().add_1("cur");
    }

    /// The key the cursor keeps for `element`.
    fn cursor_key(element: &Element) -> Option<String> {
        if element.tag_name() == "a" {
            element.get_attribute("data-i")
        } else {
            key_of(element)
        }
    }

    /// A click in the heatmap: in the overview, a group's header or an instance's block opens
    /// it (a GPU's cell opens its instance with the GPU selected); in the detail, a cell
    /// selects its GPU.
    pub fn click(
        event: &MouseEvent,
        host: NodeRef<leptos::html::Div>,
        anchor: RwSignal<Option<String>>,
        on_select: Callback<String>,
        on_zoom: Callback<(Zoom, Option<String>)>,
    ) {
        let Some(target) = event.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
            return;
        };
        let link = target.closest("a").ok().flatten();
        let key = key_of(&target);
        let Some(link) = link else {
            if let Some(key) = key {
                on_select.run(key);
            }
            return;
        };
        // The links are for pages without JavaScript; here the router navigates.
        event.prevent_default();
        if event.shift_key() {
            if let (Some(div), Some(id)) = (host.get_untracked(), link.get_attribute("data-i")) {
                brush(&div, anchor, &id, on_zoom);
            }
            return;
        }
        if let Some(zoom) = link.get_attribute("data-z").and_then(|z| Zoom::parse(&z)) {
            on_zoom.run((zoom, None));
        } else if let Some(id) = link.get_attribute("data-i") {
            on_zoom.run((Zoom::Instance(id), key));
        }
    }

    /// The cell of `key` (`<EC2 instance ID>:<index>`) in the heatmap.
    fn cell_for(div: &Element, key: &str) -> Option<Element> {
        let crate::model::fleet_view::GpuKey {
            instance: host,
            index,
        } = crate::model::fleet_view::GpuKey::parse(key)?;
        let rows = div.query_selector_all("[data-i]").ok()?;
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

    /// Arrow keys move a cursor between cells (in the overview, between instances' blocks);
    /// Enter or Space selects the GPU (opens the instance) under it.
    pub fn keydown(
        event: &KeyboardEvent,
        host: NodeRef<leptos::html::Div>,
        cursor: RwSignal<Option<String>>,
        anchor: RwSignal<Option<String>>,
        on_select: Callback<String>,
        on_zoom: Callback<(Zoom, Option<String>)>,
    ) {
        let Some(div) = host.get_untracked() else {
            return;
        };
        // Keys on a group's header link are the link's own (Enter follows it).
        if event
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .is_some_and(|t| t.closest("a").ok().flatten().is_some())
        {
            return;
        }
        if is_overview(&div) {
            overview_keydown(event, &div, cursor, anchor, on_zoom);
            return;
        }
        let current = cursor
            .with_untracked(|c| c.clone())
            .and_then(|key| cell_for(&div, &key))
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
        move_cursor(&div, &next, cursor);
    }

    /// Marks `next` as the cursor, remembers it, and scrolls it into view.
    fn move_cursor(div: &Element, next: &Element, cursor: RwSignal<Option<String>>) {
        mark_cursor(div, next);
        cursor.set(cursor_key(next));
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        next.scroll_into_view_with_scroll_into_view_options(&options);
    }

    /// A block's place in the overview, from its `translate(x,y)`.
    fn position(block: &Element) -> Option<(f64, f64)> {
        let transform = block.get_attribute("transform")?;
        let inner = transform.strip_prefix("translate(")?.strip_suffix(')')?;
        let (x, y) = inner.split_once(',')?;
        Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
    }

    /// The overview's keys: Home the first block, arrows to the neighbouring block (up and
    /// down to the nearest block of the row above or below), Enter or Space opens it.
    fn overview_keydown(
        event: &KeyboardEvent,
        div: &Element,
        cursor: RwSignal<Option<String>>,
        anchor: RwSignal<Option<String>>,
        on_zoom: Callback<(Zoom, Option<String>)>,
    ) {
        let Ok(list) = div.query_selector_all("a[data-i]") else {
            return;
        };
        let blocks: Vec<Element> = (0..list.length())
            .filter_map(|n| list.item(n)?.dyn_into::<Element>().ok())
            .collect();
        let at = cursor.with_untracked(|c| c.clone()).and_then(|id| {
            blocks
                .iter()
                .position(|b| b.get_attribute("data-i").as_deref() == Some(id.as_str()))
        });
        let key = event.key();
        if matches!(key.as_str(), "Enter" | " ") {
            if let Some(id) = at.and_then(|n| blocks[n].get_attribute("data-i")) {
                event.prevent_default();
                if event.shift_key() {
                    brush(div, anchor, &id, on_zoom);
                } else {
                    on_zoom.run((Zoom::Instance(id), None));
                }
            }
            return;
        }
        if key == "Escape" && anchor.get_untracked().is_some() {
            anchor.set(None);
            if let Ok(Some(marked)) = div.query_selector(".brush") {
                let _ = marked.class_list().remove_1("brush");
            }
            return;
        }
        let next = match (key.as_str(), at) {
            ("Home", _) | ("ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown", None) => Some(0),
            ("End", _) => blocks.len().checked_sub(1),
            ("ArrowRight", Some(n)) => Some((n + 1).min(blocks.len().saturating_sub(1))),
            ("ArrowLeft", Some(n)) => Some(n.saturating_sub(1)),
            ("ArrowDown", Some(n)) => vertical(&blocks, n, true),
            ("ArrowUp", Some(n)) => vertical(&blocks, n, false),
            _ => return,
        };
        event.prevent_default();
        if let Some(next) = next.and_then(|n| blocks.get(n)) {
            move_cursor(div, next, cursor);
        }
    }

    /// The block of the next row below (or above) block `n`, nearest to it across.
    fn vertical(blocks: &[Element], n: usize, down: bool) -> Option<usize> {
        let (x, y) = position(&blocks[n])?;
        let places: Vec<(usize, f64, f64)> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| position(b).map(|(bx, by)| (i, bx, by)))
            .collect();
        let row = places
            .iter()
            .map(|(_, _, by)| *by)
            .filter(|by| if down { *by > y } else { *by < y })
            .fold(None::<f64>, |best, by| match best {
                None => Some(by),
                Some(b) if (down && by < b) || (!down && by > b) => Some(by),
                keep => keep,
            })?;
        places
            .iter()
            .filter(|(_, _, by)| *by == row)
            .min_by(|a, b| {
                (a.1 - x)
                    .abs()
                    .partial_cmp(&(b.1 - x).abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(i, _, _)| *i)
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
