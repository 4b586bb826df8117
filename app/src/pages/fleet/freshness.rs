//! "Updated 5 s ago", counting on in the browser, and the banners about stale or failing data.

use super::*;

/// "Updated 5 s ago", counting on in the browser, and the banners about stale or failing data.
#[component]
pub(super) fn Freshness(overview: FleetOverview) -> impl IntoView {
    let ticks = RwSignal::new(0_i64);
    #[cfg(feature = "hydrate")]
    {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                ticks.try_update(|t| *t += 1);
            },
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || handle.clear());
        }
    }
    let interval = overview.refresh_interval_seconds;
    let base = overview.age_seconds;
    let age = move || base.map(|a| a + ticks.get());
    let stale_by_age = move || age().is_some_and(|a| a > 3 * interval.max(1) as i64);
    let error = overview.last_error.clone();
    let behind = overview.behind.clone();
    // While backing off, the budget banner says when the next refresh comes.
    let retry = if behind.is_some() {
        "gpushare retries as the ECS API budget allows".to_string()
    } else {
        format!("gpushare keeps retrying every {interval} s")
    };
    let usage_error = overview.usage_error.clone();
    let server_stale = overview.stale;
    view! {
        <p
            class="freshness"
            data-testid="freshness"
            data-version=overview.version.to_string()
            data-taken-at=overview.taken_at.clone()
            title=overview.taken_at.as_ref().map(|at| format!("The fleet as read at {at}"))
        >
            {move || match age() {
                Some(age) => format!("Updated {} ago · refreshes every {interval} s", format_age(age)),
                None => "Reading the fleet for the first time…".to_string(),
            }}
        </p>
        <div class="banners">
            {behind.map(|why| view! {
                <p class="banner info" role="status" data-testid="budget-banner">
                    {format!("Fleet data {} old: {why}", format_age(base.unwrap_or(0)))}
                </p>
            })}
            {move || (server_stale || stale_by_age()).then(|| {
                let why = match &error {
                    Some(error) => format!("the last refresh failed: {error}"),
                    None => "no newer snapshot has arrived".to_string(),
                };
                view! {
                    <p class="banner warn" role="alert" data-testid="stale-banner">
                        {format!(
                            "Stale data: this snapshot is {} old and {why}. Showing the last good snapshot; {retry}.",
                            format_age(age().unwrap_or(0)),
                        )}
                    </p>
                }
            })}
            {usage_error.map(|error| view! {
                <p class="banner warn" role="status">
                    {format!("GPU usage could not be read from CloudWatch ({error}); usage shows as no data.")}
                </p>
            })}
            {(overview.unknown_gpu_ids > 0).then(|| view! {
                <p class="banner info" role="status">
                    {format!("{} containers name a GPU that no instance reports (an instance that left, or data in flux).", overview.unknown_gpu_ids)}
                </p>
            })}
        </div>
    }
}

/// `42 s`, `3 min`, `2 h`.
pub fn format_age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s} s"),
        s if s < 7_200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3_600),
    }
}
