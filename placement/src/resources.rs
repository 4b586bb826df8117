//! Everything besides GPUs that ECS needs of an instance before it places a task there (ECS
//! developer guide, "Amazon ECS task placement"): the instance is `ACTIVE` with its agent
//! connected; it has the task's CPU units and memory left (`memoryReservation` of a container
//! when set, else its `memory`, or the task-level values); no other task holds the task's
//! static host ports (`bridge` and `host` network modes); and the task's placement constraints
//! hold there (`distinctInstance`, `memberOf`); and in `awsvpc` mode, it has an ENI attachment
//! point left (the instance type's network interfaces less the primary one, one per task).
//!
//! ECS reports no count of ENI attachment points left: a reader works it out from EC2's
//! `DescribeInstanceTypes` and the tasks' ENI attachments, and leaves it unknown (`None`) where
//! it cannot (an instance with ENI trunking, whose limit EC2 does not report). Not modelled,
//! and said so by the checks: the placement strategy's choice among instances that all fit
//! (spread across Availability Zones by default).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What is left on one container instance, besides its GPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Room {
    /// `ACTIVE`, `DRAINING`, `REGISTERING`, …: ECS places tasks only on `ACTIVE` instances.
    pub status: String,
    pub agent_connected: bool,
    pub cpu_remaining: u32,
    pub memory_remaining_mib: u32,
    /// Host ports no new task can bind: the agent's reserved ones and those tasks hold.
    pub tcp_ports_used: BTreeSet<u16>,
    pub udp_ports_used: BTreeSet<u16>,
    /// Attributes for `memberOf`: `ecs.instance-type`, `ecs.availability-zone`, custom ones.
    pub attributes: BTreeMap<String, String>,
    /// ENI attachment points left for `awsvpc` tasks; `None` when not known.
    #[serde(default)]
    pub enis_free: Option<u32>,
}

/// What one task needs of an instance, besides GPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Needs {
    pub cpu: u32,
    pub memory_mib: u32,
    /// Static host ports (`bridge` or `host` mode); dynamic ports (0) are not listed.
    pub tcp_ports: Vec<u16>,
    pub udp_ports: Vec<u16>,
    /// `awsvpc`: each task needs an ENI attachment point of its own.
    pub awsvpc: bool,
    /// At most one task of the group (the service) per instance.
    pub distinct_instance: bool,
    /// `memberOf` expressions, all of which must hold.
    pub member_of: Vec<Expression>,
}

/// Why an instance cannot take a task, besides GPUs; [`Blocked::ecs_words`] says it as ECS's
/// service events do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Blocked {
    NotActive { status: String },
    AgentDisconnected,
    Cpu { needed: u32, free: u32 },
    Memory { needed: u32, free: u32 },
    Port { port: u16, udp: bool },
    Eni,
    DistinctInstance,
    Attribute { expression: String },
}

impl Blocked {
    /// The closing words of ECS's "unable to place a task" event for the closest instance.
    pub fn ecs_words(&self) -> String {
        match self {
            Blocked::NotActive { status } => {
                format!("is {status}, and tasks are placed only on ACTIVE instances")
            }
            Blocked::AgentDisconnected => "encountered error \"AGENT\"".into(),
            Blocked::Cpu { .. } => "has insufficient CPU units available".into(),
            Blocked::Memory { .. } => "has insufficient memory available".into(),
            Blocked::Port { .. } => "is already using a port required by your task".into(),
            Blocked::Eni => "encountered error \"RESOURCE:ENI\"".into(),
            Blocked::DistinctInstance => {
                "already runs a task of this service (distinctInstance)".into()
            }
            Blocked::Attribute { .. } => "is missing an attribute required by your task".into(),
        }
    }

    /// The resource in a person's words, for the pre-check.
    pub fn resource(&self) -> String {
        match self {
            Blocked::NotActive { status } => format!("instances {status}"),
            Blocked::AgentDisconnected => "agents disconnected".into(),
            Blocked::Cpu { needed, .. } => format!("CPU ({needed} units per task)"),
            Blocked::Memory { needed, .. } => format!("memory ({needed} MiB per task)"),
            Blocked::Port { port, udp } => {
                format!("host port {port}/{}", if *udp { "udp" } else { "tcp" })
            }
            Blocked::Eni => "ENI attachment points (awsvpc: one per task)".into(),
            Blocked::DistinctInstance => {
                "instances (distinctInstance: one task per instance)".into()
            }
            Blocked::Attribute { expression } => {
                format!("instances matching memberOf({expression})")
            }
        }
    }
}

