//! The prices a cost report used: per instance type and lifecycle, the hourly price, the
//! instances it priced and where it came from; and the types without a price, left out.

use super::*;

#[component]
pub(super) fn PricesUsed(prices: Vec<PriceUsed>, unpriced: Vec<Unpriced>) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="cost-prices-title" data-testid="cost-prices">
            <h2 id="cost-prices-title" class="card-title">"Prices used"</h2>
            <table class="data-table compact">
                <thead><tr>
                    <th scope="col">"Instance type"</th>
                    <th scope="col">"Billed"</th>
                    <th scope="col" class="num">"Per hour"</th>
                    <th scope="col" class="num">"Instances"</th>
                    <th scope="col">"Source"</th>
                </tr></thead>
                <tbody>
                    {prices.iter().map(|p| view! {
                        <tr>
                            <td class="mono">{p.price.instance_type.clone()}</td>
                            <td>{p.price.billed()}</td>
                            <td class="num">{format!("${:.4}", p.price.usd_per_hour)}</td>
                            <td class="num">{p.instances}</td>
                            <td>
                                <span class="badge" data-testid="price-source">{p.price.source.as_str()}</span>
                                " "{p.price.detail.clone()}
                            </td>
                        </tr>
                    }).collect_view()}
                    {unpriced.iter().map(|u| view! {
                        <tr class="unpriced" data-testid="cost-unpriced">
                            <td class="mono">{u.instance_type.clone()}</td>
                            <td>{u.lifecycle.as_str()}</td>
                            <td class="num">"unknown"</td>
                            <td class="num">{u.instances}</td>
                            <td>{format!("no price: {} GPUs left out of the totals", u.gpus)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
