//! Review tests: adversarial inputs, accounting invariants, event order and a
//! randomized differential test of TCP reassembly against ground truth.
//!
//! Tests that expose a bug are marked `#[ignore = "bug: ..."]` so the branch
//! stays green; run them with `cargo test --test review -- --ignored`.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;
use streamcap::deliver::{
    Chunk, DataReason, Delivery, FlowEnd, Gap, Handler, Stream, StreamErrors, StreamInfo,
};
use streamcap::flow::Direction;
use streamcap::Worker;
use streamcap::{Config, LinkType, OverlapPolicy, RawPacket, ReassemblyMode, Timestamp};
use support::*;

// ---------------------------------------------------------------------------
// A checking handler: verifies event order, contiguity of delivered bytes,
// consistency of repeated (kept/overlap) bytes, and the invariant at close.
// ---------------------------------------------------------------------------

#[derive(Default, Clone, Debug)]
struct Seen {
    created: bool,
    closed: Option<StreamInfo>,
    /// (offset, bytes) of every new piece, in delivery order.
    pieces: Vec<(u64, Vec<u8>)>,
    gaps: Vec<Gap>,
    /// Offset just past the last delivered or skipped byte.
    end: u64,
    /// Every delivered byte by offset (to check repeated bytes).
    all: BTreeMap<u64, u8>,
    reasons: Vec<DataReason>,
}

impl Seen {
    fn data(&self) -> Vec<u8> {
        self.pieces
            .iter()
            .flat_map(|p| p.1.iter().copied())
            .collect()
    }
}

