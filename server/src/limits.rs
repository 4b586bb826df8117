//! Limits the command line's defaults and the parts that enforce them share, below both.

/// Live-update streams one client may hold open by default: a few console tabs, each with its
/// fleet stream and a rollout being watched.
pub const STREAMS_PER_CLIENT: usize = 8;

/// Live-update streams the server holds open by default.
pub const STREAMS_TOTAL: usize = 512;

/// Reads answered from the console's own state at once, by default, per core.
pub const READS_IN_FLIGHT_PER_CORE: usize = 4;

/// Reads that may ask ECS first answered at once, by default, per core.
pub const AWS_READS_IN_FLIGHT_PER_CORE: usize = 64;

/// Reads of each kind that may wait for their turn, by default.
pub const READS_WAITING: usize = 64;
