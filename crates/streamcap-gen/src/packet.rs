//! Packet building: IP packets via etherparse's `PacketBuilder`, link-layer
//! framing (Ethernet II with optional VLAN / QinQ tags, Linux SLL2, raw IP)
//! and IPv4 fragmentation.

use std::fmt;
use std::net::IpAddr;

use etherparse::{
    EtherType, Ethernet2Header, IpFragOffset, IpHeaders, IpNumber, Ipv4Header, Ipv6Header,
    PacketBuilder, SingleVlanHeader, TcpHeader, VlanId,
};
use serde::{Deserialize, Serialize};

use crate::pcap::LinkType;

/// TPID used for a single 802.1Q tag and for the inner tag of a QinQ pair.
pub const TPID_8021Q: u16 = 0x8100;
/// TPID used for the outer (service) tag of a QinQ pair (802.1ad).
pub const TPID_8021AD: u16 = 0x88a8;

/// VLAN tagging of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Vlan {
    /// Untagged.
    #[default]
    None,
    /// One 802.1Q tag (TPID 0x8100) with this VLAN id (0..=4095).
    Single(u16),
    /// QinQ: outer 802.1ad tag (TPID 0x88a8) then inner 802.1Q tag.
    Double {
        /// Outer (service) VLAN id.
        outer: u16,
        /// Inner (customer) VLAN id.
        inner: u16,
    },
}

impl Vlan {
    /// The VLAN ids, outermost first (empty when untagged).
    pub fn ids(&self) -> Vec<u16> {
        match *self {
            Vlan::None => vec![],
            Vlan::Single(v) => vec![v],
            Vlan::Double { outer, inner } => vec![outer, inner],
        }
    }

    /// Encodes the tags as they appear after the MAC addresses: returns the
    /// first EtherType (TPID or `inner`) and the tag bytes that follow it.
    ///
    /// # Panics
    /// Panics if a VLAN id is larger than 4095.
    fn encode(&self, inner: EtherType) -> (EtherType, Vec<u8>) {
        let tag = |id: u16, next: EtherType| {
            SingleVlanHeader {
                pcp: Default::default(),
                drop_eligible_indicator: false,
                vlan_id: VlanId::try_new(id).expect("VLAN id must be <= 4095"),
                ether_type: next,
            }
            .to_bytes()
        };
        match *self {
            Vlan::None => (inner, vec![]),
            Vlan::Single(id) => (EtherType(TPID_8021Q), tag(id, inner).to_vec()),
            Vlan::Double { outer, inner: i } => {
                let mut v = tag(outer, EtherType(TPID_8021Q)).to_vec();
                v.extend_from_slice(&tag(i, inner));
                (EtherType(TPID_8021AD), v)
            }
        }
    }
}

/// Link-layer addressing of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkSpec {
    /// Source MAC address.
    pub src_mac: [u8; 6],
    /// Destination MAC address.
    pub dst_mac: [u8; 6],
    /// VLAN tags.
    pub vlan: Vlan,
    /// Whether the capturing host sent this packet (SLL2 packet type 4,
    /// "outgoing") rather than received it (type 0, "to us").
    pub outgoing: bool,
}

/// A locally administered MAC address derived from an IP address, so that a
/// host keeps the same MAC across flows.
pub fn mac_for(ip: IpAddr) -> [u8; 6] {
    let b = match ip {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => {
            let o = a.octets();
            [o[12], o[13], o[14], o[15]]
        }
    };
    [0x02, 0x42, b[0], b[1], b[2], b[3]]
}

/// Network-layer parameters of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpSpec {
    /// Source address.
    pub src: IpAddr,
    /// Destination address (same family as `src`).
    pub dst: IpAddr,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// IPv4 identification (ignored for IPv6).
    pub ip_id: u16,
    /// IPv4 "don't fragment" flag (ignored for IPv6).
    pub dont_fragment: bool,
}

/// Transport header of a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A TCP header; length, checksum and IP protocol are filled in.
    Tcp(TcpHeader),
    /// A UDP header with these ports; length and checksum are filled in.
    Udp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
    },
}

