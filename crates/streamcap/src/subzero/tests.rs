//! The worker's maintenance of the flow-drop map (listing, timeouts,
//! listing again with a doubled timeout, taking back at FIN, RST and
//! shutdown, a full map) and exact records, against [`MemoryMap`].

use crate::config::Config;
use crate::deliver::{EndReason, FlowEnd, Handler, StreamCounters};
use crate::dispatch::Worker;
use crate::flow::Direction;
use crate::source::{FileSource, PacketSource, RawPacket};
use crate::subzero::{MemoryMap, SubzeroConfig, SubzeroStats};
use crate::time::Timestamp;
use crate::LinkType;
use std::sync::Arc;
use streamcap_gen::{Capture as Gen, Close, Direction as GenDirection, TcpConversation};

const SEC: u64 = 1_000_000_000;

/// Every flow's end: key, reason, both directions' counters and the
/// time of its last packet.
#[derive(Default)]
struct Ends(Vec<(String, EndReason, StreamCounters, StreamCounters, Timestamp)>);

impl Handler for Ends {
    type State = ();
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        let (o, r) = (f.stream(Direction::Orig), f.stream(Direction::Resp));
        self.0.push((
            format!("{:?}", f.key()),
            f.end_reason(),
            o.counters,
            r.counters,
            f.last_ts(),
        ));
    }
}

/// Runs `frames` through a worker, with the in-memory map in front of it
/// when `map` is given (the worker's clock still advances with every
/// frame, as a live worker's does with the wall clock). Returns the
/// flow ends, the statistics, and the times of the frames the worker
/// saw.
fn run(
    cfg: &Config,
    frames: &[(Timestamp, Vec<u8>)],
    map: Option<Arc<MemoryMap>>,
) -> (Ends, crate::GlobalStats, Vec<Timestamp>) {
    run_lagging(cfg, frames, map, 0)
}

/// [`run`] with `lag` frames between the map and the worker, as the
/// capture ring holds frames that passed the XDP program before the
/// worker lists their stream (in flight).
fn run_lagging(
    cfg: &Config,
    frames: &[(Timestamp, Vec<u8>)],
    map: Option<Arc<MemoryMap>>,
    lag: usize,
) -> (Ends, crate::GlobalStats, Vec<Timestamp>) {
    let mut cfg = cfg.clone();
    cfg.measure_processing_time = false;
    let first = cfg.subzero.as_ref().map_or(SEC, |s| s.timeout);
    cfg.subzero = map.clone().map(|m| SubzeroConfig {
        map: m,
        timeout: first,
    });
    let mut w = Worker::new(cfg, Ends::default());
    let mut seen = Vec::new();
    let frame = |i: usize| {
        let (ts, data) = &frames[i];
        RawPacket {
            ts: *ts,
            link: LinkType::ETHERNET,
            data,
            orig_len: data.len() as u32,
            record: 0,
            interface: 0,
        }
    };
    let mut ring = std::collections::VecDeque::new();
    for i in 0..frames.len() {
        let p = frame(i);
        if map.as_ref().is_some_and(|m| m.offer(&p)) {
            w.advance_clock(p.ts);
        } else {
            ring.push_back(i);
        }
        while ring.len() > lag {
            let Some(j) = ring.pop_front() else { break };
            let p = frame(j);
            seen.push(p.ts);
            w.process(&p);
        }
    }
    for j in ring {
        let p = frame(j);
        seen.push(p.ts);
        w.process(&p);
    }
    let stats = w.finish();
    if let Some(m) = &map {
        assert_eq!(m.len(), 0, "entries left in the map after finish");
    }
    (w.into_handler(), stats, seen)
}

/// The frames of a generated capture, with their times.
fn frames_of(pcap: Vec<u8>) -> Vec<(Timestamp, Vec<u8>)> {
    let mut src = FileSource::from_bytes("subzero", pcap).expect("pcap");
    let mut out = Vec::new();
    while let Some(p) = src.next_packet() {
        let p = p.expect("generated pcap is valid");
        out.push((p.ts, p.data.to_vec()));
    }
    out
}

/// One TCP connection from client port `port` to 10.0.0.2:80 (the
/// generator's `TcpConversation`): the handshake at `t0`, then `n`
/// messages of `len` bytes from the client, each a segment the server
/// acknowledges, then FIN from both sides (RST from the client with
/// `rst`); one packet every `gap / 2` ns, so a message every `gap`.
fn connection_from(
    port: u16,
    t0: u64,
    n: u32,
    len: usize,
    gap: u64,
    rst: bool,
) -> Vec<(Timestamp, Vec<u8>)> {
    let client = std::net::SocketAddr::from(([10, 0, 0, 1], port));
    let server = std::net::SocketAddr::from(([10, 0, 0, 2], 80));
    let mut conv = TcpConversation::new(client, server)
        .isn(1000, 5000)
        .mss(len.max(1))
        .timing(t0, gap / 2)
        .close(if rst {
            Close::Rst {
                from: GenDirection::ToServer,
            }
        } else {
            Close::Fin {
                first: GenDirection::ToServer,
            }
        });
    for _ in 0..n {
        conv = conv.send(GenDirection::ToServer, vec![b'x'; len]);
    }
    let mut g = Gen::new();
    g.add(&conv);
    frames_of(g.to_pcap_bytes())
}

