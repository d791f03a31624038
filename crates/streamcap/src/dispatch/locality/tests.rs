//! The worker's locality buffering: order of processing, when batches are
//! processed (full, before fragments, at the end, after the timeout), and
//! timers per batch.

use super::*;
use crate::deliver::Callbacks;
use crate::source::pace::Clock;
use crate::source::{FileSource, PacketSource};
use crate::Config;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// A clock the test sets by hand.
#[derive(Clone, Default)]
struct HandClock(Arc<AtomicU64>);

impl HandClock {
    fn set(&self, ns: u64) {
        self.0.store(ns, Ordering::Relaxed);
    }
}

impl Clock for HandClock {
    fn now_ns(&mut self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn wait_until(&mut self, t: u64, _stop: Option<&AtomicBool>) -> Option<u64> {
        self.0.fetch_max(t, Ordering::Relaxed);
        Some(self.now_ns())
    }
}

/// An Ethernet frame of IPv4 UDP from 10.0.0.1:`sport` to
/// 10.0.0.2:`dport` carrying `payload`.
fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(sport, dport)
        .write(&mut f, payload)
        .expect("frame");
    f
}

/// [`udp`]'s datagram sent as two IPv4 fragments (the first with the UDP
/// header and 8 bytes of `payload`), as Ethernet frames.
fn udp_fragments(sport: u16, dport: u16, payload: &[u8]) -> [Vec<u8>; 2] {
    use etherparse::{IpFragOffset, IpNumber, Ipv4Header};
    let whole = udp(sport, dport, payload);
    let datagram = &whole[14 + 20..];
    let (a, b) = datagram.split_at(16);
    let frame = |part: &[u8], offset: u16, more: bool| {
        let mut ip = Ipv4Header::new(
            part.len() as u16,
            64,
            IpNumber::UDP,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
        )
        .expect("header");
        ip.identification = 77;
        ip.more_fragments = more;
        ip.fragment_offset = IpFragOffset::try_new(offset).expect("offset");
        ip.header_checksum = ip.calc_header_checksum();
        let mut f = whole[..14].to_vec();
        f.extend_from_slice(&ip.to_bytes());
        f.extend_from_slice(part);
        f
    };
    [frame(a, 0, true), frame(b, 2, false)]
}

fn packet(ts: u64, record: u64, data: &[u8]) -> RawPacket<'_> {
    RawPacket {
        ts: Timestamp(ts),
        link: LinkType::ETHERNET,
        data,
        orig_len: data.len() as u32,
        record,
        interface: 0,
    }
}

fn config(batch: usize) -> Config {
    Config {
        locality: LocalityConfig {
            batch,
            ..LocalityConfig::default()
        },
        ..Config::default()
    }
}

type Log = Rc<RefCell<Vec<String>>>;

/// Callbacks that log each stream's creation (`create SPORT>DPORT`) and,
/// at its end, its ports, counters, status, times and bytes (collected in
/// its state).
fn logger() -> (Callbacks<Vec<u8>>, Log) {
    let log: Log = Rc::default();
    let (a, b) = (log.clone(), log.clone());
    let cb = Callbacks::<Vec<u8>>::new()
        .on_create(move |s| {
            let line = format!("create {}>{}", s.src().1, s.dst().1);
            a.borrow_mut().push(line);
        })
        .on_data(|s, c| s.state().extend_from_slice(c.new_data()))
        .on_close(move |s| {
            let bytes = String::from_utf8_lossy(&s.state().clone()).into_owned();
            let i = s.info();
            let line = format!(
                "close {}>{} {:?} {:?} {:?} {:?}..{:?} {:?}",
                s.src().1,
                s.dst().1,
                i.counters,
                i.status,
                i.errors,
                i.start,
                i.end,
                bytes
            );
            b.borrow_mut().push(line);
        });
    (cb, log)
}