type Steer = Box<dyn FnMut(&mut Stream<'_, ()>, &Chunk<'_>)>;
type CreateSteer = Box<dyn FnMut(&mut Stream<'_, ()>)>;

#[derive(Default)]
struct Checker {
    streams: BTreeMap<(u64, u8), Seen>,
    flows_ended: HashSet<u64>,
    errors: Vec<String>,
    steer: Option<Steer>,
    create_steer: Option<CreateSteer>,
}

fn sid<S>(s: &Stream<'_, S>) -> (u64, u8) {
    (s.info().conn_id, (s.direction() == Direction::Resp) as u8)
}

impl Handler for Checker {
    type State = ();
    fn on_create(&mut self, s: &mut Stream<'_, ()>) {
        let k = sid(s);
        if self.flows_ended.contains(&k.0) {
            self.errors.push(format!("create after flow end {k:?}"));
        }
        let e = self.streams.entry(k).or_default();
        if e.created {
            self.errors.push(format!("double create {k:?}"));
        }
        e.created = true;
        if let Some(h) = self.create_steer.as_mut() {
            h(s);
        }
    }
    fn on_data(&mut self, s: &mut Stream<'_, ()>, c: &Chunk<'_>) {
        let k = sid(s);
        let e = self.streams.entry(k).or_default();
        if !e.created {
            self.errors.push(format!("data before create {k:?}"));
        }
        if e.closed.is_some() || self.flows_ended.contains(&k.0) {
            self.errors.push(format!("data after close {k:?}"));
        }
        let new_off = c.offset + c.new_from as u64;
        let expect = e.end + c.gap.map_or(0, |g| g.len);
        if let Some(g) = c.gap {
            if g.offset != e.end {
                self.errors.push(format!(
                    "{k:?} gap at {} but stream end {}",
                    g.offset, e.end
                ));
            }
            e.gaps.push(g);
        }
        if new_off != expect {
            self.errors.push(format!(
                "{k:?} new bytes at {new_off}, expected {expect} (gap {:?})",
                c.gap
            ));
        }
        // Repeated bytes must equal what was delivered before at those offsets.
        for (i, &b) in c.data[..c.new_from].iter().enumerate() {
            let off = c.offset + i as u64;
            match e.all.get(&off) {
                Some(&old) if old == b => {}
                other => {
                    self.errors.push(format!(
                        "{k:?} repeated byte at {off}: {b} vs delivered {other:?}"
                    ));
                    break;
                }
            }
        }
        for (i, &b) in c.new_data().iter().enumerate() {
            if e.all.insert(new_off + i as u64, b).is_some() {
                self.errors
                    .push(format!("{k:?} byte {} delivered twice", new_off + i as u64));
                break;
            }
        }
        e.pieces.push((new_off, c.new_data().to_vec()));
        e.end = new_off + c.new_data().len() as u64;
        e.reasons.push(c.reason);
        if let Some(h) = self.steer.as_mut() {
            h(s, c);
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        let k = sid(s);
        let e = self.streams.entry(k).or_default();
        if !e.created {
            self.errors.push(format!("close before create {k:?}"));
        }
        if e.closed.is_some() {
            self.errors.push(format!("double close {k:?}"));
        }
        let info = s.info().clone();
        let c = info.counters;
        if !c.invariant_holds() {
            self.errors
                .push(format!("{k:?} invariant broken at close: {c:?}"));
        }
        if c.captured < e.all.len() as u64 {
            self.errors.push(format!(
                "{k:?} captured {} < delivered {}",
                c.captured,
                e.all.len()
            ));
        }
        e.closed = Some(info);
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        let id = f.stream(Direction::Orig).conn_id;
        if !self.flows_ended.insert(id) {
            self.errors.push(format!("flow end twice {id}"));
        }
        for (i, d) in [Direction::Orig, Direction::Resp].into_iter().enumerate() {
            let st = f.stream(d);
            let seen = self.streams.get(&(id, i as u8));
            if st.created != seen.is_some_and(|s| s.closed.is_some()) {
                self.errors.push(format!(
                    "flow end {id} {d:?}: created {} but close mismatch",
                    st.created
                ));
            }
        }
    }
}

impl Checker {
    fn get(&self, conn: u64, dir: u8) -> &Seen {
        self.streams
            .get(&(conn, dir))
            .unwrap_or_else(|| panic!("no stream {conn}/{dir}"))
    }
}

fn client() -> Ep {
    ep("10.0.0.1", 40000)
}
fn server() -> Ep {
    ep("10.0.0.2", 80)
}

/// Runs frames through a worker with a Checker, finishing, and checks the
/// global invariants: no handler errors, totals invariant, budget back to 0.
fn run_checked(cfg: Config, frames: &[Vec<u8>], h: Checker) -> (Checker, streamcap::GlobalStats) {
    let limit = cfg.memory_size;
    let mut w = Worker::new(cfg, h);
    feed(&mut w, frames, 1_000);
    let stats = w.finish();
    assert_eq!(w.memory_used(), 0, "budget leak after finish");
    assert!(
        stats.memory_peak <= limit,
        "peak {} > limit {limit}",
        stats.memory_peak
    );
    assert!(
        stats.totals.invariant_holds(),
        "global invariant: {:?}",
        stats.totals
    );
    let h = w.into_handler();
    assert!(
        h.errors.is_empty(),
        "handler saw errors: {:#?}",
        &h.errors[..h.errors.len().min(20)]
    );
    (h, stats)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

// ---------------------------------------------------------------------------
// Bugs
// ---------------------------------------------------------------------------

/// A snaplen-truncated retransmission that starts before the delivery point and
/// whose captured part ends before it: `tcp_data` clamps `pe` up to `ns` and
/// slices `present[(ns - s)..]` beyond the captured bytes.
#[test]

fn truncated_retransmission_across_delivery_point_does_not_panic() {
    let data = bytes(200, 100);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1000, 5000);
    c.handshake();
    let base = c.cseq;
    c.client(&data[..100], 100); // delivery point now at 100
                                 // Retransmission of [0,200), only the first 50 payload bytes captured.
    let mut f = tcp(cl, sv, base, c.sseq, ACK, &data);
    let cut = f.len() - 150;
    f.truncate(cut);
    c.frames.push(f);
    c.frames.push(tcp(cl, sv, base + 200, c.sseq, ACK, b"tail"));
    let (h, _) = run_checked(Config::default(), &c.frames, Checker::default());
    let o = h.get(0, 0);
    let info = o.closed.as_ref().unwrap();
    assert_eq!(info.counters.stream_bytes, 204);
    assert_eq!(info.counters.missing, 100);
}

/// Same, with the retransmission starting before the stream start (negative
/// offset) so `present` becomes empty after trimming.
#[test]

fn truncated_segment_before_isn_does_not_panic() {
    let data = bytes(300, 101);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1000, 5000);
    c.handshake();
    let base = c.cseq;
    c.client(&data[..100], 100);
    // Segment claiming [-20, 280) with only 10 payload bytes captured.
    let mut f = tcp(cl, sv, base.wrapping_sub(20), c.sseq, ACK, &data);
    let cut = f.len() - 290;
    f.truncate(cut);
    c.frames.push(f);
    let (h, _) = run_checked(Config::default(), &c.frames, Checker::default());
    let info = h.get(0, 0).closed.clone().unwrap();
    assert!(info.counters.invariant_holds());
}

/// A FIN whose sequence number lies before the delivery point (an injected or
/// stale FIN a real receiver would reject as out of window) sets the stream's
/// FIN offset below already delivered data: every later byte is ignored as
/// "data after FIN", while the receiving host keeps accepting it (evasion).
#[test]

fn stale_fin_does_not_truncate_the_stream() {
    let data = bytes(3000, 102);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1000, 5000);
    c.handshake();
    let base = c.cseq;
    c.client(&data[..1000], 500);
    c.frames
        .push(tcp(cl, sv, base + 10, c.sseq, FIN | ACK, b""));
    c.client(&data[1000..], 500);
    let (h, _) = run_checked(Config::default(), &c.frames, Checker::default());
    let o = h.get(0, 0);
    assert_eq!(o.data().len(), 3000, "bytes delivered");
    assert!(!o
        .closed
        .as_ref()
        .unwrap()
        .errors
        .contains(StreamErrors::DATA_AFTER_FIN));
}

/// Out-of-order bytes stored *beyond* a FIN that arrives later are still
/// delivered at termination (docs: bytes after a FIN are ignored).
#[test]

fn data_stored_beyond_a_later_fin_is_not_delivered() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1000, 5000);
    c.handshake();
    let base = c.cseq;
    // [200,300) arrives first (hole before it), then a FIN at offset 100, then [0,100).
    c.frames
        .push(tcp(cl, sv, base + 200, c.sseq, ACK, &[b'x'; 100]));
    c.frames
        .push(tcp(cl, sv, base + 100, c.sseq, FIN | ACK, b""));
    c.frames.push(tcp(cl, sv, base, c.sseq, ACK, &[b'a'; 100]));
    let (h, _) = run_checked(Config::default(), &c.frames, Checker::default());
    let o = h.get(0, 0);
    let info = o.closed.as_ref().unwrap();
    assert_eq!(o.data(), vec![b'a'; 100]);
    assert_eq!(info.counters.stream_bytes, 100);
}

/// After a callback calls `discard()` during an ACK-triggered drain, the rest
/// of the stream is counted as `missing` (flag `gap`) instead of `discarded`.
#[test]

