//! Known-answer tests of the stream engine on hand-built traffic.

mod support;

use streamcap::deliver::{DataReason, EndReason, StreamErrors, StreamStatus};
use streamcap::Worker;
use streamcap::{Config, OverlapPolicy, ReassemblyMode};
use support::*;

fn client() -> Ep {
    ep("10.0.0.1", 40000)
}
fn server() -> Ep {
    ep("10.0.0.2", 80)
}

#[test]
fn in_order_both_directions_with_chunks() {
    let req = bytes(5000, 1);
    let resp = bytes(70_000, 2);
    let mut c = Conv::new(client(), server(), 1000, 9000);
    c.handshake().client(&req, 1460).server(&resp, 1460).fin();
    let cfg = Config {
        chunk_size: 16 << 10,
        ..Config::default()
    };
    let (r, stats) = run_worker(cfg, &c.frames);
    let o = r.get(0, "orig");
    let s = r.get(0, "resp");
    assert_eq!(o.data, req);
    assert_eq!(s.data, resp);
    // 70000 bytes = 4 full chunks of 16 KiB + the rest at termination.
    assert_eq!(s.reasons[..4], [DataReason::Full; 4]);
    assert_eq!(*s.reasons.last().unwrap(), DataReason::Termination);
    assert!(s.chunk_sizes[..4].iter().all(|&n| n == 16 << 10));
    let info = s.closed.as_ref().unwrap();
    assert_eq!(info.counters.stream_bytes, 70_000);
    assert_eq!(info.counters.captured, 70_000);
    assert_eq!(info.status, StreamStatus::Closed(EndReason::Fin));
    assert!(info.errors.is_empty(), "{:?}", info.errors);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows[0].1, "fin");
    assert_eq!(r.flows[0].2, "ShADdFf");
    assert_eq!(stats.flows_created[0], 1);
    // Events: creation of both, closes orig then resp, then the flow.
    assert_eq!(
        r.order,
        [
            "create 0 orig",
            "create 0 resp",
            "close 0 orig",
            "close 0 resp",
            "flow 0"
        ]
    );
}

#[test]
fn reordering_and_duplicates_are_repaired() {
    let data = bytes(20_000, 3);
    let mut c = Conv::new(client(), server(), 5, 7);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    // Swap pairs, duplicate some, reverse a window.
    frames[4..9].reverse();
    let dup = frames[10].clone();
    frames.insert(15, dup.clone());
    frames.push(dup);
    let (r, _) = run_worker(Config::default(), &frames);
    let o = r.get(0, "orig");
    assert_eq!(o.data, data);
    let info = o.closed.as_ref().unwrap();
    assert_eq!(info.counters.stream_bytes, 20_000);
    assert_eq!(info.counters.retransmitted, 2000);
    assert_eq!(info.counters.missing, 0);
    assert!(!info.errors.contains(StreamErrors::GAP));
}

#[test]
fn lost_segment_becomes_a_counted_gap() {
    let data = bytes(10_000, 4);
    let mut c = Conv::new(client(), server(), 100, 200);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    frames.remove(3 + 4); // bytes 4000..5000 never on the wire
    let (r, _) = run_worker(Config::default(), &frames);
    let o = r.get(0, "orig");
    let mut want = data[..4000].to_vec();
    want.extend_from_slice(&data[5000..]);
    assert_eq!(o.data, want);
    assert_eq!(
        o.gaps,
        [streamcap::deliver::Gap {
            offset: 4000,
            len: 1000
        }]
    );
    let info = o.closed.as_ref().unwrap();
    assert_eq!(info.counters.missing, 1000);
    assert_eq!(info.counters.stream_bytes, 10_000);
    assert!(info.errors.contains(StreamErrors::GAP));
}

#[test]
fn ack_past_a_hole_releases_waiting_data_in_fast_mode_only() {
    let data = bytes(3000, 5);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 0, 0);
    c.handshake();
    let base = c.cseq;
    c.frames
        .push(tcp(cl, sv, base + 1000, 1, ACK, &data[1000..2000]));
    // The server acknowledges everything: the first 1000 bytes were lost by the capture.
    c.frames.push(tcp(sv, cl, 1, base + 2000, ACK, b""));
    for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
        let mut w = Worker::new(
            Config {
                mode,
                chunk_size: 100,
                ..Config::default()
            },
            Recorder::default(),
        );
        feed(&mut w, &c.frames, 1);
        let delivered = w
            .handler()
            .streams
            .values()
            .map(|s| s.data.len())
            .sum::<usize>();
        if mode == ReassemblyMode::Fast {
            assert_eq!(delivered, 1000, "fast mode delivers what is there");
        } else {
            assert_eq!(delivered, 0, "strict mode holds the hole");
        }
        w.finish();
        let o = w.handler().get(0, "orig");
        assert_eq!(o.data, &data[1000..2000]);
        assert_eq!(o.closed.as_ref().unwrap().counters.missing, 1000);
    }
}

/// An acknowledgment that covers only part of a hole gives up only that
/// part in fast mode: the receiver has the bytes before the ACK (the
/// capture missed them) but not the ones after it, and their retransmission,
/// arriving later at the ACK point, is stream data. Fast mode then captures
/// exactly what strict mode does.
#[test]
fn ack_inside_a_hole_gives_up_only_what_it_acknowledges() {
    let data = bytes(3000, 6);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 0, 0);
    c.handshake();
    let base = c.cseq;
    // [0, 1000) and [1000, 2000) are missing from the capture; [2000, 3000)
    // arrives and waits out of order.
    c.frames
        .push(tcp(cl, sv, base + 2000, 1, ACK, &data[2000..3000]));
    // The server has the first 1000 bytes only.
    c.frames.push(tcp(sv, cl, 1, base + 1000, ACK, b""));
    // The client retransmits the second 1000 at the ACK point; the server
    // then has everything.
    c.frames
        .push(tcp(cl, sv, base + 1000, 1, ACK, &data[1000..2000]));
    c.frames.push(tcp(sv, cl, 1, base + 3000, ACK, b""));
    let mut captured = Vec::new();
    for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
        let cfg = Config {
            mode,
            chunk_size: 100,
            ..Config::default()
        };
        let (r, _) = run_worker(cfg, &c.frames);
        let o = r.get(0, "orig");
        assert_eq!(o.data, &data[1000..3000], "{mode:?}");
        let counters = o.closed.as_ref().unwrap().counters;
        assert_eq!(counters.missing, 1000, "{mode:?}");
        captured.push(counters.captured);
    }
    assert_eq!(captured, [2000, 2000]);
}

