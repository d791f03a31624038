//! Test helpers: a tiny classic-pcap reader and packet attribution.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use streamcap_gen::etherparse::{NetSlice, SlicedPacket, TransportSlice};
use streamcap_gen::{Direction, FlowTruth, Protocol};

/// Says why a test does not run. Written straight to the process's stderr:
/// the test harness captures `eprintln!` (shown only for failing tests), so
/// a skipped test would otherwise pass without a word.
pub fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}

/// One pcap record.
pub struct Record {
    pub ts_sec: u32,
    pub ts_frac: u32,
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// Parses a little-endian classic pcap: (magic, linktype, records).
pub fn read_pcap(b: &[u8]) -> (u32, u32, Vec<Record>) {
    let u32le = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let magic = u32le(0);
    assert!(magic == 0xa1b2c3d4 || magic == 0xa1b23c4d, "bad magic");
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), 2);
    assert_eq!(u16::from_le_bytes([b[6], b[7]]), 4);
    let linktype = u32le(20);
    let mut at = 24;
    let mut recs = Vec::new();
    while at < b.len() {
        let caplen = u32le(at + 8) as usize;
        recs.push(Record {
            ts_sec: u32le(at),
            ts_frac: u32le(at + 4),
            orig_len: u32le(at + 12),
            data: b[at + 16..at + 16 + caplen].to_vec(),
        });
        at += 16 + caplen;
    }
    assert_eq!(at, b.len(), "trailing bytes");
    (magic, linktype, recs)
}

/// Network/transport view of one IP packet.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    pub ip_len: u64,
    pub ip_id: Option<u16>,
    pub frag_offset: u16,
    pub more_fragments: bool,
    pub ports: Option<(u16, u16)>,
    pub tcp: Option<(u32, u32, bool, bool, bool, bool)>, // seq, ack, syn, fin, rst, ackflag
    pub payload: Vec<u8>,
    pub vlans: Vec<u16>,
}

pub fn parse(sp: SlicedPacket<'_>) -> Parsed {
    let vlans = sp
        .link_exts
        .iter()
        .filter_map(|e| match e {
            streamcap_gen::etherparse::LinkExtSlice::Vlan(v) => Some(v.vlan_identifier().value()),
            _ => None,
        })
        .collect();
    let (src, dst, proto, ip_len, ip_id, frag_offset, more_fragments) = match &sp.net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header();
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                h.protocol().0,
                u64::from(h.total_len()),
                Some(h.identification()),
                h.fragments_offset().value(),
                h.more_fragments(),
            )
        }
        Some(NetSlice::Ipv6(v6)) => {
            let h = v6.header();
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                h.next_header().0,
                40 + u64::from(h.payload_length()),
                None,
                0,
                false,
            )
        }
        _ => panic!("no IP layer"),
    };
    let (ports, tcp, payload) = match &sp.transport {
        Some(TransportSlice::Tcp(t)) => (
            Some((t.source_port(), t.destination_port())),
            Some((
                t.sequence_number(),
                t.acknowledgment_number(),
                t.syn(),
                t.fin(),
                t.rst(),
                t.ack(),
            )),
            t.payload().to_vec(),
        ),
        Some(TransportSlice::Udp(u)) => (
            Some((u.source_port(), u.destination_port())),
            None,
            u.payload().to_vec(),
        ),
        _ => (None, None, Vec::new()),
    };
    // etherparse does not parse the transport header of a first fragment;
    // read the ports from the raw IP payload.
    let ports = match (&sp.net, ports) {
        (Some(NetSlice::Ipv4(v4)), None) if frag_offset == 0 => {
            let b = v4.payload().payload;
            (b.len() >= 4).then(|| {
                (
                    u16::from_be_bytes([b[0], b[1]]),
                    u16::from_be_bytes([b[2], b[3]]),
                )
            })
        }
        (_, p) => p,
    };
    Parsed {
        src,
        dst,
        proto,
        ip_len,
        ip_id,
        frag_offset,
        more_fragments,
        ports,
        tcp,
        payload,
        vlans,
    }
}

pub fn parse_ip(ip: &[u8]) -> Parsed {
    parse(SlicedPacket::from_ip(ip).expect("valid IP packet"))
}

pub fn parse_eth(frame: &[u8]) -> Parsed {
    parse(SlicedPacket::from_ethernet(frame).expect("valid Ethernet frame"))
}

/// Attributes every record of an Ethernet pcap to (flow id, direction).
/// Non-first IPv4 fragments are matched through (src, dst, ip id) of the
/// fragment carrying the transport header.
pub fn attribute(recs: &[Record], truth: &[FlowTruth]) -> Vec<(usize, Direction, Parsed)> {
    let parsed: Vec<Parsed> = recs.iter().map(|r| parse_eth(&r.data)).collect();
    let mut by_id: HashMap<(IpAddr, IpAddr, u16), (u16, u16)> = HashMap::new();
    for p in &parsed {
        if let (Some(id), Some(ports)) = (p.ip_id, p.ports) {
            by_id.insert((p.src, p.dst, id), ports);
        }
    }
    let mut flows: HashMap<(u8, SocketAddr, SocketAddr), (usize, Direction)> = HashMap::new();
    for t in truth {
        let proto = match t.proto {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
        };
        flows.insert((proto, t.client, t.server), (t.id, Direction::ToServer));
        flows.insert((proto, t.server, t.client), (t.id, Direction::ToClient));
    }
    parsed
        .into_iter()
        .map(|p| {
            let (sp, dp) = p
                .ports
                .or_else(|| by_id.get(&(p.src, p.dst, p.ip_id.unwrap())).copied())
                .expect("ports known");
            let key = (
                p.proto,
                SocketAddr::new(p.src, sp),
                SocketAddr::new(p.dst, dp),
            );
            let (id, dir) = *flows.get(&key).expect("packet belongs to a flow");
            (id, dir, p)
        })
        .collect()
}
