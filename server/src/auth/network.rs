//! An address or a CIDR range of addresses, as `--trusted-proxy` names them.

use std::net::IpAddr;

/// `10.0.0.5`, `10.0.0.0/8`, `::1` or `fd00::/8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// Reads an address or a CIDR range.
    pub fn parse(text: &str) -> Result<Network, String> {
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.trim(), None),
        };
        let address: IpAddr = address
            .parse()
            .map_err(|_| format!("{address:?} is not an IP address"))?;
        let longest = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => longest,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= longest)
                .ok_or_else(|| format!("/{prefix} is not a prefix length from 0 to {longest}"))?,
        };
        Ok(Network { address, prefix })
    }

    /// Whether the range is every address (`0.0.0.0/0`, `::/0`): anyone could pass as the proxy.
    pub fn is_everything(&self) -> bool {
        self.prefix == 0
    }

    /// Whether `address` is in the range. An IPv4 address mapped into IPv6 counts as IPv4.
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        match (self.address, address) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn addresses_and_ranges_match_what_they_should() {
        let single = Network::parse("10.1.2.3").expect("valid");
        assert!(single.contains(ip("10.1.2.3")) && !single.contains(ip("10.1.2.4")));
        let range = Network::parse("10.0.0.0/8").expect("valid");
        assert!(range.contains(ip("10.255.0.1")) && !range.contains(ip("11.0.0.1")));
        assert!(
            range.contains(ip("::ffff:10.0.0.9")),
            "IPv4 mapped into IPv6"
        );
        let everything = Network::parse("0.0.0.0/0").expect("valid");
        assert!(everything.contains(ip("192.0.2.1")));
        assert!(
            everything.is_everything() && Network::parse("::/0").expect("valid").is_everything()
        );
        assert!(!range.is_everything());
        let v6 = Network::parse("fd00::/8").expect("valid");
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        assert!(Network::parse("10.0.0.0/33").is_err());
        assert!(Network::parse("proxy.internal").is_err());
    }
}
