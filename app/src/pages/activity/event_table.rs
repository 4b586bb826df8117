//! A cluster's events as a table, newest first: when, the service, the kind and ECS's message.

use super::*;

#[component]
pub(super) fn EventTable(events: Vec<ClusterEvent>, cluster: String) -> impl IntoView {
    if events.is_empty() {
        return view! { <p data-testid="events-empty">"No event matches."</p> }.into_any();
    }
    view! {
        <table class="data-table compact" data-testid="events-table">
            <thead><tr>
                <th scope="col">"When (UTC)"</th>
                <th scope="col">"Service"</th>
                <th scope="col">"Kind"</th>
                <th scope="col">"Message"</th>
            </tr></thead>
            <tbody>
                {events.into_iter().map(|e| view! {
                    <tr data-kind=e.kind.as_str() data-service=e.service.clone()>
                        <td class="mono when" title=e.at.clone()>{when(&e.at)}</td>
                        <td><a href=format!("/deployments/{}/{}", encode(&cluster), encode(&e.service))>{e.service.clone()}</a></td>
                        <td><span class=format!("event-kind event-{}", e.kind.as_str())>{e.kind.as_str()}</span></td>
                        <td>{e.message.clone()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
