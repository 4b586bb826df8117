//! Who is asking: the person the console's sign-in names, their role and teams, how they were
//! identified and from where. The server works it out for every request; the pages show it and
//! hide or disable what the person cannot do.

use serde::{Deserialize, Serialize};

/// What a person may do. Each role includes the ones before it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads the fleet, task definitions, deployments and the audit log.
    #[default]
    Viewer,
    /// Also registers, deploys and rolls back what belongs to one of their teams.
    Deployer,
    /// Also acts on every team's services and changes what widens a task's rights.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Deployer, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Deployer => "deployer",
            Role::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the console learns who is asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// No sign-in: everyone is the local administrator (on loopback only, unless the operator
    /// insists).
    #[default]
    None,
    /// A sign-in proxy such as oauth2-proxy in front, trusted by address.
    Proxy,
    /// An AWS Application Load Balancer with OIDC in front, its signed token verified.
    Alb,
    /// Direct sign-in with an OpenID Connect provider; a session in the console's database.
    Oidc,
}

impl AuthMode {
    pub const ALL: [AuthMode; 4] = [
        AuthMode::None,
        AuthMode::Proxy,
        AuthMode::Alb,
        AuthMode::Oidc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Proxy => "proxy",
            AuthMode::Alb => "alb",
            AuthMode::Oidc => "oidc",
        }
    }

    pub fn parse(text: &str) -> Option<AuthMode> {
        AuthMode::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// The person behind a request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// Who the sign-in says it is: the user name or subject (`local` without sign-in).
    pub subject: String,
    pub email: Option<String>,
    /// The groups the sign-in gave.
    pub groups: Vec<String>,
    pub role: Role,
    /// The teams the policy gives the person's groups.
    pub teams: Vec<String>,
    pub auth: AuthMode,
    /// The address the request came from, as the server saw it (the proxy's, behind one).
    pub source: Option<String>,
    /// The console runs without sign-in on a network address: everyone is the administrator.
    #[serde(default)]
    pub insecure: bool,
}

impl Actor {
    /// The local administrator of a console without sign-in.
    pub fn local() -> Actor {
        Actor {
            subject: "local".into(),
            role: Role::Admin,
            ..Actor::default()
        }
    }

    /// Whether the person is on `team`.
    pub fn on_team(&self, team: &str) -> bool {
        self.teams.iter().any(|t| t == team)
    }

    /// How the header names the person: `ana@example.com (deployer: search, ads)`.
    pub fn label(&self) -> String {
        if self.auth == AuthMode::None {
            return "no sign-in (local)".into();
        }
        let who = self.email.as_deref().unwrap_or(&self.subject);
        if self.teams.is_empty() {
            format!("{who} ({})", self.role)
        } else {
            format!("{who} ({}: {})", self.role, self.teams.join(", "))
        }
    }
}

/// Why a request about a resource is refused, in words that name the rule and who could do it.
pub type Refusal = String;

/// Whether the person may do something, and why not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    pub allowed: bool,
    /// Why not, naming the rule and who could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Permission {
    pub fn of(decision: Result<(), Refusal>) -> Permission {
        match decision {
            Ok(()) => Permission {
                allowed: true,
                reason: None,
            },
            Err(reason) => Permission {
                allowed: false,
                reason: Some(reason),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_include_the_ones_before_them() {
        assert!(Role::Viewer < Role::Deployer && Role::Deployer < Role::Admin);
        assert_eq!(Role::parse("deployer"), Some(Role::Deployer));
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn the_header_says_who_and_what() {
        assert_eq!(Actor::local().label(), "no sign-in (local)");
        let ana = Actor {
            subject: "ana".into(),
            email: Some("ana@example.com".into()),
            role: Role::Deployer,
            teams: vec!["search".into(), "ads".into()],
            auth: AuthMode::Proxy,
            ..Actor::default()
        };
        assert_eq!(ana.label(), "ana@example.com (deployer: search, ads)");
        assert!(ana.on_team("ads") && !ana.on_team("vision"));
    }
}
