//! The fleet narrowed to a view's filters, and the filter values that name nothing, with what
//! exists instead.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{packing::gpu_team, FleetQuery, Grouping, Zoom};
use crate::model::{ClusterView, FleetSnapshot, GpuView, InstanceView};

/// What exists in a snapshot, for the filter menus and for saying what exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetOptions {
    pub clusters: Vec<String>,
    pub teams: Vec<String>,
    pub services: Vec<String>,
    pub instance_types: Vec<String>,
}

impl FleetOptions {
    pub fn of(snapshot: &FleetSnapshot) -> FleetOptions {
        let mut teams = BTreeSet::new();
        let mut services = BTreeSet::new();
        let mut types = BTreeSet::new();
        for instance in snapshot.clusters.iter().flat_map(|c| c.instances.iter()) {
            types.insert(instance.instance_type.as_str());
            for container in instance.gpus.iter().flat_map(|g| g.containers.iter()) {
                teams.extend(container.team.as_deref());
                services.extend(container.service.as_deref());
            }
        }
        let owned = |set: BTreeSet<&str>| set.into_iter().map(str::to_string).collect();
        FleetOptions {
            clusters: snapshot.clusters.iter().map(|c| c.name.clone()).collect(),
            teams: owned(teams),
            services: owned(services),
            instance_types: owned(types),
        }
    }
}

/// A filter value that names nothing in the fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownValue {
    /// The URL parameter.
    pub parameter: &'static str,
    pub value: String,
    /// What exists for that parameter.
    pub existing: Vec<String>,
}

impl UnknownValue {
    /// "There is no cluster "x"; the clusters are: a, b."
    pub fn message(&self) -> String {
        let what = match self.parameter {
            "cluster" => "cluster",
            "team" => "team with GPU containers",
            "service" => "service with GPU containers",
            _ => "instance type",
        };
        let existing = if self.existing.is_empty() {
            "there are none".to_string()
        } else {
            format!("they are: {}", self.existing.join(", "))
        };
        format!("There is no {what} {:?}; {existing}.", self.value)
    }
}

/// The filter values of `query` that name nothing in `options`.
pub fn unknown_values(query: &FleetQuery, options: &FleetOptions) -> Vec<UnknownValue> {
    [
        ("cluster", &query.cluster, &options.clusters),
        ("team", &query.team, &options.teams),
        ("service", &query.service, &options.services),
        (
            "instance_type",
            &query.instance_type,
            &options.instance_types,
        ),
    ]
    .into_iter()
    .filter_map(|(parameter, value, existing)| {
        let value = value.as_ref()?;
        (!existing.contains(value)).then(|| UnknownValue {
            parameter,
            value: value.clone(),
            existing: existing.clone(),
        })
    })
    .collect()
}

/// Drops the filters that name nothing, so the page shows what exists instead of nothing.
pub fn without_unknown(query: &FleetQuery, unknown: &[UnknownValue]) -> FleetQuery {
    let mut query = query.clone();
    for u in unknown {
        match u.parameter {
            "cluster" => query.cluster = None,
            "team" => query.team = None,
            "service" => query.service = None,
            _ => query.instance_type = None,
        }
    }
    query
}

/// Whether a GPU passes the GPU-level filters (mode, team, service).
fn gpu_matches(gpu: &GpuView, query: &FleetQuery) -> bool {
    query.mode.is_none_or(|m| gpu.mode == m)
        && query
            .team
            .as_ref()
            .is_none_or(|team| gpu.containers.iter().any(|c| c.team.as_ref() == Some(team)))
        && query.service.as_ref().is_none_or(|service| {
            gpu.containers
                .iter()
                .any(|c| c.service.as_ref() == Some(service))
        })
}

