//! The fake's stores: cost history, audit log, people, spot prices and approval requests, kept in
//! memory as the real stores keep them in the database.

use super::*;

impl crate::service::ports::CostHistory for Fake {
    fn recorded(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<crate::model::cost::Recorded, ServiceError>> {
        let history = self
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Box::pin(async move {
            let mut recorded = crate::model::cost::Recorded::default();
            for (minute, holdings) in history {
                recorded.first = Some(recorded.first.map_or(minute, |f: i64| f.min(minute)));
                if minute < from || minute >= to {
                    continue;
                }
                let day = minute.div_euclid(86_400) * 86_400;
                *recorded.minutes.entry(day).or_default() += 1;
                let per_minute: crate::model::cost::Holdings = holdings
                    .iter()
                    .map(|(k, a)| (k.clone(), a.scaled(1.0 / 60.0)))
                    .collect();
                crate::model::cost::holdings::merge(
                    recorded.days.entry(day).or_default(),
                    &per_minute,
                );
            }
            Ok(recorded)
        })
    }

    fn retention_days(&self) -> u32 {
        400
    }

    fn replaying(&self) -> Option<String> {
        None
    }

    fn sealed(&self) -> BoxFuture<'_, Result<Vec<crate::model::cost::SealedMonth>, ServiceError>> {
        let sealed = self
            .sealed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Box::pin(async move { Ok(sealed) })
    }

    fn seal(
        &self,
        month: crate::model::cost::SealedMonth,
    ) -> BoxFuture<'_, Result<bool, ServiceError>> {
        let mut sealed = self.sealed.lock().unwrap_or_else(|p| p.into_inner());
        let taken = sealed.iter().any(|m| {
            m.sealing.month == month.sealing.month && m.sealing.version == month.sealing.version
        });
        if !taken {
            sealed.push(month);
        }
        Box::pin(async move { Ok(!taken) })
    }
}

impl AuditStore for Fake {
    fn begin(&self, intent: AuditIntent) -> BoxFuture<'_, Result<String, ServiceError>> {
        Box::pin(async move {
            self.call("audit.begin");
            Fake::failing(&self.fail_begin)?;
            let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
            let id = format!("record-{}", records.len() + 1);
            records.push(AuditRecord {
                id: id.clone(),
                at: crate::service::clock::rfc3339_micros(chrono::Utc::now()),
                updated_at: String::new(),
                who: intent.who,
                action: intent.action,
                resource: intent.resource,
                from_revision: intent.from_revision,
                to_revision: intent.to_revision,
                diff: intent.diff,
                pre_check: intent.pre_check,
                description: intent.description,
                outcome: Outcome::Pending,
                request_id: None,
                deployment_id: None,
                detail: None,
                approved_by: intent.approved_by,
                approval_id: intent.approval_id,
                prior_deployments: None,
            });
            Ok(id)
        })
    }

    fn finish(&self, id: String, outcome: AuditOutcome) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(&format!("audit.finish {}", outcome.outcome));
            if outcome.outcome == Outcome::Pending {
                Fake::failing(&self.fail_pending)?;
            } else {
                Fake::failing(&self.fail_finish)?;
            }
            let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(record) = records.iter_mut().find(|r| r.id == id) {
                record.outcome = outcome.outcome;
                record.detail = outcome.detail.or(record.detail.take());
                record.deployment_id = outcome.deployment_id.or(record.deployment_id.take());
                record.to_revision = outcome.to_revision.or(record.to_revision.take());
                record.prior_deployments = outcome
                    .prior_deployments
                    .or(record.prior_deployments.take());
            }
            Ok(())
        })
    }

    fn list(&self, filter: AuditFilter) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            Ok(self
                .records()
                .into_iter()
                .filter(|r| {
                    filter
                        .outcome
                        .as_deref()
                        .is_none_or(|o| r.outcome.as_str() == o)
                })
                .collect())
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<AuditRecord>, ServiceError>> {
        Box::pin(async move { Ok(self.records().into_iter().find(|r| r.id == id)) })
    }

    fn lock(&self, lock: Lock, _id: String) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move {
            self.call(if matches!(lock, Lock::Budget { .. }) {
                "audit.lock budget"
            } else {
                "audit.lock"
            });
            Ok(self
                .locks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(lock.key()))
        })
    }

    fn unlock(&self, lock: Lock, _id: String) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(if matches!(lock, Lock::Budget { .. }) {
                "audit.unlock budget"
            } else {
                "audit.unlock"
            });
            self.locks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&lock.key());
            Ok(())
        })
    }

    fn heartbeat(&self) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move { Ok(()) })
    }

    fn unsettled(&self) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            let mut records: Vec<AuditRecord> = self
                .records()
                .into_iter()
                .filter(|r| !r.outcome.is_final())
                .collect();
            records.sort_by(|a, b| a.at.cmp(&b.at));
            Ok(records)
        })
    }

    fn changes_since(
        &self,
        cluster: String,
        since: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            let since = crate::service::clock::rfc3339_micros(since);
            Ok(self
                .records()
                .into_iter()
                .filter(|r| r.resource.starts_with(&format!("{cluster}/")) && r.at >= since)
                .collect())
        })
    }
}

