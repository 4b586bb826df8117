//! ECS through aws-sdk-ecs, for the use cases: the [`EcsReads`] and [`EcsWrites`] ports over
//! one SDK client. Reads fail as "unavailable"; a write that ECS refuses fails as "refused by
//! AWS", with ECS's code, and a write that got no answer as "no answer" — it may have been made.

pub mod activity;
pub mod cache;
pub mod capacity;
pub mod capacity_sources;
pub mod create_provider;
pub mod create_service;
pub mod services;
pub mod shapes;
pub mod task_definitions;

use std::{sync::Arc, time::Duration};

use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_async::future::pagination_stream::PaginationStream;
use aws_smithy_runtime_api::http::Response as HttpResponse;
pub use cache::{CacheSize, ReadCache};

use crate::aws::budget::{Budget, Lane};
use crate::aws::errors;

use app::{
    model::{
        activity::{ClusterEvent, TaskInfo},
        deployment::LiveService,
        task_definition::{FieldError, RevisionDetail, SourceRevision},
        ServiceError,
    },
    service::ports::{
        BoxFuture, EcsReads, EcsWrites, FleetFeed, Registered, ServiceUpdated, TaskQuery,
    },
};
use serde_json::{Map, Value};

/// How long on-demand reads are kept before ECS is asked again: the task definition lists
/// (the console's own registrations clear them) and a cluster's events. A service now and a
/// cluster's tasks are read every time (rollouts are watched through them), the cache only
/// standing in when ECS is slow or failing.
const DEFINITIONS_TTL: Duration = Duration::from_secs(30);
const SERVICE_TTL: Duration = Duration::ZERO;
const EVENTS_TTL: Duration = Duration::from_secs(5);
const TASKS_TTL: Duration = Duration::ZERO;
/// How long a page's read waits for the console's share of ECS's request rate before it says
/// the share is in use.
const ON_DEMAND_WAIT: Duration = Duration::from_secs(5);
/// How long it waits while ECS throttles that kind of call.
const SLOWED_WAIT: Duration = Duration::from_millis(500);
/// How long a family's newest active revision is kept (the console's own registrations forget
/// it at once).
const LATEST_ACTIVE_TTL: Duration = Duration::from_secs(5);
/// How long the clusters' capacity providers are kept: they change when someone changes them,
/// not with the fleet's tasks.
const CAPACITY_TTL: Duration = Duration::from_secs(60);
/// How long "there is no such revision" is kept.
const MISSING_TTL: Duration = Duration::from_secs(30);

/// ECS, read and written through one SDK client; on-demand reads go through a short-lived
/// cache ([`cache`]), which the console's own writes clear where they change something.
#[derive(Clone)]
pub struct Ecs {
    client: aws_sdk_ecs::Client,
    /// The tag key naming a task definition's team.
    team_tag: String,
    /// Names the instances and GPUs of tasks, as the snapshot knows them.
    fleet: Arc<dyn FleetFeed>,
    cache: Arc<ReadCache>,
    /// EC2 and EC2 Auto Scaling, for what capacity providers may launch; `None` reads ECS only.
    capacity_sources: Option<Arc<capacity_sources::CapacitySources>>,
    /// The console's share of ECS's request rate, which the fleet refresher uses too; `None`
    /// reads unpaced.
    budget: Option<Arc<Budget>>,
}

impl Ecs {
    pub fn new(client: aws_sdk_ecs::Client, team_tag: &str, fleet: Arc<dyn FleetFeed>) -> Ecs {
        Ecs {
            client,
            team_tag: team_tag.to_string(),
            fleet,
            cache: Arc::default(),
            capacity_sources: None,
            budget: None,
        }
    }

    /// Keeps what pages read from ECS in `cache` (shared with `/metrics`, which counts it).
    pub fn with_cache(mut self, cache: Arc<ReadCache>) -> Ecs {
        self.cache = cache;
        self
    }

    /// Paces the pages' reads within `budget`, beside the fleet refresher's.
    pub fn with_budget(mut self, budget: Arc<Budget>) -> Ecs {
        self.budget = Some(budget);
        self
    }

