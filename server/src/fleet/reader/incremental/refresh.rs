//! The incremental refresh itself: which clusters, instances, tasks and services to read again, and
//! the reads that bring the kept state up to date.

use super::*;

/// What a refresh read of a cluster's instances.
struct InstancesRead {
    /// The instances now, in ECS's order.
    instances: Vec<KnownInstance>,
    /// Those that changed since the last read.
    changed: Vec<String>,
    /// Those gone since.
    removed: HashSet<String>,
    /// Whether the instances were listed again.
    relisted: bool,
}

impl FleetReader {
    /// Brings `known` up to date with what changed since the last read.
    pub(in crate::fleet::reader) async fn read_changes(
        &self,
        known: &mut Known,
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let lane = Lane::Foreground;
        let arns: Vec<String> = known.clusters.iter().map(|c| c.arn.clone()).collect();
        let counts = self.describe_clusters(&arns, calls, lane).await?;
        // A cluster ECS no longer has (deleted, or INACTIVE) leaves; new clusters come with
        // the next full read.
        known.clusters.retain(|c| counts.contains_key(&c.arn));
        let sweep = known.next_sweep();
        // What the events said since the last refresh, per cluster; none when no queue is
        // followed (or the consumer is not keeping up with it).
        let mut hints = self.events.as_ref().and_then(|feed| feed.take());
        let states = std::mem::take(&mut known.clusters);
        let per_cluster: Vec<(ClusterState, Option<Hints>)> = states
            .into_iter()
            .map(|state| {
                let mine = hints.as_mut().map(|h| h.take_cluster(&state.arn));
                (state, mine)
            })
            .collect();
        let sweep = &sweep;
        let fresh = known.fresh;
        let updated = futures::future::join_all(per_cluster.into_iter().map(|(state, mine)| {
            let counts = counts.get(&state.arn).copied();
            async move {
                let result = self
                    .refresh_cluster(state, counts, sweep, mine.as_ref(), fresh, calls)
                    .await;
                (result, mine)
            }
        }))
        .await;
        let mut failed = None;
        for (result, mine) in updated {
            match result {
                Ok(state) => known.clusters.push(state),
                Err((state, error)) => {
                    known.clusters.push(state);
                    failed.get_or_insert(error);
                    // The next refresh starts from the state as it was: it needs the hints.
                    if let (Some(feed), Some(mine)) = (&self.events, mine) {
                        feed.give_back(mine);
                    }
                }
            }
        }
        known
            .clusters
            .sort_by(|a, b| arn_tail(&a.arn).cmp(arn_tail(&b.arn)));
        match failed {
            Some(error) => Err(error),
            None => {
                known.fresh = false;
                Ok(())
            }
        }
    }

    /// Describes `arns` and brings them into `state`: a task ECS no longer has, or one told to
    /// stop (which ListTasks no longer lists), leaves; the others replace what was known, and
    /// their task definitions are read if new.
    pub(super) async fn describe_into(
        &self,
        state: &mut ClusterState,
        arns: Vec<String>,
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let lane = Lane::Foreground;
        let described = self
            .described(
                calls,
                100,
                arns,
                self.describe_tasks(&state.arn, lane, None),
            )
            .await?;
        let mut kept = Vec::new();
        for result in described {
            match result {
                Ok(task) if task.desired_status != Some(TaskStatus::Stopped) => kept.push(task),
                Ok(task) => {
                    state.tasks.remove(&*task.arn);
                }
                Err(arn) => {
                    state.tasks.remove(arn.as_str());
                }
            }
        }
        self.cache_definitions(&kept, calls, lane).await?;
        state.tasks.extend(kept.into_iter().map(task_entry));
        Ok(())
    }

    /// One cluster's refresh. On failure the cluster's state is given back as it was, so
    /// that the next refresh starts from a consistent base.
    pub(super) async fn refresh_cluster(
        &self,
        state: ClusterState,
        counts: Option<ClusterCounts>,
        sweep: &HashSet<String>,
        hints: Option<&Hints>,
        fresh: bool,
        calls: &AtomicU32,
    ) -> Result<ClusterState, (ClusterState, ReadError)> {
        let before = state.clone();
        self.refresh_cluster_inner(state, counts, sweep, hints, fresh, calls)
            .await
            .map_err(|error| (before, error))
    }

