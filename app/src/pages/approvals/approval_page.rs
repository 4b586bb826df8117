//! One request, live until it is decided and sent.

use super::*;
use crate::resource::fetched;

/// One request, live until it is decided and sent.
#[component]
pub fn ApprovalPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    let decide = ServerAction::<DecideApproval>::new();
    // Reads again after each decision, and every few seconds in the browser while it waits.
    let polls = RwSignal::new(0_u32);
    let item = fetched(
        move || (id.get(), decide.version().get(), polls.get()),
        |(id, _, _)| approval(id),
    );
    #[cfg(feature = "hydrate")]
    {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                let open = item
                    .get_untracked()
                    .and_then(Result::ok)
                    .is_some_and(|i| !i.request.state.is_final());
                if open {
                    polls.try_update(|n| *n += 1);
                }
            },
            std::time::Duration::from_secs(3),
        ) {
            on_cleanup(move || handle.clear());
        }
    }
    view! {
        <Title text="Approval request" />
        <p><a href="/approvals">"← Approvals"</a>" · "<a href="/audit?action=request">"Requests in the audit log"</a></p>
        <Transition fallback=|| view! { <p class="muted">"Reading the request…"</p> }>
            {move || Suspend::new(async move {
                match item.await {
                    Ok(item) => view! { <RequestDetail item decide /> }.into_any(),
                    Err(error) => {
                        set_status(error.status());
                        view! { <ErrorBanner error lead="The request could not be read: " /> }.into_any()
                    }
                }
            })}
        </Transition>
    }
}
