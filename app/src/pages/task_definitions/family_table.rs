//! Every task definition family as a table: its latest revision, GPU settings, team and services,
//! each linked to its page.

use super::*;

#[component]
pub(super) fn FamilyTable(families: Vec<FamilySummary>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="family-table">
            <thead>
                <tr>
                    <th scope="col">"Family"</th>
                    <th scope="col" class="num">"Latest"</th>
                    <th scope="col">"GPU"</th>
                    <th scope="col">"Team"</th>
                    <th scope="col">"Services"</th>
                </tr>
            </thead>
            <tbody>
                {families.into_iter().map(|f| {
                    let uses_gpu = !f.gpu.is_empty();
                    view! {
                        <tr data-gpu=if uses_gpu { "yes" } else { "no" }>
                            <th scope="row"><a href=format!("/task-definitions/{}", f.family)>{f.family.clone()}</a></th>
                            <td class="num">{f.latest_revision}</td>
                            <td>
                                {if uses_gpu {
                                    view! { <span class="badge gpu">"GPU"</span>" "{f.gpu.join("; ")}}.into_any()
                                } else {
                                    view! { <span class="muted">"no GPU"</span> }.into_any()
                                }}
                            </td>
                            <td>{f.team.unwrap_or_else(|| "—".into())}</td>
                            <td>{if f.services.is_empty() { "—".to_string() } else { f.services.join(", ") }}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
