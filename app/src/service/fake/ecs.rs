//! The fake's ECS: the fleet feed, reads and writes, the task definition schema and rollout
//! watches, answering from what the test set up.

use super::*;
use crate::model::words::{DeploymentStatus, RolloutState};

impl FleetFeed for Fake {
    fn state(&self) -> FleetState {
        FleetState {
            snapshot: Some(Arc::new(snapshot())),
            taken_at: Some(
                chrono::Utc::now()
                    - chrono::Duration::seconds(
                        *self.snapshot_age.lock().unwrap_or_else(|p| p.into_inner()),
                    ),
            ),
            version: 1,
            ..FleetState::default()
        }
    }

    fn refresh_interval_seconds(&self) -> u64 {
        15
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        watch::channel(1).1
    }
}

impl EcsReads for Fake {
    fn latest_revisions(&self) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move { Ok(vec![revision(2).detail]) })
    }

    fn latest_active(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        Box::pin(async move {
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok((family == "embed").then(|| revision(newest)))
        })
    }

    fn revisions(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move {
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok(if family == "embed" {
                (1..=newest).rev().map(|n| revision(n).detail).collect()
            } else {
                Vec::new()
            })
        })
    }

    fn revision(
        &self,
        family: String,
        number: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        Box::pin(async move {
            if self.throttle_revision_reads.load(Ordering::SeqCst) {
                return Err(ServiceError::unavailable(
                    "ECS is throttling requests (DescribeTaskDefinition: ThrottlingException: Rate exceeded)",
                ));
            }
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok((family == "embed" && (1..=newest).contains(&number)).then(|| revision(number)))
        })
    }

    fn service(
        &self,
        _cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<LiveService, ServiceError>> {
        Box::pin(async move {
            self.call("ecs.service");
            if service != "embed" {
                return Err(ServiceError::not_found(format!(
                    "ECS has no service {service:?}"
                )));
            }
            let running = *self.running.lock().unwrap_or_else(|p| p.into_inner());
            let task_definition = format!("{ARN}embed:{running}");
            let desired = *self.desired.lock().unwrap_or_else(|p| p.into_inner());
            let status = if self.deleted.load(Ordering::SeqCst) {
                "INACTIVE"
            } else {
                "ACTIVE"
            };
            Ok(LiveService {
                status: status.into(),
                task_definition: task_definition.clone(),
                desired,
                running: 1,
                pending: 0,
                deployments: self.deployments_now(task_definition),
                events: self
                    .events
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            })
        })
    }

    fn draft_provider(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<crate::service::ports::DraftProvider, Vec<FieldError>>> {
        Box::pin(async move {
            let Ok(Value::Object(body)) = serde_json::from_str::<Value>(&text) else {
                return Err(vec![FieldError {
                    message: "not a JSON object".into(),
                    ..FieldError::default()
                }]);
            };
            let name = body
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            // The fake region has one type that shares GPUs and one fractional type.
            let catalogue = [
                ("g6e.12xlarge", None),
                (
                    "g6f.xlarge",
                    Some("a fractional GPU, which ECS cannot share with MPS"),
                ),
            ];
            let allowed: Vec<String> = Value::Object(body.clone())
                .pointer("/managedInstancesProvider/instanceLaunchTemplate/instanceRequirements/allowedInstanceTypes")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            let kind = if body.contains_key("autoScalingGroupProvider") {
                crate::model::words::ProviderType::AutoScalingGroup
            } else {
                crate::model::words::ProviderType::ManagedInstances
            };
            let may_launch = catalogue
                .iter()
                .map(|(t, why)| crate::model::capacity::LaunchOption {
                    facts: placement::growth::TypeFacts {
                        name: (*t).to_string(),
                        gpus: 4,
                        gpu_memory_mib: 45_582,
                        total_gpu_memory_mib: 4 * 46_068,
                        accelerator_name: "l40s".into(),
                        manufacturer: "nvidia".into(),
                        vcpus: 48,
                        memory_mib: 393_216,
                        task_enis: None,
                        // EC2 gives no price: the console's price book does.
                        usd_per_hour: None,
                    },
                    not_matched: if allowed.is_empty() || allowed.iter().any(|a| a == t) {
                        why.map(str::to_string)
                    } else {
                        Some("not allowed".into())
                    },
                    shares_gpus: why.is_none(),
                })
                .collect();
            Ok((
                body,
                crate::model::capacity::ProviderView {
                    name,
                    kind,
                    status: "ACTIVE".into(),
                    can_share_gpus: true,
                    may_launch,
                    ..crate::model::capacity::ProviderView::default()
                },
            ))
        })
    }

    fn events(
        &self,
        _cluster: String,
        _services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, ServiceError>> {
        Box::pin(async move { Ok(Vec::new()) })
    }

    fn tasks(
        &self,
        _cluster: String,
        _query: TaskQuery,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, ServiceError>> {
        Box::pin(async move { Ok(Vec::new()) })
    }

    /// The fake's clusters have no capacity providers.
    fn capacity(
        &self,
        clusters: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<crate::model::capacity::ClusterCapacity>, ServiceError>> {
        Box::pin(async move {
            Ok(clusters
                .into_iter()
                .map(|cluster| crate::model::capacity::ClusterCapacity {
                    cluster,
                    ..Default::default()
                })
                .collect())
        })
    }
}

impl EcsWrites for Fake {
    fn register(
        &self,
        _task: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Registered, ServiceError>> {
        Box::pin(async move {
            self.call("ecs.register");
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused RegisterTaskDefinition: ClientException: no",
                ));
            }
            let mut newest = self.registered.lock().unwrap_or_else(|p| p.into_inner());
            *newest += 1;
            Ok(Registered {
                revision: revision(*newest).detail,
                request_id: Some("request-1".into()),
            })
        })
    }

    fn update_service(
        &self,
        _cluster: String,
        _service: String,
        task_definition: String,
        force_new: bool,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            self.call(&format!(
                "ecs.update_service {task_definition}{}",
                if force_new { " forceNewDeployment" } else { "" }
            ));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused UpdateService: AccessDeniedException: no",
                ));
            }
            if self.lose_update_answers.load(Ordering::SeqCst) {
                self.deploy_as_ecs(task_definition);
                return Err(ServiceError::no_answer(
                    "ECS did not answer UpdateService; whether it took the change is not known",
                ));
            }
            Ok(ServiceUpdated {
                deployment_id: Some("ecs-svc/2".into()),
                request_id: Some("request-2".into()),
            })
        })
    }

    fn scale_service(
        &self,
        _cluster: String,
        _service: String,
        desired: u32,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            self.call(&format!("ecs.scale_service {desired}"));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused UpdateService: AccessDeniedException: no",
                ));
            }
            *self.desired.lock().unwrap_or_else(|p| p.into_inner()) = desired;
            Ok(ServiceUpdated {
                deployment_id: Some("ecs-svc/1".into()),
                request_id: Some("request-3".into()),
            })
        })
    }

    fn create_service(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<crate::service::ports::ServiceCreated, ServiceError>> {
        Box::pin(async move {
            let name = body
                .get("serviceName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            self.call(&format!("ecs.create_service {name}"));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused CreateService: AccessDeniedException: no",
                ));
            }
            self.created
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(body);
            Ok(crate::service::ports::ServiceCreated {
                arn: format!("arn:aws:ecs:us-east-1:1:service/prod/{name}"),
                deployment_id: Some("ecs-svc/9".into()),
                request_id: Some("request-5".into()),
            })
        })
    }

    fn create_provider(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Option<String>, ServiceError>> {
        Box::pin(async move {
            let name = body.get("name").and_then(Value::as_str).unwrap_or_default();
            self.call(&format!("ecs.create_provider {name}"));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused CreateCapacityProvider: AccessDeniedException: no",
                ));
            }
            Ok(Some("request-6".into()))
        })
    }

    fn put_cluster_providers(
        &self,
        cluster: String,
        providers: Vec<String>,
        _default_strategy: Vec<crate::model::capacity::StrategyItem>,
    ) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(&format!(
                "ecs.put_cluster_providers {cluster} {}",
                providers.join(",")
            ));
            if self.refuse_delete.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused PutClusterCapacityProviders: ClientException: no",
                ));
            }
            Ok(())
        })
    }

    fn delete_service(
        &self,
        _cluster: String,
        _service: String,
    ) -> BoxFuture<'_, Result<crate::service::ports::ServiceDeleted, ServiceError>> {
        Box::pin(async move {
            self.call("ecs.delete_service");
            if self.refuse_writes.load(Ordering::SeqCst)
                || self.refuse_delete.load(Ordering::SeqCst)
            {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused DeleteService: AccessDeniedException: no",
                ));
            }
            if *self.desired.lock().unwrap_or_else(|p| p.into_inner()) > 0 {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused DeleteService: InvalidParameterException: The service cannot be stopped while it is scaled above 0.",
                ));
            }
            self.deleted.store(true, Ordering::SeqCst);
            Ok(crate::service::ports::ServiceDeleted {
                status: "DRAINING".into(),
                request_id: Some("request-4".into()),
            })
        })
    }
}

