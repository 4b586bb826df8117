//! Sign-in through a proxy such as oauth2-proxy: the person in `X-Forwarded-User`,
//! `X-Forwarded-Email` and `X-Forwarded-Groups` (comma-joined). The headers are unsigned, so
//! they are believed only from the proxy's own addresses; from anywhere else they are refused.

use std::net::SocketAddr;

use super::{network::Network, Unidentified};

pub const USER: &str = "x-forwarded-user";
pub const EMAIL: &str = "x-forwarded-email";
pub const GROUPS: &str = "x-forwarded-groups";
pub const PREFERRED_USERNAME: &str = "x-forwarded-preferred-username";

/// Who the proxy says signed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedIn {
    pub subject: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
}

fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The person the proxy at `peer` names, or why nobody can be believed.
pub fn signed_in(
    trusted: &[Network],
    peer: Option<SocketAddr>,
    headers: &http::HeaderMap,
) -> Result<SignedIn, Unidentified> {
    let carries_identity = [USER, EMAIL, GROUPS, PREFERRED_USERNAME]
        .iter()
        .any(|name| headers.contains_key(*name));
    let from_proxy = peer.is_some_and(|p| trusted.iter().any(|n| n.contains(p.ip())));
    if !from_proxy {
        let from = peer.map_or_else(|| "an unknown address".to_string(), |p| p.ip().to_string());
        return Err(if carries_identity {
            Unidentified::Refused(format!(
                "identity headers came from {from}, which is not a trusted sign-in proxy (--trusted-proxy); open the console through its sign-in address"
            ))
        } else {
            Unidentified::Missing(format!(
                "sign in first: open the console through its sign-in proxy, not {from} directly"
            ))
        });
    }
    // Two of one header could be one from the proxy and one the person added, which a proxy
    // that appends rather than replaces lets through: which one counts is not for the console
    // to guess.
    if let Some(twice) = [USER, EMAIL, GROUPS, PREFERRED_USERNAME]
        .into_iter()
        .find(|name| headers.get_all(*name).iter().count() > 1)
    {
        return Err(Unidentified::Refused(format!(
            "the request carries {twice} more than once, so who signed in is not clear; set the sign-in proxy to replace identity headers, not add to them"
        )));
    }
    let subject = header(headers, USER)
        .or_else(|| header(headers, PREFERRED_USERNAME))
        .or_else(|| header(headers, EMAIL))
        .ok_or_else(|| {
            Unidentified::Missing(
                "the sign-in proxy sent no X-Forwarded-User: sign in again, or set the proxy to pass the user (oauth2-proxy: --pass-user-headers)".into(),
            )
        })?;
    let groups = header(headers, GROUPS)
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(SignedIn {
        subject: subject.to_string(),
        email: header(headers, EMAIL).map(str::to_string),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("a header value"));
        }
        map
    }

    fn peer(text: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(text.parse().expect("an address"), 44_000))
    }

    #[test]
    fn the_proxy_is_believed_and_nobody_else() {
        let trusted = [Network::parse("10.0.0.0/24").expect("valid")];
        let signed = headers(&[
            (USER, "ana"),
            (EMAIL, "ana@example.com"),
            (GROUPS, "ml, search-eng,,"),
        ]);
        let ana = signed_in(&trusted, peer("10.0.0.9"), &signed).expect("from the proxy");
        assert_eq!(ana.subject, "ana");
        assert_eq!(ana.email.as_deref(), Some("ana@example.com"));
        assert_eq!(ana.groups, ["ml", "search-eng"]);
        assert!(matches!(
            signed_in(&trusted, peer("192.0.2.1"), &signed),
            Err(Unidentified::Refused(_))
        ));
        assert!(matches!(
            signed_in(&trusted, peer("192.0.2.1"), &headers(&[])),
            Err(Unidentified::Missing(_))
        ));
        assert!(matches!(
            signed_in(&trusted, None, &signed),
            Err(Unidentified::Refused(_))
        ));
        assert!(matches!(
            signed_in(&trusted, peer("10.0.0.9"), &headers(&[(GROUPS, "ml")])),
            Err(Unidentified::Missing(_))
        ));
        for name in [USER, EMAIL, GROUPS] {
            let mut twice = signed.clone();
            twice.append(name, "platform-admins".parse().expect("a value"));
            assert!(
                matches!(
                    signed_in(&trusted, peer("10.0.0.9"), &twice),
                    Err(Unidentified::Refused(ref why)) if why.contains("more than once")
                ),
                "{name}"
            );
        }
    }
}
