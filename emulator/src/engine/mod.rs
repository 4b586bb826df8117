//! The scheduler: places tasks, moves them through their lifecycle, rolls services out within
//! their deployment configuration, and trips the circuit breaker, on the simulated clock. One
//! simulated second is one [`Fleet::step`]: task transitions ([`scheduling`]), then each busy
//! service's reconciliation ([`rollout`]), whose end the [`circuit_breaker`] may decide.

mod circuit_breaker;
mod elastic;
mod providers;
mod rollout;
mod scheduling;
mod services;

use chrono::{DateTime, Duration, Utc};

use crate::{
    error::{invalid, EcsError},
    instance_types::InstanceType,
    model::{Cluster, ContainerInstance, Fleet},
    placement::GpuSlot,
};

pub use elastic::unsettle_services_on;
pub use services::{NewService, ServiceUpdate};

impl Fleet {
    /// Creates an empty cluster, or returns the one with that name.
    pub fn create_cluster(&mut self, name: &str) -> Result<&Cluster, EcsError> {
        if !crate::error::is_ecs_name(name) {
            return Err(invalid(
                "clusterName must be 1 to 255 letters, numbers, hyphens and underscores.",
            ));
        }
        let arn = self.arn(&format!("cluster/{name}"));
        Ok(self
            .clusters
            .entry(name.to_string())
            .or_insert_with(|| Cluster {
                name: name.to_string(),
                arn,
                instances: Vec::new(),
                instance_index: Default::default(),
                services: Default::default(),
                tasks: Default::default(),
                moving: Default::default(),
                changed: Vec::new(),
                capacity_providers: Vec::new(),
                default_strategy: Vec::new(),
            }))
    }

    /// The service `name` of the cluster `key`, to change.
    pub fn service_mut(&mut self, key: &str, name: &str) -> Option<&mut crate::model::Service> {
        self.clusters
            .get_mut(key)
            .and_then(|c| c.services.get_mut(name))
    }

    /// A new container instance of `kind` for `cluster`, in `zone`: ACTIVE, its GPUs idle and
    /// MPS-capable, the CloudWatch agent running, registered at `registered_at`.
    pub fn instance_of_type(
        &mut self,
        cluster: &str,
        kind: &InstanceType,
        zone: &str,
        registered_at: DateTime<Utc>,
    ) -> ContainerInstance {
        let id = self.new_hex_id();
        let gpu_ids = (0..kind.gpus)
            .map(|_| {
                let g = self.new_hex_id();
                format!(
                    "GPU-{}-{}-{}-{}-{}",
                    &g[..8],
                    &g[8..12],
                    &g[12..16],
                    &g[16..20],
                    &g[20..32]
                )
            })
            .collect();
        let cpu = kind.registered_cpu();
        ContainerInstance {
            arn: self.arn(&format!("container-instance/{cluster}/{id}")),
            ec2_instance_id: format!("i-0{}", &id[..16]),
            instance_type: kind.name.to_string(),
            availability_zone: zone.to_string(),
            gpu_ids,
            gpus: vec![GpuSlot::idle(kind.gpu_memory_mib); kind.gpus],
            gpu_model: kind.gpu_model.to_string(),
            cpu,
            memory_mib: kind.registered_memory_mib(),
            room: ContainerInstance::fresh_room(kind.name, zone, cpu, kind.registered_memory_mib()),
            mps_capable: true,
            mps_impaired: None,
            cloudwatch_agent: true,
            agent_instance_id_dimension: false,
            private_ip: String::new(),
            spot: false,
            capacity_block: false,
            capacity_provider: None,
            registered_at,
            running_tasks: 0,
            pending_tasks: 0,
            version: 1,
        }
    }

