//! ARNs and revision references, read in one place: the last part of an ARN, a task
//! definition's family and revision, and a revision named by a person (`3` or `embed-api:3`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The last part of an ARN: a task's ID, `family:revision` of a task definition, a container
/// instance's ID, a cluster's or service's name; the text itself when it has no `/`.
pub fn arn_tail(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// A task definition named by its family and revision, as ARNs and people name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskDefinitionId {
    pub family: String,
    pub revision: u32,
}

impl TaskDefinitionId {
    pub fn new(family: impl Into<String>, revision: u32) -> TaskDefinitionId {
        TaskDefinitionId {
            family: family.into(),
            revision,
        }
    }

    /// The family and revision of a task definition ARN
    /// (`arn:aws:ecs:…:task-definition/<family>:<revision>`) or of `family:revision`; `None`
    /// for anything else.
    pub fn parse(arn: &str) -> Option<TaskDefinitionId> {
        let (family, revision) = arn_tail(arn).rsplit_once(':')?;
        if family.is_empty() {
            return None;
        }
        Some(TaskDefinitionId::new(family, revision.parse().ok()?))
    }

    /// The ARN of this revision in the account and region of `like`, another task definition
    /// ARN; `family:revision` when `like` is not an ARN.
    pub fn arn_like(&self, like: &str) -> String {
        match like.rsplit_once("task-definition/") {
            Some((prefix, _)) => format!("{prefix}task-definition/{self}"),
            None => self.to_string(),
        }
    }
}

impl fmt::Display for TaskDefinitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.family, self.revision)
    }
}

/// The family of a task definition ARN, or `""` when it is not one.
pub fn family_of(arn: &str) -> &str {
    arn_tail(arn)
        .rsplit_once(':')
        .map(|(family, _)| family)
        .unwrap_or_default()
}

/// The revision a person named: a number of the family at hand (`3`), or `family:3`. In JSON
/// it is a number or a string; it is written back as it was given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RevisionRef {
    /// The family named with it, if any.
    pub family: Option<String>,
    pub number: u32,
}

impl RevisionRef {
    /// A bare revision number.
    pub fn number(number: u32) -> RevisionRef {
        RevisionRef {
            family: None,
            number,
        }
    }

    /// `3` or `family:3`; the number is at least 1.
    pub fn parse(text: &str) -> Result<RevisionRef, String> {
        let text = text.trim();
        let (family, number) = match text.rsplit_once(':') {
            Some((family, number)) => (Some(family.to_string()), number),
            None => (None, text),
        };
        let number = number
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                format!("{text:?} is not a revision: give a number from 1, or <family>:<number>")
            })?;
        Ok(RevisionRef { family, number })
    }

    /// The revision number of `family` this names; an error naming both families when it
    /// names another family's revision.
    pub fn of_family(&self, family: &str) -> Result<u32, String> {
        match self.family.as_deref() {
            Some(named) if named != family => Err(format!(
                "\"{self}\" is a revision of {named}, but the service runs {family}; roll out a revision of {family}"
            )),
            _ => Ok(self.number),
        }
    }
}

impl fmt::Display for RevisionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.family {
            Some(family) => write!(f, "{family}:{}", self.number),
            None => write!(f, "{}", self.number),
        }
    }
}

impl Serialize for RevisionRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.family {
            None => serializer.serialize_u32(self.number),
            Some(_) => serializer.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for RevisionRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RevisionRef;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a revision number or \"family:number\"")
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<RevisionRef, E> {
                u32::try_from(n)
                    .map(RevisionRef::number)
                    .map_err(|_| E::custom(format!("{n} is not a revision number")))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<RevisionRef, E> {
                u32::try_from(n)
                    .map(RevisionRef::number)
                    .map_err(|_| E::custom(format!("{n} is not a revision number")))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<RevisionRef, E> {
                RevisionRef::parse(text).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_definition_is_read_off_its_arn() {
        let arn = "arn:aws:ecs:us-east-1:123456789012:task-definition/embed-api:12";
        assert_eq!(
            TaskDefinitionId::parse(arn),
            Some(TaskDefinitionId::new("embed-api", 12))
        );
        assert_eq!(family_of(arn), "embed-api");
        assert_eq!(
            TaskDefinitionId::parse("embed-api:3").map(|id| id.to_string()),
            Some("embed-api:3".into())
        );
        assert_eq!(TaskDefinitionId::parse("nonsense"), None);
        assert_eq!(TaskDefinitionId::parse(":3"), None);
        assert_eq!(family_of("nonsense"), "");
        assert_eq!(arn_tail("arn:aws:ecs:us-east-1:1:task/prod/abc"), "abc");
        assert_eq!(arn_tail("plain"), "plain");
    }

    #[test]
    fn a_revision_gets_the_arn_of_its_account() {
        let id = TaskDefinitionId::new("embed", 2);
        assert_eq!(
            id.arn_like("arn:aws:ecs:us-east-1:123456789012:task-definition/embed:3"),
            "arn:aws:ecs:us-east-1:123456789012:task-definition/embed:2"
        );
        assert_eq!(id.arn_like(""), "embed:2");
    }

    #[test]
    fn a_revision_is_a_number_of_the_services_family() {
        let of = |text: &str| RevisionRef::parse(text).and_then(|r| r.of_family("embed"));
        assert_eq!(of("3"), Ok(3));
        assert_eq!(of("embed:4"), Ok(4));
        assert!(of("other:4").is_err_and(|e| e.contains("a revision of other")));
        assert!(of("0").is_err());
        assert!(of("latest").is_err());
    }

    #[test]
    fn a_revision_reads_from_a_number_or_a_string_and_writes_back_alike() {
        let number: RevisionRef = serde_json::from_str("3").expect("number");
        assert_eq!(number, RevisionRef::number(3));
        assert_eq!(serde_json::to_string(&number).expect("json"), "3");
        let named: RevisionRef = serde_json::from_str("\"embed:4\"").expect("string");
        assert_eq!(named.family.as_deref(), Some("embed"));
        assert_eq!(serde_json::to_string(&named).expect("json"), "\"embed:4\"");
        assert!(serde_json::from_str::<RevisionRef>("-1").is_err());
        assert!(serde_json::from_str::<RevisionRef>("\"x\"").is_err());
    }
}
