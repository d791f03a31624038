//! Encapsulated traffic: inner TCP and UDP conversations carried through
//! PPPoE, MPLS, GRE, ERSPAN, VXLAN, GENEVE, GTP-U and IP-in-IP tunnels.
//!
//! [`Encap::wrap`] puts one inner IP packet into an outer Ethernet frame of
//! the given encapsulation; [`conversation`] makes the inner packets of a
//! small TCP connection and a UDP exchange; [`tunnel_capture`] writes one of
//! each through every encapsulation into a pcap, with what every flow must
//! count ([`TunnelFlow`]). Everything is deterministic.

use crate::pcap::PcapWriter;
use etherparse::{IpNumber, Ipv4Header, Ipv6Header, PacketBuilder, UdpHeader};
use std::net::IpAddr;

/// An encapsulation of inner IP packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Encap {
    /// PPPoE session stage (EtherType 0x8864), PPP protocol IPv4/IPv6.
    Pppoe {
        /// Session id.
        session: u16,
    },
    /// An MPLS label stack (EtherType 0x8847), outermost label first.
    Mpls {
        /// The labels (20 bits each).
        labels: Vec<u32>,
    },
    /// GRE (version 0) with an optional key; the inner IP packet directly.
    Gre {
        /// The key field, if present.
        key: Option<u32>,
    },
    /// ERSPAN type II in GRE (sequence number, 8-byte header, Ethernet).
    ErspanII {
        /// Session id (10 bits).
        session: u16,
    },
    /// ERSPAN type III in GRE (12-byte header, Ethernet).
    ErspanIII {
        /// Session id (10 bits).
        session: u16,
    },
    /// VXLAN over UDP to `port`, the inner packet in Ethernet.
    Vxlan {
        /// Virtual network identifier (24 bits).
        vni: u32,
        /// Destination UDP port (4789 standard).
        port: u16,
    },
    /// GENEVE over UDP 6081, the inner packet in Ethernet.
    Geneve {
        /// Virtual network identifier (24 bits).
        vni: u32,
    },
    /// GTP-U over UDP 2152, a G-PDU with the inner IP packet.
    GtpU {
        /// Tunnel endpoint identifier.
        teid: u32,
    },
    /// The inner packet straight in an outer IP header (protocol 4 for
    /// IPv4 inside, 41 for IPv6 inside: IP-in-IP, 6in4, 4in6, 6in6).
    IpInIp,
}

