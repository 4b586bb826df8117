//! The audit log held against the emulator's own record of the ECS writes it received: every
//! write ECS ran accounted for by exactly one audit record, every record that says it was sent
//! found among the writes, none sent twice, none left unsettled.
//!
//! Registrations are matched by the audit tag each revision carries. Service writes have no
//! such tag (UpdateService takes none), so they are matched per service in order: the console
//! sends one change of a service at a time (its service lock), so the service's records in the
//! order of their intents and its writes in the order ECS received them must line up.

use std::collections::{BTreeMap, HashMap, HashSet};

use app::model::audit::{AuditAction, AuditRecord, Outcome};
use app::model::task_definition::AUDIT_TAG;
use emulator::WriteRecord;
use serde_json::Value;

/// What the comparison found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// ECS writes received and run (no error).
    pub writes_run: usize,
    /// ECS writes received and refused by ECS.
    pub writes_refused: usize,
    /// ECS writes run whose answer never reached the console.
    pub answers_lost: usize,
    /// Audit records that send something to ECS.
    pub records: usize,
    /// Records saying a write was sent, with no such write received.
    pub lost: usize,
    /// Writes run more often than records account for.
    pub sent_twice: usize,
    /// Writes run that no record accounts for.
    pub missing_records: usize,
    /// Records whose outcome says not sent while ECS ran the write, or whose request id is no
    /// write's.
    pub wrong_outcome: usize,
    /// Records still `pending` or `unknown`.
    pub unsettled: usize,
    /// Up to ten lines saying what went wrong, for the person reading the table.
    pub examples: Vec<String>,
}

impl Ledger {
    /// Whether nothing was lost, doubled, missing, mislabelled or unsettled.
    pub fn clean(&self) -> bool {
        self.lost + self.sent_twice + self.missing_records + self.wrong_outcome + self.unsettled
            == 0
    }

    fn note(&mut self, line: String) {
        if self.examples.len() < 10 {
            self.examples.push(line);
        }
    }
}

/// What a record says about its write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    Sent,
    NotSent,
    Unsettled,
}

fn claim(record: &AuditRecord) -> Claim {
    match record.outcome {
        Outcome::Registered | Outcome::InProgress | Outcome::Succeeded | Outcome::RolledBack => {
            Claim::Sent
        }
        // A rollout that failed was sent (ECS made its deployment); an UpdateService that did
        // not take effect has none.
        Outcome::Failed if record.deployment_id.is_some() => Claim::Sent,
        Outcome::Failed | Outcome::Refused | Outcome::Recorded => Claim::NotSent,
        Outcome::Pending | Outcome::Unknown => Claim::Unsettled,
    }
}

/// A service write, as matched.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sig {
    Scale(u32),
    Deploy { revision: String, force: bool },
    Create,
    Delete,
}

