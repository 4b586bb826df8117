//! The command line: every flag can also be set through a `GPUSHARE_*` environment variable.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// gpushare: a web console for Amazon ECS GPU sharing with NVIDIA MPS.
///
/// With no command, `gpushare` runs `serve`.
#[derive(Debug, Parser)]
#[command(name = "gpushare", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Server options when no command is given (the same as `gpushare serve`).
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Log line format.
    #[arg(long, env = "GPUSHARE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,

    /// Which log lines to keep, as a tracing filter (e.g. `info`, `gpushare=debug,info`).
    #[arg(long, env = "GPUSHARE_LOG", default_value = "info", global = true)]
    pub log_filter: String,
}

/// What `gpushare` does.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the console over HTTP (the default).
    Serve(ServeArgs),
}

/// Options of the console's HTTP server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "GPUSHARE_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// Folder with the built site: `pkg/` (script, WebAssembly, stylesheet) and the public assets.
    #[arg(long, env = "GPUSHARE_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,

    /// Seconds a request may take before the server answers 408.
    #[arg(long, env = "GPUSHARE_REQUEST_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout: u64,

    /// Largest request body accepted, in bytes; larger bodies get 413.
    #[arg(long, env = "GPUSHARE_BODY_LIMIT", default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..=1024 * 1024 * 1024))]
    pub body_limit: u64,
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs {
            listen: SocketAddr::from(([127, 0, 0, 1], 3000)),
            site_root: PathBuf::from("target/site"),
            request_timeout: 30,
            body_limit: 1024 * 1024,
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event, for log collectors.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_command_means_serve_with_its_flags() {
        let cli = Cli::try_parse_from(["gpushare", "--listen", "127.0.0.1:9999"]).expect("parses");
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.listen, SocketAddr::from(([127, 0, 0, 1], 9999)));
    }

    #[test]
    fn serve_subcommand_takes_the_same_flags() {
        let cli = Cli::try_parse_from([
            "gpushare",
            "serve",
            "--listen",
            "0.0.0.0:8080",
            "--log-format",
            "json",
        ])
        .expect("parses");
        let Some(Command::Serve(args)) = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(args.listen.port(), 8080);
        assert_eq!(cli.log_format, LogFormat::Json);
    }

    #[test]
    fn bad_values_are_rejected_with_the_flag_named() {
        let error =
            Cli::try_parse_from(["gpushare", "--listen", "not-an-address"]).expect_err("must fail");
        assert!(error.to_string().contains("--listen"), "{error}");
        let error =
            Cli::try_parse_from(["gpushare", "--request-timeout", "0"]).expect_err("must fail");
        assert!(error.to_string().contains("--request-timeout"), "{error}");
    }
}
