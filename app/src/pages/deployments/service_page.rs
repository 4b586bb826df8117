//! One service: a revision of its family and the pre-check of rolling it out.

use super::*;
use crate::{components::stale_reads::stale_reads_after, resource::fetched};

/// One service: a revision of its family and the pre-check of rolling it out.
#[component]
pub fn ServicePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let cluster = Memo::new(move |_| params.with(|p| p.get("cluster").unwrap_or_default()));
    let service = Memo::new(move |_| params.with(|p| p.get("service").unwrap_or_default()));
    let revision = Memo::new(move |_| {
        query.with(|q| match q.get("revision").filter(|r| !r.is_empty()) {
            None => Ok(None),
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .map(Some)
                .ok_or_else(|| {
                    format!("{text:?} is not a revision number: give a whole number from 1.")
                }),
        })
    });
    let check = fetched(
        move || (cluster.get(), service.get(), revision.get()),
        |(cluster, service, revision)| async move {
            match revision {
                Ok(revision) => pre_check_rollout(cluster, service, revision).await.map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    // Created here, not in the views that show them: see `crate::resource`.
    let stale = stale_reads_after(check);
    let events = recent_events(cluster, service);
    view! {
        <Title text={ let service = crate::pages::title_part(service); move || format!("{} · Deployments", service()) } />
        <p><a href="/deployments">"← Deployments"</a></p>
        <h1>{move || format!("{} / {}", cluster.get(), service.get())}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Checking the rollout…"</p> }>
            {move || Suspend::new(async move {
                match check.await {
                    Ok(Ok(found)) => view! { <StaleReadsBanner status=stale /><ServiceRollout found events /> }.into_any(),
                    Ok(Err(message)) => {
                        set_status(400);
                        view! { <p class="banner error" role="alert" data-testid="bad-revision">{message}</p> }.into_any()
                    }
                    Err(error) => view! {
                        <ErrorBanner error lead="The pre-check could not run: " testid="pre-check-error" />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