/// [`connection_from`] client port 40000.
fn connection(t0: u64, n: u32, len: usize, gap: u64, rst: bool) -> Vec<(Timestamp, Vec<u8>)> {
    connection_from(40000, t0, n, len, gap, rst)
}

fn cfg(cutoff: u64, first_timeout: u64) -> Config {
    Config {
        cutoff: Some(cutoff),
        subzero: Some(SubzeroConfig {
            map: Arc::new(MemoryMap::new(0)),
            timeout: first_timeout,
        }),
        ..Config::default()
    }
}

fn ends_equal(a: &Ends, b: &Ends) {
    assert_eq!(a.0.len(), b.0.len(), "flow count");
    for (x, y) in a.0.iter().zip(&b.0) {
        assert_eq!(x, y, "flow {}", x.0);
    }
}

/// The counters the map keeps exact whatever the order in which
/// packets reach the worker (not the split of a packet that passed the
/// program after later ones were dropped between `pkts_discarded` and
/// `retransmitted`).
fn exact(c: &StreamCounters) -> [u64; 7] {
    [
        c.pkts,
        c.bytes,
        c.stream_bytes,
        c.captured,
        c.discarded,
        c.dropped,
        c.missing,
    ]
}

fn ends_equal_exact(a: &Ends, b: &Ends) {
    assert_eq!(a.0.len(), b.0.len(), "flow count");
    for (x, y) in a.0.iter().zip(&b.0) {
        let key = |e: &(String, EndReason, StreamCounters, StreamCounters, Timestamp)| {
            (e.0.clone(), e.1, exact(&e.2), exact(&e.3), e.4)
        };
        assert_eq!(key(x), key(y), "flow {}", x.0);
    }
}

#[test]
fn records_are_exact_and_fin_takes_the_entry_back() {
    let frames = connection(SEC, 200, 500, SEC / 100, false);
    let c = cfg(1024, 10 * SEC);
    let (plain, _, _) = run(&c, &frames, None);
    let map = Arc::new(MemoryMap::new(16));
    let (early, stats, seen) = run(&c, &frames, Some(map));
    ends_equal(&plain, &early);
    assert_eq!(early.0[0].1, EndReason::Fin);
    // 3 handshake, 3 data segments to pass the cutoff, every ACK of the
    // server (not listed), and the closing 3.
    assert_eq!(seen.len(), 3 + 3 + 200 + 3, "frames the worker saw");
    let s = stats.subzero;
    assert_eq!((s.installed, s.reinstalled, s.timed_out), (1, 0, 0));
    assert_eq!((s.pkts, s.bytes), (197, 197 * 540));
    assert_eq!(early.0[0].2.discarded, 200 * 500 - 1024);
    assert!(early.0[0].2.invariant_holds());
}

#[test]
fn rst_takes_the_entry_back() {
    let frames = connection(SEC, 50, 100, SEC / 100, true);
    let c = cfg(0, 10 * SEC);
    let (plain, _, _) = run(&c, &frames, None);
    let (early, stats, _) = run(&c, &frames, Some(Arc::new(MemoryMap::new(16))));
    ends_equal(&plain, &early);
    assert_eq!(early.0[0].1, EndReason::Rst);
    assert_eq!(stats.subzero.pkts, 49);
}

#[test]
fn a_timed_out_entry_is_listed_again_with_twice_the_timeout() {
    // One segment every 100 ms for 40 s, first timeout 1 s.
    let frames = connection(SEC, 400, 100, SEC / 10, false);
    let c = Config {
        tcp_timeout: 60 * SEC,
        ..cfg(0, SEC)
    };
    let (plain, _, _) = run(&c, &frames, None);
    let (early, stats, seen) = run(&c, &frames, Some(Arc::new(MemoryMap::new(16))));
    ends_equal(&plain, &early);
    let s = stats.subzero;
    // Listed at 1 s past the first segment, then for 1, 2, 4, 8 and
    // 16 s, each time taken back and listed again by the next segment.
    assert_eq!(s.installed, 1);
    assert_eq!((s.timed_out, s.reinstalled), (5, 5), "{s:?}");
    // The client's packets the worker saw (the odd ones from the fourth
    // on: one every 100 ms from 1.15 s): the first segment, one after each
    // timeout (1, 2, 4, 8 and 16 s, each + the 100 ms to the next
    // segment), then the FIN and the last ACK.
    let step = SEC / 20;
    let data: Vec<u64> = seen
        .iter()
        .map(|t| (t.0 - SEC) / step)
        .filter(|&i| i >= 3 && i % 2 == 1)
        .collect();
    let gaps: Vec<u64> = data.windows(2).map(|w| (w[1] - w[0]) / 2).collect();
    assert_eq!(
        gaps,
        [11, 21, 41, 81, 161, 85, 1],
        "tenths of a second between passes"
    );
}

