//! `/rollouts/:id`: one rollout, live.

use super::*;
use crate::resource::fetched;

/// `/rollouts/:id`: one rollout, live.
#[component]
pub fn DeploymentWatchPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    let initial = fetched(move || id.get(), deployment_state);
    view! {
        <Title text="Deployment" />
        <p><a href="/deployments">"← Deployments"</a>" · "<a href="/audit">"Audit log"</a></p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the deployment…"</p> }>
            {move || Suspend::new(async move {
                match initial.await {
                    Ok(Some(state)) => view! { <Watch initial=state /> }.into_any(),
                    Ok(None) => {
                        set_status(404);
                        view! { <p class="banner info" role="status" data-testid="no-deployment">"There is no such deployment. "<a href="/audit?action=deploy">"See the deployments in the audit log."</a></p> }.into_any()
                    }
                    Err(error) => view! { <ErrorBanner error lead="The deployment could not be read: " /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