/// The clusters, instances and GPUs that match every filter of `query`. An instance stays when
/// any of its GPUs matches; with a GPU-level filter, instances with none go.
pub fn filter(snapshot: &FleetSnapshot, query: &FleetQuery) -> FleetSnapshot {
    let gpu_level = query.mode.is_some() || query.team.is_some() || query.service.is_some();
    let clusters = snapshot
        .clusters
        .iter()
        .filter(|c| query.cluster.as_ref().is_none_or(|name| &c.name == name))
        .map(|c| {
            with_instances(
                c,
                c.instances
                    .iter()
                    .filter(|i| {
                        query
                            .instance_type
                            .as_ref()
                            .is_none_or(|t| &i.instance_type == t)
                    })
                    .filter_map(|i| {
                        let gpus: Vec<GpuView> = i
                            .gpus
                            .iter()
                            .filter(|g| gpu_matches(g, query))
                            .cloned()
                            .collect();
                        (!gpu_level || !gpus.is_empty()).then(|| InstanceView {
                            gpus,
                            ..instance_header(i)
                        })
                    })
                    .collect(),
            )
        })
        .filter(|c| !gpu_level || !c.instances.is_empty())
        .collect();
    with_clusters(snapshot, clusters)
}

/// `cluster` with `instances` instead of its own.
fn with_instances(cluster: &ClusterView, instances: Vec<InstanceView>) -> ClusterView {
    ClusterView {
        name: cluster.name.clone(),
        services: cluster.services,
        service_list: cluster.service_list.clone(),
        running_tasks: cluster.running_tasks,
        pending_tasks: cluster.pending_tasks,
        instances,
    }
}

/// `snapshot` with `clusters` instead of its own.
fn with_clusters(snapshot: &FleetSnapshot, clusters: Vec<ClusterView>) -> FleetSnapshot {
    FleetSnapshot {
        taken_at: snapshot.taken_at.clone(),
        api_calls: snapshot.api_calls,
        cloudwatch_calls: snapshot.cloudwatch_calls,
        usage_error: snapshot.usage_error.clone(),
        clusters,
        unknown_gpu_ids: snapshot.unknown_gpu_ids,
    }
}

/// The part of `snapshot` that `zoom` names; empty when it names nothing.
pub fn zoom_into(snapshot: &FleetSnapshot, zoom: &Zoom) -> FleetSnapshot {
    let brushed: std::collections::HashSet<&str> = match zoom {
        Zoom::Instances(ids) => ids.iter().map(String::as_str).collect(),
        _ => Default::default(),
    };
    let clusters = snapshot
        .clusters
        .iter()
        .filter(|c| match zoom {
            Zoom::Group(Grouping::Cluster, name) => &c.name == name,
            _ => true,
        })
        .map(|c| {
            with_instances(
                c,
                c.instances
                    .iter()
                    .filter_map(|i| {
                        let keep = match zoom {
                            Zoom::Group(Grouping::Cluster, _) => true,
                            Zoom::Group(Grouping::InstanceType, kind) => &i.instance_type == kind,
                            Zoom::Group(Grouping::Zone, zone) => {
                                i.availability_zone.as_deref().unwrap_or("") == zone
                            }
                            Zoom::Group(Grouping::CapacityProvider, provider) => {
                                i.capacity_provider.as_deref().unwrap_or("") == provider
                            }
                            Zoom::Instance(id) => &i.ec2_instance_id == id,
                            Zoom::Instances(_) => brushed.contains(i.ec2_instance_id.as_str()),
                            Zoom::Group(Grouping::Team, team) => {
                                let gpus: Vec<GpuView> = i
                                    .gpus
                                    .iter()
                                    .filter(|g| gpu_team(g).unwrap_or("") == team)
                                    .cloned()
                                    .collect();
                                return (!gpus.is_empty()).then(|| InstanceView {
                                    gpus,
                                    ..instance_header(i)
                                });
                            }
                        };
                        keep.then(|| i.clone())
                    })
                    .collect(),
            )
        })
        .filter(|c| !c.instances.is_empty())
        .collect();
    with_clusters(snapshot, clusters)
}

