//! One file per route.

pub mod activity;
pub mod approvals;
pub mod audit;
pub mod capacity;
pub mod cost;
pub mod cost_months;
pub mod cost_plan;
pub mod cost_reconciliation;
pub mod deployments;
pub mod fleet;
pub mod not_found;
pub mod task_definitions;

use leptos::prelude::*;

/// A page's title part read from `memo` as long as the page lives, and its first value after:
/// the page's `<Title>` is rendered into the head once the body is done, and on the server the
/// page's reactive values may be gone by then (a suspense that walked its children again).
pub fn title_part<T>(memo: Memo<T>) -> impl Fn() -> T + Send + Sync + 'static
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    let first = memo.get_untracked();
    move || memo.try_get().unwrap_or_else(|| first.clone())
}
