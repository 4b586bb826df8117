//! The fleet's clusters, read through ECS: ListClusters, then DescribeClusters in batches of 100.

use app::{
    model::ClusterSummary,
    ssr::clusters::{BoxFuture, ClusterDirectory},
};
use aws_sdk_ecs::error::DisplayErrorContext;

/// Lists clusters with aws-sdk-ecs.
pub struct EcsClusters {
    ecs: aws_sdk_ecs::Client,
}

impl EcsClusters {
    pub fn new(ecs: aws_sdk_ecs::Client) -> EcsClusters {
        EcsClusters { ecs }
    }

    async fn read(&self) -> Result<Vec<ClusterSummary>, String> {
        let fail = |error: &dyn std::fmt::Display| {
            format!(
                "ECS did not answer ({error}); check the AWS credentials and region, and try again"
            )
        };
        let (arns, _) = crate::fleet::reader::list_cluster_arns(&self.ecs)
            .await
            .map_err(|e| fail(&e))?;
        let mut clusters = Vec::with_capacity(arns.len());
        for batch in arns.chunks(100) {
            let out = self
                .ecs
                .describe_clusters()
                .set_clusters(Some(batch.to_vec()))
                .send()
                .await
                .map_err(|e| fail(&DisplayErrorContext(e)))?;
            clusters.extend(out.clusters().iter().map(|c| ClusterSummary {
                name: c.cluster_name().unwrap_or_default().to_string(),
                container_instances: c.registered_container_instances_count().max(0) as u32,
                running_tasks: c.running_tasks_count().max(0) as u32,
                pending_tasks: c.pending_tasks_count().max(0) as u32,
                services: c.active_services_count().max(0) as u32,
            }));
        }
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(clusters)
    }
}

impl ClusterDirectory for EcsClusters {
    fn clusters(&self) -> BoxFuture<'_, Result<Vec<ClusterSummary>, String>> {
        Box::pin(self.read())
    }
}
