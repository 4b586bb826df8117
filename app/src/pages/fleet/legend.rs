//! The legend: the colour scale of the mode, the special cells and the sharing-mode glyphs.

use super::*;

/// The legend: the colour scale of the mode, the special cells and the sharing-mode glyphs.
#[component]
pub(super) fn Legend(colour: Signal<ColourMode>) -> impl IntoView {
    view! {
        <div class="legend" data-testid="legend">
            <span class="legend-title">{move || colour.get().label()}</span>
            <span class="scale" aria-hidden="true">
                {(0..10).map(|n| view! { <i class=format!("sw c{n}")></i> }).collect_view()}
            </span>
            <span class="ticks">"0 %"<span>"50 %"</span>"100 %"</span>
            {move || (colour.get() == ColourMode::Compute).then(|| view! {
                <span class="key"><i class="sw c9"></i>"100 % and over: limits are caps, not reservations"</span>
                <span class="key"><i class="sw ov"></i>"over 100 % and busy (contended)"</span>
            })}
            {move || matches!(colour.get(), ColourMode::Utilization | ColourMode::MemoryUsed | ColourMode::Unused).then(|| view! {
                <span class="key"><i class="sw nd"></i>"no data"</span>
            })}
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c6 s" /></svg>"NVIDIA_MPS"</span>
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c9 d" /></svg>"DEDICATED"</span>
            <span class="key"><svg class="glyph" viewBox="0 0 16 16" aria-hidden="true"><rect x="1" y="1" class="c0 i" /></svg>"IDLE"</span>
        </div>
    }
}