/// Builds a complete IPv4 or IPv6 packet (IP header, transport header,
/// payload) with etherparse's `PacketBuilder`. Lengths, the IPv4 header
/// checksum and the TCP/UDP checksum are correct.
///
/// # Panics
/// Panics if `src` and `dst` are of different families or the packet would
/// be longer than IP allows.
pub fn build_ip_packet(ip: &IpSpec, transport: &Transport, payload: &[u8]) -> Vec<u8> {
    let headers = match (ip.src, ip.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = Ipv4Header::new(0, ip.ttl, IpNumber::TCP, s.octets(), d.octets())
                .expect("zero payload length is valid");
            h.identification = ip.ip_id;
            h.dont_fragment = ip.dont_fragment;
            IpHeaders::Ipv4(h, Default::default())
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => IpHeaders::Ipv6(
            Ipv6Header {
                hop_limit: ip.ttl,
                source: s.octets(),
                destination: d.octets(),
                next_header: IpNumber::TCP,
                ..Default::default()
            },
            Default::default(),
        ),
        _ => panic!("source and destination address families differ"),
    };
    let builder = PacketBuilder::ip(headers);
    let mut out = Vec::with_capacity(60 + payload.len());
    match transport {
        Transport::Tcp(h) => builder.tcp_header(h.clone()).write(&mut out, payload),
        Transport::Udp { src_port, dst_port } => {
            builder.udp(*src_port, *dst_port).write(&mut out, payload)
        }
    }
    .expect("packet fits IP limits");
    out
}

fn ether_type_of(ip_packet: &[u8]) -> EtherType {
    match ip_packet.first().map(|b| b >> 4) {
        Some(6) => EtherType::IPV6,
        _ => EtherType::IPV4,
    }
}

/// Wraps an IP packet in the link-layer header of `link_type`.
///
/// * `Ethernet`: Ethernet II header, then the VLAN tags of `link.vlan`
///   (0x8100 single tag; QinQ as 0x88a8 outer + 0x8100 inner).
/// * `Raw`: the IP packet unchanged (VLAN tags are lost).
/// * `LinuxSll2`: 20-byte SLL2 header (interface index 1, ARPHRD_ETHER,
///   packet type from `link.outgoing`, source MAC as link address); when the
///   frame is tagged, the protocol field holds the first TPID and the tag
///   bytes follow the header, as libpcap does when it re-inserts tags.
pub fn frame(link_type: LinkType, link: &LinkSpec, ip_packet: &[u8]) -> Vec<u8> {
    let inner = ether_type_of(ip_packet);
    match link_type {
        LinkType::Raw => ip_packet.to_vec(),
        LinkType::Ethernet => {
            let (first, tags) = link.vlan.encode(inner);
            let eth = Ethernet2Header {
                source: link.src_mac,
                destination: link.dst_mac,
                ether_type: first,
            };
            let mut out = Vec::with_capacity(14 + tags.len() + ip_packet.len());
            out.extend_from_slice(&eth.to_bytes());
            out.extend_from_slice(&tags);
            out.extend_from_slice(ip_packet);
            out
        }
        LinkType::LinuxSll2 => {
            let (first, tags) = link.vlan.encode(inner);
            let mut out = Vec::with_capacity(20 + tags.len() + ip_packet.len());
            out.extend_from_slice(&first.0.to_be_bytes());
            out.extend_from_slice(&[0, 0]); // reserved
            out.extend_from_slice(&1u32.to_be_bytes()); // interface index
            out.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
            out.push(if link.outgoing { 4 } else { 0 });
            out.push(6);
            out.extend_from_slice(&link.src_mac);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&tags);
            out.extend_from_slice(ip_packet);
            out
        }
    }
}

/// Builds one complete frame: [`build_ip_packet`] then [`frame`].
pub fn build_frame(
    link_type: LinkType,
    link: &LinkSpec,
    ip: &IpSpec,
    transport: &Transport,
    payload: &[u8],
) -> Vec<u8> {
    frame(link_type, link, &build_ip_packet(ip, transport, payload))
}