    /// Registers a container instance with the cluster.
    pub fn add_instance(&mut self, cluster: &str, mut instance: ContainerInstance) {
        // `memberOf(ec2InstanceId …)` reads the ID with the attributes.
        instance.room.attributes.insert(
            crate::placement::resources::EC2_INSTANCE_ID.to_string(),
            instance.ec2_instance_id.clone(),
        );
        // A private address in 10.0.0.0/8, fixed by the instance ID.
        if instance.private_ip.is_empty() {
            let bits = crate::model::splitmix(
                instance
                    .ec2_instance_id
                    .bytes()
                    .fold(0_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
            );
            instance.private_ip = format!(
                "10.{}.{}.{}",
                bits & 0xff,
                (bits >> 8) & 0xff,
                1 + (bits >> 16) % 254
            );
        }
        self.billing.started(
            &instance.ec2_instance_id,
            &instance.instance_type,
            &instance.availability_zone,
            bought(&instance),
            instance.registered_at,
            crate::pricing::region_factor(&self.region),
        );
        if let Some(cluster) = self.clusters.get_mut(cluster) {
            cluster
                .instance_index
                .insert(instance.arn.clone(), cluster.instances.len());
            cluster.instances.push(instance);
        }
    }

    /// Bills each instance as it is bought now: spot and Capacity Block instances set after
    /// they were added (a scenario's set-up) are billed so from their start.
    pub fn billing_follows_instances(&mut self) {
        for instance in self.clusters.values().flat_map(|c| &c.instances) {
            if instance.spot || instance.capacity_block {
                self.billing
                    .rebuy(&instance.ec2_instance_id, bought(instance));
            }
        }
    }

    /// An instance leaves the cluster (DeregisterContainerInstance with `force`, or its EC2
    /// instance terminated): its tasks are told to stop and it is no longer listed; a
    /// DescribeContainerInstances of it then reports it missing. Returns whether it was there.
    pub fn deregister_instance(&mut self, cluster: &str, arn: &str) -> bool {
        let Some(key) = self.cluster_key(cluster) else {
            return false;
        };
        let tasks: Vec<String> = self.clusters[&key]
            .tasks
            .values()
            .filter(|t| t.is_live() && t.instance_arn == arn)
            .map(|t| t.arn.clone())
            .collect();
        for task in &tasks {
            self.stop_task(
                &key,
                task,
                "Container instance deregistration forced by user",
                "UserInitiated",
            );
        }
        let Some(cluster) = self.clusters.get_mut(&key) else {
            return false;
        };
        let before = cluster.instances.len();
        if let Some(gone) = cluster.instances.iter().find(|i| i.arn == arn) {
            self.billing.ended(&gone.ec2_instance_id, self.now);
        }
        cluster.instances.retain(|i| i.arn != arn);
        cluster.instance_index = cluster
            .instances
            .iter()
            .enumerate()
            .map(|(n, i)| (i.arn.clone(), n))
            .collect();
        cluster.instances.len() < before
    }

    /// A new deployment ID: `ecs-svc/` and 19 digits.
    fn new_deployment_id(&mut self) -> String {
        let hex = self.new_hex_id();
        let number = u64::from_str_radix(&hex[..16], 16).unwrap_or(0) % 10_000_000_000_000_000_000;
        format!("ecs-svc/{number:019}")
    }

    fn push_event(&mut self, cluster: &str, service: &str, message: String) {
        let id = self.new_hex_id();
        let id = format!(
            "{}-{}-{}-{}-{}",
            &id[..8],
            &id[8..12],
            &id[12..16],
            &id[16..20],
            &id[20..]
        );
        let now = self.now;
        if let Some(service) = self
            .clusters
            .get_mut(cluster)
            .and_then(|c| c.services.get_mut(service))
        {
            service.push_event(id, now, message);
        }
    }

    /// Whether a simulated second or more has passed between the last step and `to`.
    pub fn behind(&self, to: DateTime<Utc>) -> bool {
        self.now + Duration::seconds(1) <= to
    }

    /// Moves the simulation forward to `to`, one simulated second at a time.
    pub fn advance(&mut self, to: DateTime<Utc>) {
        while self.behind(to) {
            let next = self.now + Duration::seconds(1);
            self.step(next);
        }
    }

    /// One step: task transitions, then every service's reconciliation.
    pub fn step(&mut self, now: DateTime<Utc>) {
        self.now = now;
        while self.schedule.front().is_some_and(|s| s.at <= now) {
            if let Some(change) = self.schedule.pop_front() {
                let update = ServiceUpdate {
                    desired_count: Some(change.desired),
                    ..ServiceUpdate::default()
                };
                let _ = self.update_service(&change.cluster, &change.service, update);
            }
        }
        let keys: Vec<String> = self.clusters.keys().cloned().collect();
        for key in &keys {
            self.move_tasks(key);
            // A steady service with no task on the move has nothing to do: skip it, which keeps
            // a step of a large fleet cheap.
            let cluster = &self.clusters[key];
            let busy: std::collections::HashSet<&str> = cluster
                .moving
                .iter()
                .filter_map(|arn| cluster.tasks.get(arn))
                .filter_map(|task| task.group.strip_prefix("service:"))
                .collect();
            let services: Vec<String> = cluster
                .services
                .values()
                .filter(|svc| {
                    !svc.steady
                        || busy.contains(svc.name.as_str())
                        // Time to say again that it is steady.
                        || svc.last_steady_event.is_some_and(|at| {
                            now >= at + Duration::seconds(rollout::EVENT_REPEAT_SECONDS)
                        })
                })
                .map(|svc| svc.name.clone())
                .collect();
            for service in services {
                self.reconcile(key, &service);
            }
            if now.timestamp() % 60 == 0 {
                self.forget_old_tasks(key);
            }
        }
        self.run_capacity();
    }
}

/// `(task id) (task id)`, as ECS names tasks in service events.
fn task_list(arns: &[String]) -> String {
    let ids: Vec<String> = arns
        .iter()
        .map(|arn| format!("(task {})", arn.rsplit('/').next().unwrap_or(arn)))
        .collect();
    ids.join(" ")
}

#[cfg(test)]
pub(crate) mod fixture {
    //! A small fleet for the engine's tests: one cluster of GPU instances and a task definition
    //! registered through the emulator's own rules.

