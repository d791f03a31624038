//! Scenario tests: determinism, sequence numbers, impairments and truth.

mod common;

use std::net::SocketAddr;

use common::{attribute, parse_eth, parse_ip, read_pcap};
use streamcap_gen::truth::sha256_hex;
use streamcap_gen::{
    sample, ByteRange, Capture, Close, ConflictPlacement, Direction, EndReason, FlowGenerator,
    FlowTruth, FragmentOrder, Handshake, LinkType, PcapConfig, Reorder, TcpConversation,
    TsResolution, UdpFlow, Vlan,
};

const C: Direction = Direction::ToServer;
const S: Direction = Direction::ToClient;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn payload(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ salt).collect()
}

/// Reassembles one direction from generated packets (fragments must not
/// be present), checking data never conflicts with `expected` except at
/// the given conflict ranges.
fn data_packets(flow: &streamcap_gen::GeneratedFlow, dir: Direction) -> Vec<(u32, Vec<u8>)> {
    flow.packets
        .iter()
        .filter(|p| p.dir == dir)
        .map(|p| parse_ip(&p.ip))
        .filter(|p| !p.payload.is_empty())
        .map(|p| (p.tcp.unwrap().0, p.payload))
        .collect()
}

#[test]
fn sample_is_deterministic() {
    let a = sample(7);
    let b = sample(7);
    assert_eq!(a.to_pcap_bytes(), b.to_pcap_bytes());
    assert_eq!(a.truth_jsonl(), b.truth_jsonl());
    assert_ne!(a.to_pcap_bytes(), sample(8).to_pcap_bytes());
}

#[test]
fn sample_size_and_contents() {
    let cap = sample(streamcap_gen::SAMPLE_DEFAULT_SEED);
    let bytes = cap.to_pcap_bytes();
    let n = cap.packets().len();
    assert!(
        (35..=45).contains(&cap.flows().len()),
        "{} flows",
        cap.flows().len()
    );
    assert!((300..=2000).contains(&n), "{n} packets");
    assert!(bytes.len() < 1_000_000);
    let truth = cap.truth();
    let labels: Vec<&str> = truth.iter().map(|t| t.label.as_str()).collect();
    for l in [
        "http",
        "tls",
        "ssh",
        "ssh-open",
        "smtp",
        "dns",
        "http-ipv6",
        "http-vlan",
        "http-qinq",
        "http-reorder",
        "http-loss",
        "http-conflict",
        "dns-fragmented",
        "http-rst",
    ] {
        assert!(labels.contains(&l), "missing {l}");
    }
    let by = |l: &str| truth.iter().find(|t| t.label == l).unwrap();
    assert_eq!(by("http-loss").to_client.lost.len(), 1);
    assert_eq!(by("http-conflict").to_client.conflicts.len(), 1);
    assert_eq!(by("http-rst").end, EndReason::Rst);
    assert_eq!(by("ssh-open").end, EndReason::None);
    assert_eq!(by("http-qinq").vlan, vec![300, 42]);
    assert!(by("http-ipv6").client.is_ipv6());
    assert!(by("dns-fragmented").to_client.packets >= 2);
    // A TLS ClientHello carrying the SNI in cleartext.
    let tls = by("tls");
    assert_eq!(tls.to_server.stream[0], 0x16);
    let sni = b"mail.example.com";
    assert!(tls.to_server.stream.windows(sni.len()).any(|w| w == sni));
    // JSON lines round trip.
    let parsed = FlowTruth::parse_jsonl(&cap.truth_jsonl()).unwrap();
    assert_eq!(parsed, truth);
}