/// The log of `frames` (timestamp, bytes) fed one at a time to a worker
/// with `cfg`, and the worker's clock after each packet.
fn run(cfg: Config, frames: &[(u64, Vec<u8>)]) -> (Vec<String>, Vec<Timestamp>) {
    let (cb, log) = logger();
    let mut w = Worker::new(cfg, cb);
    let mut clock = Vec::new();
    for (i, (ts, f)) in frames.iter().enumerate() {
        w.process(&packet(*ts, i as u64 + 1, f));
        clock.push(w.now());
    }
    w.finish();
    let out = log.borrow().clone();
    (out, clock)
}

/// `lines` sorted (records of different flows may come in another order).
fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

/// A batch is processed when full, grouped by the lower port, ascending,
/// each flow's packets in their order; what comes out is what comes out
/// without batching, but for the order of flows.
#[test]
fn a_full_batch_is_processed_by_lower_port() {
    let frames = [
        (SEC, udp(5000, 6000, b"a1")),
        (SEC + 1, udp(40000, 53, b"b1")),
        (SEC + 2, udp(40001, 80, b"c1")),
        (SEC + 3, udp(53, 40000, b"b2")),
        (SEC + 4, udp(5000, 6000, b"a2")),
        (SEC + 5, udp(40000, 53, b"b3")),
    ];
    let (cb, log) = logger();
    let mut w = Worker::new(config(4), cb);
    for (i, (ts, f)) in frames[..3].iter().enumerate() {
        w.process(&packet(*ts, i as u64 + 1, f));
    }
    assert_eq!(w.locality_pending(), 3);
    assert_eq!(w.stats().packets, 0, "gathered, not processed");
    assert!(log.borrow().is_empty());
    w.process(&packet(frames[3].0, 4, &frames[3].1));
    assert_eq!(w.locality_pending(), 0);
    assert_eq!(w.stats().packets, 4);
    // Port 53 (both directions), then 80, then 5000.
    assert_eq!(
        *log.borrow(),
        [
            "create 40000>53",
            "create 53>40000",
            "create 40001>80",
            "create 5000>6000"
        ]
    );
    for (i, (ts, f)) in frames[4..].iter().enumerate() {
        w.process(&packet(*ts, i as u64 + 5, f));
    }
    w.finish();
    let batched = log.borrow().clone();
    let (plain, _) = run(Config::default(), &frames);
    assert_eq!(plain[0], "create 5000>6000");
    let closes = |l: &[String]| {
        sorted(
            l.iter()
                .filter(|s| s.starts_with("close"))
                .cloned()
                .collect(),
        )
    };
    assert_eq!(closes(&batched), closes(&plain));
    let b = closes(&batched);
    assert!(
        b.iter()
            .any(|l| l.starts_with("close 40000>53") && l.ends_with("\"b1b3\"")),
        "{b:?}"
    );
    // One per batch or per packet, the same records.
    for n in [1, 2, 3, 5, 100] {
        let (b, _) = run(config(n), &frames);
        assert_eq!(sorted(b), sorted(plain.clone()), "batch {n}");
    }
}

/// A partial batch is processed at the end of the input.
#[test]
fn a_partial_batch_is_processed_at_the_end() {
    let (cb, log) = logger();
    let mut w = Worker::new(config(1000), cb);
    for (i, port) in [443u16, 80, 22].iter().enumerate() {
        w.process_batch(&[packet(
            SEC + i as u64,
            i as u64 + 1,
            &udp(40000, *port, b"x"),
        )]);
    }
    assert_eq!((w.locality_pending(), w.stats().packets), (3, 0));
    let stats = w.finish();
    assert_eq!(stats.packets, 3);
    assert_eq!(w.locality_pending(), 0);
    let creates: Vec<String> = log
        .borrow()
        .iter()
        .filter(|l| l.starts_with("create"))
        .cloned()
        .collect();
    assert_eq!(
        creates,
        ["create 40000>22", "create 40000>80", "create 40000>443"]
    );
}