/// An instance without its GPUs.
pub fn instance_header(instance: &InstanceView) -> InstanceView {
    InstanceView {
        host: None,
        arn: instance.arn.clone(),
        ec2_instance_id: instance.ec2_instance_id.clone(),
        instance_type: instance.instance_type.clone(),
        impaired: instance.impaired.clone(),
        mps_capable: instance.mps_capable,
        gpu_model: instance.gpu_model.clone(),
        gpus: Vec::new(),
        not_placing: instance.not_placing.clone(),
        availability_zone: instance.availability_zone.clone(),
        lifecycle: instance.lifecycle,
        // The checks' detail stays on the server.
        room: None,
        capacity_provider: instance.capacity_provider.clone(),
        registered_at: instance.registered_at.clone(),
        managed_instance: instance.managed_instance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{fleet_view::fixture::snapshot, fleet_view::FleetSummary, SharingMode};

    #[test]
    fn a_zoom_keeps_the_part_it_names() {
        let all = snapshot();
        let gpus = |zoom: Zoom| zoom_into(&all, &zoom).gpu_count();
        assert_eq!(gpus(Zoom::Group(Grouping::Cluster, "prod".into())), 5);
        assert_eq!(gpus(Zoom::Group(Grouping::Cluster, "nowhere".into())), 0);
        assert_eq!(gpus(Zoom::Instance("i-1".into())), 4);
        assert_eq!(
            gpus(Zoom::Instances(vec![
                "i-1".into(),
                "i-3".into(),
                "i-9".into()
            ])),
            5,
            "two clusters' instances; an ID that names nothing adds nothing"
        );
        assert_eq!(
            gpus(Zoom::Group(Grouping::InstanceType, "g6.xlarge".into())),
            2
        );
        assert_eq!(
            gpus(Zoom::Group(Grouping::Zone, String::new())),
            all.gpu_count(),
            "no zone is known in the fixture"
        );
        let teams: Vec<usize> = ["search", "vision", "speech", ""]
            .iter()
            .map(|t| gpus(Zoom::Group(Grouping::Team, t.to_string())))
            .collect();
        assert_eq!(
            teams,
            vec![1, 1, 1, 3],
            "idle and dedicated-without-tasks have no team"
        );
    }

    #[test]
    fn filters_narrow_to_matching_gpus_and_instances() {
        let all = snapshot();
        let count = |s: &FleetSnapshot| FleetSummary::of(s, 90).gpus;
        let query = |f: fn(&mut FleetQuery)| {
            let mut q = FleetQuery::default();
            f(&mut q);
            q
        };
        assert_eq!(count(&filter(&all, &FleetQuery::default())), 6);
        assert_eq!(
            count(&filter(&all, &query(|q| q.cluster = Some("dev".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.team = Some("search".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.service = Some("ocr".into())))),
            1
        );
        assert_eq!(
            count(&filter(&all, &query(|q| q.mode = Some(SharingMode::Idle)))),
            2
        );
        assert_eq!(
            count(&filter(
                &all,
                &query(|q| q.instance_type = Some("g6.xlarge".into()))
            )),
            2
        );
        let vision = filter(&all, &query(|q| q.team = Some("vision".into())));
        assert_eq!(vision.clusters.len(), 1, "clusters without a match go");
        assert_eq!(vision.clusters[0].instances.len(), 1);
    }

    #[test]
    fn unknown_filter_values_say_what_exists_and_are_dropped() {
        let options = FleetOptions::of(&snapshot());
        assert_eq!(options.clusters, ["prod", "dev"]);
        assert_eq!(options.teams, ["search", "speech", "vision"]);
        let query = FleetQuery {
            cluster: Some("nope".into()),
            team: Some("search".into()),
            ..FleetQuery::default()
        };
        let unknown = unknown_values(&query, &options);
        assert_eq!(unknown.len(), 1);
        assert_eq!(
            unknown[0].message(),
            "There is no cluster \"nope\"; they are: prod, dev."
        );
        let corrected = without_unknown(&query, &unknown);
        assert_eq!(corrected.cluster, None);
        assert_eq!(corrected.team.as_deref(), Some("search"));
    }
}
