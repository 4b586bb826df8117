//! `/cost/months`: the sealed months — each closed month's cost kept at the prices of the day it
//! was sealed, every version with who sealed it and why — and, with `?month=YYYY-MM`, what
//! re-pricing that month at today's prices would change, with the admins' form to do it. The
//! form posts to the server function, so it works without JavaScript too.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    components::{
        error_banner::{set_status, ErrorBanner},
        report_page::url_query,
    },
    model::cost::{money, MonthsQuery, MonthsView, Repricing, Sealing},
    resource::fetched,
    server_fns::cost::{cost_months, RepriceMonth},
};

/// The sealed months' page.
#[component]
pub fn CostMonthsPage() -> impl IntoView {
    let (parsed, query) = url_query::<MonthsQuery>();
    let reprice = ServerAction::<RepriceMonth>::new();
    let view_of = fetched(
        move || (query.get(), reprice.version().get()),
        |(query, _)| cost_months(query),
    );
    view! {
        <Title text="Sealed months" />
        <div class="cost-page">
            <p class="no-print"><a href="/cost">"← Cost"</a>" · "<a href="/audit?action=reprice">"Re-pricings in the audit log"</a></p>
            <h1>"Sealed months"</h1>
            <p class="muted">"When a month closes (UTC), its cost is sealed at the prices of that moment: a later price file, Price List change or CPU and memory share does not change what a cost review saw. Re-pricing a closed month at today's prices is an admin's action; it is audited, and the earlier versions are kept."</p>
            {move || parsed.get().err().map(|error| view! {
                <p class="banner error" role="alert" data-testid="months-query-error">{format!("{error}. Showing the sealed months instead.")}</p>
            })}
            <Transition fallback=|| view! { <p class="muted">"Reading the sealed months…"</p> }>
                {move || Suspend::new(async move {
                    match view_of.await {
                        Ok(view) => view! { <Months view reprice /> }.into_any(),
                        Err(error) => {
                            set_status(error.status());
                            view! { <ErrorBanner error lead="The sealed months could not be read: " /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </div>
    }
}

#[component]
fn Months(view: MonthsView, reprice: ServerAction<RepriceMonth>) -> impl IntoView {
    let outcome = move || {
        reprice.value().get().map(|result| match result {
            Ok(done) => view! {
                <p class="banner info" role="status" data-testid="reprice-result">{format!("{} is re-priced: version {} is in force, {} (was {}).", done.month, done.to_version, money(done.after_total_cents), money(done.before_total_cents))}</p>
            }.into_any(),
            Err(error) => view! {
                <p class="banner error" role="alert" data-testid="reprice-error">{error.to_string()}</p>
            }.into_any(),
        })
    };
    let MonthsView {
        seals,
        repricing,
        may_reprice,
        why_not,
    } = view;
    view! {
        {outcome}
        {repricing.map(|r| view! { <RepricingCard repricing=r may_reprice why_not=why_not.clone() reprice /> })}
        <SealsTable seals />
    }
}

#[component]
fn SealsTable(seals: Vec<Sealing>) -> impl IntoView {
    if seals.is_empty() {
        return view! {
            <p class="muted" data-testid="months-none">"No month is sealed yet: a month is sealed ten minutes after it closes (UTC), when the history holds any of it."</p>
        }
        .into_any();
    }
    view! {
        <section class="card" aria-labelledby="months-title">
        <h2 id="months-title" class="card-title">"Seals, every version"</h2>
        <table class="data-table compact" data-testid="months-table">
            <thead><tr><th scope="col">"Month"</th><th scope="col">"Version"</th><th scope="col">"Sealed at (UTC)"</th><th scope="col">"By"</th><th scope="col" class="num">"Total then"</th><th scope="col" class="num">"Hours recorded"</th><th scope="col">"Why"</th><th scope="col"><span class="visually-hidden">"Re-pricing"</span></th></tr></thead>
            <tbody>
                {seals.into_iter().map(|s| {
                    let link = format!("/cost/months?month={}", s.month);
                    let report = format!("/cost?period=custom&from={}-01&to={}", s.month, last_day(&s.month));
                    view! {
                        <tr data-testid="months-row" data-month=s.month.clone() data-version=s.version.to_string()>
                            <td><a href=report>{s.month.clone()}</a></td>
                            <td>{format!("v{}", s.version)}</td>
                            <td>{s.sealed_at.get(..16).unwrap_or(&s.sealed_at).replace('T', " ")}</td>
                            <td>{s.sealed_by.clone()}</td>
                            <td class="num">{money(s.total_cents)}</td>
                            <td class="num">{format!("{:.1}", s.recorded_hours)}</td>
                            <td>{s.reason.clone()}</td>
                            <td><a href=link data-testid="months-look">"At today's prices…"</a></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        </section>
    }
    .into_any()
}

/// The last day of month `2026-11`, as `2026-11-30`.
fn last_day(month: &str) -> String {
    let (year, number) = crate::model::cost::sealed::check_month(month).unwrap_or((2026, 1));
    let days = match number {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    };
    format!("{month}-{days}")
}

#[component]
fn RepricingCard(
    repricing: Repricing,
    may_reprice: bool,
    why_not: Option<String>,
    reprice: ServerAction<RepriceMonth>,
) -> impl IntoView {
    let pending = reprice.pending();
    let month = repricing.month.clone();
    let same = repricing.rows.is_empty() && repricing.prices.is_empty();
    let delta = repricing.after_total_cents - repricing.before_total_cents;
    view! {
        <section class="card" data-testid="repricing">
            <h2 class="card-title">{format!("{month} at today's prices")}</h2>
            <p data-testid="repricing-totals">{format!(
                "Sealed (version {}): {}. At today's prices: {} ({}{}).",
                repricing.from_version,
                money(repricing.before_total_cents),
                money(repricing.after_total_cents),
                if delta > 0 { "+" } else { "" },
                money(delta),
            )}</p>
            {same.then(|| view! { <p class="muted" data-testid="repricing-same">"Today's prices give the same figures: re-pricing would change nothing."</p> })}
            {(!repricing.rows.is_empty()).then(|| view! {
                <table class="data-table compact" data-testid="repricing-rows">
                    <thead><tr><th scope="col">"Team"</th><th scope="col" class="num">"Sealed"</th><th scope="col" class="num">"Today's prices"</th><th scope="col" class="num">"Change"</th></tr></thead>
                    <tbody>
                        {repricing.rows.iter().map(|r| view! {
                            <tr><td>{if r.kind == "allocated" { r.name.clone() } else { format!("{} · {}", r.kind, r.name) }}</td><td class="num">{money(r.before_cents)}</td><td class="num">{money(r.after_cents)}</td><td class="num">{money(r.after_cents - r.before_cents)}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
            {(!repricing.prices.is_empty()).then(|| view! {
                <table class="data-table compact" data-testid="repricing-prices">
                    <thead><tr><th scope="col">"Instance type"</th><th scope="col">"Billed"</th><th scope="col">"Sealed price"</th><th scope="col">"Today's price"</th></tr></thead>
                    <tbody>
                        {repricing.prices.iter().map(|p| view! {
                            <tr><td>{p.instance_type.clone()}</td><td>{p.lifecycle.clone()}</td><td>{p.before.clone()}</td><td>{p.after.clone()}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
            {if may_reprice {
                view! {
                    <ActionForm action=reprice>
                        <input type="hidden" name="month" value=month.clone() />
                        <label class="field">
                            <span>"Why (kept with the new version and in the audit log)"</span>
                            <input type="text" name="reason" maxlength="500" required size="60" data-testid="reprice-reason" />
                        </label>
                        <div class="edit-actions">
                            <button type="submit" data-testid="reprice" disabled=move || pending.get()>{format!("Re-price {month} at today's prices")}</button>
                        </div>
                    </ActionForm>
                }.into_any()
            } else {
                view! { <p class="not-allowed" role="note" data-testid="reprice-not-allowed">{why_not.unwrap_or_default()}</p> }.into_any()
            }}
        </section>
    }
}