    /// Waits for a token of `action` in the pages' lane of the budget, or says why there is
    /// none: the refresher's first read has not finished, or the share is in use.
    pub(crate) async fn paced(&self, action: &'static str) -> Result<(), ServiceError> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        // While ECS throttles this kind of call, a page does not wait long for a token: its
        // cache shows the last answer, and says why, sooner.
        let limit = if budget.slowed(action) {
            SLOWED_WAIT
        } else {
            ON_DEMAND_WAIT
        };
        if budget.take_within(action, Lane::OnDemand, limit).await {
            return Ok(());
        }
        Err(ServiceError::unavailable(if budget.slowed(action) {
            format!(
                "ECS is throttling requests ({action}: Rate exceeded on many calls lately), so \
                 the console has slowed its reads of this kind and keeps what is left for the \
                 fleet refresh; try again in a few seconds"
            )
        } else if budget.has_snapshot() {
            format!(
                "the console's share of ECS's request rate for {action} is in use by the fleet \
                 refresh and other pages; try again in a few seconds"
            )
        } else {
            format!(
                "the console is still reading the fleet for the first time since it started, and \
                 keeps ECS's request rate for that read; {action} waits until it is done, so try \
                 again in a minute"
            )
        }))
    }

    /// Reads `pages` of `action` one at a time, each after a token of the pages' lane, and hands
    /// each page to `take`, until `take` answers that nothing more is wanted or the pages end.
    pub(crate) async fn paced_pages<T, E>(
        &self,
        action: &'static str,
        mut pages: PaginationStream<Result<T, SdkError<E, HttpResponse>>>,
        mut take: impl FnMut(T) -> bool,
    ) -> Result<(), ServiceError>
    where
        E: std::error::Error + ProvideErrorMetadata + 'static,
    {
        loop {
            self.paced(action).await?;
            let Some(page) = pages.next().await else {
                return Ok(());
            };
            if !take(page.map_err(|e| errors::ecs_read(action, &e))?) {
                return Ok(());
            }
        }
    }

    /// Reads what capacity providers may launch through `ec2` and `autoscaling` too.
    pub fn with_capacity_sources(
        mut self,
        ec2: aws_sdk_ec2::Client,
        autoscaling: aws_sdk_autoscaling::Client,
    ) -> Ecs {
        self.capacity_sources = Some(Arc::new(capacity_sources::CapacitySources::new(
            ec2,
            autoscaling,
        )));
        self
    }
}

impl EcsReads for Ecs {
    fn draft_provider(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<app::service::ports::DraftProvider, Vec<FieldError>>> {
        Box::pin(async move { self.draft(&text).await })
    }

    fn latest_revisions(&self) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        let me = self.clone();
        Box::pin(async move {
            self.cache
                .read("latest/".into(), Some(DEFINITIONS_TTL), async move {
                    me.read_latest_revisions().await
                })
                .await
        })
    }

    fn revisions(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        let me = self.clone();
        Box::pin(async move {
            self.cache
                .read(
                    format!("revisions/{family}/"),
                    Some(DEFINITIONS_TTL),
                    async move { me.read_revisions(family).await },
                )
                .await
        })
    }

    fn revision(
        &self,
        family: String,
        revision: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        let me = self.clone();
        let reference = format!("{family}:{revision}");
        Box::pin(async move {
            // A revision never changes; one that does not exist yet may be registered later, so
            // "no such revision" is kept only for a while (and the console's own registrations
            // forget it), so that asking again and again for one costs ECS one call a while.
            let key = format!("revision/{reference}");
            let missing = format!("missing/{reference}");
            if self.cache.fresh(&missing, MISSING_TTL) {
                return Ok(None);
            }
            let found = self
                .cache
                .read(
                    key.clone(),
                    None,
                    async move { me.describe(&reference).await },
                )
                .await?;
            if found.is_none() {
                self.cache.forget(&key);
                self.cache.remember(&missing);
            }
            Ok(found)
        })
    }

    fn latest_active(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        let me = self.clone();
        Box::pin(async move {
            // By the family alone, ECS describes its newest active revision: who owns the
            // family now, for the rules that authorize changes of it.
            self.cache
                .read(
                    format!("latest-active/{family}/"),
                    Some(LATEST_ACTIVE_TTL),
                    async move { me.describe(&family).await },
                )
                .await
        })
    }

