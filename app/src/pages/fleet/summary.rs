//! The fleet's figures above the heatmap: GPUs idle, shared and dedicated, the memory and compute
//! allocated, GPUs over their limits, and usage.

use super::*;

#[component]
pub(super) fn Summary(summary: FleetSummary) -> impl IntoView {
    let percent = |part: u64, whole: u64| (part * 100).checked_div(whole).unwrap_or(0);
    view! {
        <section class="summary" aria-label="Summary" data-testid="summary">
            <div class="stat"><span class="value" data-testid="gpu-count">{summary.gpus}</span><span class="label">"GPUs"</span></div>
            <div class="stat"><span class="value">{summary.idle}</span><span class="label">"idle"</span></div>
            <div class="stat"><span class="value">{summary.shared}</span><span class="label">"shared (MPS)"</span></div>
            <div class="stat"><span class="value">{summary.dedicated}</span><span class="label">"dedicated"</span></div>
            <div class="stat">
                <span class="value">{format!("{} %", percent(summary.memory_allocated_mib, summary.memory_total_mib))}</span>
                <span class="label">{format!("memory allocated: {} of {}", mib_as_gib(summary.memory_allocated_mib), mib_as_gib(summary.memory_total_mib))}</span>
            </div>
            <div class="stat" data-testid="over-limits">
                <span class="value">{summary.oversubscribed}</span>
                <span class="label">"Σ compute limits over 100 %"</span>
            </div>
            <div class=stat_class(summary.contended) data-testid="contended">
                <span class="value">{summary.contended}</span>
                <span class="label">{format!("contended (limits over 100 %, ≥ {} % busy)", summary.contention_threshold)}</span>
                {(summary.over_limits_unknown_use > 0).then(|| view! {
                    <span class="label muted">{format!("{} more without utilisation data", summary.over_limits_unknown_use)}</span>
                })}
            </div>
            <div class=stat_class(summary.impaired_instances)>
                <span class="value">{summary.impaired_instances}</span><span class="label">{format!("impaired of {} instances", summary.instances)}</span>
            </div>
            <div class="stat">
                <span class="value">{summary.without_usage}</span><span class="label">"GPUs without usage data"</span>
            </div>
        </section>
    }
}

/// A summary figure that should be zero is highlighted when it is not.
pub(super) fn stat_class(count: u32) -> &'static str {
    if count > 0 {
        "stat alert"
    } else {
        "stat"
    }
}

pub(super) fn mib_as_gib(mib: u64) -> String {
    if mib < 10 * 1024 {
        format!("{:.1} GiB", mib as f64 / 1024.0)
    } else {
        format!("{} GiB", thousands((mib + 512) / 1024))
    }
}
