//! The NIDS on hand-built traffic: patterns split across segments and
//! chunks of every size, both deliveries, datagrams, multi-condition rules
//! on the window, Scap's early discard, pass rules.

use std::net::SocketAddr;
use std::sync::Arc;
use streamcap::deliver::Delivery;
use streamcap::Capture;
use streamcap_apps::nids::rule::{Action, Content, PayloadMatch, Rule, RuleProto};
use streamcap_apps::nids::{Alert, Classifications, CompileOptions, EngineKind, Nids, RuleSet};
use streamcap_gen::{Capture as Gen, Direction, TcpConversation, UdpFlow};

fn rule(sid: u32, proto: RuleProto, matches: Vec<PayloadMatch>) -> Rule {
    Rule::new(sid, proto, matches)
}

fn content(p: &[u8], f: impl FnOnce(&mut Content)) -> PayloadMatch {
    let mut c = Content::new(p);
    f(&mut c);
    PayloadMatch::Content(c)
}

fn ep(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// The engines to test: aho-corasick, and Hyperscan where it loads.
fn engines() -> Vec<EngineKind> {
    let mut v = vec![EngineKind::AhoCorasick];
    match EngineKind::hyperscan_available() {
        Ok(()) => v.push(EngineKind::Hyperscan),
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipping the Hyperscan runs: {e}");
        }
    }
    v
}

/// Runs the rules on the capture with every engine; (sid, direction,
/// stream offset) of every alert, sorted, the same for each engine.
fn alerts(
    pcap: &[u8],
    rules: Vec<Rule>,
    chunk: usize,
    delivery: Delivery,
    workers: usize,
) -> Vec<(u32, &'static str, u64)> {
    let runs: Vec<_> = engines()
        .into_iter()
        .map(|e| alerts_with(e, pcap, rules.clone(), chunk, delivery, workers))
        .collect();
    assert!(
        runs.windows(2).all(|w| w[0] == w[1]),
        "the engines disagree: {runs:?}"
    );
    runs.into_iter().next().unwrap_or_default()
}