impl TaskDefinitionSchema for Fake {
    fn validate(&self, text: String) -> BoxFuture<'_, Result<ValidRequest, Vec<FieldError>>> {
        Box::pin(async move { self.check(&text) })
    }

    /// The top-level fields of CreateService that the fake knows; any other is refused by name.
    fn create_service(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<Map<String, Value>, Vec<FieldError>>> {
        const KNOWN: [&str; 13] = [
            "cluster",
            "serviceName",
            "taskDefinition",
            "desiredCount",
            "launchType",
            "capacityProviderStrategy",
            "deploymentConfiguration",
            "networkConfiguration",
            "loadBalancers",
            "healthCheckGracePeriodSeconds",
            "placementConstraints",
            "placementStrategy",
            "tags",
        ];
        Box::pin(async move {
            let error = |field: &str, message: String| {
                vec![FieldError {
                    field: field.into(),
                    message,
                    ..FieldError::default()
                }]
            };
            let Ok(Value::Object(body)) = serde_json::from_str::<Value>(&text) else {
                return Err(error("", "not a JSON object".into()));
            };
            if let Some(unknown) = body.keys().find(|k| !KNOWN.contains(&k.as_str())) {
                return Err(error(
                    unknown,
                    format!("CreateService has no field '{unknown}'"),
                ));
            }
            Ok(body)
        })
    }
}

