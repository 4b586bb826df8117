//! Where the editor checks the fit: the whole fleet or one cluster.

use leptos::prelude::*;

/// The choice of `cluster` among `clusters` (empty: the whole fleet).
#[component]
pub fn FitCluster(cluster: RwSignal<String>, clusters: Vec<String>) -> impl IntoView {
    let options = clusters
        .into_iter()
        .map(|name| {
            let value = name.clone();
            view! { <option value=value.clone() selected=move || cluster.get() == value>{name}</option> }
        })
        .collect_view();
    view! {
        <label>
            <span>"Check the fit in"</span>
            <select data-testid="edit-cluster"
                prop:value=move || cluster.get()
                on:change=move |ev| cluster.set(event_target_value(&ev))>
                <option value="" selected=move || cluster.get().is_empty()>"the whole fleet"</option>
                {options}
            </select>
        </label>
    }
}
