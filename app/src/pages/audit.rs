//! `/audit`: every registration, deployment and rollback, filtered by action, resource and
//! outcome, with a CSV export.

mod audit_table;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::{
        audit::{AuditAction, AuditFilter, AuditRecord, Outcome},
        fleet_view::encode,
    },
    server_fns::audit::list_audit,
};

use self::audit_table::AuditTable;

/// The audit log page; its filter is a GET form, so it works without JavaScript.
#[component]
pub fn AuditPage() -> impl IntoView {
    let query = use_query_map();
    let filter = Memo::new(move |_| {
        query.with(|q| AuditFilter {
            action: q.get("action").filter(|v| !v.is_empty()),
            resource: q.get("resource").filter(|v| !v.is_empty()),
            outcome: q.get("outcome").filter(|v| !v.is_empty()),
            limit: None,
        })
    });
    let records = fetched(move || filter.get(), list_audit);
    let csv = move || {
        let f = filter.get();
        let mut parts = vec!["format=csv".to_string()];
        for (key, value) in [
            ("action", f.action),
            ("resource", f.resource),
            ("outcome", f.outcome),
        ] {
            if let Some(value) = value {
                parts.push(format!("{key}={}", encode(&value)));
            }
        }
        format!("/api/v1/audit?{}", parts.join("&"))
    };
    view! {
        <Title text="Audit log" />
        <h1>"Audit log"</h1>
        <p class="muted">"Every registration, deployment and rollback — and every request past a team's budget with its approval, rejection or withdrawal: who, when, which resource, the diff, the pre-check, the AWS request id and the outcome. The intent is written before the AWS call and the outcome after it."</p>
        <form class="compare-picker card" method="get" data-testid="audit-filter">
            <label><span>"Action"</span>
                <select name="action">
                    <option value="">"any"</option>
                    {AuditAction::ALL.map(|a| view! {
                        <option value=a.as_str() selected=move || filter.get().action.as_deref() == Some(a.as_str())>{a.as_str()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Resource contains"</span>
                <input type="text" name="resource" prop:value=move || filter.get().resource.unwrap_or_default() value=move || filter.get().resource.unwrap_or_default() />
            </label>
            <label><span>"Outcome"</span>
                <select name="outcome">
                    <option value="">"any"</option>
                    {Outcome::ALL.map(|o| view! {
                        <option value=o.as_str() selected=move || filter.get().outcome.as_deref() == Some(o.as_str())>{o.as_str()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit">"Filter"</button>
            <a href=csv data-testid="audit-csv">"Download CSV"</a>
        </form>
        <Suspense fallback=|| view! { <p class="muted">"Reading the audit log…"</p> }>
            {move || Suspend::new(async move {
                match records.await {
                    Ok(list) if list.is_empty() => view! { <p data-testid="audit-empty">"No record matches."</p> }.into_any(),
                    Ok(list) => view! { <AuditTable records=list /> }.into_any(),
                    Err(error) => view! { <ErrorBanner error lead="The audit log could not be read: " /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