impl Encap {
    /// A short name.
    pub fn name(&self) -> &'static str {
        match self {
            Encap::Pppoe { .. } => "pppoe",
            Encap::Mpls { .. } => "mpls",
            Encap::Gre { .. } => "gre",
            Encap::ErspanII { .. } => "erspan2",
            Encap::ErspanIII { .. } => "erspan3",
            Encap::Vxlan { .. } => "vxlan",
            Encap::Geneve { .. } => "geneve",
            Encap::GtpU { .. } => "gtpu",
            Encap::IpInIp => "ipip",
        }
    }

    /// Whether the encapsulation has outer IP endpoints (all but PPPoE and
    /// MPLS, which are link layers).
    pub fn has_outer_ip(&self) -> bool {
        !matches!(self, Encap::Pppoe { .. } | Encap::Mpls { .. })
    }

    /// The outer UDP ports of a packet from the tunnel endpoint that sorts
    /// as `from_a` (for UDP encapsulations; a VXLAN sender's source port is
    /// a hash of the inner flow: here one per direction).
    fn udp_ports(&self, from_a: bool) -> Option<(u16, u16)> {
        match self {
            Encap::Vxlan { port, .. } => Some((if from_a { 50_000 } else { 50_001 }, *port)),
            Encap::Geneve { .. } => Some((if from_a { 40_000 } else { 40_001 }, 6081)),
            Encap::GtpU { .. } => Some((2152, 2152)),
            _ => None,
        }
    }

    /// One outer Ethernet frame carrying `inner` (an IP packet), sent from
    /// outer endpoint `src` to `dst` (same family; ignored for PPPoE and
    /// MPLS). `seq` numbers the packets of the tunnel (GRE sequence).
    pub fn wrap(&self, src: IpAddr, dst: IpAddr, inner: &[u8], seq: u32) -> Vec<u8> {
        let inner_v6 = inner.first().is_some_and(|b| b >> 4 == 6);
        let inner_ethertype: u16 = if inner_v6 { 0x86dd } else { 0x0800 };
        let eth_inner = || {
            let mut f = vec![0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a];
            f.extend_from_slice(&inner_ethertype.to_be_bytes());
            f.extend_from_slice(inner);
            f
        };
        let from_a = src <= dst;
        let (ethertype, l3): (u16, Vec<u8>) = match self {
            Encap::Pppoe { session } => {
                let mut v = vec![0x11, 0];
                v.extend_from_slice(&session.to_be_bytes());
                v.extend_from_slice(&((inner.len() + 2) as u16).to_be_bytes());
                v.extend_from_slice(&(if inner_v6 { 0x0057u16 } else { 0x0021 }).to_be_bytes());
                v.extend_from_slice(inner);
                (0x8864, v)
            }
            Encap::Mpls { labels } => {
                let mut v = Vec::new();
                for (i, l) in labels.iter().enumerate() {
                    let bottom = u32::from(i + 1 == labels.len());
                    v.extend_from_slice(&((l << 12) | (bottom << 8) | 64).to_be_bytes());
                }
                v.extend_from_slice(inner);
                (0x8847, v)
            }
            _ => {
                let (proto, payload) = self.ip_payload(inner, inner_v6, &eth_inner(), from_a, seq);
                outer_ip(src, dst, proto, &payload)
            }
        };
        let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(&l3);
        f
    }

    /// The outer IP protocol and payload of an IP-level encapsulation.
    fn ip_payload(
        &self,
        inner: &[u8],
        inner_v6: bool,
        eth_inner: &[u8],
        from_a: bool,
        seq: u32,
    ) -> (u8, Vec<u8>) {
        let gre = |flags: u16, proto: u16, fields: &[u32], payload: &[u8]| {
            let mut v = flags.to_be_bytes().to_vec();
            v.extend_from_slice(&proto.to_be_bytes());
            for f in fields {
                v.extend_from_slice(&f.to_be_bytes());
            }
            v.extend_from_slice(payload);
            v
        };
        let ethertype: u16 = if inner_v6 { 0x86dd } else { 0x0800 };
        match self {
            Encap::Gre { key: Some(k) } => (47, gre(0x2000, ethertype, &[*k], inner)),
            Encap::Gre { key: None } => (47, gre(0, ethertype, &[], inner)),
            Encap::ErspanII { session } => {
                // Version 1, VLAN 0, COS 0, encapsulation 0, truncation 0, session; index 0.
                let h = [0x1000_0000 | u32::from(*session & 0x3ff), 0];
                let mut body = Vec::new();
                for w in h {
                    body.extend_from_slice(&w.to_be_bytes());
                }
                body.extend_from_slice(eth_inner);
                (47, gre(0x1000, 0x88be, &[seq], &body))
            }
            Encap::ErspanIII { session } => {
                // Version 2, session; timestamp; SGT 0, frame type 0 (Ethernet), no subheader.
                let h = [0x2000_0000 | u32::from(*session & 0x3ff), seq, 0];
                let mut body = Vec::new();
                for w in h {
                    body.extend_from_slice(&w.to_be_bytes());
                }
                body.extend_from_slice(eth_inner);
                (47, gre(0x1000, 0x22eb, &[seq], &body))
            }
            Encap::Vxlan { vni, .. } => {
                let mut body = vec![0x08, 0, 0, 0];
                body.extend_from_slice(&(vni << 8).to_be_bytes());
                body.extend_from_slice(eth_inner);
                (17, self.udp(from_a, &body))
            }
            Encap::Geneve { vni } => {
                let mut body = vec![0, 0, 0x65, 0x58];
                body.extend_from_slice(&(vni << 8).to_be_bytes());
                body.extend_from_slice(eth_inner);
                (17, self.udp(from_a, &body))
            }
            Encap::GtpU { teid } => {
                let mut body = vec![0x30, 0xff];
                body.extend_from_slice(&(inner.len() as u16).to_be_bytes());
                body.extend_from_slice(&teid.to_be_bytes());
                body.extend_from_slice(inner);
                (17, self.udp(from_a, &body))
            }
            Encap::IpInIp => (if inner_v6 { 41 } else { 4 }, inner.to_vec()),
            Encap::Pppoe { .. } | Encap::Mpls { .. } => (0, Vec::new()),
        }
    }

    /// A UDP header (checksum 0) and `body`, for a UDP encapsulation.
    fn udp(&self, from_a: bool, body: &[u8]) -> Vec<u8> {
        let (sp, dp) = self.udp_ports(from_a).unwrap_or((0, 0));
        let mut v = Vec::with_capacity(8 + body.len());
        let h = UdpHeader {
            source_port: sp,
            destination_port: dp,
            length: (8 + body.len()) as u16,
            checksum: 0,
        };
        v.extend_from_slice(&h.to_bytes());
        v.extend_from_slice(body);
        v
    }
}

