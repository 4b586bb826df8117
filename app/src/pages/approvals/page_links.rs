//! Which requests of how many the page shows, and links to the pages before and after.

use super::*;

/// Which requests of how many the page shows, and links to the pages before and after.
#[component]
pub(super) fn Pages(filter: ApprovalFilter, total: u64, page: u32) -> impl IntoView {
    let size = u64::from(APPROVALS_PAGE);
    let first = u64::from(page.saturating_sub(1)) * size + 1;
    let last = (first + size - 1).min(total);
    let link = |page: u32| {
        let mut query = vec![format!("page={page}")];
        for (key, value) in [
            ("state", &filter.state),
            ("team", &filter.team),
            ("cluster", &filter.cluster),
        ] {
            if let Some(value) = value {
                query.push(format!("{key}={}", encode(value)));
            }
        }
        format!("/approvals?{}", query.join("&"))
    };
    let before = (page > 1).then(|| view! { <a href=link(page - 1) rel="prev">"Newer"</a> });
    let after = (last < total).then(|| view! { <a href=link(page + 1) rel="next">"Older"</a> });
    view! {
        <nav class="pages" aria-label="Pages of requests" data-testid="approvals-pages">
            <span data-testid="approvals-total">{format!("Requests {first}–{last} of {total}")}</span>
            " " {before} " " {after}
        </nav>
    }
}