    use chrono::{DateTime, Duration, TimeZone, Utc};
    use serde_json::json;

    use crate::{
        model::{ContainerInstance, Fleet},
        placement::GpuSlot,
    };

    /// The simulated time the fixture starts at.
    pub fn start() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0)
            .single()
            .unwrap_or_default()
    }

    /// A fleet with cluster `prod` of `instances` instances of `gpus` GPUs of 22,563 MiB each.
    pub fn fleet(instances: usize, gpus: usize) -> Fleet {
        let mut fleet = Fleet::new(7, start());
        fleet.create_cluster("prod").expect("a valid name");
        for n in 0..instances {
            let id = fleet.new_hex_id();
            let arn = fleet.arn(&format!("container-instance/prod/{id}"));
            let gpu_ids = (0..gpus).map(|g| format!("GPU-{n}-{g}")).collect();
            fleet.add_instance(
                "prod",
                ContainerInstance {
                    arn,
                    ec2_instance_id: format!("i-{n:04}"),
                    instance_type: "g5.12xlarge".into(),
                    availability_zone: "us-east-1a".into(),
                    gpu_ids,
                    gpus: vec![GpuSlot::idle(22_563); gpus],
                    gpu_model: "NVIDIA A10G".into(),
                    cpu: 48 * 1024,
                    memory_mib: 190_000,
                    room: ContainerInstance::fresh_room(
                        "g5.12xlarge",
                        "us-east-1a",
                        48 * 1024,
                        190_000,
                    ),
                    mps_capable: true,
                    mps_impaired: None,
                    cloudwatch_agent: true,
                    agent_instance_id_dimension: false,
                    private_ip: String::new(),
                    spot: false,
                    capacity_block: false,
                    capacity_provider: None,
                    registered_at: start() - Duration::days(1),
                    running_tasks: 0,
                    pending_tasks: 0,
                    version: 1,
                },
            );
        }
        fleet
    }

    /// Registers `family` with one container asking `memory_mib` of a GPU through MPS (or
    /// exiting at once with `exit` when given); its ARN.
    pub fn mps_family(
        fleet: &mut Fleet,
        family: &str,
        memory_mib: u32,
        exit: Option<i32>,
    ) -> String {
        let environment: Vec<_> = exit
            .map(|code| json!({"name": "EMULATOR_EXIT_CODE", "value": code.to_string()}))
            .into_iter()
            .collect();
        let body = json!({
            "family": family,
            "requiresCompatibilities": ["EC2"],
            "containerDefinitions": [{
                "name": "model", "image": "model:1", "cpu": 1024, "memory": 4096,
                "environment": environment,
                "resourceRequirements": [
                    {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": memory_mib}}}
                ]
            }]
        });
        let now = fleet.now;
        fleet
            .register_task_definition(body.as_object().cloned().unwrap_or_default(), now)
            .expect("a valid task definition")
            .arn
            .clone()
    }

    /// Advances the fleet by `seconds` simulated seconds.
    pub fn run(fleet: &mut Fleet, seconds: i64) {
        let to = fleet.now + Duration::seconds(seconds);
        fleet.advance(to);
    }
}

/// How `instance` is bought: spot, in a Capacity Block, under the Savings Plan (about four in
/// ten on-demand instances), or on demand.
fn bought(instance: &ContainerInstance) -> crate::billing::Purchase {
    use crate::billing::{covered, Purchase};
    if instance.spot {
        Purchase::Spot
    } else if instance.capacity_block {
        Purchase::CapacityBlock
    } else if covered(&instance.ec2_instance_id) {
        Purchase::SavingsPlan
    } else {
        Purchase::OnDemand
    }
}

#[cfg(test)]
mod tests {
    use super::fixture;

    #[test]
    fn a_cluster_name_is_checked_and_creating_it_again_returns_it() {
        let mut fleet = fixture::fleet(1, 1);
        assert!(fleet.create_cluster("bad name").is_err());
        let arn = fleet.create_cluster("prod").expect("exists").arn.clone();
        assert!(arn.ends_with(":cluster/prod"), "{arn}");
        assert_eq!(fleet.clusters["prod"].instances.len(), 1, "kept");
    }

    #[test]
    fn the_clock_moves_one_simulated_second_at_a_time() {
        let mut fleet = fixture::fleet(1, 1);
        let start = fleet.now;
        fixture::run(&mut fleet, 5);
        assert_eq!((fleet.now - start).num_seconds(), 5);
        assert_eq!(
            super::task_list(&["arn:aws:ecs:r:1:task/prod/abc".to_string()]),
            "(task abc)"
        );
    }
}