/// An outer IP header of the family of `src` and `payload`: (EtherType, bytes).
fn outer_ip(src: IpAddr, dst: IpAddr, proto: u8, payload: &[u8]) -> (u16, Vec<u8>) {
    let mut v = Vec::new();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = Ipv4Header::new(
                payload.len() as u16,
                64,
                IpNumber(proto),
                s.octets(),
                d.octets(),
            )
            .unwrap_or_default();
            h.header_checksum = h.calc_header_checksum();
            v.extend_from_slice(&h.to_bytes());
            v.extend_from_slice(payload);
            (0x0800, v)
        }
        (s, d) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V6(x) => x.octets(),
                IpAddr::V4(x) => x.to_ipv6_mapped().octets(),
            };
            let h = Ipv6Header {
                payload_length: payload.len() as u16,
                next_header: IpNumber(proto),
                hop_limit: 64,
                source: v6(s),
                destination: v6(d),
                ..Default::default()
            };
            v.extend_from_slice(&h.to_bytes());
            v.extend_from_slice(payload);
            (0x86dd, v)
        }
    }
}

/// One inner packet and who sent it (`true`: the client).
pub type InnerPacket = (bool, Vec<u8>);

/// The inner IP packets of a TCP connection from `client` to `server`
/// (handshake, two requests and two answers, FIN both ways: 10 packets, 6
/// from the client and 4 from the server) followed by a UDP request and answer from port+1 to port+1.
pub fn conversation(client: (IpAddr, u16), server: (IpAddr, u16)) -> Vec<InnerPacket> {
    let (c, s) = (client, server);
    let mut out = Vec::new();
    let mut tcp = |from_client: bool, seq: u32, ack: Option<u32>, flags: &str, data: &[u8]| {
        let (a, b) = if from_client { (c, s) } else { (s, c) };
        let mut v = Vec::new();
        let ip = match (a.0, b.0) {
            (IpAddr::V4(x), IpAddr::V4(y)) => PacketBuilder::ipv4(x.octets(), y.octets(), 64),
            (IpAddr::V6(x), IpAddr::V6(y)) => PacketBuilder::ipv6(x.octets(), y.octets(), 64),
            _ => return,
        };
        let mut t = ip.tcp(a.1, b.1, seq, 65535);
        if flags.contains('S') {
            t = t.syn();
        }
        if flags.contains('F') {
            t = t.fin();
        }
        if flags.contains('P') {
            t = t.psh();
        }
        if let Some(n) = ack {
            t = t.ack(n);
        }
        if t.write(&mut v, data).is_ok() {
            out.push((from_client, v));
        }
    };
    let (ci, si) = (1000u32, 5000u32);
    tcp(true, ci, None, "S", b"");
    tcp(false, si, Some(ci + 1), "S", b"");
    tcp(true, ci + 1, Some(si + 1), "", b"");
    tcp(true, ci + 1, Some(si + 1), "P", b"GET / HTTP/1.0\r\n\r\n");
    tcp(
        false,
        si + 1,
        Some(ci + 19),
        "P",
        b"HTTP/1.0 200 OK\r\n\r\n",
    );
    tcp(true, ci + 19, Some(si + 20), "P", b"more");
    tcp(false, si + 20, Some(ci + 23), "P", b"done");
    tcp(true, ci + 23, Some(si + 24), "F", b"");
    tcp(false, si + 24, Some(ci + 24), "F", b"");
    tcp(true, ci + 24, Some(si + 25), "", b"");
    for (from_client, data) in [(true, &b"query"[..]), (false, &b"answer"[..])] {
        let (a, b) = if from_client { (c, s) } else { (s, c) };
        let mut v = Vec::new();
        let ip = match (a.0, b.0) {
            (IpAddr::V4(x), IpAddr::V4(y)) => PacketBuilder::ipv4(x.octets(), y.octets(), 64),
            (IpAddr::V6(x), IpAddr::V6(y)) => PacketBuilder::ipv6(x.octets(), y.octets(), 64),
            _ => continue,
        };
        if ip.udp(a.1 + 1, b.1 + 1).write(&mut v, data).is_ok() {
            out.push((from_client, v));
        }
    }
    out
}

/// One tunnel of [`tunnel_capture`]: the encapsulation, its outer
/// endpoints and the inner conversation's endpoints.
#[derive(Clone, Debug)]
pub struct TunnelFlow {
    /// The encapsulation.
    pub encap: Encap,
    /// Outer endpoint on the client's side.
    pub outer_client: IpAddr,
    /// Outer endpoint on the server's side.
    pub outer_server: IpAddr,
    /// Inner client address and TCP port (UDP uses port + 1).
    pub client: (IpAddr, u16),
    /// Inner server address and TCP port (UDP uses port + 1).
    pub server: (IpAddr, u16),
}

