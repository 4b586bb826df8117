//! Plain serde types shared by the server and the browser.

mod console;
mod fleet;
mod theme;

pub use console::{ClusterSummary, ConsoleStatus, FleetSource};
pub use fleet::{ClusterView, FleetSnapshot, GpuContainer, GpuMode, GpuView, InstanceView};
pub use theme::{Theme, THEME_COOKIE};
