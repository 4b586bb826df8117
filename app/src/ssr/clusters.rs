//! The seam through which pages list the fleet's clusters.

use crate::model::ClusterSummary;

/// A boxed future, so that implementations can be stored as trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Lists the clusters of the fleet the console shows.
pub trait ClusterDirectory: Send + Sync {
    /// Every cluster with its counts, or a message saying what failed and what to do.
    fn clusters(&self) -> BoxFuture<'_, Result<Vec<ClusterSummary>, String>>;
}
