//! Task placement strategies (ECS developer guide, "Use strategies to define Amazon ECS task
//! placement"): among the instances that can take a task, `spread` prefers those whose value of
//! a field (`instanceId`/`host`, or an attribute such as `attribute:ecs.availability-zone`)
//! holds the fewest of the service's tasks, `binpack` those with the least `cpu` or `memory`
//! left, `random` any. Strategies apply in order, each breaking the ties of the one before.
//! A service without strategies spreads across Availability Zones. Strategies are best effort:
//! they choose among instances that fit and never keep a task from being placed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::resources::{Room, EC2_INSTANCE_ID};

/// The Availability Zone attribute, the field of the default strategy for services.
pub const ZONE_ATTRIBUTE: &str = "ecs.availability-zone";

/// One placement strategy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// `spread` on `instanceId` (or `host`), or on an attribute (its name, without
    /// `attribute:`).
    SpreadInstances,
    SpreadAttribute(String),
    BinpackCpu,
    BinpackMemory,
    Random,
}

impl Strategy {
    /// ECS's default for a service's tasks: spread across Availability Zones.
    pub fn service_default() -> Vec<Strategy> {
        vec![Strategy::SpreadAttribute(ZONE_ATTRIBUTE.into())]
    }

    /// `placementStrategy` as the API takes it: at most 5, each with a valid type and field.
    pub fn parse_list(given: &Value) -> Result<Vec<Strategy>, String> {
        let list = given
            .as_array()
            .ok_or_else(|| "placementStrategy must be a list.".to_string())?;
        if list.len() > 5 {
            return Err("A service or task takes at most 5 placement strategies.".into());
        }
        list.iter().map(Strategy::parse).collect()
    }

    fn parse(item: &Value) -> Result<Strategy, String> {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let field = item.get("field").and_then(Value::as_str);
        match (kind, field) {
            ("random", None) => Ok(Strategy::Random),
            ("random", Some(_)) => Err("The random placement strategy takes no field.".into()),
            ("spread", Some("instanceId" | "host")) => Ok(Strategy::SpreadInstances),
            ("spread", Some(field)) => match field.strip_prefix("attribute:") {
                Some(name) if !name.trim().is_empty() => {
                    Ok(Strategy::SpreadAttribute(name.to_string()))
                }
                _ => Err(format!(
                    "The spread placement strategy's field {field:?} is not valid: use instanceId, host or attribute:NAME."
                )),
            },
            ("binpack", Some(field)) if field.eq_ignore_ascii_case("cpu") => {
                Ok(Strategy::BinpackCpu)
            }
            ("binpack", Some(field)) if field.eq_ignore_ascii_case("memory") => {
                Ok(Strategy::BinpackMemory)
            }
            ("binpack", other) => Err(format!(
                "The binpack placement strategy's field {} is not valid: use cpu or memory.",
                other.map_or("(none)".to_string(), |f| format!("{f:?}"))
            )),
            ("spread", None) => {
                Err("The spread placement strategy needs a field: instanceId, host or attribute:NAME.".into())
            }
            (other, _) => Err(format!(
                "Placement strategy type {:?} is not valid: use random, spread or binpack.",
                other
            )),
        }
    }

    /// The strategy as ECS writes it: `spread(attribute:ecs.availability-zone)`.
    pub fn text(&self) -> String {
        match self {
            Strategy::SpreadInstances => "spread(instanceId)".into(),
            Strategy::SpreadAttribute(name) => format!("spread(attribute:{name})"),
            Strategy::BinpackCpu => "binpack(cpu)".into(),
            Strategy::BinpackMemory => "binpack(memory)".into(),
            Strategy::Random => "random".into(),
        }
    }
}

/// The ranks of `strategies` for a candidate instance (lower is preferred), given its room,
/// its own count of the service's tasks, the service's task count per value of each spread
/// attribute (`spread_counts[attribute][value]`), and a per-instance number for `random`.
pub fn rank(
    strategies: &[Strategy],
    room: &Room,
    tasks_here: u32,
    spread_counts: &BTreeMap<String, BTreeMap<String, u32>>,
    random: u64,
) -> Vec<u64> {
    strategies
        .iter()
        .map(|strategy| match strategy {
            Strategy::SpreadInstances => u64::from(tasks_here),
            Strategy::SpreadAttribute(name) => {
                let value = attribute(room, name);
                spread_counts
                    .get(name)
                    .and_then(|counts| counts.get(&value))
                    .map_or(0, |n| u64::from(*n))
            }
            Strategy::BinpackCpu => u64::from(room.cpu_remaining),
            Strategy::BinpackMemory => u64::from(room.memory_remaining_mib),
            Strategy::Random => random,
        })
        .collect()
}

/// An instance's value of `name` for spreading; an instance without it counts as its own
/// empty value.
pub fn attribute(room: &Room, name: &str) -> String {
    if name == "instanceId" {
        return room
            .attributes
            .get(EC2_INSTANCE_ID)
            .cloned()
            .unwrap_or_default();
    }
    room.attributes.get(name).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategies_parse_as_ecs_takes_them_and_bad_ones_say_why() {
        let list = Strategy::parse_list(&json!([
            {"type": "spread", "field": "attribute:ecs.availability-zone"},
            {"type": "spread", "field": "host"},
            {"type": "binpack", "field": "MEMORY"},
            {"type": "binpack", "field": "cpu"},
            {"type": "random"}
        ]))
        .expect("valid");
        assert_eq!(
            list.iter().map(Strategy::text).collect::<Vec<_>>(),
            [
                "spread(attribute:ecs.availability-zone)",
                "spread(instanceId)",
                "binpack(memory)",
                "binpack(cpu)",
                "random"
            ]
        );
        for (bad, says) in [
            (
                json!([{"type": "binpack", "field": "gpu"}]),
                "use cpu or memory",
            ),
            (json!([{"type": "spread"}]), "needs a field"),
            (
                json!([{"type": "spread", "field": "zone"}]),
                "attribute:NAME",
            ),
            (
                json!([{"type": "random", "field": "cpu"}]),
                "takes no field",
            ),
            (json!([{"type": "pack"}]), "use random, spread or binpack"),
            (
                Value::Array(vec![json!({"type": "random"}); 6]),
                "at most 5",
            ),
            (json!({"type": "random"}), "must be a list"),
        ] {
            let error = Strategy::parse_list(&bad).expect_err("refused");
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn spread_prefers_the_zone_with_fewest_tasks_and_binpack_the_least_room() {
        let room = |zone: &str, memory: u32| Room {
            memory_remaining_mib: memory,
            attributes: [(ZONE_ATTRIBUTE.to_string(), zone.to_string())].into(),
            ..Room::default()
        };
        let counts: BTreeMap<String, BTreeMap<String, u32>> = [(
            ZONE_ATTRIBUTE.to_string(),
            [("us-east-1a".to_string(), 2), ("us-east-1b".to_string(), 1)].into(),
        )]
        .into();
        let strategies = [
            Strategy::SpreadAttribute(ZONE_ATTRIBUTE.into()),
            Strategy::BinpackMemory,
        ];
        let a = rank(&strategies, &room("us-east-1a", 100), 0, &counts, 0);
        let b = rank(&strategies, &room("us-east-1b", 900), 0, &counts, 0);
        let b_tight = rank(&strategies, &room("us-east-1b", 300), 0, &counts, 0);
        let c = rank(&strategies, &room("us-east-1c", 900), 0, &counts, 0);
        assert!(c < b && b < a, "the emptiest zone first");
        assert!(b_tight < b, "then the least memory left");
    }
}