/// Checks, flow by flow and direction by direction, that fast mode captures
/// at least what strict mode captures of the capture `pcap` (named `name`).
fn assert_fast_captures_at_least_strict(name: &str, pcap: &[u8]) -> usize {
    use std::collections::HashMap;
    use streamcap::deliver::{FlowEnd, Handler};
    use streamcap::flow::Direction;
    use streamcap::source::{FileSource, PacketSource};

    #[derive(Default)]
    struct Captured(HashMap<String, [u64; 2]>);
    impl Handler for Captured {
        type State = ();
        fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
            let key = format!("{:?} {:?}", f.key(), f.stream(Direction::Orig).start);
            let c = |d| f.stream(d).counters.captured;
            self.0.insert(key, [c(Direction::Orig), c(Direction::Resp)]);
        }
    }
    let run = |mode| {
        let cfg = Config {
            mode,
            cutoff: None,
            ..Config::default()
        };
        let mut w = Worker::new(cfg, Captured::default());
        if let Ok(mut src) = FileSource::from_bytes(name, pcap.to_vec()) {
            while let Some(Ok(p)) = src.next_packet() {
                w.process(&p);
            }
        }
        w.finish();
        w.into_handler().0
    };
    let (fast, strict) = (run(ReassemblyMode::Fast), run(ReassemblyMode::Strict));
    for (key, s) in &strict {
        let f = fast
            .get(key)
            .unwrap_or_else(|| panic!("{name}: {key}: not in fast mode"));
        assert!(
            f[0] >= s[0] && f[1] >= s[1],
            "{name}: {key}: fast {f:?}, strict {s:?}"
        );
    }
    strict.len()
}

/// Fast mode never captures less of a stream than strict mode, on an
/// impaired generated trace (loss, reordering, duplicates, conflicting
/// retransmissions).
#[test]
fn fast_mode_captures_at_least_what_strict_mode_captures() {
    let flows = assert_fast_captures_at_least_strict("impaired", &impaired_campus(23, 30_000, 300));
    assert!(flows > 500, "{flows} flows");
}

/// The same on every capture of the corpus, where partial acknowledgments
/// of holes occur (`tcp-edge/zeek__tcp-reassembly.pcap`,
/// `tcp-edge/suri__tcp-rst-unacked-post-gap.pcap`).
#[test]
fn fast_mode_captures_at_least_what_strict_mode_captures_on_the_corpus() {
    let Some(dir) = corpus_dir() else { return };
    for f in captures(&dir) {
        if let Ok(bytes) = std::fs::read(&f) {
            assert_fast_captures_at_least_strict(&f.display().to_string(), &bytes);
        }
    }
}

/// The classic target-based overlap case: with a hole at the front, an
/// out-of-order segment is later overlapped by segments with other bytes.
#[test]
fn overlap_policies_decide_undelivered_bytes() {
    let (cl, sv) = (client(), server());
    // [2,6) "AAAA" arrives first (a hole before it), then [4,8) "BBBB" (left
    // overlap: old data begins first), then [0,4) "CCCC" (right overlap: new
    // data begins first and ends inside what is stored).
    let expect = [
        (OverlapPolicy::First, "CCAAAABB"),
        (OverlapPolicy::Last, "CCCCBBBB"),
        (OverlapPolicy::Linux, "CCCCAABB"),
        (OverlapPolicy::Bsd, "CCCCAABB"),
        (OverlapPolicy::Windows, "CCCCAABB"),
        (OverlapPolicy::Solaris, "CCCCBBBB"),
    ];
    for (policy, want) in expect {
        let mut c = Conv::new(cl, sv, 0, 0);
        c.handshake();
        let b = c.cseq;
        c.frames.push(tcp(cl, sv, b + 2, 1, ACK, b"AAAA"));
        c.frames.push(tcp(cl, sv, b + 4, 1, ACK, b"BBBB"));
        c.frames.push(tcp(cl, sv, b, 1, ACK, b"CCCC"));
        let (r, _) = run_worker(
            Config {
                policy,
                ..Config::default()
            },
            &c.frames,
        );
        let o = r.get(0, "orig");
        assert_eq!(String::from_utf8_lossy(&o.data), want, "{policy}");
        let info = o.closed.as_ref().unwrap();
        assert_eq!(info.counters.overlap_conflicts, 2, "{policy}");
        assert!(info.errors.contains(StreamErrors::OVERLAP_CONFLICT));
        assert_eq!(info.counters.stream_bytes, 8);
    }
}

#[test]
fn delivered_bytes_are_final_and_contradictions_flagged() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 0, 0);
    c.handshake();
    let b = c.cseq;
    c.frames.push(tcp(cl, sv, b, 1, ACK, b"hello"));
    c.frames.push(tcp(cl, sv, b, 1, ACK, b"HELLO"));
    for policy in OverlapPolicy::ALL {
        let (r, _) = run_worker(
            Config {
                policy,
                ..Config::default()
            },
            &c.frames,
        );
        let o = r.get(0, "orig");
        assert_eq!(o.data, b"hello");
        assert_eq!(o.closed.as_ref().unwrap().counters.overlap_conflicts, 1);
    }
}

#[test]
fn sequence_wrap_around() {
    let data = bytes(50_000, 6);
    let mut c = Conv::new(client(), server(), u32::MAX - 20_000, u32::MAX - 3);
    c.handshake()
        .client(&data, 1448)
        .server(&data[..9000], 1448)
        .fin();
    let mut frames = c.frames.clone();
    frames[10..20].reverse();
    let (r, _) = run_worker(Config::default(), &frames);
    assert_eq!(r.get(0, "orig").data, data);
    assert_eq!(r.get(0, "resp").data, &data[..9000]);
    assert_eq!(r.flows[0].1, "fin");
}

#[test]
fn cutoff_stops_copying_and_counts_the_rest() {
    let data = bytes(30_000, 7);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1460).fin();
    let (r, stats) = run_worker(
        Config {
            cutoff: Some(10_000),
            ..Config::default()
        },
        &c.frames,
    );
    let o = r.get(0, "orig");
    assert_eq!(o.data, &data[..10_000]);
    assert_eq!(*o.reasons.last().unwrap(), DataReason::Cutoff);
    let info = o.closed.as_ref().unwrap();
    assert!(info.cutoff_exceeded);
    assert_eq!(info.counters.captured, 10_000);
    assert_eq!(info.counters.discarded, 20_000);
    assert_eq!(info.counters.stream_bytes, 30_000);
    assert_eq!(
        info.status,
        StreamStatus::Closed(EndReason::Fin),
        "the stream stays until it ends"
    );
    assert_eq!(stats.totals.discarded, 20_000);
}

#[test]
fn cutoff_zero_is_statistics_only() {
    let data = bytes(8000, 8);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).server(&data, 500).fin();
    let (r, stats) = run_worker(
        Config {
            cutoff: Some(0),
            ..Config::default()
        },
        &c.frames,
    );
    assert!(r.streams.values().all(|s| s.reasons.is_empty()));
    let o = r.get(0, "orig").closed.clone().unwrap();
    assert_eq!(
        (
            o.counters.stream_bytes,
            o.counters.discarded,
            o.counters.captured
        ),
        (8000, 8000, 0)
    );
    assert_eq!(o.counters.pkts_discarded, 8);
    assert_eq!(stats.memory_peak, 0, "nothing copied");
}