    /// One cluster's refresh, in the order the reads depend on each other: its instances, the
    /// tasks the events named, the tasks listed where something changed that the events did
    /// not account for, then its services.
    pub(super) async fn refresh_cluster_inner(
        &self,
        mut state: ClusterState,
        counts: Option<ClusterCounts>,
        sweep: &HashSet<String>,
        hints: Option<&Hints>,
        fresh: bool,
        calls: &AtomicU32,
    ) -> Result<ClusterState, ReadError> {
        let read = self.read_instances(&state, counts, fresh, calls).await?;
        state.tasks.retain(|_, task| {
            task.container_instance_arn
                .as_ref()
                .is_none_or(|arn| !read.removed.contains(&**arn))
        });
        let unexplained = match hints {
            Some(hints) => self.follow_events(&mut state, hints, &read, calls).await?,
            None => read.changed.clone(),
        };
        let task_counts_changed = match (state.counts, counts) {
            (Some(old), Some(new)) => (old.running, old.pending) != (new.running, new.pending),
            _ => true,
        };
        let listed_any = self
            .list_tasks(
                &mut state,
                task_counts_changed,
                &read.changed,
                &unexplained,
                calls,
            )
            .await?;
        // Services: those of a changed cluster are described again.
        let cluster_changed = read.relisted
            || !read.removed.is_empty()
            || listed_any
            || (hints.is_none() && (!read.changed.is_empty() || task_counts_changed));
        self.refresh_services(&mut state, counts, sweep, hints, cluster_changed, calls)
            .await?;
        state.instances = read.instances;
        state.counts = counts;
        Ok(state)
    }

    /// The cluster's instances: the known ones described; listed again when some are gone or
    /// the count differs. Which changed (their fingerprint, or — on a fresh read — their tasks
    /// disagree with them) and which are gone.
    async fn read_instances(
        &self,
        state: &ClusterState,
        counts: Option<ClusterCounts>,
        fresh: bool,
        calls: &AtomicU32,
    ) -> Result<InstancesRead, ReadError> {
        let lane = Lane::Foreground;
        let cluster = state.arn.clone();
        let known_arns: Vec<String> = state.instances.iter().map(|i| i.arn.clone()).collect();
        let described = self
            .described(
                calls,
                100,
                known_arns.clone(),
                self.describe_instances(&cluster, lane),
            )
            .await?;
        let mut found: HashMap<String, KnownInstance> = HashMap::new();
        let mut gone = false;
        for result in described {
            match result {
                Ok(instance) => {
                    gone |= instance.status == InstanceStatus::Inactive;
                    found.insert(instance.arn.clone(), instance);
                }
                Err(_) => gone = true,
            }
        }
        let registered = found.values().filter(|i| i.registered()).count() as i32;
        let relist_instances = gone
            || counts.is_some_and(|c| c.instances != registered)
            || counts.is_none() && state.counts.is_some();
        let order: Vec<String> = if relist_instances {
            self.list_instances_again(&cluster, &mut found, calls, lane)
                .await?
        } else {
            known_arns.clone()
        };
        let previous: HashMap<&str, u64> = state
            .instances
            .iter()
            .map(|i| (i.arn.as_str(), i.fingerprint))
            .collect();
        let instances: Vec<KnownInstance> = order
            .iter()
            .filter_map(|arn| found.remove(arn))
            .filter(|i| i.status != InstanceStatus::Inactive)
            .collect();
        let disagreeing: HashSet<String> = if fresh {
            self.disagreeing_with_tasks(state, &instances)
        } else {
            HashSet::new()
        };
        let changed: Vec<String> = instances
            .iter()
            .filter(|i| {
                previous.get(i.arn.as_str()) != Some(&i.fingerprint) || disagreeing.contains(&i.arn)
            })
            .map(|i| i.arn.clone())
            .collect();
        let present: HashSet<&str> = instances.iter().map(|i| i.arn.as_str()).collect();
        let removed: HashSet<String> = previous
            .keys()
            .filter(|arn| !present.contains(*arn))
            .map(|arn| arn.to_string())
            .collect();
        Ok(InstancesRead {
            instances,
            changed,
            removed,
            relisted: relist_instances,
        })
    }

