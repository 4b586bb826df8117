//! A GET form that opens the comparison of two revisions; works without JavaScript.

use super::*;

/// A GET form that opens the comparison of two revisions; works without JavaScript.
#[component]
pub(super) fn ComparePicker(family: String, numbers: Vec<u32>) -> impl IntoView {
    if numbers.len() < 2 {
        return ().into_any();
    }
    let (newest, previous) = (numbers[0], numbers[1]);
    let options = |selected: u32| {
        numbers
            .iter()
            .map(|n| view! { <option value=n.to_string() selected=*n == selected>{format!("revision {n}")}</option> })
            .collect_view()
    };
    view! {
        <form class="compare-picker card" method="get" action=format!("/task-definitions/{family}/compare") data-testid="compare-picker">
            <label><span>"Compare"</span><select name="from" data-testid="compare-from">{options(previous)}</select></label>
            <label><span>"with"</span><select name="to" data-testid="compare-to">{options(newest)}</select></label>
            <button type="submit" data-testid="compare-open">"Compare"</button>
        </form>
    }
    .into_any()
}
