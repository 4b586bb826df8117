//! Plain serde types shared by the server and the browser.

mod console;
mod theme;

pub use console::{ClusterSummary, ConsoleStatus, FleetSource};
pub use theme::{Theme, THEME_COOKIE};
