//! Community ID flow hashes, version 1 (the corelight community-id-spec),
//! as Zeek, Suricata and Wireshark compute them: `1:` and the base64 of a
//! SHA-1 over the seed (2 bytes), the two addresses, the protocol, a zero
//! byte and, for protocols with ports, the two ports; the endpoints ordered
//! so that both directions of a flow give the same value.
//!
//! ICMP and ICMPv6 use the message type and code as ports: a request or
//! reply type is paired with its counterpart type (echo request with echo
//! reply, ...), which makes the flow two-way; other types are one-way and
//! keep the order given.

use base64::Engine as _;
use sha1::{Digest, Sha1};
use std::net::IpAddr;
use streamcap::decode::icmp_counterpart;

/// IP protocol numbers the spec treats specially.
const ICMP: u8 = 1;
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP6: u8 = 58;
const SCTP: u8 = 132;

/// The bytes of an address as the spec hashes them (the first 4 of 16 for
/// IPv4), on the stack.
fn octets(ip: IpAddr) -> ([u8; 16], usize) {
    match ip {
        IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a.octets());
            (b, 4)
        }
        IpAddr::V6(a) => (a.octets(), 16),
    }
}

/// The text of a Community ID: `1:` and 28 base64 characters, kept inline
/// (a record is formatted per connection: no allocation for it).
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct CommunityId([u8; ID_LEN]);

/// `1:` and the base64 of a 20-byte SHA-1 digest.
const ID_LEN: usize = 2 + 28;

