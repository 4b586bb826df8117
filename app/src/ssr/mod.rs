//! Server-only parts of the app: what the server hands to the pages it renders.

pub mod console;
pub mod csp;
pub mod fleet;
pub mod theme;