/// The last part of a name or ARN (`…:service/cluster/name` → `name`).
fn last(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

/// The `cluster/service` a service write is for, and what it asks.
fn write_sig(write: &WriteRecord) -> Option<(String, Sig)> {
    let r = &write.request;
    let cluster = last(
        r.get("cluster")
            .and_then(Value::as_str)
            .unwrap_or("default"),
    )
    .to_string();
    let service = |key: &str| r.get(key).and_then(Value::as_str).map(last);
    match write.operation.as_str() {
        "UpdateService" => {
            let sig = match r.get("taskDefinition").and_then(Value::as_str) {
                Some(td) => Sig::Deploy {
                    revision: last(td).to_string(),
                    force: r.get("forceNewDeployment").and_then(Value::as_bool) == Some(true),
                },
                None => Sig::Scale(r.get("desiredCount").and_then(Value::as_u64)? as u32),
            };
            Some((format!("{cluster}/{}", service("service")?), sig))
        }
        "DeleteService" => Some((format!("{cluster}/{}", service("service")?), Sig::Delete)),
        "CreateService" => Some((
            format!("{cluster}/{}", service("serviceName")?),
            Sig::Create,
        )),
        _ => None,
    }
}

/// The service writes a record asks for, in order.
fn record_sigs(record: &AuditRecord) -> Vec<Sig> {
    let to = record.to_revision.clone().unwrap_or_default();
    match record.action {
        AuditAction::Scale => to
            .rsplit_once(" × ")
            .and_then(|(_, n)| n.parse().ok())
            .map(Sig::Scale)
            .into_iter()
            .collect(),
        AuditAction::Deploy | AuditAction::Rollback => vec![Sig::Deploy {
            revision: to,
            force: false,
        }],
        AuditAction::Restart => vec![Sig::Deploy {
            revision: to,
            force: true,
        }],
        AuditAction::Retire => vec![Sig::Scale(0), Sig::Delete],
        AuditAction::Create => vec![Sig::Create],
        _ => Vec::new(),
    }
}

/// The audit tag of a RegisterTaskDefinition write.
fn audit_tag(write: &WriteRecord) -> Option<String> {
    write
        .request
        .get("tags")?
        .as_array()?
        .iter()
        .find(|t| t.get("key").and_then(Value::as_str) == Some(AUDIT_TAG))?
        .get("value")?
        .as_str()
        .map(str::to_string)
}

/// Holds `records` (the whole audit log) against `writes` (every ECS write the emulator
/// received, in order).
pub fn compare(records: &[AuditRecord], writes: &[WriteRecord]) -> Ledger {
    let mut ledger = Ledger {
        writes_run: writes.iter().filter(|w| w.error.is_none()).count(),
        writes_refused: writes.iter().filter(|w| w.error.is_some()).count(),
        answers_lost: writes
            .iter()
            .filter(|w| w.error.is_none() && !w.answered)
            .count(),
        ..Ledger::default()
    };
    let sending: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.action == AuditAction::Register || !record_sigs(r).is_empty())
        .collect();
    ledger.records = sending.len();
    for record in &sending {
        if claim(record) == Claim::Unsettled {
            ledger.unsettled += 1;
            ledger.note(format!(
                "{} {} {} is still {}",
                record.id,
                record.action.as_str(),
                record.resource,
                record.outcome
            ));
        }
    }
    let run_ids: HashSet<&str> = writes
        .iter()
        .filter(|w| w.error.is_none())
        .filter_map(|w| w.request_id.as_deref())
        .collect();
    for record in &sending {
        if let Some(id) = record.request_id.as_deref() {
            if claim(record) == Claim::Sent && !run_ids.contains(id) {
                ledger.wrong_outcome += 1;
                ledger.note(format!(
                    "{} {} names request {id}, which ECS did not run",
                    record.id,
                    record.action.as_str()
                ));
            }
        }
    }
    registrations(&sending, writes, &mut ledger);
    services(&sending, writes, &mut ledger);
    ledger
}

/// Registrations, by audit tag.
fn registrations(sending: &[&AuditRecord], writes: &[WriteRecord], ledger: &mut Ledger) {
    let mut by_tag: HashMap<String, usize> = HashMap::new();
    for write in writes
        .iter()
        .filter(|w| w.operation == "RegisterTaskDefinition" && w.error.is_none())
    {
        match audit_tag(write) {
            Some(tag) => *by_tag.entry(tag).or_default() += 1,
            None => {
                ledger.missing_records += 1;
                ledger.note(format!(
                    "write {} registered {} with no audit tag",
                    write.seq,
                    write
                        .request
                        .get("family")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ));
            }
        }
    }
    let mut seen = HashSet::new();
    for record in sending.iter().filter(|r| r.action == AuditAction::Register) {
        seen.insert(record.id.clone());
        let run = by_tag.get(&record.id).copied().unwrap_or(0);
        match (claim(record), run) {
            (Claim::Sent, 0) => {
                ledger.lost += 1;
                ledger.note(format!(
                    "{} says registered; ECS ran no such registration",
                    record.id
                ));
            }
            (Claim::NotSent, n) if n > 0 => {
                ledger.wrong_outcome += 1;
                ledger.note(format!(
                    "{} says {}; ECS registered it",
                    record.id, record.outcome
                ));
            }
            _ => {}
        }
        if run > 1 {
            ledger.sent_twice += run - 1;
            ledger.note(format!("{} was registered {run} times", record.id));
        }
    }
    for (tag, n) in by_tag {
        if !seen.contains(&tag) {
            ledger.missing_records += n;
            ledger.note(format!("a registration tagged {tag} has no audit record"));
        }
    }
}

