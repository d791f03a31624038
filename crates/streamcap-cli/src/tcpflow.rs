//! tcpflow-style file names for stream directions.
//!
//! tcpflow 1.6 names a direction `%A.%a-%B.%b%V%v%C%c`: the source address
//! (IPv4 octets zero-padded to 3 digits, IPv6 as `inet_ntop` writes it), the
//! source port zero-padded to 5 digits, the same for the destination, then
//! `--VLAN` when the frame had a VLAN tag, then `cN` when the name was already
//! taken (a reused 5-tuple): tcpflow tries `name`, `namec1`, `namec2`… until
//! it can create a file that does not exist.

use std::net::IpAddr;

/// The base file name of the stream from `src:sport` to `dst:dport`.
pub fn flow_name(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, vlan: Option<u16>) -> String {
    let mut s = format!("{}.{:05}-{}.{:05}", addr(src), sport, addr(dst), dport);
    if let Some(v) = vlan.filter(|&v| v > 0) {
        s.push_str(&format!("--{v}"));
    }
    s
}

/// The name with tcpflow's collision suffix for the `n`th reuse (0 = none).
pub fn with_count(base: &str, n: u32) -> String {
    if n == 0 {
        base.to_string()
    } else {
        format!("{base}c{n}")
    }
}

/// Whether `name` is a file name [`flow_name`] and [`with_count`] can
/// produce: `SRCIP.SRCPORT-DSTIP.DSTPORT`, then `--VLAN`, then `cN`.
pub fn is_flow_name(name: &str) -> bool {
    let Some((src, rest)) = name.split_once('-') else {
        return false;
    };
    // The collision counter: `c` and digits after the last port or VLAN digit.
    let rest = match rest.rfind('c') {
        Some(at)
            if at + 1 < rest.len()
                && rest[at + 1..].bytes().all(|b| b.is_ascii_digit())
                && rest[..at].ends_with(|c: char| c.is_ascii_digit()) =>
        {
            &rest[..at]
        }
        _ => rest,
    };
    let (dst, vlan) = match rest.split_once("--") {
        Some((d, v)) => (d, Some(v)),
        None => (rest, None),
    };
    let vlan_ok = vlan.is_none_or(|v| v.parse::<u16>().is_ok_and(|v| v > 0));
    vlan_ok && is_endpoint(src) && is_endpoint(dst)
}

/// `ADDR.PORT` as [`flow_name`] writes it.
fn is_endpoint(s: &str) -> bool {
    let Some((a, port)) = s.rsplit_once('.') else {
        return false;
    };
    if port.len() != 5 || port.parse::<u16>().is_err() {
        return false;
    }
    if a.parse::<std::net::Ipv6Addr>().is_ok() {
        return true;
    }
    let octets: Vec<&str> = a.split('.').collect();
    octets.len() == 4
        && octets
            .iter()
            .all(|o| o.len() == 3 && o.parse::<u8>().is_ok())
}

fn addr(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{:03}.{:03}.{:03}.{:03}", o[0], o[1], o[2], o[3])
        }
        IpAddr::V6(v6) => v6.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_names() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(
            flow_name(a, 1234, b, 80, None),
            "010.000.000.001.01234-010.000.000.002.00080"
        );
        assert_eq!(
            flow_name(b, 80, a, 1234, Some(3136)),
            "010.000.000.002.00080-010.000.000.001.01234--3136"
        );
        assert_eq!(
            flow_name(a, 0, b, 65535, Some(0)),
            "010.000.000.001.00000-010.000.000.002.65535"
        );
        assert_eq!(with_count("x", 0), "x");
        assert_eq!(with_count("x--3136", 1), "x--3136c1");
    }

    #[test]
    fn flow_names_are_recognised() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "2a03:b0c0:3:d0::70:1001".parse().unwrap();
        for name in [
            flow_name(a, 1234, a, 80, None),
            flow_name(a, 1234, a, 80, Some(3136)),
            with_count(&flow_name(a, 1, a, 2, None), 12),
            with_count(&flow_name(b, 443, b, 41776, Some(7)), 1),
            flow_name(b, 443, b, 41776, None),
        ] {
            assert!(is_flow_name(&name), "{name}");
        }
        for name in [
            "streams.jsonl",
            "notes.txt",
            "10.0.0.1.01234-10.0.0.2.00080",
            "010.000.000.001.1234-010.000.000.002.00080",
            "010.000.000.001.01234-010.000.000.002.00080--0",
            "010.000.000.001.01234-010.000.000.002.00080c",
            "010.000.000.001.01234-010.000.000.002.00080.bak",
        ] {
            assert!(!is_flow_name(name), "{name}");
        }
    }

    #[test]
    fn ipv6_names() {
        let a: IpAddr = "2a00:d40:1:3:7aac:c0ff:fea7:d4c".parse().unwrap();
        let b: IpAddr = "2a03:b0c0:3:d0::70:1001".parse().unwrap();
        // As tcpflow 1.6 wrote them for ndpi__http_ipv6.pcap.
        assert_eq!(
            flow_name(a, 37486, b, 443, None),
            "2a00:d40:1:3:7aac:c0ff:fea7:d4c.37486-2a03:b0c0:3:d0::70:1001.00443"
        );
        let c: IpAddr = "2a00:1450:4001:803::1017".parse().unwrap();
        assert_eq!(
            flow_name(c, 443, a, 41776, None),
            "2a00:1450:4001:803::1017.00443-2a00:d40:1:3:7aac:c0ff:fea7:d4c.41776"
        );
        let l: IpAddr = "::1".parse().unwrap();
        assert_eq!(flow_name(l, 1, l, 2, None), "::1.00001-::1.00002");
    }
}
