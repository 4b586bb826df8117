//! The summary and the filters.

use super::*;

/// The summary and the filters.
#[component]
pub(super) fn Overview(overview: FleetOverview, query: Memo<FleetQuery>) -> impl IntoView {
    let notes = overview.notes.clone();
    view! {
        {notes
            .into_iter()
            .map(|note| view! { <p class="banner info" role="status" data-testid="filter-note">{note}</p> })
            .collect_view()}
        <Filters options=overview.options.clone() applied=overview.applied.clone() query />
        {match overview.summary {
            Some(summary) => view! { <Summary summary /> }.into_any(),
            None => view! {
                <p class="banner info" role="status">
                    {match overview.last_error {
                        Some(error) => format!("The fleet could not be read yet: {error}. Check the AWS credentials, region and permissions; gpushare keeps retrying."),
                        None => "Reading the fleet for the first time; this page fills in by itself.".to_string(),
                    }}
                </p>
            }.into_any(),
        }}
    }
}