#[test]
fn a_quiet_connection_whose_packets_are_dropped_is_not_idle() {
    // Inactivity timeout 2 s; a segment every second for 30 s, all
    // dropped past the cutoff for 10 s at a time.
    let frames = connection(SEC, 30, 100, SEC, false);
    let c = Config {
        tcp_timeout: 2 * SEC,
        ..cfg(0, 10 * SEC)
    };
    let (plain, _, _) = run(&c, &frames, None);
    let (early, _, _) = run(&c, &frames, Some(Arc::new(MemoryMap::new(16))));
    assert_eq!(plain.0.len(), 1);
    ends_equal(&plain, &early);
    assert_eq!(early.0[0].1, EndReason::Fin);
}

#[test]
fn a_full_map_falls_back_to_discarding_in_user_space() {
    let mut frames = connection(SEC, 100, 100, SEC / 100, false);
    // A second connection, from another port, at the same time.
    let other: Vec<_> = connection_from(40001, SEC + 50, 100, 100, SEC / 100, false);
    frames.extend(other);
    frames.sort_by_key(|f| f.0);
    let c = cfg(0, 10 * SEC);
    let (plain, _, _) = run(&c, &frames, None);
    let (early, stats, _) = run(&c, &frames, Some(Arc::new(MemoryMap::new(1))));
    ends_equal(&plain, &early);
    let s = stats.subzero;
    assert_eq!(s.installed, 1);
    assert!(s.map_full >= 1, "{s:?}");
}

#[test]
fn shutdown_takes_every_entry_back() {
    let mut frames = connection(SEC, 100, 100, SEC / 100, false);
    frames.truncate(frames.len() - 3); // no FIN: open at the end
    let c = cfg(0, 10 * SEC);
    let (plain, _, _) = run(&c, &frames, None);
    let (early, stats, _) = run(&c, &frames, Some(Arc::new(MemoryMap::new(16))));
    ends_equal(&plain, &early);
    assert_eq!(early.0[0].1, EndReason::Eof);
    assert_eq!(stats.subzero.pkts, 99);
}

/// A FIN that passed before its stream was listed, and the pure ACK
/// after it, dropped: the ACK's sequence number (the FIN's + 1) is not
/// stream data, and the FIN still closes the stream.
#[test]
fn an_ack_after_a_fin_in_flight_does_not_move_the_stream() {
    let frames = connection(SEC, 3, 600, SEC / 100, false);
    let c = cfg(1024, 10 * SEC);
    let (plain, _, _) = run(&c, &frames, None);
    for lag in 1..6 {
        let map = Arc::new(MemoryMap::new(16));
        let (early, _, _) = run_lagging(&c, &frames, Some(map), lag);
        ends_equal(&plain, &early);
        assert_eq!(early.0[0].1, EndReason::Fin, "lag {lag}");
    }
}

/// On generated traffic (many connections, UDP, IPv6, VLAN tags, IP
/// fragments, no loss or reordering), every record is the same with the in-memory map in
/// front of the worker as without, for several cutoffs; and with frames
/// in flight between the map and the worker, every counter the map
/// keeps exact.
#[test]
fn generated_traffic_gives_the_same_records() {
    let pcap = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
        seed: 29,
        packets: 20_000,
        concurrency: 100,
        ipv6: 0.2,
        vlan: 0.2,
        // Fragments pass the program: they reach the worker after
        // packets it dropped.
        fragment: 0.05,
        ..streamcap_gen::CampusConfig::default()
    })
    .to_bytes()
    .0;
    let frames = frames_of(pcap);
    let mut total = SubzeroStats::default();
    for cutoff in [0, 1024, 10 * 1024] {
        let c = cfg(cutoff, 10 * SEC);
        let (plain, _, _) = run(&c, &frames, None);
        for lag in [0, 7] {
            let map = Some(Arc::new(MemoryMap::new(1 << 16)));
            let (early, stats, _) = run_lagging(&c, &frames, map, lag);
            if lag == 0 {
                ends_equal(&plain, &early);
            } else {
                ends_equal_exact(&plain, &early);
            }
            total.add(&stats.subzero);
        }
    }
    assert!(total.pkts > 5_000, "{total:?}");
}
