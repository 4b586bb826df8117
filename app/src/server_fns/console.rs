//! The console's own status.

use leptos::prelude::*;

use crate::model::ConsoleStatus;

/// The server's version, uptime, clock and fleet source.
#[server(name = GetConsoleStatus, prefix = "/api", endpoint = "console_status")]
pub async fn console_status() -> Result<ConsoleStatus, ServerFnError> {
    use crate::ssr::console::ConsoleContext;

    let context = use_context::<ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))?;
    Ok(ConsoleStatus {
        version: context.version.to_string(),
        fleet_source: context.fleet_source.clone(),
        uptime_seconds: context.started.elapsed().as_secs(),
        server_time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })
}