fn discard_during_ack_drain_counts_discarded() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1000, 5000);
    c.handshake();
    let base = c.cseq;
    // Hole [0,100); stored [100,200) and [300,400); the server ACKs everything.
    c.frames
        .push(tcp(cl, sv, base + 100, c.sseq, ACK, &[b'b'; 100]));
    c.frames
        .push(tcp(cl, sv, base + 300, c.sseq, ACK, &[b'd'; 100]));
    c.frames.push(tcp(sv, cl, c.sseq, base + 400, ACK, b""));
    let h = Checker {
        steer: Some(Box::new(|s, _| s.discard())),
        ..Default::default()
    };
    let cfg = Config {
        chunk_size: 10,
        ..Config::default()
    };
    let (h, _) = run_checked(cfg, &c.frames, h);
    let info = h.get(0, 0).closed.clone().unwrap();
    let k = info.counters;
    // 200 missing (the real holes [0,100) and [200,300): bytes never seen
    // are missing whatever the cutoff), 10 captured, the seen rest discarded.
    assert_eq!(k.stream_bytes, 400);
    assert_eq!(k.missing, 200, "{k:?}");
    assert_eq!(k.captured, 10, "{k:?}");
    assert_eq!(k.discarded, 190, "{k:?}");
}

/// With packet records requested, a stream that is statistics-only (cutoff 0)
/// or discarded still charges one record per packet to the budget and never
/// releases it until termination: memory grows with the stream's packet count.
#[test]

fn packet_records_of_statistics_only_streams_are_not_held() {
    let data = bytes(100_000, 103);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 100);
    let mut w = Worker::new(
        Config {
            cutoff: Some(0),
            need_packets: true,
            ..Config::default()
        },
        Checker::default(),
    );
    feed(&mut w, &c.frames, 1);
    let used = w.memory_used();
    w.finish();
    assert_eq!(w.memory_used(), 0);
    assert!(
        used < 10_000,
        "{used} bytes held for a statistics-only stream"
    );
}

/// `StreamStatus::Closing` is documented but never set: during the linger
/// after FIN/RST, callbacks still see `Active`.
#[test]

fn status_is_closing_during_linger() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"abc", 10);
    c.frames.push(tcp(sv, cl, c.sseq, c.cseq, RST, b""));
    // A late retransmission-like segment with new data during the linger.
    c.client(b"defghij", 10);
    use std::cell::RefCell;
    use std::rc::Rc;
    let statuses = Rc::new(RefCell::new(Vec::new()));
    let st = statuses.clone();
    let h = Checker {
        steer: Some(Box::new(move |s, _| st.borrow_mut().push(s.info().status))),
        ..Default::default()
    };
    let mut w = Worker::new(
        Config {
            chunk_size: 1,
            ..Config::default()
        },
        h,
    );
    feed(&mut w, &c.frames, 1);
    w.finish();
    let v = statuses.borrow();
    assert!(
        v.iter()
            .any(|s| matches!(s, streamcap::deliver::StreamStatus::Closing(_))),
        "{v:?}"
    );
}

/// The prose of `policy.rs` ("bsd: keep old data unless the new segment starts
/// strictly before it"; "linux: ... a new segment wins where it ... starts at
/// the same place and is longer") and the real stacks keep the old bytes when
/// a new segment starts at the same offset and is shorter. The table row
/// "right overlap: ns <= os, ne < oe" (and the code) let the new bytes win.
#[test]

fn same_start_shorter_new_segment_keeps_old_for_linux_bsd_windows() {
    for policy in [
        OverlapPolicy::Linux,
        OverlapPolicy::Bsd,
        OverlapPolicy::Windows,
    ] {
        let (cl, sv) = (client(), server());
        let mut c = Conv::new(cl, sv, 0, 0);
        c.handshake();
        let b = c.cseq;
        // Hole [0,2); old [2,8) "AAAAAA"; new [2,5) "BBB"; then [0,2).
        c.frames.push(tcp(cl, sv, b + 2, 1, ACK, b"AAAAAA"));
        c.frames.push(tcp(cl, sv, b + 2, 1, ACK, b"BBB"));
        c.frames.push(tcp(cl, sv, b, 1, ACK, b"CC"));
        let (h, _) = run_checked(
            Config {
                policy,
                ..Config::default()
            },
            &c.frames,
            Checker::default(),
        );
        assert_eq!(
            String::from_utf8_lossy(&h.get(0, 0).data()),
            "CCAAAAAA",
            "{policy}"
        );
    }
}

// ---------------------------------------------------------------------------
// Randomized differential test
// ---------------------------------------------------------------------------

struct Case {
    truth: Vec<u8>,
    frames: Vec<Vec<u8>>,
    /// Union of the sent ranges, as a per-byte mask over [0, max_end).
    covered: Vec<bool>,
    max_end: usize,
}