#[test]
fn truth_counts_match_written_packets() {
    let cap = sample(3);
    let truth = cap.truth();
    let (_, lt, recs) = read_pcap(&cap.to_pcap_bytes());
    assert_eq!(lt, 1);
    let mut packets = vec![[0u64; 2]; truth.len()];
    let mut bytes = vec![[0u64; 2]; truth.len()];
    let mut last_ts = 0u64;
    for (r, (id, dir, p)) in recs.iter().zip(attribute(&recs, &truth)) {
        let ts = u64::from(r.ts_sec) * 1_000_000 + u64::from(r.ts_frac);
        assert!(ts >= last_ts, "timestamps monotonic");
        last_ts = ts;
        assert_eq!(r.orig_len as usize, r.data.len());
        let d = (dir == Direction::ToClient) as usize;
        packets[id][d] += 1;
        bytes[id][d] += p.ip_len;
        assert_eq!(p.vlans, truth[id].vlan);
    }
    for t in &truth {
        assert_eq!(
            packets[t.id],
            [t.to_server.packets, t.to_client.packets],
            "{}",
            t.label
        );
        assert_eq!(
            bytes[t.id],
            [t.to_server.ip_bytes, t.to_client.ip_bytes],
            "{}",
            t.label
        );
        for d in [&t.to_server, &t.to_client] {
            assert_eq!(d.sha256, sha256_hex(&d.stream));
            assert_eq!(d.stream_len, d.stream.len() as u64);
        }
    }
}

#[test]
fn sequence_numbers_contiguous_across_wrap() {
    let conv = TcpConversation::new(addr("10.0.0.1:40000"), addr("10.0.0.2:80"))
        .isn(0xFFFF_F000, 0xFFFF_FFFE)
        .mss(1000)
        .send(C, payload(2500, 1))
        .send(S, payload(9000, 2))
        .send(C, payload(100, 3));
    let flow = conv.generate();
    let first = parse_ip(&flow.packets[0].ip);
    assert!(first.tcp.unwrap().2, "starts with SYN");
    assert_eq!(first.tcp.unwrap().0, 0xFFFF_F000);
    for (dir, isn, stream) in [
        (C, 0xFFFF_F000u32, conv.stream(C)),
        (S, 0xFFFF_FFFEu32, conv.stream(S)),
    ] {
        let mut next = isn.wrapping_add(1);
        let mut got = Vec::new();
        for (seq, data) in data_packets(&flow, dir) {
            assert_eq!(seq, next, "contiguous");
            next = seq.wrapping_add(data.len() as u32);
            got.extend(data);
        }
        assert_eq!(got, stream);
    }
    // the server direction really wrapped
    let s_seqs: Vec<u32> = data_packets(&flow, S).iter().map(|d| d.0).collect();
    assert!(s_seqs.windows(2).any(|w| w[1] < w[0]));
    // FIN/ACK numbers: final ACK acknowledges the server FIN
    let last = parse_ip(&flow.packets.last().unwrap().ip).tcp.unwrap();
    assert_eq!(
        last.1,
        0xFFFF_FFFEu32
            .wrapping_add(1)
            .wrapping_add(9000)
            .wrapping_add(1)
    );
    assert_eq!(flow.truth.end, EndReason::Fin);
}

/// `send_cut` puts segment boundaries where asked (ignoring cuts outside the
/// send), and the MSS still cuts longer pieces.
#[test]
fn explicit_segment_cuts() {
    let conv = TcpConversation::new(addr("10.0.0.1:40000"), addr("10.0.0.2:80"))
        .mss(100)
        .send(C, payload(30, 1))
        .send_cut(C, payload(250, 2), vec![0, 1, 7, 7, 150, 250, 900])
        .send_cut(S, payload(40, 3), vec![]);
    let ranges: Vec<(Direction, u64, u64)> = conv
        .data_segments()
        .iter()
        .map(|s| (s.dir, s.range.start, s.range.end))
        .collect();
    assert_eq!(
        ranges,
        [
            (C, 0, 30),
            (C, 30, 31),
            (C, 31, 37),
            (C, 37, 137),
            (C, 137, 180),
            (C, 180, 280),
            (S, 0, 40)
        ]
    );
    let flow = conv.generate();
    let lens: Vec<usize> = data_packets(&flow, C).iter().map(|d| d.1.len()).collect();
    assert_eq!(lens, [30, 1, 6, 100, 43, 100]);
    assert_eq!(flow.truth.to_server.stream, conv.stream(C));
}