impl crate::service::ports::People for Fake {
    fn seen(&self, actor: &Actor) -> BoxFuture<'_, Result<(), ServiceError>> {
        let person = crate::service::ports::SeenPerson {
            subject: actor.subject.clone(),
            email: actor.email.clone(),
            groups: actor.groups.clone(),
            seen_at: crate::service::clock::now(),
        };
        Box::pin(async move {
            self.people
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(person.subject.clone(), person);
            Ok(())
        })
    }

    fn latest(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<Option<crate::service::ports::SeenPerson>, ServiceError>> {
        Box::pin(async move {
            Ok(self
                .people
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&subject)
                .cloned())
        })
    }
}

impl crate::service::ports::Markets for Fake {
    fn spot(&self) -> crate::model::cost::SpotQuote {
        self.spot.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn list(&self) -> crate::model::cost::ListQuote {
        crate::model::cost::ListQuote::default()
    }
}

impl crate::service::ports::ApprovalStore for Fake {
    fn create(
        &self,
        request: crate::model::approval::ApprovalRequest,
    ) -> BoxFuture<'_, Result<crate::service::ports::Created, ServiceError>> {
        Box::pin(async move {
            self.call("approvals.create");
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let key = request.change_key();
            if let Some(waiting) = approvals.iter().find(|r| {
                r.state == crate::model::approval::ApprovalState::Pending
                    && r.cluster == request.cluster
                    && r.service == request.service
                    && r.change_key() == key
            }) {
                return Ok(crate::service::ports::Created {
                    id: waiting.id.clone(),
                    existing: true,
                });
            }
            let id = format!("request-{}", approvals.len() + 1);
            approvals.push(crate::model::approval::ApprovalRequest {
                id: id.clone(),
                state: crate::model::approval::ApprovalState::Pending,
                ..request
            });
            Ok(crate::service::ports::Created {
                id,
                existing: false,
            })
        })
    }

    fn list(
        &self,
        query: crate::service::ports::ApprovalQuery,
    ) -> BoxFuture<'_, Result<(Vec<crate::model::approval::ApprovalRequest>, u64), ServiceError>>
    {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let matching: Vec<_> = approvals
                .iter()
                .rev()
                .filter(|r| query.state.is_none_or(|s| r.state == s))
                .filter(|r| query.team.as_ref().is_none_or(|t| &r.team == t))
                .filter(|r| query.cluster.as_ref().is_none_or(|c| &r.cluster == c))
                .cloned()
                .collect();
            let total = matching.len() as u64;
            Ok((
                matching
                    .into_iter()
                    .skip(query.offset as usize)
                    .take(query.limit as usize)
                    .collect(),
                total,
            ))
        })
    }

    fn pending_counts(
        &self,
        subject: String,
        except: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<crate::service::ports::PendingCount>, ServiceError>> {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let mut counts: Vec<crate::service::ports::PendingCount> = Vec::new();
            for request in approvals.iter().filter(|r| {
                r.state == crate::model::approval::ApprovalState::Pending
                    && except.as_deref() != Some(r.resource().as_str())
            }) {
                let own = request.requester.subject == subject;
                let at = counts
                    .iter()
                    .position(|c| {
                        c.team == request.team && c.cluster == request.cluster && c.own == own
                    })
                    .unwrap_or_else(|| {
                        counts.push(crate::service::ports::PendingCount {
                            team: request.team.clone(),
                            cluster: request.cluster.clone(),
                            own,
                            ..Default::default()
                        });
                        counts.len() - 1
                    });
                counts[at].count += 1;
                counts[at].memory_mib += request.delta.memory_mib.max(0) as u64;
                counts[at].whole_gpus += request.delta.whole_gpus.max(0) as u64;
            }
            Ok(counts)
        })
    }

    fn get(
        &self,
        id: String,
    ) -> BoxFuture<'_, Result<Option<crate::model::approval::ApprovalRequest>, ServiceError>> {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            Ok(approvals.iter().find(|r| r.id == id).cloned())
        })
    }

    fn decide(
        &self,
        id: String,
        decision: crate::service::ports::Decision,
    ) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move {
            self.call(&format!("approvals.decide {}", decision.to));
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let Some(request) = approvals
                .iter_mut()
                .find(|r| r.id == id && r.state == crate::model::approval::ApprovalState::Pending)
            else {
                return Ok(false);
            };
            request.state = decision.to;
            request.decided_by = Some(decision.by);
            request.decided_by_email = decision.by_email;
            request.decision_note = decision.note;
            request.decided_at = Some("2026-11-30T12:05:00Z".into());
            Ok(true)
        })
    }

    fn settle(
        &self,
        id: String,
        state: crate::model::approval::ApprovalState,
        detail: String,
        audit_id: Option<String>,
    ) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(&format!("approvals.settle {state}"));
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(request) = approvals
                .iter_mut()
                .find(|r| r.id == id && r.state == crate::model::approval::ApprovalState::Sending)
            {
                request.state = state;
                request.detail = Some(detail);
                request.audit_id = audit_id;
            }
            Ok(())
        })
    }
}