/// Random segments inside a 4 KiB stream: duplicates, reordering, some never
/// sent. All copies carry the true bytes.
fn random_case(seed: u64) -> Case {
    const L: usize = 4096;
    let mut r = Rng(seed.wrapping_mul(0x2545f4914f6cdd1d) | 1);
    for _ in 0..4 {
        r.next();
    }
    let truth = bytes(L, seed ^ 0xabcdef);
    let (cl, sv) = (client(), server());
    let cisn = match r.below(4) {
        0 => u32::MAX - r.below(6000) as u32,
        1 => r.below(1000) as u32,
        _ => r.next() as u32,
    };
    let sisn = r.next() as u32;
    let mut conv = Conv::new(cl, sv, cisn, sisn);
    if r.below(8) != 0 {
        conv.handshake();
    } else {
        conv.cseq = cisn.wrapping_add(1);
        conv.sseq = sisn.wrapping_add(1);
        // Mid-stream pickup: the first frame must be at offset 0 for the
        // expected offsets to hold; send a 1-byte segment at 0 first.
    }
    let base = conv.cseq;
    let ack = conv.sseq;
    let mut segs: Vec<(usize, usize)> = Vec::new();
    let n = 1 + r.below(80) as usize;
    let maxlen = [1u64, 8, 64, 600, 1500][r.below(5) as usize];
    for _ in 0..n {
        let o = r.below(L as u64) as usize;
        let l = 1 + r.below(maxlen) as usize;
        segs.push((o, (o + l).min(L)));
    }
    // Sometimes send everything in order first-to-last covering the front.
    if r.below(3) == 0 {
        segs.push((0, 1 + r.below(200) as usize));
    }
    // Duplicates.
    let dups = r.below(n as u64 / 2 + 1) as usize;
    for _ in 0..dups {
        let i = r.below(segs.len() as u64) as usize;
        segs.push(segs[i]);
    }
    // Shuffle (partially: sometimes keep near-order).
    let swaps = r.below(segs.len() as u64 * 2) as usize;
    for _ in 0..swaps {
        let i = r.below(segs.len() as u64) as usize;
        let j = r.below(segs.len() as u64) as usize;
        segs.swap(i, j);
    }
    // For a mid-stream pickup, offset 0 must be the first data seen.
    if conv.frames.is_empty() {
        segs.insert(0, (0, 1));
    }
    let mut frames = conv.frames.clone();
    let mut covered = vec![false; L];
    let mut max_end = 0;
    for &(o, e) in &segs {
        frames.push(tcp(
            cl,
            sv,
            base.wrapping_add(o as u32),
            ack,
            ACK | PSH,
            &truth[o..e],
        ));
        for c in &mut covered[o..e] {
            *c = true;
        }
        max_end = max_end.max(e);
        // Occasional zero-length segment / pure ACK from the client.
        if r.below(10) == 0 {
            frames.push(tcp(
                cl,
                sv,
                base.wrapping_add(r.below(L as u64) as u32),
                ack,
                ACK,
                b"",
            ));
        }
    }
    covered.truncate(max_end);
    Case {
        truth,
        frames,
        covered,
        max_end,
    }
}

fn check_delivery(seed: u64, case: &Case, s: &Seen, exact: bool) {
    let info = s.closed.as_ref().expect("closed");
    let k = info.counters;
    assert!(k.invariant_holds(), "seed {seed}: {k:?}");
    let holes = case.covered.iter().filter(|&&c| !c).count() as u64;
    // Every delivered byte is the true byte at its offset.
    for (&off, &b) in &s.all {
        assert_eq!(b, case.truth[off as usize], "seed {seed}: byte at {off}");
        if exact {
            assert!(
                case.covered[off as usize],
                "seed {seed}: byte {off} never sent"
            );
        }
    }
    if exact {
        let want: Vec<u8> = (0..case.max_end)
            .filter(|&i| case.covered[i])
            .map(|i| case.truth[i])
            .collect();
        assert_eq!(s.data(), want, "seed {seed}: delivered bytes");
        assert_eq!(k.stream_bytes, case.max_end as u64, "seed {seed}: {k:?}");
        assert_eq!(k.missing, holes, "seed {seed}: {k:?}");
        assert_eq!(k.captured, want.len() as u64, "seed {seed}: {k:?}");
        assert_eq!(k.dropped + k.discarded, 0, "seed {seed}: {k:?}");
        let gap_total: u64 = s.gaps.iter().map(|g| g.len).sum();
        let tail_hole = 0; // stream ends at max_end: no trailing hole
        assert_eq!(
            gap_total + tail_hole,
            holes,
            "seed {seed}: gaps {:?}",
            s.gaps
        );
    } else {
        assert_eq!(k.stream_bytes, case.max_end as u64, "seed {seed}: {k:?}");
        assert!(k.missing >= holes.min(k.missing), "seed {seed}");
        assert_eq!(
            k.captured,
            s.all.len() as u64,
            "seed {seed}: {k:?} delivered {}",
            s.all.len()
        );
    }
}

fn random_cfg(r: &mut Rng) -> Config {
    Config {
        policy: OverlapPolicy::ALL[r.below(6) as usize],
        mode: if r.below(2) == 0 {
            ReassemblyMode::Fast
        } else {
            ReassemblyMode::Strict
        },
        chunk_size: [1usize, 7, 100, 1000, 5000, 16 << 10][r.below(6) as usize],
        overlap: [0usize, 0, 3, 50, 10_000][r.below(5) as usize],
        flush_timeout: [None, None, Some(1_500_000), Some(10_000_000)][r.below(4) as usize],
        need_packets: r.below(3) == 0,
        delivery: if r.below(2) == 0 {
            Delivery::Chunks
        } else {
            Delivery::Segments
        },
        ..Config::default()
    }
}