/// Why an IPv4 packet could not be fragmented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FragmentError {
    /// The bytes are not a well-formed IPv4 packet.
    NotIpv4(String),
    /// The payload is too short for the requested number of fragments
    /// (every fragment but the last carries a multiple of 8 bytes).
    TooFewBytes {
        /// Payload length of the packet.
        payload_len: usize,
        /// Requested number of fragments.
        pieces: usize,
    },
}

impl fmt::Display for FragmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FragmentError::NotIpv4(e) => write!(f, "not an IPv4 packet: {e}"),
            FragmentError::TooFewBytes {
                payload_len,
                pieces,
            } => write!(
                f,
                "cannot split a {payload_len}-byte payload into {pieces} fragments"
            ),
        }
    }
}

impl std::error::Error for FragmentError {}

/// Splits an IPv4 packet into exactly `pieces` fragments, returned in
/// offset order.
///
/// Guarantees: every fragment repeats the original header (options copied
/// verbatim) with the same identification, DF cleared, the correct
/// fragment offset (added to the packet's own offset if it already was a
/// fragment), MF set on all but the last fragment (the last keeps the
/// original MF), a correct total length and a recomputed header checksum.
/// Every fragment except the last carries the same payload size, a multiple
/// of 8 bytes; concatenating the payloads in offset order gives back the
/// original payload. `pieces == 1` returns the packet re-encoded unchanged
/// except for DF.
///
/// # Errors
/// [`FragmentError`] if the bytes are not IPv4 or are too short to split.
pub fn fragment_ipv4(packet: &[u8], pieces: usize) -> Result<Vec<Vec<u8>>, FragmentError> {
    let (header, _) =
        Ipv4Header::from_slice(packet).map_err(|e| FragmentError::NotIpv4(e.to_string()))?;
    let hl = header.header_len();
    let total = usize::from(header.total_len);
    if total > packet.len() || total < hl {
        return Err(FragmentError::NotIpv4("total length mismatch".into()));
    }
    let payload = &packet[hl..total];
    let too_few = FragmentError::TooFewBytes {
        payload_len: payload.len(),
        pieces,
    };
    if pieces == 0 {
        return Err(too_few);
    }
    let chunk = payload.len().div_ceil(pieces).div_ceil(8) * 8;
    if chunk == 0 || chunk * (pieces - 1) >= payload.len() {
        return Err(too_few);
    }
    let base = header.fragment_offset.value();
    let mut out = Vec::with_capacity(pieces);
    for i in 0..pieces {
        let start = i * chunk;
        let end = if i + 1 == pieces {
            payload.len()
        } else {
            start + chunk
        };
        let mut h = header.clone();
        h.dont_fragment = false;
        h.more_fragments = if i + 1 == pieces {
            header.more_fragments
        } else {
            true
        };
        h.fragment_offset = IpFragOffset::try_new(base + (start / 8) as u16)
            .map_err(|e| FragmentError::NotIpv4(e.to_string()))?;
        h.total_len = (hl + end - start) as u16;
        h.header_checksum = h.calc_header_checksum();
        let mut f = Vec::with_capacity(hl + end - start);
        f.extend_from_slice(&h.to_bytes());
        f.extend_from_slice(&payload[start..end]);
        out.push(f);
    }
    Ok(out)
}

/// Emission order of the fragments of one packet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FragmentOrder {
    /// Offset order (first fragment first).
    #[default]
    InOrder,
    /// Last fragment first, first fragment last.
    Reversed,
    /// Explicit order: `Permutation(p)` emits fragment `p[0]` first, then
    /// `p[1]`, … (`p` must be a permutation of `0..pieces`).
    Permutation(Vec<usize>),
}