/// Service writes, per service in order.
fn services(sending: &[&AuditRecord], writes: &[WriteRecord], ledger: &mut Ledger) {
    // The records that expect writes (sent, or not known yet), and those that say nothing was
    // sent, per service.
    let mut expecting: BTreeMap<String, Vec<(&AuditRecord, Sig)>> = BTreeMap::new();
    let mut not_sent: BTreeMap<String, Vec<Sig>> = BTreeMap::new();
    let mut ordered: Vec<&AuditRecord> = sending.to_vec();
    ordered.sort_by(|a, b| a.at.cmp(&b.at).then(a.id.cmp(&b.id)));
    for record in ordered {
        for sig in record_sigs(record) {
            if claim(record) == Claim::NotSent {
                not_sent
                    .entry(record.resource.clone())
                    .or_default()
                    .push(sig);
            } else {
                expecting
                    .entry(record.resource.clone())
                    .or_default()
                    .push((record, sig));
            }
        }
    }
    let mut received: BTreeMap<String, Vec<(&WriteRecord, Sig)>> = BTreeMap::new();
    for write in writes {
        if let Some((service, sig)) = write_sig(write) {
            received.entry(service).or_default().push((write, sig));
        }
    }
    let services: HashSet<String> = expecting.keys().chain(received.keys()).cloned().collect();
    for service in services {
        let wanted = expecting
            .get(&service)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let got = received
            .get(&service)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut not_sent = not_sent.remove(&service).unwrap_or_default();
        one_service(&service, wanted, got, &mut not_sent, ledger);
    }
}

/// One service's records that expect a write (in intent order) against its writes (in the
/// order received); `not_sent` are the writes its other records say were not sent.
fn one_service(
    service: &str,
    wanted: &[(&AuditRecord, Sig)],
    got: &[(&WriteRecord, Sig)],
    not_sent: &mut Vec<Sig>,
    ledger: &mut Ledger,
) {
    let mut at = 0; // next write not yet accounted for
    let mut i = 0;
    while i < wanted.len() {
        // A run of records asking the same write (two restarts in a row).
        let sig = &wanted[i].1;
        let group = wanted[i..].iter().take_while(|(_, s)| s == sig).count();
        let sent = wanted[i..i + group]
            .iter()
            .filter(|(r, _)| claim(r) == Claim::Sent)
            .count();
        let unsettled = group - sent;
        i += group;
        // The group's writes start at the first write of its kind from `at`; any skipped on
        // the way are writes no record accounts for.
        let Some(start) = got[at..].iter().position(|(_, s)| s == sig).map(|p| at + p) else {
            if sent > 0 {
                ledger.lost += sent;
                ledger.note(format!(
                    "{service}: {sent} record(s) say {sig:?} was sent; ECS never received it"
                ));
            }
            continue;
        };
        let run = got[start..].iter().take_while(|(_, s)| s == sig).count();
        let ran = got[start..start + run]
            .iter()
            .filter(|(w, _)| w.error.is_none())
            .count();
        skipped(service, &got[at..start], not_sent, ledger);
        at = start + run;
        if ran < sent {
            ledger.lost += sent - ran;
            ledger.note(format!(
                "{service}: {sent} record(s) say {sig:?} was sent; ECS ran it {ran} time(s)"
            ));
        } else if ran > sent + unsettled {
            ledger.sent_twice += ran - sent - unsettled;
            ledger.note(format!(
                "{service}: ECS ran {sig:?} {ran} time(s) for {group} record(s)"
            ));
        }
    }
    skipped(service, &got[at..], not_sent, ledger);
}

/// Writes ECS ran that no record expecting a write accounts for: under a record that says it
/// was not sent, a wrong outcome; under none, a missing record.
fn skipped(
    service: &str,
    writes: &[(&WriteRecord, Sig)],
    not_sent: &mut Vec<Sig>,
    ledger: &mut Ledger,
) {
    for (write, sig) in writes.iter().filter(|(w, _)| w.error.is_none()) {
        if let Some(p) = not_sent.iter().position(|s| s == sig) {
            not_sent.remove(p);
            ledger.wrong_outcome += 1;
            ledger.note(format!(
                "{service}: write {} ({sig:?}) ran; its record says it was not sent",
                write.seq
            ));
        } else {
            ledger.missing_records += 1;
            ledger.note(format!(
                "{service}: write {} ({sig:?}) has no audit record",
                write.seq
            ));
        }
    }
}

#[cfg(test)]
mod tests;