/// Whether `room` can take a task with `needs`, given how many tasks of the same group it
/// already runs; the first thing missing, in the order ECS checks them.
pub fn check(room: &Room, needs: &Needs, group_tasks_here: u32) -> Result<(), Blocked> {
    if room.status != "ACTIVE" {
        return Err(Blocked::NotActive {
            status: room.status.clone(),
        });
    }
    if !room.agent_connected {
        return Err(Blocked::AgentDisconnected);
    }
    if let Some(expression) = needs.member_of.iter().find(|e| !e.holds(&room.attributes)) {
        return Err(Blocked::Attribute {
            expression: expression.text.clone(),
        });
    }
    if needs.distinct_instance && group_tasks_here > 0 {
        return Err(Blocked::DistinctInstance);
    }
    if room.cpu_remaining < needs.cpu {
        return Err(Blocked::Cpu {
            needed: needs.cpu,
            free: room.cpu_remaining,
        });
    }
    if room.memory_remaining_mib < needs.memory_mib {
        return Err(Blocked::Memory {
            needed: needs.memory_mib,
            free: room.memory_remaining_mib,
        });
    }
    if let Some(port) = needs
        .tcp_ports
        .iter()
        .find(|p| room.tcp_ports_used.contains(p))
    {
        return Err(Blocked::Port {
            port: *port,
            udp: false,
        });
    }
    if let Some(port) = needs
        .udp_ports
        .iter()
        .find(|p| room.udp_ports_used.contains(p))
    {
        return Err(Blocked::Port {
            port: *port,
            udp: true,
        });
    }
    if needs.awsvpc && room.enis_free == Some(0) {
        return Err(Blocked::Eni);
    }
    Ok(())
}

/// How many tasks with `needs` the room takes, one after another, besides GPUs (`u32::MAX`
/// when nothing besides GPUs bounds them): CPU, memory and ENIs divide, a static host port or
/// `distinctInstance` allows one.
pub fn tasks_that_fit(room: &Room, needs: &Needs) -> u32 {
    if check(room, needs, 0).is_err() {
        return 0;
    }
    let per = |free: u32, each: u32| free.checked_div(each).unwrap_or(u32::MAX);
    let mut most =
        per(room.cpu_remaining, needs.cpu).min(per(room.memory_remaining_mib, needs.memory_mib));
    if needs.awsvpc {
        if let Some(free) = room.enis_free {
            most = most.min(free);
        }
    }
    if needs.distinct_instance || !needs.tcp_ports.is_empty() || !needs.udp_ports.is_empty() {
        most = most.min(1);
    }
    most
}

/// Takes a task's CPU, memory, host ports and ENI.
pub fn take(room: &mut Room, needs: &Needs) {
    if needs.awsvpc {
        room.enis_free = room.enis_free.map(|n| n.saturating_sub(1));
    }
    room.cpu_remaining = room.cpu_remaining.saturating_sub(needs.cpu);
    room.memory_remaining_mib = room.memory_remaining_mib.saturating_sub(needs.memory_mib);
    room.tcp_ports_used.extend(needs.tcp_ports.iter().copied());
    room.udp_ports_used.extend(needs.udp_ports.iter().copied());
}

/// Gives a stopped task's CPU, memory, host ports and ENI back.
pub fn give_back(room: &mut Room, needs: &Needs) {
    if needs.awsvpc {
        room.enis_free = room.enis_free.map(|n| n.saturating_add(1));
    }
    room.cpu_remaining = room.cpu_remaining.saturating_add(needs.cpu);
    room.memory_remaining_mib = room.memory_remaining_mib.saturating_add(needs.memory_mib);
    for port in &needs.tcp_ports {
        room.tcp_ports_used.remove(port);
    }
    for port in &needs.udp_ports {
        room.udp_ports_used.remove(port);
    }
}

