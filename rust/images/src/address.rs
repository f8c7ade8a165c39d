//! Which network addresses an image fetcher may connect to.
//!
//! By default only globally routable unicast addresses: every special-purpose range is
//! refused, IPv4 and IPv6 alike (loopback, "this network", private, carrier-grade NAT,
//! link-local (cloud metadata at 169.254.169.254 included), benchmarking, documentation,
//! multicast, reserved, broadcast; IPv6 unique-local, link-local, site-local, multicast,
//! discard, documentation, the IETF protocol block with Teredo, 6to4, NAT64 and the
//! IPv4-compatible forms), plus the cloud metadata addresses that are public (Azure's
//! 168.63.129.16). An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is judged as the IPv4
//! address it carries. A caller may allow more networks ([`Policy::allowing`]); nothing is
//! ever allowed by a host name, only by the address a connection will use.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP network, `address/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// `10.0.0.0/8`, `::1/128`, or a bare address (a single host).
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("not an IP network: {text:?}");
        let (address, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let address: IpAddr = address.trim().parse().map_err(|_| bad())?;
        let width = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.trim().parse::<u8>().map_err(|_| bad())?,
            None => width,
        };
        if prefix > width {
            return Err(bad());
        }
        Ok(Self { address, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_match(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_match(u128::from(net), u128::from(ip), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_match(a: u128, b: u128, prefix: u8) -> bool {
    prefix == 0 || (a ^ b) >> (128 - u32::from(prefix)) == 0
}

/// An IPv4-mapped IPv6 address as its IPv4 address; anything else unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

const REFUSED_V4: [(u32, u8); 18] = [
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
    (0x0a00_0000, 8),  // 10.0.0.0/8 private
    (0x6440_0000, 10), // 100.64.0.0/10 carrier-grade NAT (Alibaba metadata 100.100.100.200)
    (0x7f00_0000, 8),  // 127.0.0.0/8 loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16 link-local (cloud metadata 169.254.169.254)
    (0xac10_0000, 12), // 172.16.0.0/12 private
    (0xc000_0000, 24), // 192.0.0.0/24 IETF protocol assignments (Oracle metadata 192.0.0.192)
    (0xc000_0200, 24), // 192.0.2.0/24 documentation
    (0xc058_6300, 24), // 192.88.99.0/24 6to4 relay anycast
    (0xc0a8_0000, 16), // 192.168.0.0/16 private
    (0xc612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24 documentation
    (0xcb00_7100, 24), // 203.0.113.0/24 documentation
    (0xe000_0000, 4),  // 224.0.0.0/4 multicast
    (0xf000_0000, 4),  // 240.0.0.0/4 reserved, broadcast
    (0xa83f_8110, 32), // 168.63.129.16 Azure platform (wireserver, metadata)
    (0x6464_6464, 32), // 100.100.100.100 (inside CGNAT already; kept for the record)
    (0xffff_ffff, 32), // 255.255.255.255 broadcast
];

fn v4_is_global(ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    !REFUSED_V4
        .iter()
        .any(|&(net, prefix)| prefix_match(u128::from(net) << 96, u128::from(ip) << 96, prefix))
}

const REFUSED_V6: [(u128, u8); 6] = [
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // IETF protocol assignments (Teredo)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 6to4 (carries any IPv4 address)
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // documentation (RFC 9637)
    (0x3ffe_0000_0000_0000_0000_0000_0000_0000, 16), // old 6bone
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48), // AS112 direct delegation
];

fn v6_is_global(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    // Global unicast is 2000::/3; everything outside it (::, ::1, ::/96 IPv4-compatible,
    // 64:ff9b::/96 NAT64, 100::/64 discard, fc00::/7, fe80::/10, fec0::/10, ff00::/8) is not.
    prefix_match(bits, 0x2000 << 112, 3)
        && !REFUSED_V6
            .iter()
            .any(|&(net, prefix)| prefix_match(bits, net, prefix))
}

/// Whether `ip` is a globally routable unicast address (see the module docs).
pub fn is_global(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => v4_is_global(v4),
        IpAddr::V6(v6) => v6_is_global(v6),
    }
}

/// The destination rule of one fetcher.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    allowed: Vec<Network>,
}

impl Policy {
    /// Global addresses plus `networks`.
    pub fn allowing<S: AsRef<str>>(networks: &[S]) -> Result<Self, String> {
        let allowed = networks
            .iter()
            .map(|n| Network::parse(n.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self { allowed })
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        is_global(ip) || self.allowed.iter().any(|n| n.contains(ip))
    }

    /// As [`Self::allows`], for an address written as text (anything unparsable is refused).
    pub fn allows_text(&self, address: &str) -> bool {
        address
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| self.allows(ip))
    }
}

/// Schemes a fetcher may use.
pub fn scheme_allowed(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_rule_table() {
        let refused = [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.255",
            "127.0.0.1",
            "127.1.2.3",
            "169.254.169.254",
            "169.254.170.2",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.192",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.1",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "168.63.129.16",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "3fff::1",
        ];
        let allowed = [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "169.253.255.255",
            "192.0.1.1",
            "198.17.255.255",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "2400:cb00::1",
        ];
        let policy = Policy::default();
        for ip in refused {
            assert!(!policy.allows_text(ip), "{ip} must be refused");
        }
        for ip in allowed {
            assert!(policy.allows_text(ip), "{ip} must be allowed");
        }
        assert!(!policy.allows_text("localhost"));
        assert!(!policy.allows_text(""));
    }

    #[test]
    fn allowed_networks_table() {
        let policy = Policy::allowing(&["127.0.0.0/8", "::1", "10.1.0.0/16"]).unwrap();
        for (ip, want) in [
            ("127.0.0.1", true),
            ("127.9.9.9", true),
            ("::ffff:127.0.0.1", true),
            ("[::1]", true),
            ("::2", false),
            ("10.1.2.3", true),
            ("10.2.0.1", false),
            ("169.254.169.254", false),
            ("8.8.8.8", true),
        ] {
            assert_eq!(policy.allows_text(ip), want, "{ip}");
        }
        for bad in ["10.0.0.0/33", "::/129", "x", "10.0.0.0/", "/8"] {
            assert!(Policy::allowing(&[bad]).is_err(), "{bad}");
        }
        assert!(Policy::allowing(&["0.0.0.0/0"])
            .unwrap()
            .allows_text("10.0.0.1"));
    }

    #[test]
    fn schemes() {
        for (s, ok) in [
            ("http", true),
            ("HTTPS", true),
            ("ftp", false),
            ("file", false),
            ("", false),
        ] {
            assert_eq!(scheme_allowed(s), ok, "{s}");
        }
    }
}