#[test]
fn per_direction_cutoffs() {
    let data = bytes(4000, 9);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).server(&data, 1000).fin();
    let cfg = Config {
        cutoff_orig: Some(100),
        cutoff_resp: Some(2500),
        ..Config::default()
    };
    let (r, _) = run_worker(cfg, &c.frames);
    assert_eq!(r.get(0, "orig").data, &data[..100]);
    assert_eq!(r.get(0, "resp").data, &data[..2500]);
}

#[test]
fn strict_mode_needs_a_handshake_fast_mode_picks_up() {
    let data = bytes(3000, 10);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.client(&data, 1000);
    let (r, _) = run_worker(
        Config {
            mode: ReassemblyMode::Fast,
            ..Config::default()
        },
        &c.frames,
    );
    let o = r.get(0, "orig");
    assert_eq!(o.data, data);
    assert!(o
        .closed
        .as_ref()
        .unwrap()
        .errors
        .contains(StreamErrors::NO_HANDSHAKE));
    let (r, _) = run_worker(
        Config {
            mode: ReassemblyMode::Strict,
            ..Config::default()
        },
        &c.frames,
    );
    let o = r.get(0, "orig");
    assert!(o.data.is_empty());
    let info = o.closed.as_ref().unwrap();
    assert_eq!(info.counters.discarded, 3000);
    assert!(info.errors.contains(StreamErrors::NO_HANDSHAKE));
}

#[test]
fn syn_ack_first_makes_its_receiver_the_initiator() {
    let (cl, sv) = (client(), server());
    let frames = vec![
        tcp(sv, cl, 500, 101, SYN | ACK, b""),
        tcp(cl, sv, 100, 0, SYN, b""),
        tcp(cl, sv, 101, 501, ACK, b"GET /"),
        tcp(sv, cl, 501, 106, ACK, b"200 OK"),
    ];
    let (r, _) = run_worker(
        Config {
            mode: ReassemblyMode::Strict,
            ..Config::default()
        },
        &frames,
    );
    assert_eq!(r.get(0, "orig").data, b"GET /");
    assert_eq!(r.get(0, "resp").data, b"200 OK");
    let (_, _, _, o, _) = &r.flows[0];
    assert_eq!(o.direction, streamcap::flow::Direction::Orig);
}

#[test]
fn rst_closes_and_out_of_window_rst_is_ignored() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"abc", 10);
    let mut frames = c.frames.clone();
    frames.push(tcp(sv, cl, 2 + 1_000_000_000, 0, RST, b""));
    frames.push(tcp(cl, sv, c.cseq, 0, ACK, b"def"));
    let (r, stats) = run_worker(Config::default(), &frames);
    assert_eq!(stats.invalid_rsts, 1);
    assert_eq!(r.flows[0].1, "eof");
    assert_eq!(r.get(0, "orig").data, b"abcdef");
    frames.push(tcp(sv, cl, c.sseq, 0, RST, b""));
    let (r, _) = run_worker(Config::default(), &frames);
    assert_eq!(r.flows[0].1, "rst");
}

#[test]
fn reused_five_tuple_after_close_is_a_new_connection() {
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(b"first", 10).fin();
    let mut c2 = Conv::new(client(), server(), 777_777, 888_888);
    c2.handshake().client(b"second", 10).fin();
    let mut frames = c.frames.clone();
    frames.extend(c2.frames.clone());
    let (r, stats) = run_worker(Config::default(), &frames);
    assert_eq!(r.flows.len(), 2);
    assert_eq!(r.get(0, "orig").data, b"first");
    assert_eq!(r.get(1, "orig").data, b"second");
    assert_eq!(r.flows[0].1, "fin");
    assert_eq!(r.flows[1].1, "fin");
    assert_eq!(stats.flows_created[0], 2);
    // The final ACK of the first connection was counted in it (linger).
    assert_eq!(r.flows[0].3.counters.pkts, 5);
}

#[test]
fn syn_retransmission_is_the_same_connection() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 50, 60);
    c.frames.push(tcp(cl, sv, 50, 0, SYN, b""));
    c.handshake().client(b"x", 1).fin();
    let (r, _) = run_worker(Config::default(), &c.frames);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows[0].3.counters.pkts, 6);
}

#[test]
fn inactivity_timeout_uses_packet_time() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"abc", 10);
    let mut w = Worker::new(
        Config {
            tcp_timeout: 10_000_000_000,
            ..Config::default()
        },
        Recorder::default(),
    );
    feed(&mut w, &c.frames, 100);
    assert_eq!(w.active_flows(), 1);
    // A packet of another flow 11 s later expires the first.
    feed(
        &mut w,
        &[udp(ep("10.9.9.9", 1), ep("10.9.9.8", 2), b"x")],
        111,
    );
    assert_eq!(w.active_flows(), 1);
    assert_eq!(w.handler().flows[0].1, "timeout");
    w.finish();
}

#[test]
fn udp_streams_concatenate_and_other_protocols_deliver_per_packet() {
    let (a, b) = (ep("10.1.1.1", 5353), ep("10.1.1.2", 53));
    let frames = vec![
        udp(a, b, b"query1"),
        udp(b, a, b"answer1"),
        udp(a, b, b"query2"),
    ];
    let (r, stats) = run_worker(Config::default(), &frames);
    assert_eq!(r.get(0, "orig").data, b"query1query2");
    assert_eq!(r.get(0, "resp").data, b"answer1");
    assert_eq!(stats.flows_created[1], 1);

    let mut icmp = Vec::new();
    etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
        .icmpv4_echo_request(7, 1)
        .write(&mut icmp, b"ping")
        .unwrap();
    let (r, _) = run_worker(Config::default(), &[icmp.clone(), icmp]);
    let o = r.get(0, "orig");
    assert_eq!(o.reasons, [DataReason::Packet, DataReason::Packet]);
    assert_eq!(o.data.len(), 24);
}

#[test]
fn overlap_and_keep_chunk() {
    let data = bytes(1000, 11);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 100);
    let cfg = Config {
        chunk_size: 300,
        overlap: 50,
        ..Config::default()
    };
    let (r, _) = run_worker(cfg.clone(), &c.frames);
    let o = r.get(0, "orig");
    assert_eq!(o.data, data);
    // Chunks after the first repeat the previous chunk's last 50 bytes.
    assert_eq!(o.chunk_offsets[..3], [0, 250, 500]);
    assert_eq!(&o.full_chunks[1][..50], &data[250..300]);

    let mut rec = Recorder::default();
    let mut calls = 0;
    rec.on_data_hook = Some(Box::new(move |s, _c| {
        calls += 1;
        if calls == 1 {
            s.keep_chunk();
        }
    }));
    let mut w = Worker::new(
        Config {
            chunk_size: 300,
            ..Config::default()
        },
        rec,
    );
    feed(&mut w, &c.frames, 1);
    w.finish();
    let o = w.handler().get(0, "orig");
    // The second event gets the kept 300 bytes plus 300 new ones, contiguous.
    assert_eq!(o.full_chunks[1], &data[..600]);
    assert_eq!(o.data, data);
}