/// A `memberOf` expression of the cluster query language, in the subset this evaluates:
/// `attribute:NAME OP VALUE` (or `ec2InstanceId OP VALUE`) terms joined by `and` / `or`
/// (`and` binds first; no parentheses), with OP one of `==`, `!=`, `in [a, b]`,
/// `not_in [a, b]`, `exists`, `!exists`, and the pattern matches `=~` / `!~`, whose patterns
/// this reads as `.*` any run, `.` any one character, everything else literal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expression {
    pub text: String,
    /// Terms joined by `or`, each a list joined by `and`.
    any_of: Vec<Vec<Term>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Term {
    attribute: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Op {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    NotExists,
    Matches,
    NotMatches,
}

impl Expression {
    /// Parses `text`, or says what this evaluator does not understand.
    pub fn parse(text: &str) -> Result<Expression, String> {
        let mut any_of = Vec::new();
        for alternative in split_words(text, "or") {
            let mut all = Vec::new();
            for term in split_words(&alternative, "and") {
                all.push(parse_term(term.trim()).map_err(|why| {
                    format!("memberOf({text}): {why}; understood are attribute:NAME or ec2InstanceId with ==, !=, =~, !~, in [..], not_in [..], exists and !exists, joined by and / or, without parentheses")
                })?);
            }
            any_of.push(all);
        }
        if any_of.is_empty() {
            return Err("memberOf needs an expression".into());
        }
        Ok(Expression {
            text: text.trim().to_string(),
            any_of,
        })
    }

    /// Whether an instance with `attributes` matches.
    pub fn holds(&self, attributes: &BTreeMap<String, String>) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|term| term.holds(attributes)))
    }
}

impl Term {
    fn holds(&self, attributes: &BTreeMap<String, String>) -> bool {
        let value = attributes.get(&self.attribute);
        let matches = |v: &str| self.values.iter().any(|pattern| wildcard(pattern, v));
        let pattern = |v: &str| self.values.iter().any(|p| regex_lite(p, v));
        match self.op {
            Op::Exists => value.is_some(),
            Op::NotExists => value.is_none(),
            Op::Equals | Op::In => value.is_some_and(|v| matches(v)),
            Op::NotEquals | Op::NotIn => !value.is_some_and(|v| matches(v)),
            Op::Matches => value.is_some_and(|v| pattern(v)),
            Op::NotMatches => !value.is_some_and(|v| pattern(v)),
        }
    }
}

/// `pattern` with `*` standing for any run of characters.
fn wildcard(pattern: &str, value: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == value,
        Some((prefix, rest)) => {
            let Some(tail) = value.strip_prefix(prefix) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| wildcard(rest, &tail[i..]))
        }
    }
}

/// A pattern of `=~`: `.*` any run, `.` any one character, the rest literal; the whole value.
fn regex_lite(pattern: &str, value: &str) -> bool {
    if let Some(rest) = pattern.strip_prefix(".*") {
        return (0..=value.len())
            .filter(|i| value.is_char_boundary(*i))
            .any(|i| regex_lite(rest, &value[i..]));
    }
    let mut pattern_chars = pattern.chars();
    match pattern_chars.next() {
        None => value.is_empty(),
        Some(p) => {
            let mut value_chars = value.chars();
            match value_chars.next() {
                Some(v) if p == '.' || p == v => {
                    regex_lite(pattern_chars.as_str(), value_chars.as_str())
                }
                _ => false,
            }
        }
    }
}

