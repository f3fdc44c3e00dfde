//! Where webhooks may go: only to public addresses. An endpoint URL that names a loopback,
//! private, link-local, unspecified, multicast or otherwise non-public address — in any
//! spelling a resolver accepts (`2130706433`, `0177.1`, `0x7f.0.0.1`, `[::ffff:127.0.0.1]`) — or
//! a local name (`localhost`) is refused when the endpoint is created or changed; the transport
//! checks the resolved address again when it connects, so a DNS name cannot be rebound to an
//! internal address later. `Billing::set_allow_private_webhooks` lifts both checks (development
//! and tests with local receivers).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address a webhook may be sent to.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier-grade NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0)) // discard
}

/// The IPv4 address an IPv6 address stands for, where it carries one: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(tail());
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Some(tail());
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    None
}

/// Reads an IPv4 address the way `inet_aton` (and so most resolvers and HTTP clients) does:
/// one to four parts, each decimal, octal (leading `0`) or hexadecimal (`0x`), the last part
/// filling the remaining bytes (`127.1`, `2130706433`, `0x7f000001`).
pub fn parse_ipv4_loose(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for p in &parts {
        let lower = p.to_ascii_lowercase();
        let v = if let Some(hex) = lower.strip_prefix("0x") {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if lower.len() > 1 && lower.starts_with('0') {
            u64::from_str_radix(&lower[1..], 8).ok()?
        } else {
            lower.parse::<u64>().ok()?
        };
        values.push(v);
    }
    let (last, init) = values.split_last()?;
    let mut addr: u64 = 0;
    for (k, v) in init.iter().enumerate() {
        if *v > 255 {
            return None;
        }
        addr |= v << (24 - 8 * k);
    }
    let room = 32 - 8 * init.len() as u32;
    if *last >= 1u64 << room {
        return None;
    }
    Some(Ipv4Addr::from((addr | last) as u32))
}

/// The host of an `http(s)://` URL (without brackets around IPv6), lower-cased.
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(h) = host_port.strip_prefix('[') {
        h.split_once(']')?.0
    } else {
        host_port.split(':').next()?
    };
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// Why a webhook may not be sent to the host of `url`, judged from the URL alone (the resolved
/// address is checked again when connecting); `None` when it may.
pub fn refuse_url(url: &str) -> Option<&'static str> {
    let Some(host) = url_host(url) else { return Some("the URL has no host") };
    if host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local") || host.ends_with(".internal") {
        return Some("the URL names a local host");
    }
    let ip = host
        .parse::<Ipv6Addr>()
        .map(IpAddr::V6)
        .ok()
        .or_else(|| parse_ipv4_loose(&host).map(IpAddr::V4));
    match ip {
        Some(ip) if !is_public_ip(ip) => Some("the URL points to a private, local or reserved address"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_an_internal_address_is_refused() {
        for url in [
            "http://127.0.0.1/h",
            "http://localhost:9000/h",
            "http://LOCALHOST./h",
            "http://api.localhost/h",
            "http://0.0.0.0/h",
            "http://2130706433/h",
            "http://0177.0.0.1/h",
            "http://0x7f.0.0.1/h",
            "http://0x7f000001/h",
            "http://127.1/h",
            "http://[::1]/h",
            "http://[::]/h",
            "http://[::ffff:127.0.0.1]/h",
            "http://[::ffff:7f00:1]/h",
            "http://[64:ff9b::a00:1]/h",
            "http://[2002:a9fe:a9fe::]/h",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.7/h",
            "http://172.16.3.4/h",
            "http://192.168.1.1/h",
            "http://100.64.0.1/h",
            "http://[fd00::1]/h",
            "http://[fe80::1]/h",
            "http://224.0.0.1/h",
            "http://255.255.255.255/h",
            "https://user@10.1.2.3:8443/h",
        ] {
            assert!(refuse_url(url).is_some(), "{url} accepted");
        }
    }

    #[test]
    fn public_addresses_and_names_pass() {
        for url in [
            "https://example.com/h",
            "https://hooks.example.org:8443/x",
            "http://93.184.216.34/h",
            "http://[2606:2800:220:1::]/h",
            "http://8.8.8.8/h",
        ] {
            assert_eq!(refuse_url(url), None, "{url} refused");
        }
    }

    #[test]
    fn loose_ipv4_forms() {
        assert_eq!(parse_ipv4_loose("2130706433"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(parse_ipv4_loose("127.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(parse_ipv4_loose("10.1.256"), Some(Ipv4Addr::new(10, 1, 1, 0)));
        assert_eq!(parse_ipv4_loose("0300.0250.1.1"), Some(Ipv4Addr::new(192, 168, 1, 1)));
        assert_eq!(parse_ipv4_loose("example.com"), None);
        assert_eq!(parse_ipv4_loose("1.2.3.4.5"), None);
        assert_eq!(parse_ipv4_loose("256.1.1.1"), None);
        assert_eq!(parse_ipv4_loose("4294967296"), None);
    }
}