impl FragmentOrder {
    /// Reorders `items` (given in offset order) for emission.
    ///
    /// # Panics
    /// Panics if a `Permutation` is not a permutation of `0..items.len()`.
    pub fn apply<T: Clone>(&self, items: Vec<T>) -> Vec<T> {
        match self {
            FragmentOrder::InOrder => items,
            FragmentOrder::Reversed => items.into_iter().rev().collect(),
            FragmentOrder::Permutation(p) => {
                let mut seen = vec![false; items.len()];
                assert_eq!(p.len(), items.len(), "fragment permutation length");
                p.iter()
                    .map(|&i| {
                        assert!(i < items.len() && !seen[i], "invalid fragment permutation");
                        seen[i] = true;
                        items[i].clone()
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{Ipv4HeaderSlice, NetSlice, SlicedPacket, TransportSlice};

    fn udp_packet(len: usize, id: u16) -> Vec<u8> {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        build_ip_packet(
            &IpSpec {
                src: "10.0.0.1".parse().unwrap(),
                dst: "10.0.0.2".parse().unwrap(),
                ttl: 64,
                ip_id: id,
                dont_fragment: true,
            },
            &Transport::Udp {
                src_port: 5000,
                dst_port: 53,
            },
            &payload,
        )
    }

    #[test]
    fn fragments_have_correct_offsets_flags_and_checksums() {
        let pkt = udp_packet(3000, 0x1234);
        let frags = fragment_ipv4(&pkt, 3).unwrap();
        assert_eq!(frags.len(), 3);
        let mut reassembled = Vec::new();
        let mut expected_off = 0usize;
        for (i, f) in frags.iter().enumerate() {
            let h = Ipv4HeaderSlice::from_slice(f).unwrap();
            assert_eq!(h.identification(), 0x1234);
            assert!(!h.dont_fragment());
            assert_eq!(h.more_fragments(), i < 2);
            assert_eq!(usize::from(h.fragments_offset().value()) * 8, expected_off);
            assert_eq!(usize::from(h.total_len()), f.len());
            assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
            let body = &f[h.slice().len()..];
            if i < 2 {
                assert_eq!(body.len() % 8, 0);
            }
            expected_off += body.len();
            reassembled.extend_from_slice(body);
            // etherparse sees a fragmented IPv4 packet
            let sp = SlicedPacket::from_ip(f).unwrap();
            match sp.net {
                Some(NetSlice::Ipv4(v4)) => assert!(v4.is_payload_fragmented()),
                _ => panic!("not ipv4"),
            }
        }
        assert_eq!(reassembled, pkt[20..]);
        // first fragment still starts with the UDP header
        assert_eq!(&frags[0][20..22], &5000u16.to_be_bytes());
        // the unfragmented packet parses as UDP with a valid header
        let sp = SlicedPacket::from_ip(&pkt).unwrap();
        assert!(matches!(sp.transport, Some(TransportSlice::Udp(_))));
    }

    #[test]
    fn fragment_errors_and_orders() {
        let pkt = udp_packet(10, 1);
        assert!(matches!(
            fragment_ipv4(&pkt, 4),
            Err(FragmentError::TooFewBytes { .. })
        ));
        assert!(fragment_ipv4(&[0x60, 0, 0], 2).is_err());
        assert_eq!(FragmentOrder::Reversed.apply(vec![1, 2, 3]), vec![3, 2, 1]);
        assert_eq!(
            FragmentOrder::Permutation(vec![2, 0, 1]).apply(vec![1, 2, 3]),
            vec![3, 1, 2]
        );
    }

    #[test]
    fn vlan_framing() {
        let ip = udp_packet(4, 1);
        let link = LinkSpec {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            vlan: Vlan::Double {
                outer: 100,
                inner: 200,
            },
            outgoing: true,
        };
        let f = frame(LinkType::Ethernet, &link, &ip);
        let sp = SlicedPacket::from_ethernet(&f).unwrap();
        let ids: Vec<u16> = sp
            .link_exts
            .iter()
            .filter_map(|e| match e {
                etherparse::LinkExtSlice::Vlan(v) => Some(v.vlan_identifier().value()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, vec![100, 200]);
        assert!(matches!(sp.transport, Some(TransportSlice::Udp(_))));
        let f = frame(LinkType::LinuxSll2, &link, &ip);
        assert_eq!(f.len(), 20 + 8 + ip.len());
        assert_eq!(&f[0..2], &TPID_8021AD.to_be_bytes());
        assert_eq!(frame(LinkType::Raw, &link, &ip), ip);
    }
}