#[test]
fn discard_from_a_callback() {
    let data = bytes(10_000, 12);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).fin();
    let rec = Recorder {
        on_data_hook: Some(Box::new(|s, _| s.discard())),
        ..Default::default()
    };
    let mut w = Worker::new(
        Config {
            chunk_size: 2000,
            ..Config::default()
        },
        rec,
    );
    feed(&mut w, &c.frames, 1);
    w.finish();
    let o = w.handler().get(0, "orig");
    assert_eq!(o.data, &data[..2000]);
    let info = o.closed.as_ref().unwrap();
    assert_eq!(
        (info.counters.captured, info.counters.discarded),
        (2000, 8000)
    );
    assert!(info.is_discarded());
}

#[test]
fn flush_timeout_delivers_partial_chunks() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"partial", 100);
    let mut w = Worker::new(
        Config {
            flush_timeout: Some(500_000_000),
            ..Config::default()
        },
        Recorder::default(),
    );
    feed(&mut w, &c.frames, 10);
    assert!(w.handler().streams.values().all(|s| s.data.is_empty()));
    feed(
        &mut w,
        &[udp(ep("10.9.9.9", 1), ep("10.9.9.8", 2), b"tick")],
        11,
    );
    let o = w.handler().get(0, "orig");
    assert_eq!(o.data, b"partial");
    assert_eq!(o.reasons, [DataReason::FlushTimeout]);
    w.finish();
}

#[test]
fn memory_budget_drops_are_counted() {
    let data = bytes(100_000, 13);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    frames[5..60].reverse(); // lots of out-of-order data to hold
    let cfg = Config {
        memory_size: 20_000,
        chunk_size: 4096,
        ..Config::default()
    };
    let (r, stats) = run_worker(cfg, &frames);
    let info = r.get(0, "orig").closed.clone().unwrap();
    assert!(info.counters.dropped > 0);
    assert!(info.errors.contains(StreamErrors::DROPPED));
    assert_eq!(info.counters.stream_bytes, 100_000);
    assert!(stats.memory_peak <= 20_000);
    assert!(stats.memory_refusals > 0);
}

#[test]
fn flow_limit_evicts_least_recent_and_counts_it() {
    let mut frames = Vec::new();
    for p in 0..10u16 {
        frames.push(udp(ep("10.0.0.1", 1000 + p), ep("10.0.0.2", 53), b"q"));
    }
    let (r, stats) = run_worker(
        Config {
            max_flows: 4,
            ..Config::default()
        },
        &frames,
    );
    assert_eq!(stats.flows_ended[4], 6);
    assert_eq!(r.flows.iter().filter(|f| f.1 == "evicted").count(), 6);
    assert_eq!(stats.max_flows, 4);
}