fn alerts_with(
    engine: EngineKind,
    pcap: &[u8],
    rules: Vec<Rule>,
    chunk: usize,
    delivery: Delivery,
    workers: usize,
) -> Vec<(u32, &'static str, u64)> {
    let opts = CompileOptions {
        engine,
        ..CompileOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pcap");
    std::fs::write(&path, pcap).unwrap();
    let set = Arc::new(RuleSet::compile(rules, &Classifications::default(), &opts).unwrap());
    let cap = Capture::builder()
        .chunk_size(chunk)
        .delivery(delivery)
        .build();
    let par = streamcap::dispatch::workers::Parallel::workers(workers);
    let report = cap
        .run_file_parallel(&path, &par, |_| {
            (Nids::new(set.clone(), Vec::<Alert>::new()), ())
        })
        .unwrap();
    assert!(report.stats.totals.invariant_holds());
    let mut out: Vec<(u32, &'static str, u64)> = report
        .workers
        .iter()
        .flat_map(|w| w.handler.sink.iter())
        .map(|a| {
            (
                set.rules()[a.rule as usize].rule.sid,
                a.direction.name(),
                a.stream_offset,
            )
        })
        .collect();
    out.sort();
    out
}

fn tcp_pcap(req: &[u8], resp: &[u8], mss: usize) -> Vec<u8> {
    let conv = TcpConversation::new(ep("10.0.0.1:40000"), ep("10.0.0.2:80"))
        .mss(mss)
        .send(Direction::ToServer, req.to_vec())
        .send(Direction::ToClient, resp.to_vec());
    let mut g = Gen::new();
    g.add(&conv);
    g.to_pcap_bytes()
}

#[test]
fn a_pattern_split_across_segments_and_chunks_is_found_once() {
    let mut req = b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
    req.extend_from_slice(b"padding-padding-EVIL-SIGNATURE-XYZ-padding");
    let at = req.windows(8).position(|w| w == b"EVIL-SIG").unwrap() as u64;
    let resp = b"HTTP/1.1 200 OK\r\n\r\nEVIL-SIGNATURE-XYZ".to_vec();
    let rules = vec![rule(
        1,
        RuleProto::Tcp,
        vec![content(b"EVIL-SIGNATURE-XYZ", |_| {})],
    )];
    let want = vec![(1, "orig", at), (1, "resp", 19)];
    for mss in [7, 13, 1460] {
        let pcap = tcp_pcap(&req, &resp, mss);
        for chunk in [1, 2, 3, 5, 17, 4096] {
            for delivery in [Delivery::Chunks, Delivery::Segments] {
                for workers in [1, 2] {
                    assert_eq!(
                        alerts(&pcap, rules.clone(), chunk, delivery, workers),
                        want,
                        "mss {mss}, chunk {chunk}, {delivery}, {workers} workers"
                    );
                }
            }
        }
    }
}

#[test]
fn offset_depth_and_nocase_hold_across_chunks() {
    let req = b"get /admin HTTP/1.0\r\n\r\n".to_vec();
    let rules = vec![
        rule(
            1,
            RuleProto::Tcp,
            vec![content(b"GET", |c| {
                c.depth = Some(3);
                c.nocase = true;
            })],
        ),
        rule(
            2,
            RuleProto::Tcp,
            vec![content(b"GET", |c| c.depth = Some(3))],
        ),
        rule(
            3,
            RuleProto::Tcp,
            vec![content(b"/admin", |c| {
                c.offset = Some(5);
            })],
        ),
        rule(
            4,
            RuleProto::Tcp,
            vec![content(b"/admin", |c| {
                c.offset = Some(3);
                c.depth = Some(7);
            })],
        ),
    ];
    let pcap = tcp_pcap(&req, b"", 3);
    for chunk in [1, 4, 100] {
        assert_eq!(
            alerts(&pcap, rules.clone(), chunk, Delivery::Chunks, 1),
            vec![(1, "orig", 0), (4, "orig", 4)]
        );
    }
}

#[test]
fn a_multi_condition_rule_matches_across_chunks_within_the_window() {
    let mut req = b"POST /upload HTTP/1.1\r\n".to_vec();
    req.extend_from_slice(&vec![b'a'; 1000]);
    req.extend_from_slice(b"filename=\"evil.exe\"");
    let first = vec![
        content(b"POST", |c| c.depth = Some(4)),
        content(b"evil.exe", |c| c.distance = Some(0)),
    ];
    let rules = vec![rule(7, RuleProto::Tcp, first)];
    let pcap = tcp_pcap(&req, b"", 100);
    for chunk in [1, 64, 4096] {
        for delivery in [Delivery::Chunks, Delivery::Segments] {
            assert_eq!(
                alerts(&pcap, rules.clone(), chunk, delivery, 1),
                vec![(7, "orig", 0)],
                "chunk {chunk}"
            );
        }
    }
}

#[test]
fn udp_is_matched_per_datagram() {
    let flow = UdpFlow::new(ep("10.0.0.1:5353"), ep("10.0.0.2:53"))
        .datagram(Direction::ToServer, b"xxABC".to_vec())
        .datagram(Direction::ToServer, b"DEFyy".to_vec())
        .datagram(Direction::ToServer, b"ABCDEF".to_vec());
    let mut g = Gen::new();
    g.add(&flow);
    let pcap = g.to_pcap_bytes();
    let rules = vec![
        rule(1, RuleProto::Udp, vec![content(b"ABCDEF", |_| {})]),
        rule(
            2,
            RuleProto::Udp,
            vec![content(b"ABC", |c| c.depth = Some(3))],
        ),
        rule(3, RuleProto::Tcp, vec![content(b"ABC", |_| {})]),
    ];
    // "ABC" + "DEF" in two datagrams is no match; the third datagram
    // matches both, at its own offsets 0 (stream offset 10).
    for chunk in [1, 4096] {
        for delivery in [Delivery::Chunks, Delivery::Segments] {
            assert_eq!(
                alerts(&pcap, rules.clone(), chunk, delivery, 1),
                vec![(1, "orig", 10), (2, "orig", 10)]
            );
        }
    }
}

#[test]
fn pass_rules_silence_the_connection() {
    let req = b"GET /health HTTP/1.1\r\n\r\nGET /evil".to_vec();
    let mut pass = rule(1, RuleProto::Tcp, vec![content(b"/health", |_| {})]);
    pass.header.action = Action::Pass;
    let rules = vec![
        pass,
        rule(2, RuleProto::Tcp, vec![content(b"/evil", |_| {})]),
    ];
    let pcap = tcp_pcap(&req, b"", 1460);
    assert_eq!(
        alerts(&pcap, rules.clone(), 4096, Delivery::Chunks, 1),
        vec![(1, "orig", 4)]
    );
    // Without the pass rule the second one alerts.
    assert_eq!(
        alerts(&pcap, rules[1..].to_vec(), 4096, Delivery::Chunks, 1),
        vec![(2, "orig", 28)]
    );
}

#[test]
fn anchored_rules_let_the_engine_discard_the_rest_of_the_stream() {
    let mut resp = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    resp.extend_from_slice(&vec![b'z'; 100_000]);
    let rules = vec![rule(
        1,
        RuleProto::Tcp,
        vec![content(b"HTTP/1.1", |c| c.depth = Some(8))],
    )];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pcap");
    std::fs::write(&path, tcp_pcap(b"GET / HTTP/1.1\r\n\r\n", &resp, 1460)).unwrap();
    let set = Arc::new(
        RuleSet::compile(
            rules,
            &Classifications::default(),
            &CompileOptions::default(),
        )
        .unwrap(),
    );
    let report = Capture::builder()
        .build()
        .run_file(&path, Nids::new(set, Vec::<Alert>::new()))
        .unwrap();
    assert_eq!(report.handler.sink.len(), 1);
    let t = &report.stats.totals;
    // Only the first 8 bytes of each direction are wanted.
    assert!(t.captured <= 16, "{t:?}");
    assert!(t.discarded >= 100_000);
    assert!(t.invariant_holds());
}

/// A pcap (Ethernet) of one IPv4 packet from 10.0.0.1 to 10.0.0.2 whose
/// IP payload is `l4` with protocol `proto`.
fn ipv4_pcap(proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    // Global header: magic, 2.4, zone, sigfigs, snaplen, Ethernet.
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    let ip_len = 20 + l4.len();
    let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0,
        0,
        64,
        proto,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let sum = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(l4);
    v.extend_from_slice(&1_714_564_800u32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    v.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    v.extend_from_slice(&frame);
    v
}

#[test]
fn icmp_rules_see_the_payload_after_the_icmp_header() {
    // An echo request (type 8): 8 header bytes, then the data.
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend_from_slice(b"abcdefghijklmnopqrstuvw");
    let pcap = ipv4_pcap(1, &icmp);
    let rules = vec![
        // Suricata's ICMP payload starts with the data.
        rule(
            1,
            RuleProto::Icmp,
            vec![content(b"abcd", |c| c.depth = Some(4))],
        ),
        // The header is not payload: neither anchored nor anywhere.
        rule(
            2,
            RuleProto::Icmp,
            vec![content(&[8, 0], |c| c.depth = Some(2))],
        ),
        rule(3, RuleProto::Icmp, vec![content(&[0x12, 0x34], |_| {})]),
        rule(
            4,
            RuleProto::Ip,
            vec![content(b"mnop", |c| {
                c.offset = Some(12);
                c.depth = Some(4)
            })],
        ),
    ];
    for delivery in [Delivery::Chunks, Delivery::Segments] {
        assert_eq!(
            alerts(&pcap, rules.clone(), 4096, delivery, 1),
            vec![(1, "orig", 8), (4, "orig", 20)]
        );
    }
}
