//! IP fragments that real captures carry besides clean, complete datagrams:
//! fragments cut by the snapshot length, garbage fragments mixed into a
//! datagram's, datagrams in hundreds of tiny fragments, inconsistent
//! fragments of a real datagram (Zeek's `ipv4/fragmented-1` trace). Each
//! case is built by hand, and the public captures of the same kind in the
//! shared corpus are checked against what tshark shows for them (skipped
//! without the corpus).

mod support;

use std::net::IpAddr;
use streamcap::decode::DecodeError;
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream, StreamCounters};
use streamcap::flow::Direction;
use streamcap::Worker;
use streamcap::{Capture, Config, FileSource, GlobalStats, LinkType, RawPacket, Timestamp};
use support::corpus_dir;

/// One flow as it ended: protocol, endpoints, the orig direction's counters
/// and bytes.
#[derive(Debug)]
struct Flow {
    proto: u8,
    orig: (IpAddr, u16),
    resp: (IpAddr, u16),
    counters: StreamCounters,
    data: Vec<u8>,
}

/// Collects every flow.
#[derive(Default)]
struct Flows(Vec<Flow>);

impl Handler for Flows {
    type State = Vec<u8>;
    fn on_data(&mut self, s: &mut Stream<'_, Vec<u8>>, c: &Chunk<'_>) {
        s.state().extend_from_slice(c.new_data());
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, Vec<u8>>) {
        self.0.push(Flow {
            proto: f.proto(),
            orig: f.orig_endpoint(),
            resp: f.resp_endpoint(),
            counters: f.stream(Direction::Orig).counters,
            data: std::mem::take(f.state(Direction::Orig)),
        });
    }
}

/// An Ethernet frame with an IPv4 fragment of protocol `proto` from
/// 10.0.0.1 to 10.0.0.2: `part` at byte `offset` of the datagram's payload.
fn fragment(id: u16, proto: u8, offset: u32, more: bool, part: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    let total = (20 + part.len()) as u16;
    let flags = (u16::from(more) << 13) | (offset / 8) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&id.to_be_bytes());
    f.extend_from_slice(&flags.to_be_bytes());
    f.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(part);
    f
}

/// A UDP datagram (header and `payload`) from port `sport` to `dport`.
fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut d = sport.to_be_bytes().to_vec();
    d.extend_from_slice(&dport.to_be_bytes());
    d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(payload);
    d
}

/// Runs frames, each cut to `snaplen` bytes (its length on the wire kept),
/// one millisecond apart, through one worker.
fn run(frames: &[Vec<u8>], snaplen: usize) -> (Vec<Flow>, GlobalStats) {
    let mut w = Worker::new(Config::default(), Flows::default());
    for (i, f) in frames.iter().enumerate() {
        w.process(&RawPacket {
            ts: Timestamp::from_secs_nanos(1_000, i as u64 * 1_000_000),
            link: LinkType::ETHERNET,
            data: &f[..f.len().min(snaplen)],
            orig_len: f.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        });
    }
    let stats = w.finish();
    assert!(stats.totals.invariant_holds(), "{:?}", stats.totals);
    let d = &stats.defrag;
    assert_eq!(d.fragments, d.fragments_reassembled + d.fragments_dropped);
    assert_eq!(d.fragments_dropped, d.dropped.total(), "{d:?}");
    (w.into_handler().0, stats)
}

/// A 3000-byte UDP payload in fragments of 1480 bytes: the first carries
/// the UDP header.
fn three_fragments(id: u16, payload: &[u8]) -> Vec<Vec<u8>> {
    let d = udp(5353, 53, payload);
    d.chunks(1480)
        .enumerate()
        .map(|(i, part)| fragment(id, 17, (i * 1480) as u32, (i + 1) * 1480 < d.len(), part))
        .collect()
}

