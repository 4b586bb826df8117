//! Task definitions for the pages, read from ECS.

use leptos::prelude::*;

use crate::model::task_definition::{FamilyDetail, FamilySummary};

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// Whether `family` is a family name ECS would accept.
pub fn valid_family(family: &str) -> bool {
    !family.is_empty()
        && family.len() <= 255
        && family
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Every active family, described by its latest revision.
#[server(name = ListTaskDefinitionFamilies, prefix = "/api", endpoint = "task_definition_families")]
pub async fn task_definition_families() -> Result<Vec<FamilySummary>, ServerFnError> {
    context()?
        .task_definitions
        .families()
        .await
        .map_err(ServerFnError::new)
}

/// One family's active revisions, newest first; `None` when there is no such family.
#[server(name = GetTaskDefinitionFamily, prefix = "/api", endpoint = "task_definition_family")]
pub async fn task_definition_family(family: String) -> Result<Option<FamilyDetail>, ServerFnError> {
    if !valid_family(&family) {
        return Err(ServerFnError::new(format!(
            "{family:?} is not a task definition family: up to 255 letters, digits, hyphens and underscores"
        )));
    }
    context()?
        .task_definitions
        .family(family)
        .await
        .map_err(ServerFnError::new)
}
