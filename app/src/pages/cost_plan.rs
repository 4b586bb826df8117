//! `/cost/plan`: the consolidation plan — which instances could be drained with today's
//! allocations still placed, where their tasks would go, what that saves a month, and what it
//! does to the blast radius. A GET form, so it works without JavaScript and every view has its
//! URL; the CSV is the table. Nothing is drained from here.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::cost::{
        consolidate::{Blast, ConsolidationPlan, PlanQuery, METHOD},
        money,
    },
    server_fns::cost::consolidation_plan,
};

/// The consolidation plan page.
#[component]
pub fn CostPlanPage() -> impl IntoView {
    let params = use_query_map();
    let parsed = Memo::new(move |_| {
        params.with(|q| {
            let pairs: Vec<(String, String)> = PlanQuery::KEYS
                .into_iter()
                .filter_map(|k| q.get(k).map(|v| (k.to_string(), v)))
                .collect();
            PlanQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        })
    });
    let query = Memo::new(move |_| parsed.get().unwrap_or_default());
    let plan = Resource::new(move || query.get(), consolidation_plan);
    view! {
        <Title text="Consolidation plan" />
        <div class="cost-page">
            <p class="no-print"><a href="/cost">"← Cost"</a></p>
            <h1>"Consolidation plan"</h1>
            <p class="muted">"The instances that could be drained with every task they hold placed on the instances kept, by the same placement rules as the deployment pre-check, leaving room for each cluster's largest rollout and a spare share of GPU memory. A plan to review: nothing is drained from here."</p>
            {move || parsed.get().err().map(|error| view! {
                <p class="banner error" role="alert" data-testid="plan-query-error">{format!("{error}. Showing the default plan instead.")}</p>
            })}
            <Suspense fallback=|| view! { <p class="muted">"Planning…"</p> }>
                {move || Suspend::new(async move {
                    match plan.await {
                        Ok(plan) => view! { <Plan plan /> }.into_any(),
                        Err(error) => view! { <ErrorBanner error lead="The plan could not be made: " /> }.into_any(),
                    }
                })}
            </Suspense>
        </div>
    }
}

#[component]
fn Plan(plan: ConsolidationPlan) -> impl IntoView {
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

/// Services that a GPU fault or an MPS server fault would take down together, before and after.
#[component]
fn BlastTable(before: Blast, after: Blast) -> impl IntoView {
    let row = |label: &'static str, now: String, then: String| {
        view! {
            <tr><th scope="row">{label}</th><td class="num">{now}</td><td class="num">{then}</td></tr>
        }
    };
    view! {
        <section class="card" aria-labelledby="plan-blast-title">
            <h2 id="plan-blast-title" class="card-title">"What it costs in risk: the blast radius"</h2>
            <table class="data-table compact" data-testid="plan-blast">
                <thead><tr><th scope="col">""</th><th scope="col" class="num">"Now"</th><th scope="col" class="num">"After the plan"</th></tr></thead>
                <tbody>
                    {row("GPUs in use", before.gpus_in_use.to_string(), after.gpus_in_use.to_string())}
                    {row("Most services on one GPU", before.most_services_per_gpu.to_string(), after.most_services_per_gpu.to_string())}
                    {row("Mean services on a GPU in use", format!("{:.2}", before.mean_services_per_gpu), format!("{:.2}", after.mean_services_per_gpu))}
                    {row("GPUs with 3 services or more", before.gpus_with_three_or_more.to_string(), after.gpus_with_three_or_more.to_string())}
                    {row("Most services on one instance's MPS server", before.most_services_per_mps_server.to_string(), after.most_services_per_mps_server.to_string())}
                    {row("GPUs past 48 MPS clients", before.gpus_over_client_limit.to_string(), after.gpus_over_client_limit.to_string())}
                </tbody>
            </table>
        </section>
    }
}

/// The plan's choices as a GET form.
#[component]
fn PlanForm(query: PlanQuery, clusters: Vec<String>, csv: String) -> impl IntoView {
    let cluster = query.cluster.clone();
    view! {
        <form class="compare-picker card no-print" method="get" action="/cost/plan" data-testid="plan-form">
            <label><span>"Cluster"</span>
                <select name="cluster">
                    <option value="" selected=cluster.is_none()>"all"</option>
                    {clusters.into_iter().map(|c| {
                        let selected = cluster.as_deref() == Some(c.as_str());
                        view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Spare GPU memory, %"</span>
                <input type="number" name="spare" min="0" max="90" step="1" value=query.spare_percent.to_string() />
            </label>
            <button type="submit">"Plan"</button>
            <a href=csv data-testid="plan-csv" download>"Download CSV"</a>
        </form>
    }
}