/// A datagram whose fragments the snapshot length cut is passed on from
/// its first fragment, like an unfragmented packet cut by the snapshot
/// length: its flow gets its packet, with what was captured.
#[test]
fn fragments_cut_by_the_snaplen_give_their_flow_its_packet() {
    let payload = support::bytes(3000, 1);
    let frames = three_fragments(7, &payload);
    // Every fragment cut at 96 bytes: 14 link + 20 IP + 8 UDP + 54 of data.
    let (flows, stats) = run(&frames, 96);
    assert_eq!(flows.len(), 1, "{stats:?}");
    let f = &flows[0];
    assert_eq!((f.proto, f.orig.1, f.resp.1), (17, 5353, 53));
    assert_eq!(f.counters.pkts, 1);
    // In order, the first fragment passes the datagram on before its last
    // fragment is seen: its length on the wire is as far as it reaches.
    assert_eq!(f.counters.bytes, 1500);
    assert_eq!(f.data, payload[..54]);
    assert_eq!(stats.defrag.cut, 1);
    assert_eq!(stats.defrag.dropped.after_cut, 2);

    // The last fragment first: the datagram's whole length is known.
    let mut reordered = frames.clone();
    reordered.rotate_right(1);
    let (flows, stats) = run(&reordered, 96);
    assert_eq!(flows.len(), 1, "{stats:?}");
    assert_eq!(flows[0].counters.bytes, 20 + 8 + 3000);
    assert_eq!(flows[0].data, payload[..54]);

    // The first fragment alone (the rest never captured), as in nDPI's
    // badpackets.pcap: its flow is there all the same.
    let (flows, stats) = run(&frames[..1], 96);
    assert_eq!(flows.len(), 1, "{stats:?}");
    assert_eq!(flows[0].counters.pkts, 1);
    assert_eq!(stats.decode_error(DecodeError::BadTransportHeader), 0);

    // Cut inside the UDP header: no flow can be had; counted as such.
    let (flows, stats) = run(&frames[..1], 14 + 20 + 4);
    assert!(flows.is_empty());
    assert_eq!(stats.decode_error(DecodeError::BadTransportHeader), 1);
    assert_eq!(stats.defrag.cut, 1);
}

/// Garbage fragments of a datagram's key (stray bytes past its end, a
/// second last fragment with another end, one starting past the end, a
/// 1-byte middle fragment, a "ping of death" ending past 64 KiB) are
/// dropped or cut off one by one; the datagram, in 313 fragments of 16
/// bytes as in nDPI's ip_fragmented_garbage.pcap, is reassembled and its
/// connection is there.
#[test]
fn garbage_fragments_do_not_make_a_datagram_vanish() {
    let payload = support::bytes(4988, 2);
    let mut seg = vec![0u8; 20];
    seg[..2].copy_from_slice(&4000u16.to_be_bytes());
    seg[2..4].copy_from_slice(&80u16.to_be_bytes());
    seg[12] = 5 << 4;
    seg[13] = 0x18; // PSH ACK
    seg.extend_from_slice(&payload);
    let parts: Vec<&[u8]> = seg.chunks(16).collect();
    let n = parts.len();
    assert_eq!(n, 313);
    let end = seg.len() as u32;
    let mut frames = Vec::new();
    for (i, part) in parts.iter().enumerate().take(n - 1) {
        frames.push(fragment(9, 6, (i * 16) as u32, true, part));
        match i {
            // Stray bytes past the end, before the end is known.
            20 => frames.push(fragment(9, 6, end, true, &[0xee; 16])),
            // The real last fragment, early.
            50 => frames.push(fragment(9, 6, end - 16, false, parts[n - 1])),
            // A second last fragment, with another end.
            100 => frames.push(fragment(9, 6, 64, false, &[0xee; 8])),
            // Stray bytes past the known end.
            120 => frames.push(fragment(9, 6, end + 8, true, &[0xee; 16])),
            // A 1-byte middle fragment.
            150 => frames.push(fragment(9, 6, 2400, true, &[0xee])),
            // Ending past 65535 bytes.
            200 => frames.push(fragment(9, 6, 65528, true, &[0xee; 16])),
            _ => {}
        }
    }
    let (flows, stats) = run(&frames, 65535);
    let d = &stats.defrag;
    assert_eq!(d.reassembled, 1, "{d:?}");
    assert_eq!(flows.len(), 1, "{d:?}");
    assert_eq!(flows[0].proto, 6);
    assert!(flows[0].data == payload, "the datagram's bytes");
    assert_eq!(flows[0].counters.pkts, 1);
    assert_eq!(flows[0].counters.bytes, 20 + u64::from(end));
    assert_eq!(d.dropped.inconsistent, 2, "{d:?}");
    assert_eq!(d.dropped.malformed, 1, "{d:?}");
    assert_eq!(d.dropped.too_large, 1, "{d:?}");

    // Garbage around a datagram in 8 fragments arriving in every rotation:
    // the datagram survives whatever its order.
    let seg8: Vec<&[u8]> = seg.chunks(632).collect();
    for rotate in 0..seg8.len() {
        let mut frames: Vec<Vec<u8>> = seg8
            .iter()
            .enumerate()
            .map(|(i, p)| fragment(3, 6, (i * 632) as u32, i + 1 < seg8.len(), p))
            .collect();
        frames.rotate_left(rotate);
        frames.insert(1, fragment(3, 6, end, true, &[0xee; 16]));
        frames.insert(2, fragment(3, 6, 65528, true, &[0xee; 16]));
        frames.insert(3, fragment(3, 6, 1264, true, &[0xee]));
        let (flows, stats) = run(&frames, 65535);
        assert_eq!(flows.len(), 1, "rotation {rotate}: {:?}", stats.defrag);
        assert!(flows[0].data == payload, "rotation {rotate}");
    }
}

