//! Cost per day as stacked bars, drawn on the server: an SVG that scales with its box, each segment
//! titled with its day, name and amount, and a legend beside it.

use super::*;

/// Cost per day as stacked bars, drawn on the server: an SVG that scales with its box, each
/// segment titled with its day, name and amount, and a legend beside it.
#[component]
pub(super) fn CostChart(chart: Chart, group: Grouping) -> impl IntoView {
    const WIDTH: f64 = 800.0;
    const HEIGHT: f64 = 220.0;
    const LEFT: f64 = 70.0;
    const BOTTOM: f64 = 24.0;
    let plot_h = HEIGHT - BOTTOM - 8.0;
    let max = chart
        .days
        .iter()
        .map(|d| d.cents.iter().sum::<i64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let slot = (WIDTH - LEFT) / chart.days.len().max(1) as f64;
    let bar = (slot * 0.75).max(1.0);
    let label_every = (chart.days.len() / 10).max(1);
    let grid = (1..=4)
        .map(|i| {
            let value = max * f64::from(i) / 4.0;
            let y = 8.0 + plot_h - plot_h * f64::from(i) / 4.0;
            #[allow(clippy::cast_possible_truncation)]
            let label = money(value.round() as i64);
            view! {
                <line class="chart-grid" x1=LEFT x2=WIDTH y1=y y2=y></line>
                <text class="chart-axis" x=LEFT - 6.0 y=y + 4.0 text-anchor="end">{label}</text>
            }
        })
        .collect_view();
    let series = chart.series.clone();
    let bars = chart.days.iter().enumerate().map(|(i, day)| {
        let x = LEFT + slot * i as f64 + (slot - bar) / 2.0;
        let mut y = 8.0 + plot_h;
        let partial = day.recorded_percent < 100;
        let segments = day.cents.iter().enumerate().filter(|(_, c)| **c > 0).map(|(s, cents)| {
            let h = *cents as f64 / max * plot_h;
            y -= h;
            let name = series.get(s).cloned().unwrap_or_default();
            let title = format!(
                "{} · {name}: {}{}",
                day.day,
                money(*cents),
                if partial { format!(" ({} % of the day recorded)", day.recorded_percent) } else { String::new() }
            );
            view! {
                <rect x=format!("{x:.1}") y=format!("{y:.1}") width=format!("{bar:.1}") height=format!("{h:.1}") fill=series_colour(s, &name) class=if partial { "partial" } else { "" }>
                    <title>{title}</title>
                </rect>
            }
        }).collect_view();
        let label = (i % label_every == 0).then(|| view! {
            <text class="chart-axis" x=format!("{:.1}", x + bar / 2.0) y=HEIGHT - 6.0 text-anchor="middle">{day.day.get(5..).unwrap_or(&day.day).to_string()}</text>
        });
        view! { <g data-day=day.day.clone()>{segments}{label}</g> }
    }).collect_view();
    let legend = chart.series.iter().enumerate().map(|(i, name)| view! {
        <li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill=series_colour(i, name)></rect></svg>{name.clone()}</li>
    }).collect_view();
    let description = format!(
        "Cost per day by {}, {} days, stacked: the largest rows, other, and idle.",
        group.label().to_lowercase(),
        chart.days.len()
    );
    let label = description.clone();
    view! {
        <section class="card cost-chart" aria-labelledby="cost-chart-title" data-testid="cost-chart">
            <h2 id="cost-chart-title" class="card-title">"Cost per day"</h2>
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-label=label preserveAspectRatio="xMidYMid meet">
                <title>{description}</title>
                {grid}
                {bars}
            </svg>
            <ul class="chart-legend">{legend}</ul>
        </section>
    }
}

pub(super) fn series_colour(index: usize, name: &str) -> &'static str {
    match name {
        crate::model::cost::history::IDLE => "#d4d4d4",
        crate::model::cost::history::OTHER => "#7f7f7f",
        _ => PALETTE[index % PALETTE.len()],
    }
}