#[test]
fn loss_duplicates_and_reorder() {
    let base = TcpConversation::new(addr("10.0.0.1:40001"), addr("10.0.0.2:80"))
        .seed(9)
        .mss(500)
        .send(C, payload(300, 1))
        .send(S, payload(5000, 2));
    let segs = base.data_segments();
    assert_eq!(segs.len(), 11);
    assert_eq!(
        segs[3].range,
        ByteRange {
            start: 1000,
            end: 1500
        }
    );
    let clean = base.generate();
    let conv = base
        .clone()
        .drop_segment(3)
        .duplicate_segment(5)
        .reorder(Reorder::Window(4));
    let flow = conv.generate();
    assert_eq!(
        flow.truth.to_client.lost,
        vec![ByteRange {
            start: 1000,
            end: 1500
        }]
    );
    assert_eq!(flow.truth.to_client.stream, clean.truth.to_client.stream);
    assert_eq!(flow.packets.len(), clean.packets.len());
    let seqs: Vec<u32> = data_packets(&flow, S).iter().map(|d| d.0).collect();
    let mut sorted = seqs.clone();
    sorted.sort();
    assert_ne!(seqs, sorted, "reordered");
    sorted.dedup();
    assert_eq!(sorted.len(), 9, "10 segments, one dropped, one duplicated");
    // a conflict covering the dropped range removes it from `lost`
    let flow = base
        .drop_segment(3)
        .conflict(S, 1200, vec![b'X'; 100], ConflictPlacement::After)
        .generate();
    assert_eq!(
        flow.truth.to_client.lost,
        vec![
            ByteRange {
                start: 1000,
                end: 1200
            },
            ByteRange {
                start: 1300,
                end: 1500
            }
        ]
    );
}

#[test]
fn conflicting_retransmission_is_exact() {
    let conv = TcpConversation::new(addr("10.0.0.1:40002"), addr("10.0.0.2:80"))
        .isn(0xFFFF_FFF0, 1000)
        .mss(100)
        .send(C, payload(400, 5))
        .conflict(C, 150, vec![0xEE; 100], ConflictPlacement::After)
        .conflict(C, 0, vec![0xAA; 10], ConflictPlacement::Before);
    let flow = conv.generate();
    let t = &flow.truth.to_server;
    assert_eq!(t.conflicts.len(), 2);
    assert_eq!(
        t.conflicts[0].range,
        ByteRange {
            start: 150,
            end: 250
        }
    );
    assert_eq!(t.conflicts[0].original, payload(400, 5)[150..250]);
    assert_eq!(t.conflicts[0].conflicting, vec![0xEE; 100]);
    assert!(!t.conflicts[0].conflict_first);
    assert!(t.conflicts[1].conflict_first);
    let data = data_packets(&flow, C);
    let base = 0xFFFF_FFF0u32.wrapping_add(1);
    let pos = |seq: u32, len: usize| data.iter().position(|(s, d)| *s == seq && d.len() == len);
    // shifted partial overlap: after segment [200, 300), the last original it touches
    let conflict = pos(base.wrapping_add(150), 100).unwrap();
    assert_eq!(conflict, pos(base.wrapping_add(200), 100).unwrap() + 1);
    assert_eq!(data[conflict].1, vec![0xEE; 100]);
    // placed before the first original
    assert_eq!(pos(base, 10).unwrap(), 0);
    assert_eq!(pos(base, 100).unwrap(), 1);
    assert_eq!(
        t.packets as usize,
        flow.packets.iter().filter(|p| p.dir == C).count()
    );
}

