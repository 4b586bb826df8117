//! A card with the server's status, refreshed on request.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::model::ConsoleStatus;
use crate::server_fns::console::console_status;

/// Shows the server's version, fleet source, uptime and clock, with a button that asks again.
#[component]
pub fn ConsoleStatusCard() -> impl IntoView {
    let checks = RwSignal::new(0_u32);
    let status = fetched(move || checks.get(), |_| console_status());

    view! {
        <section class="card status-card" aria-labelledby="status-heading">
            <div class="card-title">
                <h2 id="status-heading">"Console"</h2>
                <button
                    type="button"
                    data-testid="status-refresh"
                    on:click=move |_| checks.update(|n| *n += 1)
                >
                    "Check again"
                </button>
            </div>
            <Suspense fallback=|| view! { <p class="muted">"Asking the server…"</p> }>
                {move || Suspend::new(async move {
                    match status.await {
                        Ok(status) => view! { <StatusFacts status /> }.into_any(),
                        Err(error) => {
                            view! {
                                <p class="error" role="alert">
                                    "The server did not answer: "
                                    {error.to_string()}
                                    ". Check that gpushare is running and try again."
                                </p>
                            }
                                .into_any()
                        }
                    }
                })}
            </Suspense>
        </section>
    }
}

/// The facts of one status answer.
#[component]
fn StatusFacts(status: ConsoleStatus) -> impl IntoView {
    view! {
        <dl class="facts" data-testid="status-facts">
            <dt>"Version"</dt>
            <dd data-testid="status-version">{status.version}</dd>
            <dt>"Fleet"</dt>
            <dd data-testid="status-source">{status.fleet_source.label()}</dd>
            <dt>"Up for"</dt>
            <dd>{format_uptime(status.uptime_seconds)}</dd>
            <dt>"Server time"</dt>
            <dd data-testid="status-time">{status.server_time}</dd>
        </dl>
    }
}

/// `3 d 4 h`, `2 h 5 min`, `42 s`: the two largest units that are not zero.
pub fn format_uptime(seconds: u64) -> String {
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min {} s", seconds % 60),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::format_uptime;

    #[test]
    fn uptime_shows_the_two_largest_units() {
        assert_eq!(format_uptime(0), "0 s");
        assert_eq!(format_uptime(42), "42 s");
        assert_eq!(format_uptime(125), "2 min 5 s");
        assert_eq!(format_uptime(7_500), "2 h 5 min");
        assert_eq!(format_uptime(273_600), "3 d 4 h");
    }
}