#[test]
fn differential_random_segments() {
    let t0 = Instant::now();
    for seed in 1..=3000u64 {
        let case = random_case(seed);
        let mut r = Rng(seed | 0x1000);
        let mut cfg = random_cfg(&mut r);
        let handshake = case.frames.len() >= 3 && {
            // Strict mode needs the handshake: a pickup case runs in fast mode.
            true
        };
        if !handshake {
            cfg.mode = ReassemblyMode::Fast;
        }
        let (h, stats) = run_checked(cfg.clone(), &case.frames, Checker::default());
        let s = h.get(0, 0);
        if cfg.mode == ReassemblyMode::Strict
            && s.closed
                .as_ref()
                .unwrap()
                .errors
                .contains(StreamErrors::NO_HANDSHAKE)
        {
            continue;
        }
        check_delivery(seed, &case, s, true);
        assert_eq!(
            stats.totals.missing,
            case.covered.iter().filter(|&&c| !c).count() as u64
        );
    }
    eprintln!("differential: 3000 seeds in {:?}", t0.elapsed());
}

#[test]
fn differential_random_segments_small_budget() {
    for seed in 1..=3000u64 {
        let case = random_case(seed);
        let mut r = Rng(seed | 0x2000);
        let mut cfg = random_cfg(&mut r);
        cfg.memory_size = r.below(6000) as usize;
        let (h, _) = run_checked(cfg.clone(), &case.frames, Checker::default());
        let s = h.get(0, 0);
        if s.closed
            .as_ref()
            .unwrap()
            .errors
            .contains(StreamErrors::NO_HANDSHAKE)
            && cfg.mode == ReassemblyMode::Strict
        {
            continue;
        }
        check_delivery(seed, &case, s, false);
        let k = s.closed.as_ref().unwrap().counters;
        if std::env::var("REVIEW_STATS").is_ok() {
            eprintln!("seed {seed} mem {} {:?}", cfg.memory_size, k);
        }
        let holes = case.covered.iter().filter(|&&c| !c).count() as u64;
        assert_eq!(
            k.missing, holes,
            "seed {seed} mem {}: never-sent bytes must be missing, seen bytes dropped: {k:?}",
            cfg.memory_size
        );
    }
}

/// Callbacks steering the stream at random on every event: keep_chunk,
/// set_chunk_size(1), set_overlap, set_cutoff (also below the delivered
/// point), discard, set_policy, set_flush_timeout, set_delivery.
#[test]
fn differential_random_steering() {
    for seed in 1..=2000u64 {
        let case = random_case(seed);
        let mut r = Rng(seed | 0x3000);
        let mut cfg = random_cfg(&mut r);
        if r.below(2) == 0 {
            cfg.memory_size = r.below(20_000) as usize;
        }
        let mut sr = Rng(seed | 0x4000);
        let steer: Steer = Box::new(move |s, c| {
            let end = c.offset + c.data.len() as u64;
            match sr.below(12) {
                0..=2 => s.keep_chunk(),
                3 => s.set_chunk_size(1),
                4 => s.set_chunk_size(1 + sr.below(3000) as usize),
                5 => s.set_overlap(sr.below(5000) as usize),
                6 => s.set_cutoff(Some(end + sr.below(2000))),
                7 => s.set_cutoff(Some(sr.below(end + 1))),
                8 if sr.below(4) == 0 => s.discard(),
                9 => s.set_policy(OverlapPolicy::ALL[sr.below(6) as usize]),
                10 => s.set_flush_timeout(Some(sr.below(5_000_000))),
                11 => s.set_delivery(if sr.below(2) == 0 {
                    Delivery::Chunks
                } else {
                    Delivery::Segments
                }),
                _ => {}
            }
        });
        let h = Checker {
            steer: Some(steer),
            ..Default::default()
        };
        let (h, _) = run_checked(cfg.clone(), &case.frames, h);
        let s = h.get(0, 0);
        check_delivery(seed, &case, s, false);
    }
}

// ---------------------------------------------------------------------------
// Chaos: many flows, random flags and sequence numbers, timestamps going
// backwards, tiny flow limit and budget, callbacks steering everything.
// ---------------------------------------------------------------------------

fn chaos_frames(seed: u64, n: usize, truncate: bool) -> Vec<(Vec<u8>, u64)> {
    let mut r = Rng(seed.wrapping_mul(0x9e3779b97f4a7c15) | 1);
    let eps: Vec<(Ep, Ep)> = (0..6)
        .map(|i| (ep("10.0.0.1", 1000 + i as u16), server()))
        .collect();
    // Per endpoint pair: a notion of current seq per direction.
    let mut seqs: Vec<[u32; 2]> = (0..eps.len())
        .map(|_| [r.next() as u32, u32::MAX - r.below(3000) as u32])
        .collect();
    let mut out = Vec::new();
    let mut t: u64 = 1_000_000_000_000;
    for _ in 0..n {
        let f = r.below(eps.len() as u64) as usize;
        let dir = r.below(2) as usize;
        let (a, b) = if dir == 0 {
            eps[f]
        } else {
            (eps[f].1, eps[f].0)
        };
        let s = &mut seqs[f];
        let my = s[dir];
        let their = s[1 - dir];
        let len = [0usize, 1, 10, 100, 1400][r.below(5) as usize];
        let payload = bytes(len, r.next());
        let (seq, flags) = match r.below(20) {
            0 => (my, SYN),
            1 => (r.next() as u32, SYN),
            2 => (my, SYN | ACK),
            3 => (my, FIN | ACK),
            4 => (r.next() as u32, FIN | ACK),
            5 => (my, RST),
            6 => (r.next() as u32, RST | ACK),
            7 => (my.wrapping_sub(r.below(5000) as u32), ACK),
            8 => (my.wrapping_add(r.below(1 << 31) as u32), ACK),
            9 => (my.wrapping_add(r.below(20_000) as u32), ACK | PSH),
            10 => (my.wrapping_add((1u32 << 30) - r.below(3) as u32), ACK),
            _ => (my, ACK | PSH),
        };
        let ackno = match r.below(4) {
            0 => r.next() as u32,
            1 => their.wrapping_add(r.below(10_000) as u32),
            _ => their,
        };
        let mut fr = if r.below(15) == 0 {
            udp(
                ep("10.0.0.9", 5000 + f as u16),
                ep("10.0.0.2", 53),
                &payload,
            )
        } else {
            tcp(a, b, seq, ackno, flags, &payload)
        };
        if flags & (SYN | RST) == 0 && seq == my {
            s[dir] = my.wrapping_add(len as u32);
        } else if flags & SYN != 0 {
            s[dir] = seq.wrapping_add(1);
        }
        if truncate && r.below(10) == 0 && len > 10 {
            let cut = fr.len() - r.below(len as u64) as usize;
            fr.truncate(cut);
        }
        // Time mostly advances, sometimes jumps far, sometimes goes backwards.
        t = match r.below(20) {
            0 => t.saturating_sub(r.below(5_000_000_000)),
            1 => t + r.below(400_000_000_000),
            _ => t + r.below(3_000_000),
        };
        out.push((fr, t));
    }
    out
}

