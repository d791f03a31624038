//! Prioritized packet loss (Scap §II-B) on hand-built traffic whose memory
//! use is known packet by packet: a "hog" stream keeps every chunk, so the
//! budget fills by exactly its payload, and the watermarks decide the fate
//! of each later packet.

mod support;

use streamcap::deliver::{Chunk, Handler, Stream, StreamInfo};
use streamcap::flow::Direction;
use streamcap::{Config, GlobalStats, Worker};
use support::*;

/// Port whose streams keep every chunk (memory grows by their payload).
const HOG: u16 = 9999;
/// Port whose streams get priority 1 from `on_create`.
const HIGH: u16 = 22;

#[derive(Default)]
struct Steer {
    closed: Vec<(u16, Direction, StreamInfo)>,
}

fn port_of(s: &Stream<'_, ()>) -> u16 {
    match s.direction() {
        Direction::Orig => s.dst().1,
        Direction::Resp => s.src().1,
    }
}

impl Handler for Steer {
    type State = ();
    fn on_create(&mut self, s: &mut Stream<'_, ()>) {
        if port_of(s) == HIGH {
            s.set_priority(1);
        }
    }
    fn on_data(&mut self, s: &mut Stream<'_, ()>, _c: &Chunk<'_>) {
        if port_of(s) == HOG {
            s.keep_chunk();
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        let info = s.info().clone();
        assert!(info.counters.invariant_holds(), "{:?}", info.counters);
        self.closed.push((port_of(s), s.direction(), info));
    }
}

impl Steer {
    fn stream(&self, port: u16, dir: Direction) -> &StreamInfo {
        self.closed
            .iter()
            .find(|(p, d, _)| *p == port && *d == dir)
            .map(|(_, _, i)| i)
            .unwrap_or_else(|| panic!("no stream on port {port} {dir:?}"))
    }
}

/// 20,000 bytes of memory, base threshold 50 %, 1,000-byte chunks: with
/// priorities 0 and 1 in use the watermarks are 10,000, 15,000 and 20,000.
fn config(overload_cutoff: Option<u64>) -> Config {
    Config {
        memory_size: 20_000,
        base_threshold: 0.5,
        overload_cutoff,
        chunk_size: 1_000,
        ..Config::default()
    }
}

fn run(cfg: Config, frames: &[Vec<u8>]) -> (Steer, GlobalStats) {
    let mut w = Worker::new(cfg, Steer::default());
    feed(&mut w, frames, 1_000);
    let stats = w.finish();
    assert!(stats.totals.invariant_holds(), "{:?}", stats.totals);
    (w.into_handler(), stats)
}

/// Port of an ordinary low-priority stream (nothing kept).
const LOW: u16 = 80;

/// The high-priority connection opens (its priority joins the levels) and
/// the hog sends `hog_segments` segments of 1,000 bytes, kept: memory in
/// use is then `hog_segments * 1000` bytes, and stays so while the hog has
/// no gap (a gap would release what it keeps). Returns the frames and the
/// high connection, to go on with.
fn fill(hog_segments: usize) -> (Vec<Vec<u8>>, Conv) {
    let mut high = Conv::new(ep("10.0.0.1", 40000), ep("10.0.0.2", HIGH), 100, 200);
    let mut hog = Conv::new(ep("10.0.0.3", 40001), ep("10.0.0.4", HOG), 300, 400);
    high.handshake();
    hog.handshake()
        .client(&bytes(hog_segments * 1_000, 1), 1_000);
    let mut frames = std::mem::take(&mut high.frames);
    frames.append(&mut hog.frames);
    (frames, high)
}

/// A low-priority connection that sends `segments` segments of 1,000 bytes.
fn low(segments: usize) -> Conv {
    let mut c = Conv::new(ep("10.0.0.5", 40002), ep("10.0.0.6", LOW), 500, 600);
    c.handshake().client(&bytes(segments * 1_000, 4), 1_000);
    c
}

#[test]
fn below_the_base_threshold_nothing_is_dropped() {
    // Ten hog segments fill the budget exactly to the base threshold.
    let (mut frames, mut high) = fill(10);
    frames.append(&mut low(5).fin().frames);
    frames.append(&mut high.client(&bytes(3_000, 2), 1_000).fin().frames);
    let (h, stats) = run(config(Some(0)), &frames);
    let low = h.stream(LOW, Direction::Orig);
    assert_eq!((low.counters.captured, low.counters.dropped), (5_000, 0));
    assert_eq!(stats.overload.ppl_packets(), 0);
    assert_eq!(stats.totals.dropped, 0);
}

#[test]
fn the_low_level_loses_above_its_watermark_and_the_high_level_nothing() {
    // 16,000 bytes in use: above watermark 1 (15,000), below watermark 2.
    let (mut frames, mut high) = fill(16);
    frames.append(&mut low(4).fin().frames);
    frames.append(&mut high.client(&bytes(3_000, 2), 1_000).fin().frames);
    let (h, stats) = run(config(None), &frames);
    let low = h.stream(LOW, Direction::Orig);
    assert_eq!(low.params.priority, 0);
    assert_eq!(
        (
            low.counters.captured,
            low.counters.dropped,
            low.counters.pkts_dropped
        ),
        (0, 4_000, 4)
    );
    // The high stream is above watermark 1 but below its own (20,000), and
    // no overload cutoff is set: kept whole.
    let high = h.stream(HIGH, Direction::Orig);
    assert_eq!(high.params.priority, 1);
    assert_eq!((high.counters.captured, high.counters.dropped), (3_000, 0));
    let level0 = stats.overload.level(0).expect("level 0");
    assert_eq!(
        (level0.ppl_watermark_packets, level0.ppl_cutoff_packets),
        (4, 0)
    );
    assert_eq!(level0.ppl_bytes, 4_000);
    assert_eq!(level0.totals.dropped, 4_000);
    let level1 = stats.overload.level(1).expect("level 1");
    assert_eq!(
        (level1.ppl_packets(), level1.totals.dropped, level1.streams),
        (0, 0, 2)
    );
    // Every connection still ended with its FINs (the hog at the end of input).
    assert_eq!(stats.ended(streamcap::deliver::EndReason::Fin), 2);
    assert_eq!(stats.ended(streamcap::deliver::EndReason::Eof), 1);
}

#[test]
fn between_watermarks_the_overload_cutoff_drops_the_tails() {
    // 12,000 bytes in use: between watermarks 0 (10,000) and 1 (15,000)
    // for priority 0, below watermark 1 for priority 1.
    let (mut frames, mut high) = fill(12);
    frames.append(&mut low(20).fin().frames);
    frames.append(&mut high.client(&bytes(20_000, 2), 1_000).fin().frames);
    let (h, stats) = run(config(Some(12_500)), &frames);
    // Segments starting at or past offset 12,500 are dropped: 13,000 on.
    let low = h.stream(LOW, Direction::Orig);
    assert_eq!(
        (low.counters.captured, low.counters.dropped),
        (13_000, 7_000)
    );
    let level0 = stats.overload.level(0).expect("level 0");
    assert_eq!(
        (level0.ppl_watermark_packets, level0.ppl_cutoff_packets),
        (0, 7)
    );
    // Priority 1 is below its lower watermark: kept whole, tail included.
    let high = h.stream(HIGH, Direction::Orig);
    assert_eq!((high.counters.captured, high.counters.dropped), (20_000, 0));
}

#[test]
fn packets_that_end_streams_are_never_dropped() {
    let (mut frames, _high) = fill(16);
    let mut l = low(1);
    let fin = tcp(l.c, l.s, l.cseq, l.sseq, FIN | ACK, &bytes(500, 3));
    frames.append(&mut l.frames);
    frames.push(fin);
    let (h, stats) = run(config(None), &frames);
    let low = h.stream(LOW, Direction::Orig);
    // The data segment is dropped, the FIN's payload kept.
    assert_eq!((low.counters.captured, low.counters.dropped), (500, 1_000));
    assert_eq!(stats.overload.ppl_packets(), 1);
}

#[test]
fn a_datagram_streams_first_packet_is_always_processed() {
    // Memory above watermark 1, then a new UDP flow sends two datagrams
    // each way: the first of each direction is kept, the second dropped.
    let (mut frames, _high) = fill(16);
    let (a, b) = (ep("10.0.0.7", 5000), ep("10.0.0.8", 53));
    for _ in 0..2 {
        frames.push(udp(a, b, &[1; 100]));
        frames.push(udp(b, a, &[2; 200]));
    }
    let (_, stats) = run(config(None), &frames);
    let level0 = stats.overload.level(0).expect("level 0");
    assert_eq!(level0.ppl_watermark_packets, 2);
    assert_eq!(level0.ppl_bytes, 300);
    assert_eq!(level0.totals.captured, 16_000 + 300);
}

#[test]
fn a_dropped_packet_that_fills_a_hole_leaves_the_stored_data_behind_it() {
    // The low stream sends A in order and C out of order while memory is
    // low; then memory fills past watermark 1 and B, which fills the hole,
    // is dropped: C is still delivered.
    let mut l = Conv::new(ep("10.0.0.5", 40002), ep("10.0.0.6", LOW), 500, 600);
    l.handshake();
    let data = bytes(3_000, 4);
    let (c, s, base, ack) = (l.c, l.s, l.cseq, l.sseq);
    let mut frames = std::mem::take(&mut l.frames);
    frames.push(tcp(c, s, base, ack, ACK, &data[..1000]));
    frames.push(tcp(c, s, base + 2000, ack, ACK, &data[2000..]));
    let (mut more, _high) = fill(15);
    frames.append(&mut more);
    frames.push(tcp(c, s, base + 1000, ack, ACK, &data[1000..2000]));
    let (h, stats) = run(config(None), &frames);
    let low = h.stream(LOW, Direction::Orig);
    assert_eq!(stats.overload.level(0).map(|l| l.ppl_bytes), Some(1_000));
    assert_eq!(
        (low.counters.captured, low.counters.dropped),
        (2_000, 1_000)
    );
}

#[test]
fn retransmissions_and_datagrams_past_their_cutoff_are_not_judged() {
    // A retransmission under pressure repeats bytes already delivered.
    let mut l = Conv::new(ep("10.0.0.5", 40002), ep("10.0.0.6", LOW), 500, 600);
    l.handshake();
    let data = bytes(1_000, 4);
    let (c, s, base, ack) = (l.c, l.s, l.cseq, l.sseq);
    let mut frames = std::mem::take(&mut l.frames);
    frames.push(tcp(c, s, base, ack, ACK, &data));
    let (mut more, _high) = fill(16);
    frames.append(&mut more);
    frames.push(tcp(c, s, base, ack, ACK, &data));
    // A UDP flow whose responder's direction is past its cutoff (0) under
    // pressure: its datagrams are discarded, not judged.
    let (a, b) = (ep("10.0.0.7", 5000), ep("10.0.0.8", 53));
    frames.push(udp(a, b, &[1; 100]));
    for _ in 0..3 {
        frames.push(udp(b, a, &[2; 100]));
    }
    let cfg = Config {
        cutoff_resp: Some(0),
        ..config(None)
    };
    let (_, stats) = run(cfg, &frames);
    let level0 = stats.overload.level(0).expect("level 0");
    assert_eq!(level0.ppl_packets(), 0, "{level0:?}");
    assert_eq!(level0.ppl_bytes, level0.totals.dropped);
}

/// Per-priority figures of several workers add up to one worker's (each
/// worker's default level is the rest of its totals).
#[test]
fn levels_of_several_workers_add_up_to_one_workers() {
    use streamcap::dispatch::workers::Parallel;
    let cfg = Config {
        chunk_size: 1_000,
        ..Config::default()
    };
    let cap = streamcap::Capture::builder().config(cfg).build();
    let one = cap
        .run_file("../../samples/sample.pcap", Steer::default())
        .expect("sample");
    let two = cap
        .run_file_parallel("../../samples/sample.pcap", &Parallel::workers(2), |_| {
            (Steer::default(), ())
        })
        .expect("sample");
    let (a, b) = (&one.stats.overload, &two.stats.overload);
    assert_eq!(a, b);
    let sum = a
        .levels
        .iter()
        .fold(streamcap::deliver::StreamCounters::default(), |mut s, l| {
            s.add(&l.totals);
            s
        });
    assert_eq!(sum, one.stats.totals);
    assert!(a.level(1).is_some_and(|l| l.streams > 0), "{a:?}");
}
