//! One GPU, found by `<EC2 instance ID>:<index>` or by its UUID, with where it is and what a
//! fault on it would hit.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::instance_header;
use crate::model::{FleetSnapshot, GpuView, InstanceView, SharingMode};

/// A GPU with where it is and what a fault on it would hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuDetail {
    pub cluster: String,
    /// The instance without its GPUs.
    pub instance: InstanceView,
    pub gpu: GpuView,
    /// Services on this GPU: a fatal GPU fault in one client reaches every client on it.
    pub gpu_services: Vec<String>,
    /// Services on the instance's other MPS GPUs, which share its MPS control daemon.
    pub daemon_services: Vec<String>,
    /// Teams on this GPU.
    pub teams: Vec<String>,
    /// The key that selects it: `<EC2 instance ID>:<index>`.
    pub key: String,
    /// What the instance's GPUs did not use of their allocations, as they measure it.
    #[serde(default)]
    pub instance_unused: Option<crate::model::InstanceUnused>,
    /// When the snapshot it comes from was read (its `taken_at`).
    #[serde(default)]
    pub taken_at: String,
}

/// A GPU's place, `<EC2 instance ID>:<index>`, as the page's URL and the heatmap name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuKey<'a> {
    pub instance: &'a str,
    pub index: u32,
}

impl<'a> GpuKey<'a> {
    /// `i-0abc:3`; `None` for anything else (such as a GPU UUID).
    pub fn parse(key: &'a str) -> Option<GpuKey<'a>> {
        let (instance, index) = key.rsplit_once(':')?;
        Some(GpuKey {
            instance,
            index: index.parse().ok()?,
        })
    }
}

/// MPS allows 48 client CUDA contexts per GPU on Volta and later.
pub const MPS_CLIENT_LIMIT: usize = 48;

/// Finds a GPU by `<EC2 instance ID>:<index>` or by its UUID.
pub fn gpu_detail(snapshot: &FleetSnapshot, key: &str) -> Option<GpuDetail> {
    let place = GpuKey::parse(key);
    for cluster in &snapshot.clusters {
        for instance in &cluster.instances {
            let found = instance.gpus.iter().find(|g| {
                g.uuid == key
                    || place.is_some_and(|p| {
                        p.instance == instance.ec2_instance_id && p.index == g.index
                    })
            });
            let Some(gpu) = found else { continue };
            let sorted = |names: &mut dyn Iterator<Item = String>| {
                names
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
            };
            let gpu_services = sorted(&mut gpu.services().into_iter().map(str::to_string));
            let daemon_services = if gpu.mode == SharingMode::NvidiaMps {
                sorted(
                    &mut instance
                        .gpus
                        .iter()
                        .filter(|g| g.index != gpu.index && g.mode == SharingMode::NvidiaMps)
                        .flat_map(|g| g.containers.iter().filter_map(|c| c.service.clone()))
                        .filter(|s| !gpu_services.contains(s)),
                )
            } else {
                Vec::new()
            };
            let teams = sorted(&mut gpu.containers.iter().filter_map(|c| c.team.clone()));
            return Some(GpuDetail {
                cluster: cluster.name.clone(),
                instance: instance_header(instance),
                gpu: gpu.clone(),
                gpu_services,
                daemon_services,
                teams,
                key: format!("{}:{}", instance.ec2_instance_id, gpu.index),
                instance_unused: crate::model::instance_unused(instance),
                taken_at: snapshot.taken_at.clone(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fleet_view::fixture::snapshot;

    #[test]
    fn a_gpu_is_found_by_key_or_uuid_with_its_blast_radius() {
        let all = snapshot();
        let detail = gpu_detail(&all, "i-1:0").expect("found");
        assert_eq!(detail.gpu.uuid, "GPU-0");
        assert_eq!(detail.gpu_services, ["embed", "rerank"]);
        assert_eq!(
            detail.daemon_services,
            ["ocr"],
            "the other MPS GPU shares the daemon"
        );
        assert_eq!(detail.teams, ["search"]);
        assert_eq!(detail.key, "i-1:0");
        assert_eq!(detail.taken_at, all.taken_at, "it names its snapshot");
        assert!(!detail.taken_at.is_empty());
        assert_eq!(
            gpu_detail(&all, "GPU-0").map(|d| d.cluster),
            Some("prod".into())
        );
        assert!(gpu_detail(&all, "i-1:9").is_none());
        assert!(gpu_detail(&all, "nonsense").is_none());
        assert_eq!(
            GpuKey::parse("i-1:3"),
            Some(GpuKey {
                instance: "i-1",
                index: 3
            })
        );
        assert_eq!(GpuKey::parse("GPU-0"), None);
    }
}