fn steer_chaos(seed: u64) -> Steer {
    let mut sr = Rng(seed | 0x5000);
    Box::new(move |s, c| {
        let end = c.offset + c.data.len() as u64;
        match sr.below(14) {
            0..=2 => s.keep_chunk(),
            3 => s.set_chunk_size(1),
            4 => s.set_chunk_size(1 + sr.below(3000) as usize),
            5 => s.set_overlap(sr.below(5000) as usize),
            6 => s.set_cutoff(Some(end + sr.below(2000))),
            7 => s.set_cutoff(Some(sr.below(end + 1))),
            8 if sr.below(4) == 0 => s.discard(),
            9 => s.set_policy(OverlapPolicy::ALL[sr.below(6) as usize]),
            10 => s.set_flush_timeout(Some(sr.below(5_000_000))),
            11 => s.set_mode(if sr.below(2) == 0 {
                ReassemblyMode::Fast
            } else {
                ReassemblyMode::Strict
            }),
            12 => s.set_delivery(if sr.below(2) == 0 {
                Delivery::Chunks
            } else {
                Delivery::Segments
            }),
            _ => {}
        }
    })
}

fn run_chaos(seed: u64, truncate: bool) {
    let frames = chaos_frames(seed, 400, truncate);
    let mut r = Rng(seed | 0x7000);
    let mut cfg = random_cfg(&mut r);
    cfg.max_flows = 1 + r.below(5) as usize;
    cfg.memory_size = [0usize, 100, 3000, 50_000, 1 << 20][r.below(5) as usize];
    cfg.max_ooo_segments = [1usize, 4, 2048][r.below(3) as usize];
    cfg.max_ooo_bytes = [0usize, 500, 1 << 20][r.below(3) as usize];
    cfg.close_linger = [0u64, 1_000_000, 5_000_000_000][r.below(3) as usize];
    cfg.tcp_timeout = [1_000_000u64, 300_000_000_000][r.below(2) as usize];
    let limit = cfg.memory_size;
    let h = Checker {
        steer: if r.below(2) == 0 {
            Some(steer_chaos(seed))
        } else {
            None
        },
        ..Default::default()
    };
    let mut w = Worker::new(cfg, h);
    for (i, (f, t)) in frames.iter().enumerate() {
        w.process(&RawPacket {
            ts: Timestamp(*t),
            link: LinkType::ETHERNET,
            data: f,
            orig_len: f.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        });
        assert!(w.memory_used() <= limit);
    }
    let stats = w.finish();
    assert_eq!(w.memory_used(), 0, "seed {seed}: budget leak");
    assert!(stats.memory_peak <= limit);
    assert!(
        stats.totals.invariant_holds(),
        "seed {seed}: {:?}",
        stats.totals
    );
    let h = w.into_handler();
    assert!(
        h.errors.is_empty(),
        "seed {seed}: {:#?}",
        &h.errors[..h.errors.len().min(10)]
    );
    // Every created stream was closed and every connection ended once.
    for (k, s) in &h.streams {
        assert!(s.closed.is_some(), "seed {seed}: stream {k:?} never closed");
        assert!(
            h.flows_ended.contains(&k.0),
            "seed {seed}: conn {} no flow end",
            k.0
        );
    }
    let ended: u64 = stats.flows_ended.iter().sum();
    assert_eq!(ended as usize, h.flows_ended.len(), "seed {seed}");
    let created: u64 = stats.flows_created.iter().sum();
    assert_eq!(created, ended, "seed {seed}: flows created vs ended");
}

#[test]
fn chaos_no_panics_invariants_and_event_order() {
    for seed in 1..=400u64 {
        run_chaos(seed, false);
    }
}

#[test]

fn chaos_with_truncated_frames() {
    for seed in 1..=1500u64 {
        run_chaos(seed, true);
    }
}

// ---------------------------------------------------------------------------
// Adversarial shapes, with timing (debug build)
// ---------------------------------------------------------------------------

fn timed<T>(name: &str, f: impl FnOnce() -> T) -> (T, std::time::Duration) {
    let t0 = Instant::now();
    let r = f();
    let d = t0.elapsed();
    eprintln!("{name}: {d:?}");
    (r, d)
}