/// At the end of the input the connections still open end in the order
/// they were created, whether or not a slot of the flow table was reused
/// (the table then knows that order only from the connections' serials).
#[test]
fn open_connections_end_in_creation_order_at_eof() {
    let mut frames = Vec::new();
    for p in 0..10u16 {
        frames.push(udp(ep("10.0.0.1", 1000 + p), ep("10.0.0.2", 53), b"q"));
    }
    let eof_order = |r: &Recorder| -> Vec<u64> {
        r.flows
            .iter()
            .filter(|f| f.1 == "eof")
            .map(|f| f.3.conn_id)
            .collect()
    };
    // Nothing removed before the end.
    let (r, _) = run_worker(Config::default(), &frames);
    assert_eq!(eof_order(&r), (0..10).collect::<Vec<u64>>());
    // Six evicted on the way, their slots reused by later connections.
    let (r, _) = run_worker(
        Config {
            max_flows: 4,
            ..Config::default()
        },
        &frames,
    );
    assert_eq!(eof_order(&r), [6, 7, 8, 9]);
    let evicted: Vec<u64> = r
        .flows
        .iter()
        .filter(|f| f.1 == "evicted")
        .map(|f| f.3.conn_id)
        .collect();
    assert_eq!(evicted, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn vlan_and_ipv6_flows_are_tracked() {
    let (c6, s6) = (ep("2001:db8::1", 5555), ep("2001:db8::2", 443));
    let mut c = Conv::new(c6, s6, 10, 20);
    c.handshake().client(b"hello v6", 100).fin();
    let (r, _) = run_worker(Config::default(), &c.frames);
    assert_eq!(r.get(0, "orig").data, b"hello v6");

    let (cl, sv) = (client(), server());
    let frames = vec![
        tcp_vlan(cl, sv, 1, 0, SYN, b"", Some(10)),
        tcp_vlan(cl, sv, 1, 0, SYN, b"", Some(20)),
    ];
    let (r, _) = run_worker(Config::default(), &frames);
    assert_eq!(
        r.flows.len(),
        2,
        "the same 5-tuple on two VLANs is two flows"
    );
}

#[test]
fn packet_records_come_with_chunks() {
    let data = bytes(5000, 14);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).fin();
    let (r, stats) = run_worker(
        Config {
            need_packets: true,
            ..Config::default()
        },
        &c.frames,
    );
    assert_eq!(r.get(0, "orig").packets_seen, 5);
    assert!(stats.memory_peak > 0);
}

#[test]
fn truncated_packets_count_missing_bytes() {
    let data = bytes(3000, 15);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.handshake().client(&data, 1000).fin();
    let mut frames = c.frames.clone();
    let cut = frames[4].len() - 400;
    frames[4].truncate(cut); // second data segment loses its last 400 bytes
    let (r, stats) = run_worker(Config::default(), &frames);
    let o = r.get(0, "orig");
    let info = o.closed.as_ref().unwrap();
    assert_eq!(info.counters.missing, 400);
    assert!(info.errors.contains(StreamErrors::TRUNCATED));
    assert_eq!(o.data.len(), 2600);
    assert_eq!(&o.data[..1600], &data[..1600]);
    assert_eq!(&o.data[1600..], &data[2000..]);
    assert_eq!(
        stats.truncated_packets, 0,
        "the frame's own orig_len was set to its cut length here"
    );
}

#[test]
fn fin_with_a_hole_before_it_ends_with_missing_bytes() {
    let data = bytes(4000, 16);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(&data[..1000], 1000);
    // 1000..4000 never captured, then the FINs.
    c.cseq += 3000;
    c.fin();
    let (r, _) = run_worker(Config::default(), &c.frames);
    let info = r.get(0, "orig").closed.clone().unwrap();
    assert_eq!(
        info.counters.stream_bytes, 4000,
        "the FIN proves the bytes before it were sent"
    );
    assert_eq!(info.counters.missing, 3000);
    assert_eq!(r.flows[0].1, "fin");
}

/// Splits a UDP datagram into IP fragments of `size` payload bytes (IPv4 or IPv6).
fn fragmented_udp(v6: bool, payload: &[u8], size: usize, id: u32) -> Vec<Vec<u8>> {
    use etherparse::{IpNumber, Ipv4Header, Ipv6FragmentHeader, Ipv6Header, UdpHeader};
    let udp = UdpHeader {
        source_port: 7000,
        destination_port: 53,
        length: (8 + payload.len()) as u16,
        checksum: 0,
    };
    let mut l4 = udp.to_bytes().to_vec();
    l4.extend_from_slice(payload);
    let mut frames = Vec::new();
    for (i, part) in l4.chunks(size).enumerate() {
        let offset = (i * size / 8) as u16;
        let more = (i + 1) * size < l4.len();
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        if v6 {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let ip = Ipv6Header {
                payload_length: (8 + part.len()) as u16,
                next_header: IpNumber::IPV6_FRAGMENTATION_HEADER,
                hop_limit: 64,
                source: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                destination: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                ..Default::default()
            };
            f.extend_from_slice(&ip.to_bytes());
            let fh = Ipv6FragmentHeader::new(IpNumber::UDP, offset.try_into().unwrap(), more, id);
            f.extend_from_slice(&fh.to_bytes());
        } else {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let mut ip = Ipv4Header::new(
                part.len() as u16,
                64,
                IpNumber::UDP,
                [10, 0, 0, 1],
                [10, 0, 0, 2],
            )
            .unwrap();
            ip.identification = id as u16;
            ip.more_fragments = more;
            ip.fragment_offset = offset.try_into().unwrap();
            ip.header_checksum = ip.calc_header_checksum();
            f.extend_from_slice(&ip.to_bytes());
        }
        f.extend_from_slice(part);
        frames.push(f);
    }
    frames
}

#[test]
fn fragmented_datagrams_are_reassembled_before_the_flow_table() {
    for v6 in [false, true] {
        let payload = bytes(3000, 17);
        let mut frames = fragmented_udp(v6, &payload, 1200, 4242);
        frames.reverse();
        // Each fragment's IP length: the IP header (IPv6: with the fragment
        // header) plus its share of the UDP datagram.
        let header = if v6 { 40 + 8 } else { 20 };
        let ip_bytes: usize = frames.iter().map(|f| f.len() - 14).sum();
        assert_eq!(ip_bytes, 3 * header + 8 + 3000);
        let (r, stats) = run_worker(Config::default(), &frames);
        assert_eq!(r.get(0, "orig").data, payload, "v6={v6}");
        assert_eq!(stats.fragments, 3);
        assert_eq!(stats.defrag.reassembled, 1);
        let info = r.get(0, "orig").closed.clone().unwrap();
        // The connection counts the datagram as one packet of its
        // reassembled IP length (without the IPv6 fragment header), as a
        // live capture whose kernel reassembles it would see it.
        assert_eq!(info.counters.pkts, 1, "v6={v6}: one datagram");
        let datagram = if v6 { 40 } else { 20 } + 8 + 3000;
        assert_eq!(info.counters.bytes, datagram, "v6={v6}");
        assert_eq!(info.counters.stream_bytes, 3000);
    }
}

#[test]
fn fragments_that_never_complete_are_counted() {
    let payload = bytes(3000, 18);
    let mut frames = fragmented_udp(false, &payload, 1200, 1);
    frames.remove(1);
    let (r, stats) = run_worker(Config::default(), &frames);
    assert!(r.flows.is_empty());
    assert_eq!(stats.fragments, 2);
    assert_eq!(stats.defrag.reassembled, 0);
}

/// One capture mixing reordering, duplicates, a conflicting overlap behind a
/// hole, sequence wrap-around, a VLAN tag and IPv6, run under every policy in
/// both modes: content digests must equal the expected ones.
#[test]
fn known_answers_for_every_policy_and_mode() {
    use sha2::{Digest, Sha256};
    let sha = |b: &[u8]| hex::encode(Sha256::digest(b));
    let (cl, sv) = (ep("10.0.0.1", 40000), ep("10.0.0.2", 80));
    let (c6, s6) = (ep("2001:db8::1", 5555), ep("2001:db8::2", 443));
    let body = bytes(40_000, 21);

    // Connection 0: wrap-around, reordered, duplicated.
    let mut a = Conv::new(cl, sv, u32::MAX - 5000, 77);
    a.handshake()
        .client(&body, 1400)
        .server(&body[..5000], 1000)
        .fin();
    let mut fa = a.frames.clone();
    fa[8..14].reverse();
    let d = fa[20].clone();
    fa.insert(25, d);
    // Connection 1 (IPv6): the first segment is late; two later segments overlap it with other bytes.
    let mut b = Conv::new(c6, s6, 1000, 2000);
    b.handshake();
    let base = b.cseq;
    let late = tcp(c6, s6, base, 2001, ACK, b"0123456789");
    let over1 = tcp(c6, s6, base + 5, 2001, ACK, b"ABCDEFGHIJ"); // [5,15): overlaps [5,10) of late
    let over2 = tcp(c6, s6, base + 12, 2001, ACK, b"xyz"); // inside over1
    let mut fb = b.frames.clone();
    fb.extend([over1, over2, late]);
    // Connection 2: VLAN-tagged, in order.
    let fc: Vec<Vec<u8>> = vec![
        tcp_vlan(cl, sv, 10, 0, SYN, b"", Some(7)),
        tcp_vlan(sv, cl, 20, 11, SYN | ACK, b"", Some(7)),
        tcp_vlan(cl, sv, 11, 21, ACK | PSH, b"tagged", Some(7)),
    ];
    let mut frames = fa;
    frames.extend(fb);
    frames.extend(fc);

    for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
        for policy in OverlapPolicy::ALL {
            // Expected content of connection 1's orig stream, by the policy table:
            // over1 [5,15) stored first; over2 [12,15) lies inside it; late [0,10)
            // arrives last and starts before over1, ending inside it.
            let (inner, late_wins) = match policy {
                OverlapPolicy::Last => ("ABCDEFGxyz", true),
                OverlapPolicy::Solaris => ("ABCDEFGHIJ", false),
                OverlapPolicy::First => ("ABCDEFGHIJ", false),
                _ => ("ABCDEFGHIJ", true),
            };
            let want1 = if late_wins {
                format!("0123456789{}", &inner[5..])
            } else {
                format!("01234{inner}")
            };
            let (r, _) = run_worker(
                Config {
                    mode,
                    policy,
                    ..Config::default()
                },
                &frames,
            );
            let ctx = format!("{mode} {policy}");
            assert_eq!(sha(&r.get(0, "orig").data), sha(&body), "{ctx}");
            assert_eq!(sha(&r.get(0, "resp").data), sha(&body[..5000]), "{ctx}");
            assert_eq!(
                String::from_utf8_lossy(&r.get(1, "orig").data),
                want1,
                "{ctx}"
            );
            assert_eq!(r.get(2, "orig").data, b"tagged", "{ctx}");
        }
    }
}

