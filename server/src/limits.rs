//! Limits the command line's defaults and the parts that enforce them share, below both.

/// Live-update streams one client may hold open by default: a few console tabs, each with its
/// fleet stream and a rollout being watched.
pub const STREAMS_PER_CLIENT: usize = 8;

/// Live-update streams the server holds open by default.
pub const STREAMS_TOTAL: usize = 512;
