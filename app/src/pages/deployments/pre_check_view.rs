//! The capacity pre-check of a rollout: its verdict, the steps the simulated rolling update takes,
//! what was checked and what could not be known, and what would let a stalled rollout through.

use super::*;

#[component]
pub(super) fn PreCheckView(rollout: RolloutCheck) -> impl IntoView {
    let plan = rollout.plan.clone();
    let (class, headline) = match &rollout.verdict {
        Verdict::Completes => (
            "banner info",
            format!(
                "The rolling update completes in {} {}.",
                rollout.steps.len(),
                if rollout.steps.len() == 1 {
                    "step"
                } else {
                    "steps"
                }
            ),
        ),
        Verdict::Stalls { step, reason } => (
            "banner warn",
            format!("The rolling update stalls at step {step}. {reason}"),
        ),
        Verdict::Never { reason } => ("banner error", reason.clone()),
    };
    view! {
        <section class="card" data-testid="pre-check">
            <h2>"Capacity pre-check"</h2>
            <p class="muted">
                {format!(
                    "{} tasks, maximum {} %, minimum healthy {} %: old and new tasks placed together on the fleet snapshot with the same rules as the fit check.",
                    plan.desired, plan.maximum_percent, plan.minimum_healthy_percent
                )}
            </p>
            <p class=class role="status" data-testid="pre-check-verdict" data-verdict=match rollout.verdict { Verdict::Completes => "completes", Verdict::Stalls { .. } => "stalls", Verdict::Never { .. } => "never" }>{headline}</p>
            {rollout.growth.clone().map(|growth| view! { <GrowthView growth=growth/> })}
            {(!rollout.suggestions.is_empty()).then(|| view! {
                <h3>"What would let it through"</h3>
                <ul data-testid="pre-check-suggestions">
                    {rollout.suggestions.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                </ul>
            })}
            {(!rollout.checked.is_empty() || !rollout.unknown.is_empty()).then(|| view! {
                <details data-testid="pre-check-scope">
                    <summary>"What the pre-check checked, and what it could not know"</summary>
                    <h3>"Checked"</h3>
                    <ul data-testid="pre-check-checked">
                        {rollout.checked.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                    </ul>
                    <h3>"Not known to the console"</h3>
                    <ul data-testid="pre-check-unknown">
                        {rollout.unknown.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                    </ul>
                </details>
            })}
            {(!rollout.steps.is_empty()).then(|| view! {
                <table class="data-table compact" data-testid="pre-check-steps">
                    <thead><tr>
                        <th scope="col" class="num">"Step"</th>
                        <th scope="col" class="num">"Started"</th>
                        <th scope="col" class="num">"Not placed"</th>
                        <th scope="col" class="num">"Stopped"</th>
                        <th scope="col" class="num">"Old running"</th>
                        <th scope="col" class="num">"New running"</th>
                    </tr></thead>
                    <tbody>
                        {rollout.steps.into_iter().map(|s| view! {
                            <tr>
                                <td class="num">{s.step}</td>
                                <td class="num">{s.started}</td>
                                <td class="num">{s.unplaced}</td>
                                <td class="num">{s.stopped}</td>
                                <td class="num">{s.old_running}</td>
                                <td class="num">{s.new_running}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
        </section>
    }
}
