//! The console's own status.

use leptos::prelude::*;

use crate::model::{ConsoleStatus, ServiceError};

/// The server's version, uptime, clock and fleet source.
#[server(name = GetConsoleStatus, prefix = "/api", endpoint = "console_status")]
pub async fn console_status() -> Result<ConsoleStatus, ServiceError> {
    let actor = super::actor().ok();
    Ok(crate::service::fleet::console_status(
        &super::context()?,
        actor,
    ))
}