/// Worker run over pre-built frames with a plain counting handler (the Checker
/// is itself O(n) per chunk for kept bytes, so it is not used for timing).
fn run_plain(cfg: Config, frames: &[Vec<u8>]) -> (streamcap::GlobalStats, usize) {
    let mut w = Worker::new(cfg, streamcap::Callbacks::<()>::new());
    feed(&mut w, frames, 1);
    let s = w.finish();
    assert!(s.totals.invariant_holds(), "{:?}", s.totals);
    (s, w.memory_used())
}

#[test]
fn fifty_thousand_one_byte_segments_reversed() {
    let data = bytes(50_000, 200);
    let (cl, sv) = (client(), server());
    for max_segs in [2048usize, 100_000] {
        let mut c = Conv::new(cl, sv, 7, 9);
        c.handshake();
        let base = c.cseq;
        for i in (0..50_000u32).rev() {
            c.frames.push(tcp(
                cl,
                sv,
                base + i,
                c.sseq,
                ACK,
                &data[i as usize..i as usize + 1],
            ));
        }
        let cfg = Config {
            max_ooo_segments: max_segs,
            ..Config::default()
        };
        let ((s, used), d) = timed(
            &format!("50k reversed 1-byte, max_ooo_segments {max_segs}"),
            || run_plain(cfg, &c.frames),
        );
        assert_eq!(used, 0);
        assert_eq!(s.totals.stream_bytes, 50_000);
        if max_segs == 100_000 {
            assert_eq!(s.totals.captured, 50_000);
        }
        assert!(d.as_secs_f64() < 5.0, "{d:?}");
    }
}

/// Many stored small ranges, then the same covering segment many times: with
/// the `first` policy nothing is replaced, so each copy walks every stored
/// range (cost O(stored ranges) per packet, bounded by max_ooo_segments).
#[test]
fn covering_segment_repeated_over_many_small_ranges() {
    covering(700, 200, false);
}

/// The same shape with a truncated covering segment under the default
/// policy: its missing tail never replaces stored data, so ranges stay
/// separate; each such packet visits at most `max_ooo_segments` ranges
/// (documented bound). This checks it completes and stays consistent.
#[test]
fn truncated_covering_segment_repeated_stays_consistent() {
    covering(700, 200, true);
}

fn covering(segs: u32, copies: usize, truncated: bool) -> std::time::Duration {
    let (cl, sv) = (client(), server());
    let mut total = std::time::Duration::ZERO;
    {
        let mut c = Conv::new(cl, sv, 7, 9);
        c.handshake();
        let base = c.cseq;
        // Hole at [0,1); 1-byte ranges at odd offsets.
        for i in 0..segs {
            c.frames
                .push(tcp(cl, sv, base + 1 + 2 * i, c.sseq, ACK, b"x"));
        }
        let cover = vec![b'x'; 2 * segs as usize];
        for _ in 0..copies {
            let mut f = tcp(
                cl,
                sv,
                base + 1,
                c.sseq,
                ACK,
                &cover[..(2 * segs as usize).min(1400)],
            );
            if truncated {
                let n = f.len() - 1399; // one payload byte captured
                f.truncate(n);
            }
            c.frames.push(f);
        }
        let cfg = Config {
            policy: if truncated {
                OverlapPolicy::Bsd
            } else {
                OverlapPolicy::First
            },
            ..Config::default()
        };
        let ((s, used), d) = timed(&format!("{segs} ranges x {copies} covering copies"), || {
            run_plain(cfg, &c.frames)
        });
        assert_eq!(used, 0);
        assert!(s.totals.invariant_holds());
        eprintln!(
            "  -> {:.1} us per covering packet",
            d.as_secs_f64() * 1e6 / copies as f64
        );
        total += d;
    }
    total
}

#[test]
fn syn_flood_with_reuse_and_rst_storm() {
    let (cl, sv) = (client(), server());
    let mut frames = Vec::new();
    let mut r = Rng(77);
    for i in 0..5000u32 {
        let isn = r.next() as u32;
        frames.push(tcp(cl, sv, isn, 0, SYN, b""));
        frames.push(tcp(cl, sv, isn + 1, 0, ACK, b"data"));
        if i % 3 == 0 {
            frames.push(tcp(sv, cl, r.next() as u32, isn + 5, RST | ACK, b""));
        }
    }
    let ((h, stats), d) = timed("5000 reused SYNs", || {
        run_checked(Config::default(), &frames, Checker::default())
    });
    assert!(d.as_secs_f64() < 5.0);
    let created: u64 = stats.flows_created.iter().sum();
    assert_eq!(created, 5000);
    assert_eq!(h.flows_ended.len(), 5000);
    // RST storm on one live connection.
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"hello", 10);
    for _ in 0..20_000 {
        c.frames
            .push(tcp(sv, cl, r.next() as u32, r.next() as u32, RST, b""));
    }
    c.client(b" world", 10);
    let ((h, stats), _) = timed("20k random RSTs", || {
        run_checked(Config::default(), &c.frames, Checker::default())
    });
    // About window/2^32 of random RSTs are valid; the first valid one closes.
    eprintln!("invalid rsts {}", stats.invalid_rsts);
    assert!(h.get(0, 0).data().starts_with(b"hello"));
}

