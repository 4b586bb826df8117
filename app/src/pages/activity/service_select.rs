//! A `service` select over the cluster's services.

use super::*;

/// A `service` select over the cluster's services.
#[component]
pub(super) fn ServiceSelect(
    services: Vec<String>,
    selected: Option<String>,
    testid: &'static str,
) -> impl IntoView {
    view! {
        <select name="service" data-testid=testid>
            <option value="">"every service"</option>
            {services.into_iter().map(|s| {
                let chosen = selected.as_deref() == Some(s.as_str());
                view! { <option value=s.clone() selected=chosen>{s.clone()}</option> }
            }).collect_view()}
        </select>
    }
}
