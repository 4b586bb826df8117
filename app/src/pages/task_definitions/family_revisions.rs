//! A family's revisions with the editor, the fit check on the cluster its services run in, and a
//! revision registered from here added at the top.

use super::*;

#[component]
pub(super) fn FamilyRevisions(
    data: FamilyData,
    reveal: bool,
    registered: Callback<RevisionDetail>,
) -> impl IntoView {
    let FamilyData {
        detail,
        source,
        clusters,
    } = data;
    // The fit check starts on the cluster the family's services run in.
    let home = detail
        .services
        .first()
        .and_then(|s| s.split_once('/'))
        .map(|(cluster, _)| cluster.to_string())
        .filter(|c| clusters.contains(c))
        .unwrap_or_default();
    let numbers: Vec<u32> = detail.revisions.iter().map(|r| r.revision).collect();
    let family = detail.family.clone();
    view! {
        <p class="muted" data-testid="family-services">
            {if detail.services.is_empty() {
                "No service runs this family.".to_string()
            } else {
                format!("Run by: {}", detail.services.join(", "))
            }}
        </p>
        <ComparePicker family=family.clone() numbers />
        {source.map(|source| view! {
            <GpuEditor revision=source.detail json=source.json reveal clusters cluster=home registered permission=source.register may_reveal=source.reveal.allowed />
        }.into_any())}
        {detail.revisions.into_iter().map(|revision| view! { <Revision revision /> }.into_any()).collect_view()}
    }
}