    fn service(
        &self,
        cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<LiveService, ServiceError>> {
        let me = self.clone();
        Box::pin(async move {
            self.cache
                .read(
                    format!("service/{cluster}/{service}/"),
                    Some(SERVICE_TTL),
                    async move { me.live(&cluster, &service).await },
                )
                .await
        })
    }

    fn events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, ServiceError>> {
        let me = self.clone();
        let mut names = services.clone();
        names.sort();
        Box::pin(async move {
            self.cache
                .read(
                    format!("events/{cluster}/{}", names.join(",")),
                    Some(EVENTS_TTL),
                    async move { me.read_events(&cluster, &services).await },
                )
                .await
        })
    }

    fn tasks(
        &self,
        cluster: String,
        query: TaskQuery,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, ServiceError>> {
        let me = self.clone();
        let key = format!(
            "tasks/{cluster}/{}/{}",
            query.stopped,
            query.service.as_deref().unwrap_or_default()
        );
        Box::pin(async move {
            self.cache
                .read(key, Some(TASKS_TTL), async move {
                    me.read_tasks(&cluster, &query).await
                })
                .await
        })
    }

    fn capacity(
        &self,
        clusters: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<app::model::capacity::ClusterCapacity>, ServiceError>> {
        let me = self.clone();
        Box::pin(async move {
            self.cache
                .read(
                    format!("capacity/{}", clusters.join(",")),
                    Some(CAPACITY_TTL),
                    async move { me.read_capacity(&clusters).await },
                )
                .await
        })
    }

    fn stale_reads(&self) -> Option<app::model::StaleReads> {
        self.cache.stale()
    }
}

impl Ecs {
    /// Takes the revision ECS just registered into the lists kept: the family's newest in the
    /// list of families' latest, the first of its own list, and described by its ARN.
    fn registered(&self, family: &str, revision: &RevisionDetail) {
        self.cache
            .insert(&format!("described/{}", revision.arn), revision.clone());
        self.cache
            .amend("latest/", |latest: &mut Vec<RevisionDetail>| {
                match latest.iter_mut().find(|r| r.family == family) {
                    Some(kept) => *kept = revision.clone(),
                    None => {
                        latest.push(revision.clone());
                        latest.sort_by(|a, b| a.family.cmp(&b.family));
                    }
                }
            });
        self.cache.amend(
            &format!("revisions/{family}/"),
            |revisions: &mut Vec<RevisionDetail>| {
                revisions.retain(|r| r.arn != revision.arn);
                revisions.insert(0, revision.clone());
                revisions.truncate(app::service::task_definitions::REVISIONS_SHOWN);
            },
        );
    }
}

impl EcsWrites for Ecs {
    fn register(
        &self,
        task: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Registered, ServiceError>> {
        let family = task
            .get("family")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Box::pin(async move {
            let registered = self.register_task(task).await;
            self.cache.forget(&format!("missing/{family}:"));
            self.cache.forget(&format!("latest-active/{family}/"));
            match &registered {
                // ECS's answer describes the new revision: the lists kept take it in.
                Ok(registered) => self.registered(&family, &registered.revision),
                // Without an answer it may have been made: the lists are read again.
                Err(_) => {
                    self.cache.forget("latest/");
                    self.cache.forget(&format!("revisions/{family}/"));
                }
            }
            registered
        })
    }

    fn update_service(
        &self,
        cluster: String,
        service: String,
        task_definition: String,
        force_new: bool,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            let updated = self
                .update(&cluster, &service, &task_definition, force_new)
                .await;
            self.cache.forget(&format!("service/{cluster}/{service}/"));
            self.cache.forget(&format!("events/{cluster}/"));
            self.cache.forget(&format!("tasks/{cluster}/"));
            updated
        })
    }

    fn scale_service(
        &self,
        cluster: String,
        service: String,
        desired: u32,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            let updated = self.scale(&cluster, &service, desired).await;
            self.cache.forget(&format!("service/{cluster}/{service}/"));
            self.cache.forget(&format!("events/{cluster}/"));
            self.cache.forget(&format!("tasks/{cluster}/"));
            updated
        })
    }

    fn create_service(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<app::service::ports::ServiceCreated, ServiceError>> {
        Box::pin(async move {
            let cluster = body
                .get("cluster")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string();
            let created = self.create(&body).await;
            self.cache.forget(&format!("events/{cluster}/"));
            self.cache.forget(&format!("tasks/{cluster}/"));
            self.cache.forget("capacity/");
            created
        })
    }

    fn create_provider(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Option<String>, ServiceError>> {
        Box::pin(async move {
            let created = self.create_capacity_provider(&body).await;
            self.cache.forget("capacity/");
            created
        })
    }

    fn put_cluster_providers(
        &self,
        cluster: String,
        providers: Vec<String>,
        default_strategy: Vec<app::model::capacity::StrategyItem>,
    ) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            let put = self
                .put_cluster_capacity_providers(&cluster, &providers, &default_strategy)
                .await;
            self.cache.forget("capacity/");
            put
        })
    }

    fn delete_service(
        &self,
        cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<app::service::ports::ServiceDeleted, ServiceError>> {
        Box::pin(async move {
            let deleted = self.delete(&cluster, &service).await;
            self.cache.forget(&format!("service/{cluster}/{service}/"));
            self.cache.forget(&format!("events/{cluster}/"));
            self.cache.forget(&format!("tasks/{cluster}/"));
            deleted
        })
    }
}