/// The tunnels [`tunnel_capture`] writes: one conversation through each
/// encapsulation, IPv4 and IPv6 inside and outside, every inner 5-tuple
/// distinct.
pub fn tunnel_flows() -> Vec<TunnelFlow> {
    let ip = |s: &str| {
        s.parse::<IpAddr>()
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    };
    let t = |encap: Encap, oc: &str, os: &str, c: &str, s: &str, port: u16| TunnelFlow {
        encap,
        outer_client: ip(oc),
        outer_server: ip(os),
        client: (ip(c), 40_000 + port),
        server: (ip(s), port),
    };
    vec![
        t(
            Encap::Pppoe { session: 0x1234 },
            "0.0.0.0",
            "0.0.0.0",
            "100.64.0.1",
            "198.51.100.1",
            80,
        ),
        t(
            Encap::Pppoe { session: 0x1235 },
            "0.0.0.0",
            "0.0.0.0",
            "2001:db8:1::1",
            "2001:db8:2::1",
            81,
        ),
        t(
            Encap::Mpls {
                labels: vec![16, 17, 18],
            },
            "0.0.0.0",
            "0.0.0.0",
            "10.1.0.1",
            "10.1.0.2",
            82,
        ),
        t(
            Encap::Gre { key: Some(7) },
            "192.0.2.1",
            "192.0.2.2",
            "10.2.0.1",
            "10.2.0.2",
            83,
        ),
        t(
            Encap::Gre { key: None },
            "2001:db8:f::1",
            "2001:db8:f::2",
            "2001:db8:3::1",
            "2001:db8:3::2",
            84,
        ),
        t(
            Encap::ErspanII { session: 100 },
            "192.0.2.3",
            "192.0.2.4",
            "10.3.0.1",
            "10.3.0.2",
            85,
        ),
        t(
            Encap::ErspanIII { session: 200 },
            "192.0.2.5",
            "192.0.2.6",
            "10.4.0.1",
            "10.4.0.2",
            86,
        ),
        t(
            Encap::Vxlan {
                vni: 5001,
                port: 4789,
            },
            "192.0.2.7",
            "192.0.2.8",
            "10.5.0.1",
            "10.5.0.2",
            87,
        ),
        t(
            Encap::Geneve { vni: 77 },
            "192.0.2.9",
            "192.0.2.10",
            "10.6.0.1",
            "10.6.0.2",
            88,
        ),
        t(
            Encap::GtpU { teid: 0xabcd },
            "192.0.2.11",
            "192.0.2.12",
            "10.7.0.1",
            "10.7.0.2",
            89,
        ),
        t(
            Encap::IpInIp,
            "192.0.2.13",
            "192.0.2.14",
            "10.8.0.1",
            "10.8.0.2",
            90,
        ),
        t(
            Encap::IpInIp,
            "192.0.2.15",
            "192.0.2.16",
            "2001:db8:4::1",
            "2001:db8:4::2",
            91,
        ),
        t(
            Encap::IpInIp,
            "2001:db8:f::3",
            "2001:db8:f::4",
            "10.9.0.1",
            "10.9.0.2",
            92,
        ),
        t(
            Encap::IpInIp,
            "2001:db8:f::5",
            "2001:db8:f::6",
            "2001:db8:5::1",
            "2001:db8:5::2",
            93,
        ),
    ]
}

/// Writes [`tunnel_flows`] into a pcap (Ethernet, µs timestamps), the
/// tunnels one after the other, a millisecond between packets.
pub fn tunnel_capture() -> std::io::Result<Vec<u8>> {
    let mut w = PcapWriter::new(Vec::new())?;
    let mut ts = 1_600_000_000_000_000_000u64;
    for t in tunnel_flows() {
        for (seq, (from_client, inner)) in conversation(t.client, t.server).into_iter().enumerate()
        {
            let (src, dst) = if from_client {
                (t.outer_client, t.outer_server)
            } else {
                (t.outer_server, t.outer_client)
            };
            w.write_packet(ts, &t.encap.wrap(src, dst, &inner, seq as u32))?;
            ts += 1_000_000;
        }
    }
    w.flush()?;
    Ok(w.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_is_deterministic_and_complete() {
        let a = tunnel_capture().unwrap();
        assert_eq!(a, tunnel_capture().unwrap());
        let frames = tunnel_flows().len() * 12;
        assert!(a.len() > 24 + frames * 16);
        for t in tunnel_flows() {
            assert_eq!(
                conversation(t.client, t.server).len(),
                12,
                "{}",
                t.encap.name()
            );
        }
    }
}
