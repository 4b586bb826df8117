//! What happens in a cluster: every service's events merged into one feed, the tasks that
//! stopped recently with why, and where a deployment's tasks were placed. Plain types and the
//! filters over them, shared by the pages and the JSON API.

mod events;
mod tasks;

pub use events::{parse_since, ClusterEvent, EventFeed, EventFilter, EventKind, EVENT_PARAMETERS};
pub use tasks::{
    StopCode, StoppedFilter, StoppedTasks, TaskContainer, TaskGpu, TaskInfo, STOPPED_PARAMETERS,
};

/// An RFC 3339 time as tables show it: `2026-11-30 13:35:07`, to the second; anything else as
/// it is.
pub fn when(at: &str) -> String {
    match (at.get(..10), at.get(11..19)) {
        (Some(day), Some(time)) if at.as_bytes().get(10) == Some(&b'T') => format!("{day} {time}"),
        _ => at.to_string(),
    }
}

/// The longest text filter.
pub const MAX_TEXT: usize = 200;
/// The most rows one answer holds.
pub const MAX_LIMIT: u32 = 1000;
/// Rows when no limit is given.
pub const DEFAULT_LIMIT: u32 = 200;

pub(crate) fn check_text(name: &str, text: &Option<String>) -> Option<String> {
    text.as_ref()
        .filter(|t| t.chars().count() > MAX_TEXT)
        .map(|_| format!("{name} is longer than {MAX_TEXT} characters; shorten it"))
}

pub(crate) fn check_limit(limit: Option<u32>) -> Option<String> {
    limit
        .filter(|l| *l == 0 || *l > MAX_LIMIT)
        .map(|l| format!("limit {l} is not between 1 and {MAX_LIMIT}"))
}

pub(crate) fn contains(haystack: &str, needle: &str) -> bool {
    haystack
        .to_lowercase()
        .contains(&needle.trim().to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_show_to_the_second() {
        assert_eq!(when("2026-11-30T13:35:07.058Z"), "2026-11-30 13:35:07");
        assert_eq!(when("2026-11-30T13:35:07Z"), "2026-11-30 13:35:07");
        assert_eq!(when("—"), "—");
        assert_eq!(when(""), "");
    }
}