impl Fake {
    /// The service's deployments as a test set them, or one completed PRIMARY deployment
    /// (`ecs-svc/1`) of `task_definition`.
    fn deployments_now(&self, task_definition: String) -> Vec<LiveDeployment> {
        let set = self.deployments.lock().unwrap_or_else(|p| p.into_inner());
        if !set.is_empty() {
            return set.clone();
        }
        vec![LiveDeployment {
            id: "ecs-svc/1".into(),
            status: DeploymentStatus::Primary,
            task_definition,
            desired: 1,
            running: 1,
            rollout_state: Some(RolloutState::Completed),
            ..LiveDeployment::default()
        }]
    }

    /// What ECS does with an UpdateService of `task_definition` (`family:revision`): a new
    /// PRIMARY deployment, made at ECS's clock; the one before becomes ACTIVE.
    fn deploy_as_ecs(&self, task_definition: String) {
        let running = *self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mut deployments = self.deployments_now(format!("{ARN}embed:{running}"));
        for d in &mut deployments {
            d.status = DeploymentStatus::Active;
        }
        let made = LiveDeployment {
            id: format!("ecs-svc/{}", 100 + deployments.len()),
            status: DeploymentStatus::Primary,
            task_definition: format!("{ARN}{task_definition}"),
            desired: 1,
            rollout_state: Some(RolloutState::InProgress),
            created_at: Some(
                self.ecs_clock
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            )
            .filter(|at| !at.is_empty()),
            ..LiveDeployment::default()
        };
        deployments.insert(0, made);
        *self.deployments.lock().unwrap_or_else(|p| p.into_inner()) = deployments;
        // The service's task definition is the new deployment's at once, as in ECS.
        if let Some(revision) = task_definition
            .rsplit_once(':')
            .and_then(|(_, r)| r.parse().ok())
        {
            *self.running.lock().unwrap_or_else(|p| p.into_inner()) = revision;
        }
    }

    pub(super) fn check(&self, text: &str) -> Result<ValidRequest, Vec<FieldError>> {
        let task: Map<String, Value> = serde_json::from_str(text).map_err(|e| {
            vec![FieldError {
                message: e.to_string(),
                ..FieldError::default()
            }]
        })?;
        let request = placement::rules::check_task(&task).map_err(|errors| {
            errors
                .into_iter()
                .map(|e| FieldError {
                    field: e.path,
                    message: e.message,
                    ..FieldError::default()
                })
                .collect::<Vec<_>>()
        })?;
        Ok((task, request))
    }
}

impl RolloutWatches for Fake {
    fn start(&self, rollout: RolloutToWatch) -> WatchState {
        self.call("watches.start");
        self.watched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rollout.initial.clone());
        rollout.initial
    }

    fn current(&self, _id: &str) -> Option<WatchState> {
        None
    }

    fn subscribe(&self, _id: &str) -> Option<watch::Receiver<WatchState>> {
        None
    }
}
