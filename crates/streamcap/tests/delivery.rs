//! Segment delivery (`Delivery::Segments`, libnids' model) against chunk
//! delivery (Scap's): the same bytes, gaps, counters and flow records, event
//! by event from the packet without a copy, and the chunk features
//! (keeping, overlap, packet records, the cutoff, the budget) working in it.

mod support;

use std::collections::BTreeMap;
use std::ops::Range;
use streamcap::deliver::{DataReason, Delivery, Gap, StreamErrors, StreamInfo};
use streamcap::Worker;
use streamcap::{Config, FileSource, PacketSource, ReassemblyMode};
use support::*;

fn client() -> Ep {
    ep("10.0.0.1", 40000)
}
fn server() -> Ep {
    ep("10.0.0.2", 80)
}

fn segments(cfg: Config) -> Config {
    Config {
        delivery: Delivery::Segments,
        ..cfg
    }
}

/// What must not depend on the delivery: per stream, the delivered bytes,
/// the gaps and the final descriptor; per flow, its end, history and
/// descriptors (packet records go with events, which differ: see
/// `packet_records_follow_their_bytes`). Descriptors are compared without the event count, the
/// delivery parameter, the time spent in callbacks and the overlap
/// conflicts, which [`conflicts`] compares.
type Outcome = (
    BTreeMap<(u64, &'static str), (Vec<u8>, Vec<Gap>, Option<StreamInfo>)>,
    Vec<(u64, String, String, StreamInfo, StreamInfo)>,
);

fn normalise(mut i: StreamInfo) -> StreamInfo {
    i.chunks = 0;
    i.processing_ns = 0;
    i.params.delivery = Delivery::Chunks;
    i.counters.overlap_conflicts = 0;
    i.errors.0 &= !StreamErrors::OVERLAP_CONFLICT.0;
    i
}

/// Overlap conflicts of every stream, by key. A retransmission that
/// contradicts bytes already delivered is caught only while they are held:
/// chunk delivery holds the current chunk, segment delivery nothing, so
/// segment delivery may report fewer (never more); conflicts among bytes
/// not yet delivered are caught alike.
fn conflicts(r: &Recorder) -> BTreeMap<(u64, &'static str), u64> {
    r.streams
        .iter()
        .map(|(k, s)| {
            let n = s
                .closed
                .as_ref()
                .map_or(0, |i| i.counters.overlap_conflicts);
            (*k, n)
        })
        .collect()
}

/// Runs a pcap through one worker; returns the outcome and the overlap
/// conflicts.
fn run_pcap(
    name: &str,
    pcap: Vec<u8>,
    cfg: &Config,
) -> (Outcome, BTreeMap<(u64, &'static str), u64>) {
    let mut src = match FileSource::from_bytes(name, pcap) {
        Ok(s) => s,
        Err(e) => panic!("{name}: {e}"),
    };
    let mut w = Worker::new(cfg.clone(), Recorder::default());
    while let Some(p) = src.next_packet() {
        match p {
            Ok(p) => w.process(&p),
            Err(_) => break, // a damaged corpus file: compare what was read
        }
    }
    let stats = w.finish();
    assert!(stats.totals.invariant_holds(), "{name}: {:?}", stats.totals);
    let r = w.into_handler();
    let conflicts = conflicts(&r);
    let streams = r
        .streams
        .into_iter()
        .map(|(k, s)| (k, (s.data, s.gaps, s.closed.map(normalise))))
        .collect();
    let flows = r
        .flows
        .into_iter()
        .map(|(id, end, hist, o, s)| (id, end, hist, normalise(o), normalise(s)))
        .collect();
    ((streams, flows), conflicts)
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    captures(&dir)
        .into_iter()
        .filter_map(|p| Some((p.display().to_string(), std::fs::read(&p).ok()?)))
        .collect()
}

/// On generated traffic with every impairment (reordering, duplicates,
/// loss, conflicting retransmissions, fragments, IPv6, VLAN) and on every
/// corpus capture, segment delivery gives what chunk delivery gives:
/// bytes, gaps, counters, errors, statuses and flow records (overlap
/// conflicts: at most as many, see [`conflicts`]); for several
/// chunk sizes, both modes, and with packet records asked for.
#[test]
fn segments_deliver_what_chunks_deliver() {
    let mut traces = vec![
        ("impaired-1".to_string(), impaired_campus(1, 15_000, 200)),
        ("impaired-2".to_string(), impaired_campus(2, 15_000, 50)),
    ];
    traces.extend(corpus());
    let configs = [
        Config::default(),
        Config {
            chunk_size: 700,
            mode: ReassemblyMode::Strict,
            ..Config::default()
        },
        Config {
            need_packets: true,
            cutoff: Some(5000),
            ..Config::default()
        },
    ];
    let mut streams = 0;
    for (name, pcap) in &traces {
        for cfg in &configs {
            let (chunks, chunk_conflicts) = run_pcap(name, pcap.clone(), cfg);
            let (segs, seg_conflicts) = run_pcap(name, pcap.clone(), &segments(cfg.clone()));
            for (k, n) in &seg_conflicts {
                let c = chunk_conflicts.get(k).copied().unwrap_or(0);
                assert!(
                    *n <= c,
                    "{name} {k:?}: {n} conflicts with segments, {c} with chunks"
                );
            }
            assert_eq!(chunks.1.len(), segs.1.len(), "{name}: flow count");
            for (a, b) in chunks.0.iter().zip(&segs.0) {
                assert_eq!(a.0, b.0, "{name}: stream keys");
                assert!(a.1 .0 == b.1 .0, "{name} {:?}: bytes differ", a.0);
                assert_eq!(a.1 .1, b.1 .1, "{name} {:?}: gaps", a.0);
                assert_eq!(
                    format!("{:?}", a.1 .2),
                    format!("{:?}", b.1 .2),
                    "{name} {:?}: descriptor",
                    a.0
                );
            }
            assert_eq!(chunks.0.len(), segs.0.len(), "{name}: stream count");
            assert_eq!(
                format!("{:?}", chunks.1),
                format!("{:?}", segs.1),
                "{name}: flow records"
            );
            streams += chunks.0.len();
        }
    }
    assert!(streams > 1000, "only {streams} streams compared");
}

/// Whether `p` lies inside one of `frames`.
fn inside(frames: &[Range<usize>], p: usize) -> bool {
    frames.iter().any(|f| f.contains(&p))
}

/// In-order segments reach the callback straight from the packet (the
/// slice points into the frame), one event per segment, with reason
/// `Segment`, and nothing is charged to the memory budget.
#[test]
fn in_order_segments_are_delivered_in_place() {
    let req = bytes(5000, 1);
    let resp = bytes(30_000, 2);
    let mut c = Conv::new(client(), server(), 1000, 9000);
    c.handshake().client(&req, 1000).server(&resp, 1460).fin();
    let frames: Vec<Range<usize>> = c
        .frames
        .iter()
        .map(|f| f.as_ptr() as usize..f.as_ptr() as usize + f.len())
        .collect();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = seen.clone();
    let rec = Recorder {
        on_data_hook: Some(Box::new(move |_, c| {
            log.borrow_mut().push(c.data.as_ptr() as usize);
        })),
        ..Default::default()
    };
    let mut w = Worker::new(segments(Config::default()), rec);
    feed(&mut w, &c.frames, 1);
    let stats = w.finish();
    let r = w.handler();
    let (o, s) = (r.get(0, "orig"), r.get(0, "resp"));
    assert_eq!(o.data, req);
    assert_eq!(s.data, resp);
    assert_eq!(o.chunk_sizes, [1000; 5]);
    assert_eq!(s.reasons.len(), 30_000usize.div_ceil(1460));
    assert!(s.reasons.iter().all(|&r| r == DataReason::Segment));
    assert_eq!(s.chunk_offsets[1], 1460);
    assert!(seen.borrow().iter().all(|&p| inside(&frames, p)));
    assert_eq!(seen.borrow().len(), 5 + s.reasons.len());
    assert_eq!(stats.memory_peak, 0, "nothing was held");
    assert_eq!(s.closed.as_ref().map(|i| i.chunks), Some(21));
}

/// A chunk size below the segment size splits a segment into events; a
/// reordered range is delivered once the hole before it fills, and a lost
/// one is reported as the gap of the event right after it.
#[test]
fn segments_split_reorder_and_report_gaps() {
    let data = bytes(6000, 3);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    frames.swap(3, 4); // [0,1000) arrives after [1000,2000)
    frames.remove(6); // [3000,4000) is lost
    let events = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = events.clone();
    let rec = Recorder {
        on_data_hook: Some(Box::new(move |_, c| {
            log.borrow_mut().push((c.offset, c.data.len(), c.gap));
        })),
        ..Default::default()
    };
    let mut w = Worker::new(
        segments(Config {
            chunk_size: 400,
            ..Config::default()
        }),
        rec,
    );
    feed(&mut w, &frames, 1);
    w.finish();
    let o = w.handler().get(0, "orig");
    let mut want = data[..3000].to_vec();
    want.extend_from_slice(&data[4000..]);
    assert_eq!(o.data, want);
    assert!(o.reasons.iter().all(|&r| r == DataReason::Segment));
    // [0,1000) in place, then [1000,2000) and [2000,3000) from the store,
    // each split in 400-byte events; the stored [4000,5000) and
    // [5000,6000) after the hole is given up at the end, the first event
    // carrying the gap.
    let mut expect = Vec::new();
    for start in [0u64, 1000, 2000] {
        expect.extend([
            (start, 400, None),
            (start + 400, 400, None),
            (start + 800, 200, None),
        ]);
    }
    let gap = Gap {
        offset: 3000,
        len: 1000,
    };
    expect.extend([(4000, 400, Some(gap)), (4400, 400, None), (4800, 200, None)]);
    expect.extend([(5000, 400, None), (5400, 400, None), (5800, 200, None)]);
    assert_eq!(*events.borrow(), expect);
}

/// Packet records go with the event that delivers their packet's first
/// byte, with either delivery: a segment stored out of order brings its
/// record along when it is delivered, not with the event before it.
#[test]
fn packet_records_follow_their_bytes() {
    let data = bytes(3000, 8);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    frames.swap(3, 4); // [1000,2000) before [0,1000)
    for delivery in [Delivery::Chunks, Delivery::Segments] {
        let events = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let log = events.clone();
        let rec = Recorder {
            on_data_hook: Some(Box::new(move |_, c| {
                let records: Vec<u64> = c.packets.iter().map(|p| p.offset).collect();
                log.borrow_mut().push((c.offset, records));
            })),
            ..Default::default()
        };
        let cfg = Config {
            need_packets: true,
            chunk_size: 1000,
            delivery,
            ..Config::default()
        };
        let mut w = Worker::new(cfg, rec);
        feed(&mut w, &frames, 1);
        let stats = w.finish();
        assert_eq!(
            *events.borrow(),
            [(0, vec![0]), (1000, vec![1000]), (2000, vec![2000])],
            "{delivery}"
        );
        assert_eq!(w.handler().get(0, "orig").data, data);
        assert!(stats.totals.invariant_holds());
    }
}

/// `keep_chunk` with segments: the kept segment is copied and the next
/// event holds it followed by the new bytes (as with chunks), unless the
/// budget has no room for the copy; `overlap` repeats the last bytes of
/// each event at the start of the next.
#[test]
fn keep_and_overlap_with_segments() {
    let data = bytes(3000, 4);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 500);
    let mut calls = 0;
    let rec = Recorder {
        on_data_hook: Some(Box::new(move |s, _| {
            calls += 1;
            if calls <= 2 {
                s.keep_chunk();
            }
        })),
        ..Default::default()
    };
    let mut w = Worker::new(segments(Config::default()), rec);
    feed(&mut w, &c.frames, 1);
    w.finish();
    let o = w.handler().get(0, "orig");
    assert_eq!(o.data, data);
    assert_eq!(o.full_chunks[0], &data[..500]);
    assert_eq!(o.full_chunks[1], &data[..1000], "kept + new");
    assert_eq!(o.full_chunks[2], &data[..1500], "kept twice + new");
    assert_eq!(o.full_chunks[3], &data[1500..2000], "released");

    // A keep the budget cannot hold is not kept: the next event starts at
    // the new bytes, and the refusal is counted.
    let rec = Recorder {
        on_data_hook: Some(Box::new(|s, _| s.keep_chunk())),
        ..Default::default()
    };
    let cfg = Config {
        memory_size: 100,
        ..Config::default()
    };
    let mut w = Worker::new(segments(cfg), rec);
    feed(&mut w, &c.frames, 1);
    let stats = w.finish();
    let o = w.handler().get(0, "orig");
    assert_eq!(o.data, data);
    assert_eq!(o.chunk_offsets[..2], [0, 500]);
    assert_eq!(o.full_chunks[1], &data[500..1000]);
    assert!(stats.memory_refusals >= 1);

    let (r, _) = run_worker(
        segments(Config {
            overlap: 100,
            ..Config::default()
        }),
        &c.frames,
    );
    let o = r.get(0, "orig");
    assert_eq!(o.data, data);
    assert_eq!(o.chunk_offsets, [0, 400, 900, 1400, 1900, 2400]);
    assert_eq!(o.full_chunks[1], &data[400..1000]);
}

/// With packet records, each event carries the record of its segment; a
/// cutoff ends delivery inside a segment; a callback's `discard` stops it.
#[test]
fn packets_cutoff_and_discard_with_segments() {
    let data = bytes(5000, 5);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).fin();
    let (r, _) = run_worker(
        segments(Config {
            need_packets: true,
            cutoff: Some(2500),
            ..Config::default()
        }),
        &c.frames,
    );
    let o = r.get(0, "orig");
    assert_eq!(o.data, &data[..2500]);
    assert_eq!(o.chunk_sizes, [1000, 1000, 500]);
    assert_eq!(o.packets_seen, 3);
    let info = o.closed.as_ref().expect("closed");
    assert_eq!(
        (info.counters.captured, info.counters.discarded),
        (2500, 2500)
    );
    assert!(info.cutoff_exceeded);

    let rec = Recorder {
        on_data_hook: Some(Box::new(|s, _| s.discard())),
        ..Default::default()
    };
    let mut w = Worker::new(segments(Config::default()), rec);
    feed(&mut w, &c.frames, 1);
    w.finish();
    let o = w.handler().get(0, "orig");
    assert_eq!(o.data, &data[..1000]);
    let info = o.closed.as_ref().expect("closed");
    assert_eq!(
        (info.counters.captured, info.counters.discarded),
        (1000, 4000)
    );
}

