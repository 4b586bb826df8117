//! Views shared by the task definition pages and the editor: GPU setting changes, the JSON
//! diff, and the exports.

use leptos::prelude::*;

use crate::model::task_definition::{DiffEntry, SettingChange};

/// The containers whose GPU setting changes, before → after.
#[component]
pub fn GpuChanges(changes: Vec<SettingChange>) -> impl IntoView {
    if changes.is_empty() {
        return view! { <p class="muted" data-testid="gpu-changes-none">"No GPU setting changes."</p> }
            .into_any();
    }
    view! {
        <table class="data-table compact diff" data-testid="gpu-changes">
            <thead><tr><th scope="col">"Container"</th><th scope="col">"Before"</th><th scope="col">"After"</th></tr></thead>
            <tbody>
                {changes.into_iter().map(|c| view! {
                    <tr><th scope="row">{c.container}</th><td class="before">{c.before}</td><td class="after">{c.after}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// Every difference of two task definitions' JSON, GPU requirements first.
#[component]
pub fn DiffTable(entries: Vec<DiffEntry>) -> impl IntoView {
    if entries.is_empty() {
        return view! { <p class="muted" data-testid="diff-none">"The JSON is the same."</p> }
            .into_any();
    }
    let count = entries.len();
    view! {
        <table class="data-table compact json-diff" data-testid="json-diff">
            <caption class="muted">{format!("{count} {}", if count == 1 { "difference" } else { "differences" })}</caption>
            <thead><tr><th scope="col">"Field"</th><th scope="col">"Before"</th><th scope="col">"After"</th></tr></thead>
            <tbody>
                {entries.into_iter().map(|e| view! {
                    <tr class=format!("diff-{}{}", e.change.as_str(), if e.gpu { " diff-gpu" } else { "" }) data-change=e.change.as_str()>
                        <th scope="row" class="mono">
                            {e.path}
                            {e.gpu.then(|| view! { " "<span class="badge gpu">"GPU"</span> })}
                        </th>
                        <td class="mono before">{e.before.unwrap_or_else(|| "—".into())}</td>
                        <td class="mono after">{e.after.unwrap_or_else(|| "—".into())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// The JSON for `aws ecs register-task-definition --cli-input-json` and the CloudFormation
/// requirements, each in a block to copy, with a note when values are masked.
#[component]
pub fn Exports(
    json: String,
    cloudformation: String,
    masked: usize,
    #[prop(into)] reveal_href: Option<String>,
) -> impl IntoView {
    view! {
        <div class="exports" data-testid="exports">
            {(masked > 0).then(|| view! {
                <p class="banner info" role="status" data-testid="masked-note">
                    {format!("{masked} secret-looking {} masked. ", if masked == 1 { "value is" } else { "values are" })}
                    {reveal_href.clone().map(|href| view! { <a href=href data-testid="reveal">"Reveal values"</a> })}
                    " to copy a JSON that registers as it is."
                </p>
            })}
            <details open>
                <summary>"JSON for "<code>"aws ecs register-task-definition --cli-input-json"</code></summary>
                <pre class="code" data-testid="export-json">{json}</pre>
            </details>
            <details>
                <summary>"CloudFormation: the containers' ResourceRequirements"</summary>
                <pre class="code" data-testid="export-cloudformation">{cloudformation}</pre>
            </details>
        </div>
    }
}