/// On a quiet link a partial batch waits its timeout, no longer; while
/// it waits the clock stays behind its packets.
#[test]
fn a_partial_batch_is_processed_after_its_timeout() {
    let hand = HandClock::default();
    let mut cfg = config(1000);
    cfg.locality.timeout = Duration::from_millis(100);
    let (cb, _log) = logger();
    let mut w = Worker::new(cfg, cb).with_locality_clock(Box::new(hand.clone()));
    assert_eq!(w.locality_wait(), None);
    hand.set(5 * SEC);
    let (a, b) = (udp(40000, 80, b"x"), udp(40000, 443, b"y"));
    w.process(&packet(10 * SEC, 1, &a));
    hand.set(5 * SEC + 30 * MS);
    w.process(&packet(10 * SEC + 30 * MS, 2, &b));
    assert_eq!(w.locality_wait(), Some(Duration::from_millis(70)));
    // Idle ticks before the timeout: nothing processed, the clock stays.
    hand.set(5 * SEC + 99 * MS);
    w.advance_clock(Timestamp(20 * SEC));
    assert_eq!((w.locality_pending(), w.stats().packets), (2, 0));
    assert_eq!(w.now(), Timestamp::ZERO);
    // At the timeout: processed, then the clock moves on.
    hand.set(5 * SEC + 100 * MS);
    assert_eq!(w.locality_wait(), Some(Duration::ZERO));
    w.advance_clock(Timestamp(20 * SEC));
    assert_eq!((w.locality_pending(), w.stats().packets), (0, 2));
    assert_eq!(w.now(), Timestamp(20 * SEC));
    assert_eq!(w.locality_wait(), None);
}

/// An IP fragment is processed in its place: the packets before it
/// first, those after it after, so a fragmented datagram stays in its
/// place in its flow.
#[test]
fn fragments_are_barriers() {
    let [f1, f2] = udp_fragments(5000, 6000, b"0123456789abcdef");
    let frames = [
        (SEC, udp(5000, 6000, b"<")),
        (SEC + 1, udp(40000, 53, b"b1")),
        (SEC + 2, f1),
        (SEC + 3, udp(40001, 80, b"c1")),
        (SEC + 4, f2),
        (SEC + 5, udp(5000, 6000, b">")),
        (SEC + 6, udp(40000, 53, b"b2")),
    ];
    let (cb, _log) = logger();
    let mut w = Worker::new(config(100), cb);
    for (i, (ts, f)) in frames[..3].iter().enumerate() {
        w.process(&packet(*ts, i as u64 + 1, f));
    }
    assert_eq!((w.locality_pending(), w.stats().packets), (0, 3));
    w.finish();
    let (plain, _) = run(Config::default(), &frames);
    let (batched, _) = run(config(100), &frames);
    assert_eq!(sorted(batched.clone()), sorted(plain));
    let a = batched
        .iter()
        .find(|l| l.starts_with("close 5000>6000"))
        .expect("flow a");
    assert!(a.ends_with("\"<0123456789abcdef>\""), "{a}");
}

/// No flow times out while a packet of it waits in the batch: timers fire
/// before and after a batch, not inside it, and the clock never goes back.
#[test]
fn no_flow_times_out_while_a_packet_of_it_waits() {
    let mut cfg = config(2);
    cfg.udp_timeout = 10 * SEC;
    let frames = [
        (0, udp(40000, 443, b"a1")),
        (SEC / 10, udp(40001, 7000, b"x")),
        // Port 80 comes first in this batch, at 10.5 s: past the flow
        // of port 443's deadline if it counted from 0 s.
        (9 * SEC + SEC / 2, udp(40000, 443, b"a2")),
        (10 * SEC + SEC / 2, udp(40002, 80, b"b")),
        (30 * SEC, udp(40003, 22, b"c")),
        (30 * SEC + 1, udp(40004, 21, b"d")),
    ];
    let mut unbatched = cfg.clone();
    unbatched.locality.batch = 0;
    let (plain, _) = run(unbatched, &frames);
    let (batched, clock) = run(cfg, &frames);
    let ones = |l: &[String]| l.iter().filter(|s| s.contains("443")).count();
    // One flow of port 443, both ways: created once and closed once.
    assert_eq!(ones(&plain), 2);
    assert_eq!(sorted(batched.clone()), sorted(plain));
    assert!(
        batched.iter().any(|l| l.contains("\"a1a2\"")),
        "{batched:?}"
    );
    assert!(clock.windows(2).all(|w| w[0] <= w[1]), "{clock:?}");
    // Batched, port 80's packet is processed before port 443's, yet the
    // flow of port 443 was not ended at 10.5 s (it would be two flows).
    let order: Vec<&String> = batched.iter().filter(|l| l.starts_with("create")).collect();
    assert_eq!(order[2], "create 40002>80");
}

