//! Shared helpers for the engine's integration tests: hand-built packets and a
//! handler that records everything it is told.
#![allow(dead_code)]

use etherparse::PacketBuilder;
use std::collections::BTreeMap;
use std::net::IpAddr;
use streamcap::deliver::{Chunk, DataReason, FlowEnd, Gap, Handler, Stream, StreamInfo};
use streamcap::flow::Direction;
use streamcap::{LinkType, RawPacket, Timestamp};

#[cfg(target_os = "linux")]
pub mod netns;
mod shared;
#[allow(unused_imports)] // (not every test binary uses all three)
pub use shared::{captures, corpus_dir, skip};

/// Asserts that two runs' merged statistics count the same traffic: packets,
/// bytes, decoding, flows, streams and stream totals (`ctx` names the run).
pub fn same_traffic_stats(a: &streamcap::GlobalStats, b: &streamcap::GlobalStats, ctx: &str) {
    assert_eq!(a.packets, b.packets, "{ctx}: packets");
    assert_eq!(a.wire_bytes, b.wire_bytes, "{ctx}: wire bytes");
    assert_eq!(a.ip_packets, b.ip_packets, "{ctx}: IP packets");
    assert_eq!(a.truncated_packets, b.truncated_packets, "{ctx}: truncated");
    assert_eq!(a.decode_errors, b.decode_errors, "{ctx}: decode errors");
    assert_eq!(a.fragments, b.fragments, "{ctx}: fragments");
    assert_eq!(a.proto_packets, b.proto_packets, "{ctx}: per protocol");
    assert_eq!(a.flows_created, b.flows_created, "{ctx}: flows created");
    assert_eq!(a.flows_ended, b.flows_ended, "{ctx}: flows ended");
    assert_eq!(a.streams, b.streams, "{ctx}: streams");
    assert_eq!(a.totals, b.totals, "{ctx}: stream totals");
}

pub const SYN: u8 = 0x02;
pub const ACK: u8 = 0x10;
pub const FIN: u8 = 0x01;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;

/// An IPv4 or IPv6 endpoint.
#[derive(Clone, Copy, Debug)]
pub struct Ep {
    pub ip: IpAddr,
    pub port: u16,
}

pub fn ep(s: &str, port: u16) -> Ep {
    Ep {
        ip: s.parse().unwrap(),
        port,
    }
}

/// Builds one Ethernet frame carrying a TCP segment.
pub fn tcp(src: Ep, dst: Ep, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    tcp_vlan(src, dst, seq, ack, flags, payload, None)
}

pub fn tcp_vlan(
    src: Ep,
    dst: Ep,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
    vlan: Option<u16>,
) -> Vec<u8> {
    let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut out = Vec::new();
    macro_rules! finish {
        ($ip:expr) => {{
            let mut b = $ip.tcp(src.port, dst.port, seq, 65535);
            if flags & SYN != 0 {
                b = b.syn();
            }
            if flags & ACK != 0 {
                b = b.ack(ack);
            }
            if flags & FIN != 0 {
                b = b.fin();
            }
            if flags & RST != 0 {
                b = b.rst();
            }
            if flags & PSH != 0 {
                b = b.psh();
            }
            b.write(&mut out, payload).unwrap();
        }};
    }
    match (src.ip, dst.ip, vlan) {
        (IpAddr::V4(s), IpAddr::V4(d), None) => finish!(eth.ipv4(s.octets(), d.octets(), 64)),
        (IpAddr::V4(s), IpAddr::V4(d), Some(v)) => {
            finish!(eth
                .single_vlan(etherparse::VlanId::try_new(v).unwrap())
                .ipv4(s.octets(), d.octets(), 64))
        }
        (IpAddr::V6(s), IpAddr::V6(d), None) => finish!(eth.ipv6(s.octets(), d.octets(), 64)),
        _ => panic!("unsupported combination"),
    }
    out
}

pub fn udp(src: Ep, dst: Ep, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip, dst.ip) else {
        panic!()
    };
    PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4(s.octets(), d.octets(), 64)
        .udp(src.port, dst.port)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// A scripted TCP conversation: tracks sequence numbers so tests read like a story.
pub struct Conv {
    pub c: Ep,
    pub s: Ep,
    pub cseq: u32,
    pub sseq: u32,
    pub frames: Vec<Vec<u8>>,
}

impl Conv {
    pub fn new(c: Ep, s: Ep, cisn: u32, sisn: u32) -> Conv {
        Conv {
            c,
            s,
            cseq: cisn,
            sseq: sisn,
            frames: Vec::new(),
        }
    }
    pub fn handshake(&mut self) -> &mut Self {
        self.frames
            .push(tcp(self.c, self.s, self.cseq, 0, SYN, b""));
        self.frames.push(tcp(
            self.s,
            self.c,
            self.sseq,
            self.cseq.wrapping_add(1),
            SYN | ACK,
            b"",
        ));
        self.cseq = self.cseq.wrapping_add(1);
        self.sseq = self.sseq.wrapping_add(1);
        self.frames
            .push(tcp(self.c, self.s, self.cseq, self.sseq, ACK, b""));
        self
    }
    /// Client sends `data` in segments of `mss`.
    pub fn client(&mut self, data: &[u8], mss: usize) -> &mut Self {
        for part in data.chunks(mss.max(1)) {
            self.frames
                .push(tcp(self.c, self.s, self.cseq, self.sseq, ACK | PSH, part));
            self.cseq = self.cseq.wrapping_add(part.len() as u32);
        }
        self
    }
    pub fn server(&mut self, data: &[u8], mss: usize) -> &mut Self {
        for part in data.chunks(mss.max(1)) {
            self.frames
                .push(tcp(self.s, self.c, self.sseq, self.cseq, ACK | PSH, part));
            self.sseq = self.sseq.wrapping_add(part.len() as u32);
        }
        self
    }
    pub fn fin(&mut self) -> &mut Self {
        self.frames
            .push(tcp(self.c, self.s, self.cseq, self.sseq, FIN | ACK, b""));
        self.cseq = self.cseq.wrapping_add(1);
        self.frames
            .push(tcp(self.s, self.c, self.sseq, self.cseq, FIN | ACK, b""));
        self.sseq = self.sseq.wrapping_add(1);
        self.frames
            .push(tcp(self.c, self.s, self.cseq, self.sseq, ACK, b""));
        self
    }
}