/// UDP datagrams are delivered one event each, other protocols with
/// reason `Packet`.
#[test]
fn datagrams_with_segments() {
    let (a, b) = (ep("10.1.1.1", 5353), ep("10.1.1.2", 53));
    let frames = vec![
        udp(a, b, b"query1"),
        udp(b, a, b"answer1"),
        udp(a, b, b"query2"),
    ];
    let (r, _) = run_worker(segments(Config::default()), &frames);
    let o = r.get(0, "orig");
    assert_eq!(o.full_chunks, [b"query1".to_vec(), b"query2".to_vec()]);
    assert_eq!(o.reasons, [DataReason::Segment; 2]);

    let mut icmp = Vec::new();
    etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
        .icmpv4_echo_request(7, 1)
        .write(&mut icmp, b"ping")
        .expect("builds");
    let (r, _) = run_worker(segments(Config::default()), &[icmp.clone(), icmp]);
    assert_eq!(r.get(0, "orig").reasons, [DataReason::Packet; 2]);
}

/// The opposite direction's descriptor (built when a callback asks for
/// it) is the other direction's state at that moment.
#[test]
fn opposite_descriptor_is_built_on_demand() {
    let req = bytes(3000, 6);
    let resp = bytes(2000, 7);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&req, 1000).server(&resp, 1000);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = seen.clone();
    let rec = Recorder {
        on_data_hook: Some(Box::new(move |s, _| {
            let o = s.opposite();
            log.borrow_mut()
                .push((s.direction(), o.direction, o.counters.captured));
        })),
        ..Default::default()
    };
    let mut w = Worker::new(segments(Config::default()), rec);
    feed(&mut w, &c.frames, 1);
    w.finish();
    use streamcap::flow::Direction::{Orig, Resp};
    assert_eq!(
        *seen.borrow(),
        [
            (Orig, Resp, 0),
            (Orig, Resp, 0),
            (Orig, Resp, 0),
            (Resp, Orig, 3000),
            (Resp, Orig, 3000)
        ]
    );
}