#[test]
fn half_closed_connection_keeps_the_open_direction() {
    let (cl, sv) = (client(), server());
    let reply = bytes(6000, 22);
    let mut c = Conv::new(cl, sv, 1, 1);
    c.handshake().client(b"GET / HTTP/1.0\r\n\r\n", 100);
    // The client half-closes; the server keeps sending, then closes.
    c.frames.push(tcp(cl, sv, c.cseq, c.sseq, FIN | ACK, b""));
    c.cseq += 1;
    c.server(&reply, 1000);
    c.frames.push(tcp(sv, cl, c.sseq, c.cseq, FIN | ACK, b""));
    c.frames.push(tcp(cl, sv, c.cseq, c.sseq + 1, ACK, b""));
    let (r, _) = run_worker(Config::default(), &c.frames);
    assert_eq!(r.get(0, "resp").data, reply);
    assert_eq!(r.flows[0].1, "fin");
    assert!(r.get(0, "orig").closed.as_ref().unwrap().errors.is_empty());
}

#[test]
fn mode_can_be_changed_per_stream() {
    let data = bytes(2000, 23);
    let mut c = Conv::new(client(), server(), 1, 1);
    c.client(&data, 1000).server(&data, 1000);
    let rec = Recorder::default();
    let mut w = Worker::new(
        Config {
            mode: ReassemblyMode::Fast,
            ..Config::default()
        },
        rec,
    );
    // Strict for the responder's stream only, set when it is created.
    struct StrictResp(Recorder);
    impl streamcap::Handler for StrictResp {
        type State = ();
        fn on_create(&mut self, s: &mut streamcap::Stream<'_, ()>) {
            if s.direction() == streamcap::flow::Direction::Resp {
                s.set_mode(ReassemblyMode::Strict);
            }
            self.0.on_create(s);
        }
        fn on_data(&mut self, s: &mut streamcap::Stream<'_, ()>, c: &streamcap::Chunk<'_>) {
            self.0.on_data(s, c);
        }
        fn on_close(&mut self, s: &mut streamcap::Stream<'_, ()>) {
            self.0.on_close(s);
        }
    }
    feed(&mut w, &c.frames, 1);
    w.finish();
    let mut w2 = Worker::new(Config::default(), StrictResp(Recorder::default()));
    feed(&mut w2, &c.frames, 1);
    w2.finish();
    assert_eq!(w.handler().get(0, "resp").data, data);
    let h = &w2.handler().0;
    assert_eq!(h.get(0, "orig").data, data);
    assert!(h.get(0, "resp").data.is_empty());
    assert_eq!(
        h.get(0, "resp").closed.as_ref().unwrap().counters.discarded,
        2000
    );
}

/// Runs `frames` under several cutoffs and returns, per cutoff, each
/// direction's final descriptor plus the connection history.
fn under_cutoffs(
    frames: &[Vec<u8>],
    mode: ReassemblyMode,
    cutoffs: &[Option<u64>],
) -> Vec<(
    Option<u64>,
    streamcap::deliver::StreamInfo,
    streamcap::deliver::StreamInfo,
    String,
)> {
    cutoffs
        .iter()
        .map(|&cutoff| {
            let cfg = Config {
                cutoff,
                mode,
                chunk_size: 700,
                ..Config::default()
            };
            let (r, _) = run_worker(cfg, frames);
            assert_eq!(r.flows.len(), 1, "cutoff {cutoff:?}");
            let (_, _, history, o, s) = r.flows[0].clone();
            (cutoff, o, s, history)
        })
        .collect()
}

/// Holes that never fill are `missing` (flag `gap`) whatever the cutoff: past
/// the cutoff no payload is copied, but the sequence ranges seen are
/// remembered. Only captured vs discarded depends on the cutoff.
#[test]
fn missing_bytes_do_not_depend_on_the_cutoff() {
    let data = bytes(12_000, 31);
    let resp = bytes(9000, 32);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 77, 99);
    c.handshake();
    let (cb, sb) = (c.cseq, c.sseq);
    let seg = |i: usize| &data[i * 1000..(i + 1) * 1000];
    let rseg = |i: usize| &resp[i * 1000..(i + 1) * 1000];
    // Client: 0,1, (2 lost), 4, 3 (reordered), 5, 5 (duplicate), (6 lost), 7..11.
    for i in [0usize, 1, 4, 3, 5, 5, 7, 8, 9, 10, 11] {
        c.frames
            .push(tcp(cl, sv, cb + (i as u32) * 1000, sb, ACK | PSH, seg(i)));
    }
    // Server: 0, (1 lost), 2..5, (6 lost), 7, (8 lost: proven by the FIN).
    for i in [0usize, 2, 3, 4, 5, 7] {
        c.frames.push(tcp(
            sv,
            cl,
            sb + (i as u32) * 1000,
            cb + 12_000,
            ACK | PSH,
            rseg(i),
        ));
    }
    // The client acknowledges up to 6000 of the server's bytes: in fast mode
    // the hole at 1000 is given up then, the one at 6000 at termination.
    c.frames.push(tcp(cl, sv, cb + 12_000, sb + 6000, ACK, b""));
    c.frames
        .push(tcp(sv, cl, sb + 9000, cb + 12_000, FIN | ACK, b""));
    c.frames
        .push(tcp(cl, sv, cb + 12_000, sb + 9001, FIN | ACK, b""));
    c.frames.push(tcp(sv, cl, sb + 9001, cb + 12_001, ACK, b""));
    for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
        let runs = under_cutoffs(&c.frames, mode, &[None, Some(0), Some(1500), Some(5500)]);
        let (_, o0, s0, h0) = &runs[0];
        assert_eq!(o0.counters.missing, 2000, "{mode}: client holes 2 and 6");
        assert_eq!(s0.counters.missing, 3000, "{mode}: server holes 1, 6 and 8");
        assert!(h0.contains('G') && h0.contains('g'), "{mode}: {h0}");
        for (cutoff, o, s, h) in &runs {
            for (name, x, y) in [("orig", o0, o), ("resp", s0, s)] {
                let ctx = format!("{mode} cutoff {cutoff:?} {name}");
                let (a, b) = (&x.counters, &y.counters);
                assert_eq!(b.stream_bytes, a.stream_bytes, "{ctx}");
                assert_eq!(b.missing, a.missing, "{ctx}: {b:?}");
                assert_eq!(b.dropped, 0, "{ctx}");
                assert_eq!(
                    y.errors.contains(StreamErrors::GAP),
                    x.errors.contains(StreamErrors::GAP),
                    "{ctx}"
                );
                assert_eq!(
                    b.captured + b.discarded,
                    a.captured + a.discarded,
                    "{ctx}: {b:?}"
                );
                assert!(
                    b.captured <= a.captured.min(cutoff.unwrap_or(u64::MAX)),
                    "{ctx}"
                );
                if *cutoff == Some(0) {
                    assert_eq!(b.captured, 0, "{ctx}");
                }
            }
            assert_eq!(h, h0, "{mode} cutoff {cutoff:?}: history");
        }
    }
}

