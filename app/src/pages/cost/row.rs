//! One row of the cost table: its name and kind, its share as a bar, its cost, GPU-hours and
//! unused, and the change against the previous period.

use super::*;

#[component]
pub(super) fn Row(row: CostRow, change: bool) -> impl IntoView {
    // An SVG bar: its width is an attribute, which the content security policy allows where an
    // inline style is not.
    let width = format!("{:.1}", row.share_percent.clamp(0.0, 100.0));
    // A tenant's part of an MPS GPU's unused is an estimate: the metrics are the GPU's.
    let estimate = if row.estimated_unused_cents > 0 {
        " (est.)"
    } else {
        ""
    };
    let unused = match row.unused_cents {
        Some(cents) if row.without_usage_cents > 0 => {
            format!(
                "{}{estimate} (+{} without usage data)",
                money(cents),
                money(row.without_usage_cents)
            )
        }
        Some(cents) => format!("{}{estimate}", money(cents)),
        None if row.kind == RowKind::Idle => "—".to_string(),
        None => "no usage data".to_string(),
    };
    view! {
        <tr data-kind=row.kind.as_str()>
            <th scope="row" class=if row.kind == RowKind::Allocated { "" } else { "muted" }>{row.kind.label(&row.name)}</th>
            <td class="num">{money(row.cost_cents)}</td>
            <td class="num share">
                <svg class="share-bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false">
                    <rect class="share-track" width="100" height="10"></rect>
                    <rect class="share-fill" width=width height="10"></rect>
                </svg>
                {format!("{:.1} %", row.share_percent)}
            </td>
            <td class="num">{format!("{:.1}", row.gpu_hours)}</td>
            <td class="num">{unused}</td>
            {change.then(|| view! {
                <td class="num">{row.change_cents.map_or_else(|| "new".to_string(), signed)}</td>
            })}
        </tr>
    }
}

/// `+$12.00`, `-$3.50`, `$0.00`.
pub(super) fn signed(cents: i64) -> String {
    if cents > 0 {
        format!("+{}", money(cents))
    } else {
        money(cents)
    }
}
