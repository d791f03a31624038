//! The decoupled analysis stage: a handler run on analysis threads sees the
//! events it would see inline, and its decisions reach the capture stage.

mod support;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use streamcap::deliver::{Chunk, DataReason, FlowEnd, Handler, Stream};
use streamcap::dispatch::analysis::Decoupled;
use streamcap::flow::Direction;
use streamcap::source::FileSource;
use streamcap::{Capture, Config, GlobalStats};
use support::*;

/// What one stream produced, in a form two runs can compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Seen {
    events: Vec<String>,
    digest: Vec<u8>,
}

/// Records every event per stream (creation, each chunk's offsets, gap,
/// reason and packets, the close with the final counters, the flow end),
/// and hashes the bytes.
#[derive(Default)]
struct Log {
    streams: BTreeMap<(u64, &'static str), Seen>,
    hashers: BTreeMap<(u64, &'static str), Sha256>,
    flows: Vec<String>,
    /// Keep every chunk of port-80 responses (`keep_chunk`).
    keep_http: bool,
}

fn id(s: &Stream<'_, u64>) -> (u64, &'static str) {
    (s.info().conn_id, s.direction().name())
}

impl Handler for Log {
    type State = u64;
    fn on_create(&mut self, s: &mut Stream<'_, u64>) {
        let e = format!("create {:?}", s.src());
        self.streams.entry(id(s)).or_default().events.push(e);
    }
    fn on_data(&mut self, s: &mut Stream<'_, u64>, c: &Chunk<'_>) {
        *s.state() += c.new_data().len() as u64;
        let e = format!(
            "data off {} len {} new {} gap {:?} reason {:?} packets {}",
            c.offset,
            c.data.len(),
            c.new_from,
            c.gap,
            c.reason,
            c.packets.len()
        );
        self.streams.entry(id(s)).or_default().events.push(e);
        self.hashers.entry(id(s)).or_default().update(c.new_data());
        if self.keep_http && s.src().1 == 80 && c.reason == DataReason::Full {
            s.keep_chunk();
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, u64>) {
        let c = s.info().counters;
        assert!(c.invariant_holds(), "{c:?}");
        let seen = *s.state();
        assert_eq!(seen, c.captured);
        let e = format!("close {c:?} {:?} {:?}", s.info().status, s.info().errors);
        self.streams.entry(id(s)).or_default().events.push(e);
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, u64>) {
        let (o, r) = (*f.state(Direction::Orig), *f.state(Direction::Resp));
        self.flows.push(format!(
            "{:?} {} {} {} {o} {r}",
            f.orig_endpoint(),
            f.history(),
            f.first_ts().0,
            f.last_ts().0,
        ));
    }
}

impl Log {
    fn done(mut self) -> (BTreeMap<(u64, &'static str), Seen>, Vec<String>) {
        for (k, h) in std::mem::take(&mut self.hashers) {
            self.streams.entry(k).or_default().digest = h.finalize().to_vec();
        }
        self.flows.sort();
        (self.streams, self.flows)
    }
}

type Outcome = (
    BTreeMap<(u64, &'static str), Seen>,
    Vec<String>,
    GlobalStats,
);

fn inline(cfg: &Config, bytes: &[u8], keep: bool) -> Outcome {
    let mut src = FileSource::from_bytes("test.pcap", bytes.to_vec()).expect("capture");
    let log = Log {
        keep_http: keep,
        ..Log::default()
    };
    let r = Capture::builder()
        .config(cfg.clone())
        .build()
        .run(&mut src, log);
    let (s, f) = r.handler.done();
    (s, f, r.stats)
}

fn decoupled(cfg: &Config, bytes: &[u8], threads: usize, keep: bool) -> Outcome {
    let mut src = FileSource::from_bytes("test.pcap", bytes.to_vec()).expect("capture");
    let stage = Decoupled::spawn(threads, |_| Log {
        keep_http: keep,
        ..Log::default()
    })
    .expect("threads");
    let r = Capture::builder()
        .config(cfg.clone())
        .build()
        .run(&mut src, stage);
    let (logs, stats) = r.handler.finish();
    assert_eq!(stats.threads, threads);
    let (mut streams, mut flows) = (BTreeMap::new(), Vec::new());
    for l in logs {
        let (s, f) = l.done();
        streams.extend(s);
        flows.extend(f);
    }
    flows.sort();
    (streams, flows, r.stats)
}

fn same(a: &Outcome, b: &Outcome, what: &str) {
    assert_eq!(a.0.len(), b.0.len(), "{what}: streams");
    for (k, v) in &a.0 {
        assert_eq!(Some(v), b.0.get(k), "{what}: stream {k:?}");
    }
    assert_eq!(a.1, b.1, "{what}: flow ends");
    assert_eq!(a.2.totals, b.2.totals, "{what}: totals");
    assert_eq!(a.2.packets, b.2.packets, "{what}: packets");
}

#[test]
fn decoupled_events_equal_inline_events() {
    let sample = std::fs::read("../../samples/sample.pcap").expect("sample");
    let impaired = impaired_campus(7, 20_000, 64);
    for (name, bytes) in [("sample", &sample), ("impaired campus", &impaired)] {
        for cfg in [
            Config::default(),
            Config {
                chunk_size: 1000,
                overlap: 100,
                need_packets: true,
                ..Config::default()
            },
            Config {
                delivery: streamcap::deliver::Delivery::Segments,
                ..Config::default()
            },
            Config {
                flush_timeout: Some(1_000_000),
                chunk_size: 4096,
                ..Config::default()
            },
        ] {
            let a = inline(&cfg, bytes, false);
            assert!(a.2.totals.captured > 0, "{name}");
            for threads in [1, 3] {
                let b = decoupled(&cfg, bytes, threads, false);
                same(&a, &b, &format!("{name}, {threads} threads, {cfg:?}"));
            }
        }
    }
}

#[test]
fn kept_chunks_are_joined_as_inline() {
    let sample = std::fs::read("../../samples/sample.pcap").expect("sample");
    let cfg = Config {
        chunk_size: 512,
        ..Config::default()
    };
    // Kept bytes are held by the analysis thread, not by the engine, so a
    // retransmission that contradicts them is not flagged (as with segment
    // delivery): everything else is the same.
    let strip = |mut o: Outcome| {
        for s in o.0.values_mut() {
            for e in &mut s.events {
                *e = e
                    .replace("overlap_conflicts: 1", "overlap_conflicts: 0")
                    .replace("[\"overlap_conflict\"]", "[]");
            }
        }
        o.2.totals.overlap_conflicts = 0;
        o
    };
    let a = strip(inline(&cfg, &sample, true));
    let b = strip(decoupled(&cfg, &sample, 2, true));
    same(&a, &b, "keep_chunk");
    // Some chunk was in fact joined to a kept one.
    assert!(a.0.values().any(|s| s
        .events
        .iter()
        .any(|e| e.contains("new 512") || e.contains("new 1024"))));
}

#[test]
fn corpus_captures_give_the_same_events() {
    let Some(dir) = corpus_dir() else { return };
    let mut n = 0;
    for f in captures(&dir).iter().take(40) {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        if FileSource::from_bytes("test.pcap", bytes.clone()).is_err() {
            continue;
        }
        let cfg = Config::default();
        let a = inline(&cfg, &bytes, false);
        let b = decoupled(&cfg, &bytes, 2, false);
        same(&a, &b, &f.display().to_string());
        n += 1;
    }
    eprintln!("{n} corpus captures compared");
}

/// Steers streams from its callbacks: a cutoff of 100 bytes for port-80
/// requests at creation, `discard` for port-80 responses at their first
/// data event, priority 5 for port 443.
#[derive(Default)]
struct Steer {
    closed: BTreeMap<(u64, &'static str), streamcap::deliver::StreamInfo>,
}

impl Handler for Steer {
    type State = ();
    fn on_create(&mut self, s: &mut Stream<'_, ()>) {
        if s.dst().1 == 80 {
            s.set_cutoff(Some(100));
        }
        if s.dst().1 == 443 || s.src().1 == 443 {
            s.set_priority(5);
        }
    }
    fn on_data(&mut self, s: &mut Stream<'_, ()>, _c: &Chunk<'_>) {
        if s.src().1 == 80 {
            s.discard();
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        assert!(s.info().counters.invariant_holds());
        self.closed
            .insert((s.info().conn_id, s.direction().name()), s.info().clone());
    }
}

/// Frame `i` (0-based) of a capture, as a source would hand it over.
fn packet(i: usize, ts: streamcap::Timestamp, f: &[u8]) -> streamcap::RawPacket<'_> {
    streamcap::RawPacket {
        ts,
        link: streamcap::LinkType::ETHERNET,
        data: f,
        orig_len: f.len() as u32,
        record: i as u64 + 1,
        interface: 0,
    }
}

fn frames_of(bytes: &[u8]) -> Vec<(streamcap::Timestamp, Vec<u8>)> {
    let mut src = FileSource::from_bytes("test.pcap", bytes.to_vec()).expect("capture");
    let mut out = Vec::new();
    while let Some(Ok(p)) = streamcap::PacketSource::next_packet(&mut src) {
        out.push((p.ts, p.data.to_vec()));
    }
    out
}

/// With the analysis thread settled after every packet, each decision
/// applies from the packet after the one whose event it answered: for
/// decisions taken at packet boundaries (segments of at most one chunk),
/// exactly what the inline run does.
#[test]
fn decisions_apply_from_the_next_packet() {
    let sample = std::fs::read("../../samples/sample.pcap").expect("sample");
    let cfg = Config {
        chunk_size: 1,
        ..Config::default()
    };
    let frames = frames_of(&sample);
    let feed = |w: &mut dyn FnMut(&streamcap::RawPacket<'_>)| {
        for (i, (ts, f)) in frames.iter().enumerate() {
            w(&packet(i, *ts, f));
        }
    };
    let mut inline = streamcap::Worker::new(cfg.clone(), Steer::default());
    feed(&mut |p| inline.process(p));
    inline.finish();
    let stage = Decoupled::spawn(1, |_| Steer::default()).expect("thread");
    let mut w = streamcap::Worker::new(cfg.clone(), stage);
    feed(&mut |p| {
        w.process(p);
        w.handler_mut().settle();
    });
    w.finish();
    let (mut steers, stats) = w.into_handler().finish();
    assert!(stats.decisions > 0);
    let got = steers.pop().expect("one").closed;
    let want = inline.into_handler().closed;
    assert_eq!(got.len(), want.len());
    let mut discarded = 0;
    for (k, a) in &want {
        let b = &got[k];
        // A chunk of one byte is delivered inside the packet that brings
        // it, so inline the discard stops that packet's other bytes; here
        // they are captured, and the discard applies from the next packet.
        if a.is_discarded() && a.counters.discarded > 0 {
            discarded += 1;
            assert!(b.is_discarded(), "{k:?}");
            assert!(b.counters.captured >= a.counters.captured, "{k:?}");
            assert!(
                b.counters.discarded > 0 || b.counters.pkts_captured <= 1,
                "{k:?}"
            );
            continue;
        }
        assert_eq!(a.params, b.params, "{k:?}");
        if a.errors
            .contains(streamcap::deliver::StreamErrors::NO_HANDSHAKE)
        {
            // Picked up mid-stream: the packet that created the stream
            // carried payload, captured before `on_create`'s cutoff came
            // back.
            assert!(b.counters.captured >= a.counters.captured, "{k:?}");
            assert_eq!(a.counters.stream_bytes, b.counters.stream_bytes, "{k:?}");
            continue;
        }
        assert_eq!(a.counters, b.counters, "{k:?} {a:?} {b:?}");
    }
    assert!(discarded > 0);
    let p5 = got.values().filter(|i| i.params.priority == 5).count();
    assert!(p5 > 0);
}

/// Free-running (no settling), decisions arrive later but still apply, and
/// every stream's accounting holds.
#[test]
fn free_running_decisions_keep_the_accounting_exact() {
    let bytes = impaired_campus(3, 20_000, 64);
    let run = |stage: bool| -> (
        BTreeMap<(u64, &'static str), streamcap::deliver::StreamInfo>,
        GlobalStats,
    ) {
        let mut src = FileSource::from_bytes("t.pcap", bytes.clone()).expect("capture");
        let cap = Capture::builder().chunk_size(1000).build();
        if stage {
            let d = Decoupled::spawn(2, |_| Steer::default()).expect("threads");
            let r = cap.run(&mut src, d);
            let mut all = BTreeMap::new();
            for s in r.handler.finish().0 {
                all.extend(s.closed);
            }
            (all, r.stats)
        } else {
            let r = cap.run(&mut src, Steer::default());
            (r.handler.closed, r.stats)
        }
    };
    let (a, sa) = run(false);
    let (b, sb) = run(true);
    assert_eq!(a.len(), b.len());
    assert!(sb.totals.invariant_holds());
    assert_eq!(sa.totals.stream_bytes, sb.totals.stream_bytes);
    // Decisions apply later, so no less is captured, and they do apply.
    assert!(sb.totals.captured >= sa.totals.captured);
    assert!(sb.totals.discarded > 0);
    for (k, i) in &b {
        assert!(i.counters.invariant_holds(), "{k:?}");
    }
}

/// A handler that panics on its first data event.
#[derive(Default)]
struct Boom;

impl Handler for Boom {
    type State = ();
    fn on_data(&mut self, _s: &mut Stream<'_, ()>, _c: &Chunk<'_>) {
        panic!("the analysis failed");
    }
}

/// The panic of one of several analysis threads reaches the capture
/// stage (settling, or before the worker's next packet) instead of
/// leaving it waiting or losing every later byte in silence.
#[test]
fn an_analysis_threads_panic_reaches_the_capture_stage() {
    let sample = std::fs::read("../../samples/sample.pcap").expect("sample");
    let frames = frames_of(&sample);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let stage = Decoupled::spawn(2, |_| Boom).expect("threads");
            let mut w = streamcap::Worker::new(Config::default(), stage);
            for (i, (ts, f)) in frames.iter().enumerate() {
                w.process(&packet(i, *ts, f));
            }
            w.finish();
            w.handler_mut().settle();
        }));
        let _ = tx.send(outcome.is_err());
    });
    let panicked = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the capture stage did not hang");
    assert!(panicked);
}

/// Every chunk's memory comes back: after the run, once the analysis has
/// handled everything and the worker has taken back what it returned,
/// nothing is left charged to the budget.
#[test]
fn the_budget_is_whole_again_after_a_decoupled_run() {
    let bytes = impaired_campus(5, 10_000, 64);
    let frames = frames_of(&bytes);
    let cfg = Config {
        chunk_size: 700,
        overlap: 100,
        need_packets: true,
        ..Config::default()
    };
    let stage = Decoupled::spawn(2, |_| Log {
        keep_http: true,
        ..Log::default()
    })
    .expect("threads");
    let mut w = streamcap::Worker::new(cfg, stage);
    for (i, (ts, f)) in frames.iter().enumerate() {
        w.process(&packet(i, *ts, f));
    }
    let stats = w.finish();
    assert!(stats.memory_peak > 0);
    w.handler_mut().settle();
    // A frame that is not IP: the worker takes the returns back first.
    let junk = [0u8; 14];
    w.process(&packet(frames.len(), streamcap::Timestamp::ZERO, &junk));
    assert_eq!(w.memory_used(), 0);
}