/// Splits on a whole word (` and `, ` or `) outside brackets.
fn split_words(text: &str, word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0_i32;
    let mut current = String::new();
    for token in text.split_whitespace() {
        depth += token.matches('[').count() as i32 - token.matches(']').count() as i32;
        if depth == 0 && token.eq_ignore_ascii_case(word) {
            parts.push(std::mem::take(&mut current));
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(token);
    }
    if !current.trim().is_empty() {
        parts.push(current);
    }
    parts
}

/// The attribute name under which [`Room::attributes`] carries the instance's EC2 ID, for
/// `ec2InstanceId` terms.
pub const EC2_INSTANCE_ID: &str = "ec2InstanceId";

fn parse_term(term: &str) -> Result<Term, String> {
    let (attribute, rest) = if let Some(rest) = term.strip_prefix("attribute:") {
        rest.split_once(char::is_whitespace)
            .ok_or_else(|| format!("'{term}' has no operator"))?
    } else if let Some(rest) = term.strip_prefix(EC2_INSTANCE_ID) {
        (EC2_INSTANCE_ID, rest)
    } else {
        return Err(format!(
            "'{term}' does not start with attribute: or ec2InstanceId"
        ));
    };
    let rest = rest.trim();
    let (op, values) = if rest == "exists" {
        (Op::Exists, "")
    } else if rest == "!exists" {
        (Op::NotExists, "")
    } else if let Some(v) = rest.strip_prefix("=~") {
        (Op::Matches, v)
    } else if let Some(v) = rest.strip_prefix("!~") {
        (Op::NotMatches, v)
    } else if let Some(v) = rest.strip_prefix("==") {
        (Op::Equals, v)
    } else if let Some(v) = rest.strip_prefix("!=") {
        (Op::NotEquals, v)
    } else if let Some(v) = rest.strip_prefix("not_in") {
        (Op::NotIn, v)
    } else if let Some(v) = rest.strip_prefix("in") {
        (Op::In, v)
    } else {
        return Err(format!("'{term}': unknown operator"));
    };
    let values: Vec<String> = values
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|v| v.trim().trim_matches('\'').trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() && !matches!(op, Op::Exists | Op::NotExists) {
        return Err(format!("'{term}' has no value"));
    }
    Ok(Term {
        attribute: attribute.to_string(),
        op,
        values,
    })
}

/// What one task of `task_definition` needs of an instance besides GPUs, with the service's
/// own placement constraints (`service_constraints`, the `placementConstraints` of
/// CreateService) added to the task definition's. An expression this does not understand is
/// an error, for the caller to refuse or to report.
pub fn needs_of(
    task_definition: &Map<String, Value>,
    service_constraints: &[Value],
) -> Result<Needs, String> {
    let containers: Vec<&Map<String, Value>> = task_definition
        .get("containerDefinitions")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    let task_level = |key: &str| -> Option<u32> {
        match task_definition.get(key)? {
            Value::String(s) => s.trim().parse().ok(),
            Value::Number(n) => n.as_u64().map(|n| n.min(u64::from(u32::MAX)) as u32),
            _ => None,
        }
    };
    let sum = |keys: &[&str]| -> u32 {
        containers
            .iter()
            .map(|c| {
                keys.iter()
                    .find_map(|k| c.get(*k).and_then(Value::as_u64))
                    .unwrap_or(0)
                    .min(u64::from(u32::MAX)) as u32
            })
            .fold(0_u32, u32::saturating_add)
    };
    let network_mode = task_definition
        .get("networkMode")
        .and_then(Value::as_str)
        .unwrap_or("bridge");
    let mut needs = Needs {
        cpu: task_level("cpu").unwrap_or_else(|| sum(&["cpu"])),
        memory_mib: task_level("memory").unwrap_or_else(|| sum(&["memoryReservation", "memory"])),
        awsvpc: network_mode == "awsvpc",
        ..Needs::default()
    };
    if matches!(network_mode, "bridge" | "host") {
        add_host_ports(&mut needs, &containers, network_mode == "host");
    }
    let constraints = task_definition
        .get("placementConstraints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(service_constraints);
    for constraint in constraints {
        match constraint.get("type").and_then(Value::as_str) {
            Some("distinctInstance") => needs.distinct_instance = true,
            Some("memberOf") => {
                let text = constraint
                    .get("expression")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                needs.member_of.push(Expression::parse(text)?);
            }
            _ => {}
        }
    }
    Ok(needs)
}

/// The host ports a bridge or host task holds, TCP and UDP apart. In host mode the container
/// port is the host port.
fn add_host_ports(needs: &mut Needs, containers: &[&Map<String, Value>], host_mode: bool) {
    for mapping in containers
        .iter()
        .filter_map(|c| c.get("portMappings").and_then(Value::as_array))
        .flatten()
    {
        let port = |key: &str| {
            mapping
                .get(key)
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
        };
        let host = if host_mode {
            port("hostPort").or_else(|| port("containerPort"))
        } else {
            port("hostPort")
        };
        let Some(host) = host.filter(|p| *p != 0) else {
            continue;
        };
        let udp = mapping.get("protocol").and_then(Value::as_str) == Some("udp");
        let list = if udp {
            &mut needs.udp_ports
        } else {
            &mut needs.tcp_ports
        };
        if !list.contains(&host) {
            list.push(host);
        }
    }
}

#[cfg(test)]
mod tests;