/// The audit's case: with cutoff 0, a lost segment followed by more data is
/// `missing`, not `discarded`, and nothing is copied or charged.
#[test]
fn cutoff_zero_reports_a_lost_segment_as_missing() {
    let data = bytes(10_000, 33);
    let mut c = Conv::new(client(), server(), 100, 200);
    c.handshake().client(&data, 1000).fin();
    let mut frames = c.frames.clone();
    frames.remove(3 + 4); // bytes 4000..5000 never on the wire
    let (r, stats) = run_worker(
        Config {
            cutoff: Some(0),
            ..Config::default()
        },
        &frames,
    );
    let info = r.get(0, "orig").closed.clone().unwrap();
    let k = info.counters;
    assert_eq!(
        (k.stream_bytes, k.captured, k.discarded, k.missing),
        (10_000, 0, 9000, 1000),
        "{k:?}"
    );
    assert!(info.errors.contains(StreamErrors::GAP));
    assert!(r.streams.values().all(|s| s.reasons.is_empty()));
    assert_eq!(
        stats.memory_peak, 0,
        "placeholders charge no payload memory"
    );
    assert_eq!(stats.totals.missing, 1000);
}

/// Past the cutoff, out-of-order placeholders are bounded in number like
/// out-of-order data: beyond `max_ooo_segments` the oldest hole is given up.
#[test]
fn cutoff_zero_placeholders_are_bounded() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 5, 6);
    c.handshake();
    let base = c.cseq;
    // 300 islands of 10 bytes, each after a 10-byte hole.
    for i in 0..300u32 {
        c.frames
            .push(tcp(cl, sv, base + 10 + 20 * i, c.sseq, ACK, &[b'x'; 10]));
    }
    let frames = c.frames;
    for cutoff in [Some(0), None] {
        let mut w = Worker::new(
            Config {
                cutoff,
                max_ooo_segments: 16,
                ..Config::default()
            },
            Recorder::default(),
        );
        feed(&mut w, &frames, 1);
        let stats = w.finish();
        let k = w.handler().get(0, "orig").closed.clone().unwrap().counters;
        assert_eq!(k.stream_bytes, 6000, "{cutoff:?}");
        assert_eq!(k.missing, 3000, "{cutoff:?}: {k:?}");
        assert_eq!(k.captured + k.discarded, 3000, "{cutoff:?}");
        if cutoff == Some(0) {
            assert_eq!(stats.memory_peak, 0);
        }
    }
}

/// A hole given up only at termination still puts `G` in the history.
#[test]
fn gap_given_up_at_termination_is_in_the_history() {
    let data = bytes(3000, 34);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 10, 20);
    c.handshake();
    let base = c.cseq;
    c.frames
        .push(tcp(cl, sv, base, c.sseq, ACK | PSH, &data[..1000]));
    // 1000..2000 never captured; nobody acknowledges past the hole.
    c.frames
        .push(tcp(cl, sv, base + 2000, c.sseq, ACK | PSH, &data[2000..]));
    c.frames.push(tcp(sv, cl, c.sseq, base + 1000, ACK, b""));
    for cutoff in [None, Some(0)] {
        let (r, _) = run_worker(
            Config {
                cutoff,
                ..Config::default()
            },
            &c.frames,
        );
        let (_, end, history, o, _) = &r.flows[0];
        assert_eq!(end, "eof");
        assert_eq!(o.counters.missing, 1000, "{cutoff:?}");
        assert_eq!(history, "ShADaG", "{cutoff:?}");
    }
}

/// A responder hole given up when the initiator acknowledges past it is
/// settled while processing the initiator's packet: `g` still appears.
#[test]
fn gap_given_up_by_the_peers_ack_is_in_the_history() {
    let data = bytes(3000, 35);
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 10, 20);
    c.handshake();
    let base = c.sseq;
    c.frames
        .push(tcp(sv, cl, base + 1000, c.cseq, ACK | PSH, &data[1000..]));
    c.frames.push(tcp(cl, sv, c.cseq, base + 3000, ACK, b""));
    let mut w = Worker::new(Config::default(), Recorder::default());
    feed(&mut w, &c.frames, 1);
    w.finish();
    let (_, _, history, _, s) = &w.handler().flows[0];
    assert_eq!(s.counters.missing, 1000);
    assert!(history.contains('g'), "{history}");
}

/// A handler that says it does not want `on_create` / `on_close` never gets
/// them, and everything else (data, flow ends, statistics) is as for a
/// handler that gets them.
#[test]
fn unwanted_create_and_close_are_skipped() {
    use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};

    #[derive(Default)]
    struct Counting<const WANT: bool> {
        creates: usize,
        closes: usize,
        data: Vec<u8>,
        ends: Vec<String>,
    }
    impl<const WANT: bool> Handler for Counting<WANT> {
        type State = ();
        const WANTS_ON_CREATE: bool = WANT;
        const WANTS_ON_CLOSE: bool = WANT;
        fn on_create(&mut self, _: &mut Stream<'_, ()>) {
            self.creates += 1;
        }
        fn on_data(&mut self, _: &mut Stream<'_, ()>, c: &Chunk<'_>) {
            self.data.extend_from_slice(c.new_data());
        }
        fn on_close(&mut self, _: &mut Stream<'_, ()>) {
            self.closes += 1;
        }
        fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
            self.ends.push(format!(
                "{} {} {:?} {:?}",
                f.end_reason().name(),
                f.history(),
                f.stream(streamcap::flow::Direction::Orig).counters,
                f.stream(streamcap::flow::Direction::Resp).counters
            ));
        }
    }
    let mut c = Conv::new(client(), server(), 10, 20);
    c.handshake()
        .client(&bytes(5000, 3), 1000)
        .server(&bytes(7000, 4), 1400)
        .fin();
    let cfg = Config {
        measure_processing_time: false,
        ..Config::default()
    };
    let mut with = Worker::new(cfg.clone(), Counting::<true>::default());
    let mut without = Worker::new(cfg, Counting::<false>::default());
    feed(&mut with, &c.frames, 1);
    feed(&mut without, &c.frames, 1);
    let (sw, so) = (with.finish(), without.finish());
    let (w, o) = (with.handler(), without.handler());
    assert_eq!((w.creates, w.closes), (2, 2));
    assert_eq!((o.creates, o.closes), (0, 0));
    assert_eq!(o.data, w.data);
    assert_eq!(o.data.len(), 12_000);
    assert_eq!(o.ends, w.ends);
    assert_eq!(format!("{so:?}"), format!("{sw:?}"));
}