/// Zeek's `ipv4/fragmented-1` trace, rebuilt: an NTP datagram of 164 bytes
/// in a first fragment of 18 bytes (not a multiple of 8), a last fragment
/// at 48, and a first fragment again of 304 bytes (past the datagram's
/// end). The 18-byte fragment keeps its first 16 bytes, the 304-byte one
/// its bytes before the end; the datagram is one NTP packet, as tshark
/// shows it.
#[test]
fn inconsistent_fragments_of_an_ntp_datagram_still_give_its_flow() {
    let ntp = support::bytes(156, 3);
    let datagram = udp(123, 123, &ntp);
    assert_eq!(datagram.len(), 164);
    let mut long = datagram.clone();
    long.extend_from_slice(&[0xee; 140]);
    let frames = [
        fragment(0xf2, 17, 0, true, &datagram[..18]),
        fragment(0xf2, 17, 48, false, &datagram[48..]),
        fragment(0xf2, 17, 0, true, &long),
    ];
    let (flows, stats) = run(&frames, 65535);
    assert_eq!(flows.len(), 1, "{:?}", stats.defrag);
    let f = &flows[0];
    assert_eq!((f.proto, f.orig.1, f.resp.1), (17, 123, 123));
    assert_eq!(f.counters.pkts, 1);
    assert_eq!(f.counters.bytes, 20 + 164);
    assert_eq!(f.data, ntp);
    assert_eq!(stats.defrag.fragments_dropped, 0);
}

/// Runs a corpus capture; `None` without the corpus.
fn corpus_run(name: &str) -> Option<(Vec<Flow>, GlobalStats)> {
    let path = corpus_dir()?.join(name);
    let mut src = FileSource::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let report = Capture::builder().build().run(&mut src, Flows::default());
    assert!(report.error.is_none(), "{name}: {:?}", report.error);
    Some((report.handler.0, report.stats))
}

/// The corpus captures of these kinds give the conversations tshark shows
/// (`tshark -q -z conv,udp` / `conv,tcp`).
#[test]
fn corpus_fragment_captures_match_tshark() {
    // 93 first fragments, each cut by its capture (the frames are shorter
    // than their IP total length): tshark shows 93 UDP conversations.
    let Some((flows, stats)) = corpus_run("malformed/ndpi__badpackets.pcap") else {
        return;
    };
    assert_eq!(flows.len(), 93, "{:?}", stats.defrag);
    assert!(flows.iter().all(|f| f.proto == 17 && f.counters.pkts == 1));
    assert_eq!(stats.defrag.cut, 93);

    // 4 datagrams in 313 fragments of 16 bytes: tshark reassembles them,
    // two carry a TCP header it can read (two TCP conversations), two a
    // header too short.
    let Some((flows, stats)) = corpus_run("malformed/ndpi__ip_fragmented_garbage.pcap") else {
        return;
    };
    assert_eq!(stats.defrag.reassembled, 4, "{:?}", stats.defrag);
    assert_eq!(stats.decode_error(DecodeError::BadTransportHeader), 2);
    assert_eq!(flows.len(), 2);
    assert!(flows.iter().all(|f| f.proto == 6));

    // Zeek's fragmented NTP datagram: one UDP conversation.
    let Some((flows, stats)) = corpus_run("ipv6-vlan-frag/zeek__ipv4-fragmented-1.pcap") else {
        return;
    };
    assert_eq!(flows.len(), 1, "{:?}", stats.defrag);
    assert_eq!((flows[0].proto, flows[0].orig.1), (17, 123));
    assert_eq!(flows[0].counters.pkts, 1);
}