    /// The cluster's instances listed again, in ECS's order; those not known before are
    /// described into `found`.
    async fn list_instances_again(
        &self,
        cluster: &str,
        found: &mut HashMap<String, KnownInstance>,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<Vec<String>, ReadError> {
        let listed: Vec<String> = self
            .listing(cluster, Listing::Instances, calls, lane)
            .try_collect::<Vec<Vec<String>>>()
            .await?
            .concat();
        let new: Vec<String> = listed
            .iter()
            .filter(|arn| !found.contains_key(*arn))
            .cloned()
            .collect();
        for instance in self
            .described(calls, 100, new, self.describe_instances(cluster, lane))
            .await?
            .into_iter()
            .flatten()
        {
            found.insert(instance.arn.clone(), instance);
        }
        Ok(listed)
    }

    /// The instances whose known tasks disagree with what the instance reports of them.
    fn disagreeing_with_tasks(
        &self,
        state: &ClusterState,
        instances: &[KnownInstance],
    ) -> HashSet<String> {
        let definitions = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
        let by_instance = tasks_by_instance(&state.tasks);
        instances
            .iter()
            .filter(|i| !tasks_agree(i, by_instance.get(i.arn.as_str()), &definitions))
            .map(|i| i.arn.clone())
            .collect()
    }

    /// Events: the tasks they name are described again (a task told to stop leaves, as
    /// ListTasks lists only those whose desired status is RUNNING). An instance that changed
    /// is accounted for when events named tasks on it and the tasks known there now are as
    /// many as ECS counts; the others — still to be listed — are the answer.
    async fn follow_events(
        &self,
        state: &mut ClusterState,
        hints: &Hints,
        read: &InstancesRead,
        calls: &AtomicU32,
    ) -> Result<Vec<String>, ReadError> {
        let (instances, changed) = (&read.instances, &read.changed);
        let mut unexplained = changed.clone();
        for (arn, hint) in &hints.tasks {
            if hint.stopping {
                state.tasks.remove(arn.as_str());
            }
        }
        // Also the tasks known on a changed instance that were not yet RUNNING: a lost
        // event must not leave one PENDING for ever.
        let changed_set: HashSet<&str> = changed.iter().map(String::as_str).collect();
        let mut describe: Vec<String> = hints
            .tasks
            .iter()
            .filter(|(_, hint)| !hint.stopping)
            .map(|(arn, _)| arn.clone())
            .collect();
        describe.extend(
            state
                .tasks
                .values()
                .filter(|t| {
                    t.last_status != Some(TaskStatus::Running)
                        && t.container_instance_arn
                            .as_deref()
                            .is_some_and(|i| changed_set.contains(i))
                        && !hints.tasks.contains_key(&*t.arn)
                })
                .map(|t| t.arn.to_string()),
        );
        self.describe_into(state, describe, calls).await?;
        let named = hints.instances();
        let by_instance = tasks_by_instance(&state.tasks);
        let by_arn: HashMap<&str, &KnownInstance> =
            instances.iter().map(|i| (i.arn.as_str(), i)).collect();
        let definitions = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
        unexplained.retain(|arn| {
            let agree = by_arn.get(arn.as_str()).is_some_and(|instance| {
                tasks_agree(instance, by_instance.get(arn.as_str()), &definitions)
            });
            !(named.contains(arn.as_str()) && agree)
        });
        drop(definitions);
        Ok(unexplained)
    }

    /// Tasks: listed where something changed that the events did not account for — the whole
    /// cluster, or the `unexplained` instances — and the new or not yet running described.
    /// Whether anything was listed.
    async fn list_tasks(
        &self,
        state: &mut ClusterState,
        task_counts_changed: bool,
        changed: &[String],
        unexplained: &[String],
        calls: &AtomicU32,
    ) -> Result<bool, ReadError> {
        let lane = Lane::Foreground;
        let cluster = state.arn.clone();
        let unplaced = state
            .tasks
            .values()
            .any(|t| t.container_instance_arn.is_none());
        let cluster_pages = state.tasks.len().div_ceil(100).max(1);
        let whole_cluster = unplaced
            || (task_counts_changed && changed.is_empty())
            || unexplained.len() > cluster_pages;
        let listed: Option<(Vec<String>, Option<HashSet<String>>)> = if whole_cluster {
            let arns = self
                .listing(&cluster, Listing::Tasks(None), calls, lane)
                .try_collect::<Vec<Vec<String>>>()
                .await?
                .concat();
            Some((arns, None))
        } else if !unexplained.is_empty() {
            let lists = futures::future::try_join_all(unexplained.iter().map(|instance| {
                self.listing(
                    &cluster,
                    Listing::Tasks(Some(instance.clone())),
                    calls,
                    lane,
                )
                .try_collect::<Vec<Vec<String>>>()
            }))
            .await?;
            let scope: HashSet<String> = unexplained.iter().cloned().collect();
            Some((lists.concat().concat(), Some(scope)))
        } else {
            None
        };
        let listed_any = listed.is_some();
        if let Some((arns, scope)) = listed {
            let listed: HashSet<&str> = arns.iter().map(String::as_str).collect();
            state.tasks.retain(|arn, task| {
                let in_scope = match &scope {
                    None => true,
                    Some(instances) => task
                        .container_instance_arn
                        .as_ref()
                        .is_some_and(|i| instances.contains(&**i)),
                };
                !in_scope || listed.contains(arn.as_ref())
            });
            let describe: Vec<String> = arns
                .iter()
                .filter(|arn| {
                    state
                        .tasks
                        .get(arn.as_str())
                        .is_none_or(|t| t.last_status != Some(TaskStatus::Running))
                })
                .cloned()
                .collect();
            self.describe_into(state, describe, calls).await?;
        }

        Ok(listed_any)
    }

    /// Services: listed again when the count differs; described when the cluster changed,
    /// when the events named their tasks, when they are in a rollout, and this refresh's slice
    /// (`sweep`).
    async fn refresh_services(
        &self,
        state: &mut ClusterState,
        counts: Option<ClusterCounts>,
        sweep: &HashSet<String>,
        hints: Option<&Hints>,
        cluster_changed: bool,
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let lane = Lane::Foreground;
        let cluster = state.arn.clone();
        let named_services: HashSet<&str> = hints
            .map(|h| {
                h.tasks
                    .values()
                    .filter_map(|t| t.group.as_deref()?.strip_prefix("service:"))
                    .collect()
            })
            .unwrap_or_default();
        let active = state
            .services
            .values()
            .filter(|s| s.status == ServiceStatus::Active)
            .count() as i32;
        let relist_services = counts.is_some_and(|c| c.services != active);
        let mut describe: Vec<String> = state
            .services
            .values()
            .filter(|s| {
                cluster_changed
                    || s.moving()
                    || sweep.contains(&s.arn)
                    || named_services.contains(s.service.name.as_str())
            })
            .map(|s| s.arn.clone())
            .collect();
        if relist_services {
            let listed: Vec<String> = self
                .listing(&cluster, Listing::Services, calls, lane)
                .try_collect::<Vec<Vec<String>>>()
                .await?
                .concat();
            let listed_set: HashSet<&String> = listed.iter().collect();
            state.services.retain(|arn, _| listed_set.contains(arn));
            describe.retain(|arn| listed_set.contains(arn));
            describe.extend(
                listed
                    .iter()
                    .filter(|arn| !state.services.contains_key(*arn))
                    .cloned(),
            );
        }
        for result in self
            .described(calls, 10, describe, self.describe_services(&cluster, lane))
            .await?
        {
            match result {
                Ok(service) if service.status == ServiceStatus::Inactive => {
                    state.services.remove(&service.arn);
                }
                Ok(service) => {
                    state.services.insert(service.arn.clone(), service);
                }
                Err(arn) => {
                    state.services.remove(&arn);
                }
            }
        }
        Ok(())
    }
}