#[test]
fn huge_jumps_and_sequence_extremes() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, u32::MAX - 2, 1);
    c.handshake().client(b"abc", 10);
    let b = c.cseq;
    let jump = 1u32 << 30;
    // Just inside and just past max_seq_jump, a segment before the ISN, one
    // straddling the ISN, a zero-length segment far away, a FIN far away.
    c.frames
        .push(tcp(cl, sv, b.wrapping_add(jump - 3), 1, ACK, b"far"));
    c.frames
        .push(tcp(cl, sv, b.wrapping_add(jump + 10), 1, ACK, b"tooFar"));
    c.frames
        .push(tcp(cl, sv, b.wrapping_sub(3 + 100), 1, ACK, b"before"));
    c.frames
        .push(tcp(cl, sv, b.wrapping_sub(5), 1, ACK, b"0123456789"));
    c.frames
        .push(tcp(cl, sv, b.wrapping_add(1 << 31), 1, ACK, b""));
    c.frames
        .push(tcp(cl, sv, b.wrapping_add((1 << 31) + 5), 1, ACK, b"half"));
    let ((h, _), d) = timed("huge jumps", || {
        run_checked(Config::default(), &c.frames, Checker::default())
    });
    assert!(d.as_secs_f64() < 1.0);
    let info = h.get(0, 0).closed.clone().unwrap();
    assert!(info.errors.contains(StreamErrors::BAD_SEQ));
    // "far" lands at offset 3 + 2^30 - 3 = 2^30 (allowed); "tooFar" is ignored;
    // "before" is entirely before the ISN; "0123456789" starts 2 before it.
    assert_eq!(info.counters.stream_bytes, jump as u64 + 3);
    assert_eq!(h.get(0, 0).data(), b"abc56789far");
}

/// Flush timeouts with packet timestamps going backwards: the worker clock
/// never goes back, so flushes still fire once the clock passes the deadline.
#[test]
fn flush_timeout_with_time_going_backwards() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"part1", 10);
    let h = Checker::default();
    let mut w = Worker::new(
        Config {
            flush_timeout: Some(1_000_000_000),
            ..Config::default()
        },
        h,
    );
    let times = [100u64, 100, 100, 100];
    for (i, f) in c.frames.iter().enumerate() {
        w.process(&RawPacket {
            ts: Timestamp::from_secs_nanos(times[i], 0),
            link: LinkType::ETHERNET,
            data: f,
            orig_len: f.len() as u32,
            record: 0,
            interface: 0,
        });
    }
    // Backwards in time: more data at t=50.
    let f = tcp(cl, sv, c.cseq, c.sseq, ACK, b"part2");
    w.process(&RawPacket {
        ts: Timestamp::from_secs_nanos(50, 0),
        link: LinkType::ETHERNET,
        data: &f,
        orig_len: f.len() as u32,
        record: 0,
        interface: 0,
    });
    assert!(w.handler().streams.values().all(|s| s.pieces.is_empty()));
    let u = udp(ep("10.9.9.9", 1), ep("10.9.9.8", 2), b"tick");
    w.process(&RawPacket {
        ts: Timestamp::from_secs_nanos(101, 1),
        link: LinkType::ETHERNET,
        data: &u,
        orig_len: u.len() as u32,
        record: 0,
        interface: 0,
    });
    assert_eq!(w.handler().get(0, 0).data(), b"part1part2");
    w.finish();
    assert_eq!(w.memory_used(), 0);
    assert!(w.handler().errors.is_empty());
}

/// keep_chunk on every event with chunk size 1: every event re-delivers the
/// whole stream so far (by design), the budget must bound it and be released.
#[test]
fn keep_every_chunk_with_chunk_size_one_is_bounded_by_the_budget() {
    let data = bytes(20_000, 201);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).fin();
    let mut w = Worker::new(
        Config {
            chunk_size: 1,
            memory_size: 4096,
            ..Config::default()
        },
        streamcap::Callbacks::<()>::new().on_data(|s, _| {
            s.keep_chunk();
            s.set_chunk_size(1);
        }),
    );
    let (_, d) = timed("keep every 1-byte chunk", || feed(&mut w, &c.frames, 1));
    let st = w.finish();
    assert_eq!(w.memory_used(), 0);
    assert!(st.memory_peak <= 4096);
    assert!(st.totals.invariant_holds());
    assert!(st.totals.dropped > 0);
    assert!(d.as_secs_f64() < 5.0);
}

/// A TCP segment carried in IPv4 fragments (reordered, one duplicated) is
/// reassembled and then delivered in its stream.
#[test]
fn tcp_segment_in_ip_fragments() {
    let data = bytes(3000, 202);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 100, 200);
    c.handshake().client(&data[..1000], 1000);
    let whole = tcp(cl, sv, c.cseq, c.sseq, ACK, &data[1000..]);
    c.cseq += 2000;
    // Split the IP payload (TCP header + data) into 8-byte aligned fragments.
    let ip = &whole[14..];
    let l4 = &ip[20..];
    let mut frags = Vec::new();
    for (i, part) in l4.chunks(496).enumerate() {
        let off = i * 496;
        let more = off + part.len() < l4.len();
        let mut h = etherparse::Ipv4Header::new(
            part.len() as u16,
            64,
            etherparse::IpNumber::TCP,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
        )
        .unwrap();
        h.identification = 99;
        h.more_fragments = more;
        h.fragment_offset = ((off / 8) as u16).try_into().unwrap();
        h.header_checksum = h.calc_header_checksum();
        let mut f = whole[..14].to_vec();
        f.extend_from_slice(&h.to_bytes());
        f.extend_from_slice(part);
        frags.push(f);
    }
    frags.reverse();
    let d = frags[1].clone();
    frags.push(d);
    c.frames.extend(frags);
    c.client(b"after", 100).fin();
    let (h, stats) = run_checked(Config::default(), &c.frames, Checker::default());
    let mut want = data.clone();
    want.extend_from_slice(b"after");
    assert_eq!(h.get(0, 0).data(), want);
    assert_eq!(stats.defrag.reassembled, 1);
}