#[test]
fn fragments_vlan_and_handshake_variants() {
    let conv = TcpConversation::new(addr("10.0.0.1:40003"), addr("10.0.0.2:80"))
        .vlan(Vlan::Double {
            outer: 10,
            inner: 20,
        })
        .handshake(Handshake::NoSyn)
        .close(Close::Rst { from: S })
        .send(C, payload(1400, 1))
        .fragment_segment(0, 3, FragmentOrder::Reversed);
    let flow = conv.generate();
    let first = parse_ip(&flow.packets[0].ip).tcp.unwrap();
    assert!(first.2 && first.5, "SYN-ACK first");
    // three fragments, reversed: offsets descending, MF only on the last two
    let frags: Vec<_> = flow.packets[2..5].iter().map(|p| parse_ip(&p.ip)).collect();
    let offs: Vec<u16> = frags.iter().map(|f| f.frag_offset).collect();
    assert!(offs[0] > offs[1] && offs[1] > offs[2] && offs[2] == 0);
    assert_eq!(
        frags.iter().map(|f| f.more_fragments).collect::<Vec<_>>(),
        vec![false, true, true]
    );
    assert_eq!(flow.truth.to_server.packets, 1 + 3, "ACK + 3 fragments");
    assert_eq!(flow.truth.to_server.datagrams, 2, "ACK + 1 datagram");
    let last = parse_ip(&flow.packets.last().unwrap().ip).tcp.unwrap();
    assert!(last.4, "ends with RST");
    assert_eq!(flow.truth.end, EndReason::Rst);

    let mut cap = Capture::new();
    cap.add(&conv);
    let (_, _, recs) = read_pcap(&cap.to_pcap_bytes());
    assert_eq!(parse_eth(&recs[0].data).vlans, vec![10, 20]);

    // mid-stream pickup: first packet carries data
    let flow = TcpConversation::new(addr("[2001:db8::1]:40004"), addr("[2001:db8::2]:443"))
        .handshake(Handshake::None)
        .close(Close::None)
        .send(S, payload(10, 0))
        .generate();
    assert_eq!(parse_ip(&flow.packets[0].ip).payload.len(), 10);
    assert_eq!(flow.packets.len(), 2);
    assert_eq!(flow.truth.end, EndReason::None);
}

#[test]
fn udp_flow_and_link_types() {
    let udp = UdpFlow::new(addr("10.0.0.1:5353"), addr("10.0.0.2:53"))
        .vlan(Vlan::Single(7))
        .datagram(C, payload(40, 1))
        .datagram(S, payload(3000, 2))
        .fragment_datagram(1, 3, FragmentOrder::Permutation(vec![1, 2, 0]));
    let flow = udp.generate();
    assert_eq!(flow.truth.to_client.packets, 3);
    assert_eq!(flow.truth.to_client.ip_bytes, 3000 + 8 + 3 * 20);
    assert_eq!(flow.truth.to_client.datagrams, 1);
    assert_eq!(flow.truth.to_client.datagram_bytes, 3000 + 8 + 20);
    assert_eq!(flow.truth.to_server.datagrams, flow.truth.to_server.packets);
    assert_eq!(
        flow.truth.to_server.datagram_bytes,
        flow.truth.to_server.ip_bytes
    );
    for (lt, code) in [(LinkType::Raw, 101), (LinkType::LinuxSll2, 276)] {
        let mut cap = Capture::with_config(PcapConfig {
            link_type: lt,
            resolution: TsResolution::Nano,
            snaplen: 200,
        });
        cap.add(&udp);
        let (magic, linktype, recs) = read_pcap(&cap.to_pcap_bytes());
        assert_eq!((magic, linktype), (0xa1b23c4d, code));
        assert_eq!(recs.len(), 4);
        assert!(recs.iter().all(|r| r.data.len() <= 200));
        assert!(recs.iter().any(|r| (r.orig_len as usize) > r.data.len()));
        let vlan = cap.truth()[0].vlan.clone();
        if lt == LinkType::Raw {
            assert!(vlan.is_empty());
            assert_eq!(parse_ip(&recs[0].data).payload, payload(40, 1));
        } else {
            assert_eq!(vlan, vec![7]);
        }
    }
}