#[test]
fn a_direction_finished_by_its_fin_delivers_and_frees_its_tail_at_once() {
    // Both directions end with a FIN long before the 5 s linger is over:
    // each direction's last partial chunk is delivered (Termination) as soon
    // as its delivery point reaches the FIN, and the memory is free while
    // the closed connection still lingers in the table.
    let req = bytes(3000, 11);
    let resp = bytes(9000, 12);
    let mut c = Conv::new(client(), server(), 100, 200);
    c.handshake().client(&req, 1000).server(&resp, 1460).fin();
    let mut w = Worker::new(Config::default(), Recorder::default());
    feed(&mut w, &c.frames, 1_000);
    assert_eq!(w.active_flows(), 1, "the closed connection still lingers");
    assert_eq!(w.memory_used(), 0, "no stream data held while lingering");
    let r = w.handler();
    assert_eq!(r.get(0, "orig").data, req);
    assert_eq!(r.get(0, "resp").data, resp);
    assert_eq!(r.get(0, "orig").reasons, [DataReason::Termination]);
    assert_eq!(r.get(0, "resp").reasons, [DataReason::Termination]);
    assert!(
        r.order.iter().all(|e| !e.starts_with("close")),
        "not closed yet"
    );
    // Termination itself delivers nothing more.
    let stats = w.finish();
    let r = w.into_handler();
    assert_eq!(r.get(0, "orig").reasons.len(), 1);
    assert_eq!(r.get(0, "resp").reasons.len(), 1);
    assert_eq!(r.flows[0].1, "fin");
    assert_eq!(stats.totals.captured, 12_000);
}

#[test]
fn a_fin_before_a_hole_waits_for_the_hole() {
    // The client's second segment is lost until after its FIN: the tail
    // stays buffered (nothing can be final while bytes are missing) and is
    // delivered, complete, when the retransmission fills the hole.
    let data = bytes(3000, 13);
    let mut c = Conv::new(client(), server(), 100, 200);
    c.handshake().client(&data, 1000);
    let mut frames = c.frames.clone();
    let lost = frames.remove(4); // handshake (3) + first segment, then this one
    let fin_seq = 101 + 3000;
    frames.push(tcp(client(), server(), fin_seq, 201, FIN | ACK, b""));
    let mut w = Worker::new(Config::default(), Recorder::default());
    feed(&mut w, &frames, 1_000);
    assert!(w.memory_used() > 0, "the tail waits behind the hole");
    assert!(w.handler().get(0, "orig").reasons.is_empty());
    feed(&mut w, &[lost], 1_001);
    assert_eq!(w.memory_used(), 0, "filled: delivered and freed");
    let r = w.handler();
    assert_eq!(r.get(0, "orig").data, data);
    assert_eq!(r.get(0, "orig").reasons, [DataReason::Termination]);
}

/// Packets of a connection that closed with FINs and ended after its close
/// linger (a FIN retransmitted with exponential back-off, 6 s and 20 s
/// later, with its last data bytes, and the final ACK) are late packets of
/// that connection, not a second, handshake-less one; a new connection
/// with the same ports (a SYN) is still a connection of its own.
#[test]
fn late_packets_after_the_close_linger_open_no_phantom_connection() {
    use streamcap::{LinkType, RawPacket, Timestamp};
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 100, 500);
    c.handshake().client(b"GET / HTTP/1.0\r\n\r\n", 1460);
    c.server(b"HTTP/1.0 200 OK\r\n\r\nhello", 1460);
    let (cseq, sseq) = (c.cseq, c.sseq);
    c.fin();
    let first = c.frames.len();
    // The server's tail and FIN again, then the client's last ACK.
    c.frames
        .push(tcp(sv, cl, sseq - 5, cseq + 1, ACK | PSH | FIN, b"hello"));
    c.frames
        .push(tcp(sv, cl, sseq - 5, cseq + 1, ACK | PSH | FIN, b"hello"));
    c.frames.push(tcp(cl, sv, cseq + 1, sseq + 1, ACK, b""));
    // Later, the same ports open a new connection.
    let mut again = Conv::new(cl, sv, 90_000, 70_000);
    again.handshake().client(b"again", 1460).fin();
    let times = |i: usize| -> u64 {
        match i.checked_sub(first) {
            None => i as u64,
            Some(0) => 6_000,
            Some(1) => 20_000,
            Some(2) => 20_001,
            Some(k) => 30_000 + k as u64,
        }
    };
    let frames: Vec<_> = c.frames.iter().chain(&again.frames).collect();
    let run = |time_wait| {
        let cfg = Config {
            time_wait,
            ..Config::default()
        };
        let mut w = Worker::new(cfg, Recorder::default());
        for (i, f) in frames.iter().enumerate() {
            w.process(&RawPacket {
                ts: Timestamp::from_secs_nanos(1_000, times(i) * 1_000_000),
                link: LinkType::ETHERNET,
                data: f,
                orig_len: f.len() as u32,
                record: i as u64 + 1,
                interface: 0,
            });
        }
        let stats = w.finish();
        (w.into_handler(), stats)
    };
    let (r, stats) = run(Config::default().time_wait);
    let ends: Vec<_> = r.flows.iter().map(|f| (f.1.clone(), f.2.clone())).collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(stats.late_packets, 3);
    assert_eq!(r.get(1, "orig").data, b"again");
    for (_, _, _, o, s) in &r.flows {
        assert!(!o.errors.contains(StreamErrors::NO_HANDSHAKE), "{o:?}");
        assert!(!s.errors.contains(StreamErrors::NO_HANDSHAKE), "{s:?}");
    }
    // Without the memory of closed connections, the late packets open one.
    // (It takes the server's late FIN for a new connection, and then the
    // client's SYN for part of it.)
    let (r, stats) = run(0);
    let phantom = r
        .flows
        .iter()
        .any(|f| f.3.errors.contains(StreamErrors::NO_HANDSHAKE));
    assert!(phantom);
    assert_eq!(stats.late_packets, 0);
}

/// A connection that goes on after a reset its host ignored and a pause
/// longer than the close linger: the new data is not taken for late packets
/// of the reset connection (it reaches past that side's end), it is picked
/// up as a connection of its own.
#[test]
fn data_after_an_ignored_reset_and_a_pause_is_not_late() {
    use streamcap::{LinkType, RawPacket, Timestamp};
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 100, 500);
    c.handshake().client(b"first", 1460);
    let (cseq, sseq) = (c.cseq, c.sseq);
    c.frames.push(tcp(sv, cl, sseq, cseq, RST | ACK, b""));
    let pause = c.frames.len();
    c.frames.push(tcp(cl, sv, cseq, sseq, ACK | PSH, b"second"));
    let mut w = Worker::new(Config::default(), Recorder::default());
    for (i, f) in c.frames.iter().enumerate() {
        let ms = if i < pause { i as u64 } else { 10_000 };
        w.process(&RawPacket {
            ts: Timestamp::from_secs_nanos(1_000, ms * 1_000_000),
            link: LinkType::ETHERNET,
            data: f,
            orig_len: f.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        });
    }
    let stats = w.finish();
    assert_eq!(stats.late_packets, 0);
    let r = w.into_handler();
    assert_eq!(r.flows.len(), 2);
    assert_eq!(r.get(1, "orig").data, b"second");
}
