//! Log output: text for people, JSON for collectors.

use tracing_subscriber::{fmt, prelude::*, EnvFilter};

use crate::config::LogFormat;

/// Installs the global log subscriber.
pub fn init(format: LogFormat, filter: &str) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(filter).map_err(|error| {
        anyhow::anyhow!("--log-filter {filter:?} is not a valid filter: {error}")
    })?;
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        // Colours only on a terminal: a log file or a collector gets plain text.
        LogFormat::Text => registry
            .with(fmt::layer().with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout())))
            .try_init()?,
        LogFormat::Json => registry
            .with(fmt::layer().json().flatten_event(true))
            .try_init()?,
    }
    Ok(())
}
