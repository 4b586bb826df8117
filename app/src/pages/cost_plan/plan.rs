//! The consolidation plan: instances before and after, the monthly saving, what each cluster drains
//! and where its tasks go, the blast radius, and what the plan could not know.

use super::*;

#[component]
pub(super) fn Plan(plan: ConsolidationPlan) -> impl IntoView {
    let query = plan.query.clone();
    let csv = {
        let params = query.to_params();
        if params.is_empty() {
            "/api/v1/cost/plan?format=csv".to_string()
        } else {
            format!("/api/v1/cost/plan?{params}&format=csv")
        }
    };
    let before: u32 = plan.clusters.iter().map(|c| c.instances_before).sum();
    let after: u32 = plan.clusters.iter().map(|c| c.instances_after).sum();
    let percent = if plan.monthly_before_cents > 0 {
        format!(
            "{:.0} % of {} a month",
            plan.saving_cents_per_month as f64 * 100.0 / plan.monthly_before_cents as f64,
            money(plan.monthly_before_cents)
        )
    } else {
        "of nothing priced".to_string()
    };
    view! {
        <PlanForm query=query.clone() clusters=plan.all_clusters.clone() csv />
        <p class="freshness" data-testid="plan-taken-at">{format!("From the fleet as read at {}; {} % of each kept instance's GPU memory left spare.", plan.taken_at, query.spare_percent)}</p>
        <section class="summary" aria-label="What the plan saves" data-testid="plan-totals">
            <div class="stat"><span class="value" data-testid="plan-saving">{money(plan.saving_cents_per_month)}</span><span class="label">{format!("a month saved ({percent})")}</span></div>
            <div class="stat"><span class="value" data-testid="plan-drains">{plan.drains.len()}</span><span class="label">{format!("instances to drain, of {before} ({after} kept)")}</span></div>
            <div class="stat"><span class="value">{plan.tasks_moved}</span><span class="label">"tasks that would move"</span></div>
        </section>
        {(!plan.warnings.is_empty()).then(|| view! {
            <div class="banner warn" role="status" data-testid="plan-warnings">
                {plan.warnings.iter().map(|n| view! { <p>{n.clone()}</p> }).collect_view()}
            </div>
        })}
        <BlastTable before=plan.before.clone() after=plan.after.clone() />
        <section class="card" aria-labelledby="plan-clusters-title">
            <h2 id="plan-clusters-title" class="card-title">"By cluster"</h2>
            <table class="data-table compact" data-testid="plan-clusters">
                <thead><tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="num">"Instances now"</th>
                    <th scope="col" class="num">"After"</th>
                    <th scope="col" class="num">"A month now"</th>
                    <th scope="col" class="num">"After"</th>
                    <th scope="col" class="num">"GPU memory free after"</th>
                    <th scope="col">"Room kept for a rollout"</th>
                </tr></thead>
                <tbody>
                    {plan.clusters.iter().map(|c| view! {
                        <tr>
                            <td>{c.name.clone()}</td>
                            <td class="num">{c.instances_before}</td>
                            <td class="num">{c.instances_after}</td>
                            <td class="num">{money(c.monthly_before_cents)}</td>
                            <td class="num">{money(c.monthly_after_cents)}</td>
                            <td class="num">{format!("{:.0} GiB of {:.0} GiB", c.free_after_mib as f64 / 1024.0, c.kept_mib as f64 / 1024.0)}</td>
                            <td>{c.headroom.clone().unwrap_or_else(|| "no service deploys beside its old tasks".to_string())}{(c.held_for_spare > 0).then(|| format!("; {} more instance(s) kept: without any of them the rest could not hold what is allocated with the spare", c.held_for_spare))}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <section class="card" aria-labelledby="plan-drains-title">
            <h2 id="plan-drains-title" class="card-title">"Instances to drain, and where their tasks go"</h2>
            {if plan.drains.is_empty() {
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
                        </tr></thead>
                        <tbody>
                            {plan.drains.iter().map(|d| {
                                let rows = d.moves.len().max(1);
                                let first = d.moves.first().cloned();
                                let head = view! {
                                    <tr data-testid="plan-drain">
                                        <td class="mono" rowspan=rows>{format!("{} ({})", d.ec2_instance_id, d.cluster)}</td>
                                        <td class="mono" rowspan=rows>{format!("{} {}", d.instance_type, d.lifecycle.as_str())}</td>
                                        <td class="num" rowspan=rows>{d.monthly_cents.map(money).unwrap_or_else(|| "no price".into())}</td>
                                        <td class="num" rowspan=rows>{format!("{:.1} of {:.0} GiB", d.allocated_mib as f64 / 1024.0, d.total_mib as f64 / 1024.0)}</td>
                                        {match first {
                                            Some(m) => view! {
                                                <td>{m.service.clone()}</td>
                                                <td class="num">{m.tasks}</td>
                                                <td class="mono">{m.to.join(", ")}</td>
                                            }.into_any(),
                                            None => view! { <td colspan="3" class="muted">"no GPU task: nothing moves"</td> }.into_any(),
                                        }}
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
        {(!plan.unpriced.is_empty()).then(|| view! {
            <p class="banner warn" role="status" data-testid="plan-unpriced">{format!("No price for {}: those instances are kept and their cost is not counted. Give them a price with --prices.", plan.unpriced.join(", "))}</p>
        })}
        <section class="card" aria-labelledby="plan-method-title" data-testid="plan-method">
            <h2 id="plan-method-title" class="card-title">"How the plan is made, and what it could not know"</h2>
            <p>{METHOD}</p>
            <ul>
                {plan.unknown.iter().map(|u| view! { <li>{u.clone()}</li> }).collect_view()}
            </ul>
        </section>
    }
}
