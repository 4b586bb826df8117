//! What the service's capacity provider would launch for the rollout: the instances by type,
//! how long until they are up, what they cost an hour, what stops further growth, and what the
//! figures assume.

use super::*;

/// "1 × g6e.12xlarge, 2 × g6.12xlarge".
fn launches_text(plan: &GrowthPlan) -> String {
    plan.launches
        .iter()
        .map(|(kind, count)| format!("{count} × {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "about 3 min", "about 8 min".
fn minutes_text(seconds: u32) -> String {
    format!("about {} min", seconds.div_ceil(60).max(1))
}

#[component]
pub(super) fn GrowthView(growth: GrowthPlan) -> impl IntoView {
    let headline = if growth.instances() == 0 {
        format!(
            "The capacity provider {} launches nothing for this rollout.",
            growth.provider
        )
    } else {
        format!(
            "The capacity provider {} launches {} for the tasks that fit nowhere now: ready in {}, {}.",
            growth.provider,
            launches_text(&growth),
            minutes_text(growth.seconds),
            match growth.cents_per_hour {
                Some(cents) => format!("${}.{:02} an hour more on demand", cents / 100, cents % 100),
                None => "at a price the console does not know (give it in --prices)".into(),
            }
        )
    };
    view! {
        <div class="banner info" data-testid="pre-check-growth" data-instances=growth.instances()>
            <p>{headline}</p>
            {growth.limit.clone().map(|limit| view! {
                <p data-testid="pre-check-growth-limit">{format!("It cannot launch more: {limit}.")}</p>
            })}
            {(!growth.assumed.is_empty()).then(|| view! {
                <p class="muted">{format!("Assumed: {}.", growth.assumed.join("; "))}</p>
            })}
        </div>
    }
}
