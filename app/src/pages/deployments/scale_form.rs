//! Changes the service's desired count; past the team's budget it asks for approval.

use super::*;

/// Changes the service's desired count; past the team's budget it asks for approval.
#[component]
pub(super) fn ScaleForm(
    cluster: String,
    service: String,
    desired: u32,
    runs: String,
) -> impl IntoView {
    let scale = ServerAction::<ScaleService>::new();
    let wanted = RwSignal::new(desired.to_string());
    let description = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Some(Ok(answer)) = scale.value().get() {
            if let Some(request) = &answer.approval {
                let navigate = leptos_router::hooks::use_navigate();
                navigate(&format!("/approvals/{request}"), Default::default());
            }
        }
    });
    let send = move |_| {
        let Ok(count) = wanted.get_untracked().trim().parse::<u32>() else {
            return;
        };
        scale.dispatch(ScaleService {
            cluster: cluster.clone(),
            service: service.clone(),
            request: ScaleRequest {
                desired: count,
                expected_desired: desired,
                // The count is of the tasks of the revision shown, and of no other.
                expected_revision: crate::model::arn::RevisionRef::parse(&runs).ok(),
                description: description.get_untracked(),
            },
        });
    };
    let invalid = move || {
        wanted.with(|w| {
            w.trim()
                .parse::<u32>()
                .map_or(true, |n| n > crate::model::deployment::MAX_DESIRED)
        })
    };
    view! {
        <section class="card" data-testid="scale-form">
            <h2>"Desired tasks"</h2>
            <noscript><p class="banner info">"Scaling needs JavaScript; POST /api/v1/services/{cluster}/{service}/scale works without it."</p></noscript>
            <div class="edit-actions">
                <label class="inline">
                    <span>{format!("Run (now {desired}) ")}</span>
                    <input type="number" min="0" max=crate::model::deployment::MAX_DESIRED.to_string() data-testid="scale-desired"
                        prop:value=move || wanted.get()
                        value=wanted.get_untracked()
                        on:input=move |ev| wanted.set(event_target_value(&ev)) />
                </label>
                <label class="inline">
                    <span>"Why "</span>
                    <input type="text" maxlength="256" data-testid="scale-description"
                        prop:value=move || description.get()
                        value=description.get_untracked()
                        on:input=move |ev| description.set(event_target_value(&ev)) />
                </label>
                <button type="button" data-testid="scale-send" on:click=send disabled=move || scale.pending().get() || invalid()>"Set the desired count"</button>
            </div>
            {move || invalid().then(|| view! { <p class="field-error" role="alert">{format!("Give a whole number of tasks from 0 to {}.", crate::model::deployment::MAX_DESIRED)}</p> })}
            {move || scale.value().get().map(|answer| match answer {
                Ok(answer) if answer.approval.is_none() => view! {
                    <p class="banner info" role="status" data-testid="scale-done">"Sent: ECS starts or stops tasks to match. "<a href=format!("/audit?action=scale")>"The audit log"</a></p>
                }.into_any(),
                Ok(_) => ().into_any(),
                Err(error) => view! {
                    <p class="banner error" role="alert" data-testid="scale-refused">{format!("The desired count was not changed: {error}")}</p>
                }.into_any(),
            })}
        </section>
    }
}