impl CommunityId {
    /// The text, e.g. `1:LQU9qZlK+B5F3KDmev6m5PMibrg=`.
    pub fn as_str(&self) -> &str {
        // "1:" and base64 are ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Debug for CommunityId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Community ID of a flow from `src:sport` to `dst:dport` over IP
/// protocol `proto`, with `seed` (0 by default, as everywhere). For ICMP
/// and ICMPv6, `sport` is the message type and `dport` its code. The ports
/// of protocols other than TCP, UDP, SCTP, ICMP and ICMPv6 are ignored.
/// `None` when the two addresses are of different families.
pub fn community_id(
    seed: u16,
    proto: u8,
    src: IpAddr,
    sport: u16,
    dst: IpAddr,
    dport: u16,
) -> Option<CommunityId> {
    if src.is_ipv4() != dst.is_ipv4() {
        return None;
    }
    let ((a, alen), (b, blen)) = (octets(src), octets(dst));
    let (a, b) = (&a[..alen], &b[..blen]);
    let (ports, one_way) = match proto {
        TCP | UDP | SCTP => (Some((sport, dport)), false),
        ICMP | ICMP6 => {
            let t = u8::try_from(sport).ok();
            let pair = t.and_then(|t| icmp_counterpart(proto == ICMP6, t));
            match pair {
                Some(c) => (Some((sport, u16::from(c))), false),
                None => (Some((sport, dport)), true),
            }
        }
        _ => (None, false),
    };
    let (p1, p2) = ports.unwrap_or((0, 0));
    let ordered = one_way || (a, p1) < (b, p2);
    let (first, second, p1, p2) = if ordered {
        (a, b, p1, p2)
    } else {
        (b, a, p2, p1)
    };
    let mut h = Sha1::new();
    h.update(seed.to_be_bytes());
    h.update(first);
    h.update(second);
    h.update([proto, 0]);
    if ports.is_some() {
        h.update(p1.to_be_bytes());
        h.update(p2.to_be_bytes());
    }
    let digest = h.finalize();
    let mut id = [0u8; ID_LEN];
    id[..2].copy_from_slice(b"1:");
    let n = base64::engine::general_purpose::STANDARD
        .encode_slice(digest, &mut id[2..])
        .ok()?;
    (n == ID_LEN - 2).then_some(CommunityId(id))
}

/// The Community ID of a flow record (`seed`: `--community-id-seed`), or
/// `None` for SCTP, whose ports the engine does not read.
pub fn of_record(r: &crate::record::FlowRecord, seed: u16) -> Option<CommunityId> {
    match r.proto.0 {
        // The engine does not read SCTP's ports.
        SCTP => None,
        // An ICMP flow's "ports" are its type and code or counterpart type
        // (`IcmpMessage::flow_ports`), from which the spec's are made.
        p => community_id(seed, p, r.src_ip, r.src_port, r.dst_ip, r.dst_port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (proto, saddr, daddr, sport, dport, seed 0, seed 1): the tables of
    /// the spec's baseline/README.md (the spec's make-tables.py; ICMP ports
    /// are type and code) and entries of its baseline_deflt.json and
    /// baseline_seed1.json (made with pycommunityid from its pcaps).
    /// Protocol, source, destination, ports, ID with seed 0, ID with seed 1.
    type Vector = (
        u8,
        &'static str,
        &'static str,
        Option<(u16, u16)>,
        &'static str,
        &'static str,
    );

    const VECTORS: &[Vector] = &[
        (
            6,
            "1.2.3.4",
            "5.6.7.8",
            Some((1122, 3344)),
            "1:wCb3OG7yAFWelaUydu0D+125CLM=",
            "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk=",
        ),
        (
            6,
            "5.6.7.8",
            "1.2.3.4",
            Some((3344, 1122)),
            "1:wCb3OG7yAFWelaUydu0D+125CLM=",
            "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk=",
        ),
        (
            17,
            "1.2.3.4",
            "5.6.7.8",
            Some((1122, 3344)),
            "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=",
            "1:OShq+iKDAMVouh/4bMxB9Sz4amw=",
        ),
        (
            17,
            "5.6.7.8",
            "1.2.3.4",
            Some((3344, 1122)),
            "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=",
            "1:OShq+iKDAMVouh/4bMxB9Sz4amw=",
        ),
        (
            132,
            "1.2.3.4",
            "5.6.7.8",
            Some((1122, 3344)),
            "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=",
            "1:uitchpn5MMGAQKBJh7bIr/bAr7s=",
        ),
        (
            132,
            "5.6.7.8",
            "1.2.3.4",
            Some((3344, 1122)),
            "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=",
            "1:uitchpn5MMGAQKBJh7bIr/bAr7s=",
        ),
        (
            1,
            "1.2.3.4",
            "5.6.7.8",
            Some((8, 0)),
            "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=",
            "1:9pr4ZGTICiuZoIh90RRYE2RyXpU=",
        ),
        (
            1,
            "5.6.7.8",
            "1.2.3.4",
            Some((0, 0)),
            "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=",
            "1:9pr4ZGTICiuZoIh90RRYE2RyXpU=",
        ),
        (
            1,
            "1.2.3.4",
            "5.6.7.8",
            Some((11, 0)),
            "1:f/YiSyWqczrTgfUCZlBUnvHRcPk=",
            "1:1DD7cWGC/Yg91YGsQeni8du3pIA=",
        ),
        (
            58,
            "fe80:0001:0203:0405:0607:0809:0A0B:0C0D",
            "fe80:1011:1213:1415:1617:1819:1A1B:1C1D",
            Some((128, 0)),
            "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=",
            "1:IO27GQzPuCtNnwFvjWALMHu5tJE=",
        ),
        (
            58,
            "fe80:1011:1213:1415:1617:1819:1A1B:1C1D",
            "fe80:0001:0203:0405:0607:0809:0A0B:0C0D",
            Some((129, 0)),
            "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=",
            "1:IO27GQzPuCtNnwFvjWALMHu5tJE=",
        ),
        (
            58,
            "fe80:0001:0203:0405:0607:0809:0A0B:0C0D",
            "fe80:1011:1213:1415:1617:1819:1A1B:1C1D",
            Some((146, 0)),
            "1:fYC8+pz24E+EhANP1EZhpX0Dw10=",
            "1:Cv4IKJe56BNkF0MBW2YxQ3Nwc3s=",
        ),
        (
            46,
            "1.2.3.4",
            "5.6.7.8",
            None,
            "1:ikv3kmf89luf73WPz1jOs49S768=",
            "1:/buhqeOmaRCopOZFy9HnoJd5XW8=",
        ),
        (
            46,
            "5.6.7.8",
            "1.2.3.4",
            None,
            "1:ikv3kmf89luf73WPz1jOs49S768=",
            "1:/buhqeOmaRCopOZFy9HnoJd5XW8=",
        ),
        (
            46,
            "fe80:0001:0203:0405:0607:0809:0A0B:0C0D",
            "fe80:1011:1213:1415:1617:1819:1A1B:1C1D",
            None,
            "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=",
            "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM=",
        ),
        (
            46,
            "fe80:1011:1213:1415:1617:1819:1A1B:1C1D",
            "fe80:0001:0203:0405:0607:0809:0A0B:0C0D",
            None,
            "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=",
            "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM=",
        ),
        // baseline_*.json (from real packets):
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "fe80::260:97ff:fe07:69ea",
            Some((135, 136)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((136, 135)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((135, 136)),
            "1:zavyT/cezQr1fmImYCwYnMXbgck=",
            "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=",
        ),
        (
            58,
            "3ffe:501:1800:2345::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((3, 0)),
            "1:2ObVBgIn28oZvibYZhZMBgh7WdQ=",
            "1:lVEtCZpYu84Xqaa++3lXFyuu2n4=",
        ),
        (
            58,
            "3ffe:501:410:0:2c0:dfff:fe47:33e",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((1, 4)),
            "1:hLZd0XGWojozrvxqE0dWB1iM6R0=",
            "1:W8MHwXpWzpoSTD+cGcaJr4u0ys8=",
        ),
        (
            58,
            "3ffe:507:0:1:200:86ff:fe05:80da",
            "3ffe:501:0:1001::2",
            Some((128, 129)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "3ffe:501:0:1001::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((129, 128)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "ff02::2",
            Some((133, 134)),
            "1:hO+sN4H+MG5MY/8hIrXPqc4ZQz0=",
            "1:L7Ka0ZMYu+J3bL4ulW2PrqyXNo8=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "ff02::1",
            Some((134, 133)),
            "1:pkvHqCL88/tg1k4cPigmZXUtL00=",
            "1:K/ee5UCqAMAQXDorP5nSa2CGLjc=",
        ),
        (
            1,
            "192.168.0.89",
            "192.168.0.1",
            Some((8, 0)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "192.168.0.1",
            "192.168.0.89",
            Some((0, 8)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "10.0.0.1",
            "10.0.0.2",
            Some((11, 0)),
            "1:YHxtAirCG//0OzkcVAukqKQN9xM=",
            "1:XjUibYHaafLQ3pxQeiMI8g25q20=",
        ),
        (
            6,
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            "2607:f8b0:400c:c03::1a",
            Some((63943, 25)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            6,
            "2607:f8b0:400c:c03::1a",
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            Some((25, 63943)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            132,
            "192.168.170.8",
            "192.168.170.56",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            132,
            "192.168.170.56",
            "192.168.170.8",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            6,
            "128.232.110.120",
            "66.35.250.204",
            Some((34855, 80)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            6,
            "66.35.250.204",
            "128.232.110.120",
            Some((80, 34855)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            17,
            "192.168.1.52",
            "8.8.8.8",
            Some((54585, 53)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            17,
            "8.8.8.8",
            "192.168.1.52",
            Some((53, 54585)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            46,
            "10.1.12.1",
            "10.1.12.2",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
        (
            46,
            "10.1.12.2",
            "10.1.12.1",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
    ];

    #[test]
    fn spec_test_vectors() {
        for (proto, s, d, ports, seed0, seed1) in VECTORS {
            let (src, dst) = (s.parse().expect("addr"), d.parse().expect("addr"));
            let (sp, dp) = ports.unwrap_or((0, 0));
            let text = |c: Option<CommunityId>| c.map(|c| c.as_str().to_string());
            let got0 = text(community_id(0, *proto, src, sp, dst, dp));
            let got1 = text(community_id(1, *proto, src, sp, dst, dp));
            assert_eq!(got0.as_deref(), Some(*seed0), "{proto} {s} {d} {ports:?}");
            assert_eq!(
                got1.as_deref(),
                Some(*seed1),
                "seed 1: {proto} {s} {d} {ports:?}"
            );
            // Ports of port-less protocols do not matter.
            if ports.is_none() {
                assert_eq!(
                    text(community_id(0, *proto, src, 7, dst, 9)).as_deref(),
                    Some(*seed0)
                );
            }
        }
    }

    #[test]
    fn mixed_families_have_none() {
        let v4: IpAddr = "1.2.3.4".parse().expect("addr");
        let v6: IpAddr = "::1".parse().expect("addr");
        assert_eq!(community_id(0, 6, v4, 1, v6, 2), None);
    }
}