/// The sample capture gives the same streams, bytes and records with any
/// batch size, in one worker and in two.
#[test]
fn the_sample_gives_the_same_streams_with_any_batch() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
    let bytes = std::fs::read(path).expect("samples/sample.pcap");
    let once = |batch: usize| {
        let mut src = FileSource::from_bytes(path, bytes.clone()).expect("a pcap");
        let (cb, log) = logger();
        let mut w = Worker::new(config(batch), cb);
        while let Some(Ok(p)) = src.next_packet() {
            w.process(&p);
        }
        let stats = w.finish();
        let out = sorted(log.borrow().clone());
        (out, stats.packets, stats.totals)
    };
    let plain = once(0);
    assert!(plain.0.len() > 60, "{}", plain.0.len());
    for n in [1, 7, 100, 8000] {
        assert_eq!(once(n), plain, "batch {n}");
    }
    // Two workers sharing the file, each with its own batches.
    let two = |batch: usize| {
        let cap = crate::Capture::builder().locality_batch(batch).build();
        let par = crate::dispatch::workers::Parallel::workers(2);
        let r = cap
            .run_file_parallel(path, &par, |_| (Lines::default(), ()))
            .expect("runs");
        let mut lines: Vec<String> = r.workers.into_iter().flat_map(|w| w.handler.0).collect();
        lines.sort();
        (lines, r.stats.packets)
    };
    let want = two(0);
    assert_eq!(want.1, plain.1);
    for n in [1, 100, 8000] {
        assert_eq!(two(n), want, "two workers, batch {n}");
    }
}

/// A handler that can go to a worker thread: one line per closed stream.
#[derive(Default)]
struct Lines(Vec<String>);

impl Handler for Lines {
    type State = ();
    fn on_close(&mut self, s: &mut crate::Stream<'_, ()>) {
        let i = s.info();
        self.0.push(format!(
            "{:?} {:?} {:?} {:?} {:?}",
            s.src(),
            s.dst(),
            i.counters,
            i.status,
            i.errors
        ));
    }
}

/// Without a batch the worker has no locality stage.
#[test]
fn batch_0_is_off() {
    let w = Worker::new(Config::default(), Callbacks::<()>::new());
    assert!(w.locality.is_none());
    assert!(LocalityStage::new(&LocalityConfig::default()).is_none());
    let big = LocalityConfig {
        batch: usize::MAX,
        ..LocalityConfig::default()
    };
    assert_eq!(
        LocalityStage::new(&big).map(|s| s.limit),
        Some(MAX_LOCALITY_BATCH)
    );
}

/// A batch is processed once its bytes reach the limit, whatever its
/// packet count.
#[test]
fn a_batch_is_processed_at_its_byte_limit() {
    let mut cfg = config(1000);
    let frame = udp(40000, 80, &[7; 1000]);
    cfg.locality.max_bytes = 3 * (frame.len() + LOCALITY_BOOKKEEPING);
    let (cb, _log) = logger();
    let mut w = Worker::new(cfg, cb);
    for i in 0..2 {
        w.process(&packet(SEC + i, i + 1, &frame));
    }
    assert_eq!(w.locality_pending(), 2);
    w.process(&packet(SEC + 2, 3, &frame));
    assert_eq!((w.locality_pending(), w.stats().packets), (0, 3));
}
