//! The instances the consolidation plan drains, each with the services whose tasks move and
//! the instances they go to.

use super::*;

#[component]
pub(super) fn PlanDrains(drains: Vec<Drain>) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="plan-drains-title">
            <h2 id="plan-drains-title" class="card-title">"Instances to drain, and where their tasks go"</h2>
            {if drains.is_empty() {
                view! { <p data-testid="plan-nothing">"Nothing to drain: every instance is needed for today's allocations with the room kept."</p> }.into_any()
            } else {
                view! {
                    <table class="data-table compact" data-testid="plan-table">
                        <thead><tr>
                            <th scope="col">"Instance"</th>
                            <th scope="col">"Type"</th>
                            <th scope="col" class="num">"A month"</th>
                            <th scope="col" class="num">"GPU memory held"</th>
                            <th scope="col">"Service"</th>
                            <th scope="col" class="num">"Tasks"</th>
                            <th scope="col">"To"</th>
                            <th scope="col">"Who retires it"</th>
                        </tr></thead>
                        <tbody>
                            {drains.iter().map(|d| {
                                let rows = d.moves.len().max(1);
                                let first = d.moves.first().cloned();
                                let head = view! {
                                    <tr data-testid="plan-drain">
                                        <td class="mono" rowspan=rows>{format!("{} ({})", d.ec2_instance_id, d.cluster)}</td>
                                        <td class="mono" rowspan=rows>{format!("{} {}", d.instance_type, d.lifecycle.as_str())}</td>
                                        <td class="num" rowspan=rows>
                                            {d.monthly_cents.map(money).unwrap_or_else(|| "no price".into())}
                                            {d.keeps_billing.clone().map(|what| view! { <span class="muted" data-testid="plan-keeps-billing">{format!(" still billed: {what}")}</span> })}
                                        </td>
                                        <td class="num" rowspan=rows>{format!("{:.1} of {:.0} GiB", d.allocated_mib as f64 / 1024.0, d.total_mib as f64 / 1024.0)}</td>
                                        {match first {
                                            Some(m) => view! {
                                                <td>{m.service.clone()}</td>
                                                <td class="num">{m.tasks}</td>
                                                <td class="mono">{m.to.join(", ")}</td>
                                            }.into_any(),
                                            None => view! { <td colspan="3" class="muted">"no GPU task: nothing moves"</td> }.into_any(),
                                        }}
                                        <td rowspan=rows data-testid="plan-who-acts">{d.who_acts.clone()}</td>
                                    </tr>
                                };
                                let rest = d.moves.iter().skip(1).map(|m| view! {
                                    <tr>
                                        <td>{m.service.clone()}</td>
                                        <td class="num">{m.tasks}</td>
                                        <td class="mono">{m.to.join(", ")}</td>
                                    </tr>
                                }).collect_view();
                                view! { {head}{rest} }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}