/// Runs Ethernet `frames` (one millisecond apart from second 1000) through a
/// worker with `cfg` and a [`Recorder`], ends the input, and checks the global
/// accounting invariant.
pub fn run_worker(
    cfg: streamcap::Config,
    frames: &[Vec<u8>],
) -> (Recorder, streamcap::GlobalStats) {
    let policy = cfg.policy;
    let mut w = streamcap::Worker::new(cfg, Recorder::default());
    feed(&mut w, frames, 1_000);
    let stats = w.finish();
    assert!(
        stats.totals.invariant_holds(),
        "{policy}: global invariant {:?}",
        stats.totals
    );
    (w.into_handler(), stats)
}

/// Feeds frames to a worker, one millisecond apart starting at `t0` seconds.
pub fn feed<H: Handler>(w: &mut streamcap::Worker<H>, frames: &[Vec<u8>], t0: u64) {
    for (i, f) in frames.iter().enumerate() {
        let p = RawPacket {
            ts: Timestamp::from_secs_nanos(t0, i as u64 * 1_000_000),
            link: LinkType::ETHERNET,
            data: f,
            orig_len: f.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        };
        w.process(&p);
    }
}

/// Everything one stream produced.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub created: bool,
    /// New bytes in order, with `gaps` noted separately.
    pub data: Vec<u8>,
    pub gaps: Vec<Gap>,
    pub reasons: Vec<DataReason>,
    pub chunk_sizes: Vec<usize>,
    pub chunk_offsets: Vec<u64>,
    pub full_chunks: Vec<Vec<u8>>,
    pub packets_seen: usize,
    pub closed: Option<StreamInfo>,
}

/// A closure run on every data event.
pub type DataHook = Box<dyn FnMut(&mut Stream<'_, ()>, &Chunk<'_>)>;

/// A handler that records every event, keyed by (connection id, direction).
#[derive(Default)]
pub struct Recorder {
    pub streams: BTreeMap<(u64, &'static str), Recorded>,
    pub flows: Vec<(u64, String, String, StreamInfo, StreamInfo)>,
    pub order: Vec<String>,
    /// Optional hook run on every data event (tests steer streams with it).
    pub on_data_hook: Option<DataHook>,
}

fn id<S>(s: &Stream<'_, S>) -> (u64, &'static str) {
    (s.info().conn_id, s.direction().name())
}

impl Handler for Recorder {
    type State = ();
    fn on_create(&mut self, s: &mut Stream<'_, ()>) {
        self.order.push(format!(
            "create {} {}",
            s.info().conn_id,
            s.direction().name()
        ));
        self.streams.entry(id(s)).or_default().created = true;
    }
    fn on_data(&mut self, s: &mut Stream<'_, ()>, c: &Chunk<'_>) {
        let r = self.streams.entry(id(s)).or_default();
        r.data.extend_from_slice(c.new_data());
        if let Some(g) = c.gap {
            r.gaps.push(g);
        }
        r.reasons.push(c.reason);
        r.chunk_sizes.push(c.data.len());
        r.chunk_offsets.push(c.offset);
        r.full_chunks.push(c.data.to_vec());
        r.packets_seen += c.packets.len();
        if let Some(h) = self.on_data_hook.as_mut() {
            h(s, c);
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        self.order.push(format!(
            "close {} {}",
            s.info().conn_id,
            s.direction().name()
        ));
        let info = s.info().clone();
        assert!(
            info.counters.invariant_holds(),
            "invariant broken: {:?}",
            info.counters
        );
        self.streams.entry(id(s)).or_default().closed = Some(info);
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        let o = f.stream(Direction::Orig).clone();
        let r = f.stream(Direction::Resp).clone();
        self.order.push(format!("flow {}", o.conn_id));
        self.flows.push((
            o.conn_id,
            f.end_reason().name().to_string(),
            f.history().to_string(),
            o,
            r,
        ));
    }
}

impl Recorder {
    pub fn get(&self, conn: u64, dir: &str) -> &Recorded {
        let k = self
            .streams
            .keys()
            .find(|k| k.0 == conn && k.1 == dir)
            .copied();
        k.and_then(|k| self.streams.get(&k))
            .unwrap_or_else(|| panic!("no stream {conn} {dir}"))
    }
}

/// Deterministic pseudo-random bytes.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A generated campus trace with every impairment the generator has
/// (reordering, duplicates, loss, conflicting retransmissions, IPv4
/// fragments, IPv6, VLAN tags), as pcap bytes.
pub fn impaired_campus(seed: u64, packets: u64, concurrency: usize) -> Vec<u8> {
    use streamcap_gen::campus::{Campus, CampusConfig};
    let cfg = CampusConfig {
        seed,
        packets,
        concurrency,
        reorder: 0.05,
        duplicate: 0.05,
        loss: 0.02,
        conflict: 0.02,
        fragment: 0.03,
        ipv6: 0.1,
        vlan: 0.05,
        ..CampusConfig::default()
    };
    Campus::new(cfg).to_bytes().0
}
