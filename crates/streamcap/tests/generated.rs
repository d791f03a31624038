//! The engine against the generator's ground truth: the project's sample
//! capture under several seeds, every policy and both modes.

use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use streamcap::deliver::{Chunk, Delivery, FlowEnd, Handler, Stream, StreamCounters, StreamErrors};
use streamcap::flow::Direction;
use streamcap::{Capture, Config, FileSource, OverlapPolicy, ReassemblyMode};
use streamcap_gen::truth::{DirectionTruth, FlowTruth};

#[derive(Default)]
struct Flows(Vec<Flow>);

struct Flow {
    orig: SocketAddr,
    resp: SocketAddr,
    vlan: Option<u16>,
    proto: u8,
    counters: [StreamCounters; 2],
    errors: [StreamErrors; 2],
    digest: [Vec<u8>; 2],
    end: &'static str,
}

impl Handler for Flows {
    type State = Sha256;
    fn on_data(&mut self, s: &mut Stream<'_, Sha256>, c: &Chunk<'_>) {
        s.state().update(c.new_data());
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, Sha256>) {
        let dirs = [Direction::Orig, Direction::Resp];
        let counters = dirs.map(|d| f.stream(d).counters);
        let errors = dirs.map(|d| f.stream(d).errors);
        let digest = dirs.map(|d| std::mem::take(f.state(d)).finalize().to_vec());
        let (o, r) = (f.orig_endpoint(), f.resp_endpoint());
        self.0.push(Flow {
            orig: SocketAddr::new(o.0, o.1),
            resp: SocketAddr::new(r.0, r.1),
            vlan: f.key().vlan(),
            proto: f.proto(),
            counters,
            errors,
            digest,
            end: f.end_reason().name(),
        });
    }
}

fn run(cfg: Config, pcap: Vec<u8>) -> Vec<Flow> {
    let mut src = FileSource::from_bytes("sample", pcap).expect("generated pcap opens");
    let report = Capture::builder()
        .config(cfg)
        .build()
        .run(&mut src, Flows::default());
    assert!(report.error.is_none());
    assert!(report.stats.totals.invariant_holds());
    report.handler.0
}

/// The bytes that should reach the application: the intended stream minus
/// the ranges that never went on the wire.
fn expected(d: &DirectionTruth) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0u64;
    for r in &d.lost {
        out.extend_from_slice(&d.stream[at as usize..r.start as usize]);
        at = r.end;
    }
    out.extend_from_slice(&d.stream[at as usize..]);
    out
}

/// Checks a flow against its truth. With segment delivery a contradicting
/// retransmission of bytes already delivered is not seen (nothing is held),
/// so the conflict flag may be missing, but never set without a conflict.
fn check(t: &FlowTruth, f: &Flow, delivery: Delivery, ctx: &str) {
    let ctx = format!("{ctx} flow {} ({})", t.id, t.label);
    for (i, d) in [&t.to_server, &t.to_client].into_iter().enumerate() {
        let c = &f.counters[i];
        let lost: u64 = d.lost.iter().map(|r| r.end - r.start).sum();
        // A datagram sent in fragments is one packet of its reassembled length.
        assert_eq!(c.pkts, d.datagrams, "{ctx} dir {i} packets");
        assert_eq!(c.bytes, d.datagram_bytes, "{ctx} dir {i} IP bytes");
        assert_eq!(c.stream_bytes, d.stream_len, "{ctx} dir {i} stream bytes");
        assert_eq!(c.missing, lost, "{ctx} dir {i} missing");
        assert_eq!(c.captured, d.stream_len - lost, "{ctx} dir {i} captured");
        assert_eq!(
            hex::encode(&f.digest[i]),
            hex::encode(Sha256::digest(expected(d))),
            "{ctx} dir {i} content"
        );
        let conflicts = !d.conflicts.is_empty();
        let flagged = f.errors[i].contains(StreamErrors::OVERLAP_CONFLICT);
        if delivery == Delivery::Chunks {
            assert_eq!(flagged, conflicts, "{ctx} dir {i} conflict flag");
        } else {
            assert!(!flagged || conflicts, "{ctx} dir {i} conflict flag");
        }
        assert_eq!(
            f.errors[i].contains(StreamErrors::GAP),
            lost > 0,
            "{ctx} dir {i} gap flag"
        );
    }
    let end = match format!("{:?}", t.end).to_lowercase().as_str() {
        "fin" => "fin",
        "rst" => "rst",
        _ => "eof",
    };
    assert_eq!(f.end, end, "{ctx} end");
}

/// The IP protocol number of a generator truth's transport (TCP or UDP).
fn ip_proto(p: &impl std::fmt::Debug) -> u8 {
    if format!("{p:?}").eq_ignore_ascii_case("tcp") {
        6
    } else {
        17
    }
}

#[test]
fn sample_matches_ground_truth_for_every_seed_policy_mode_and_delivery() {
    let mut checked = 0;
    for seed in 1..=4 {
        let cap = streamcap_gen::sample(seed);
        let truth = cap.truth();
        let pcap = cap.to_pcap_bytes();
        let runs = [ReassemblyMode::Fast, ReassemblyMode::Strict]
            .into_iter()
            .flat_map(|m| OverlapPolicy::ALL.map(|p| (m, p)))
            .flat_map(|(m, p)| [Delivery::Chunks, Delivery::Segments].map(|d| (m, p, d)));
        for (mode, policy, delivery) in runs {
            let flows = run(
                Config {
                    mode,
                    policy,
                    delivery,
                    ..Config::default()
                },
                pcap.clone(),
            );
            assert_eq!(flows.len(), truth.len(), "seed {seed}: flow count");
            for t in &truth {
                let proto = ip_proto(&t.proto);
                let f = flows
                    .iter()
                    .find(|f| {
                        f.orig == t.client
                            && f.resp == t.server
                            && f.proto == proto
                            && f.vlan == t.vlan.first().copied()
                    })
                    .unwrap_or_else(|| {
                        panic!("seed {seed}: flow {} ({}) not found", t.id, t.label)
                    });
                if mode == ReassemblyMode::Strict && t.label.contains("midstream") {
                    // Strict mode discards connections without a handshake.
                    assert_eq!(f.counters[0].captured + f.counters[1].captured, 0);
                    continue;
                }
                check(
                    t,
                    f,
                    delivery,
                    &format!("seed {seed} {mode} {policy} {delivery}"),
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} flow results checked against ground truth");
}

#[test]
fn shipped_sample_is_the_generators_output() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap");
    let shipped = std::fs::read(&path).expect("samples/sample.pcap is in the repository");
    let made = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    assert!(
        shipped == made,
        "samples/sample.pcap differs from `streamcap-gen sample` output: regenerate it"
    );
}

/// A generated campus trace with every impairment switched on (reordering,
/// duplicates, loss, conflicting retransmissions, IPv4 fragments, IPv6, VLAN):
/// every flow's counters and, where the answer does not depend on a policy,
/// its content digest equal the generator's ground truth.
#[test]
fn campus_trace_matches_ground_truth() {
    use streamcap_gen::{Campus, CampusConfig};
    let cfg = CampusConfig {
        seed: 7,
        packets: 40_000,
        concurrency: 300,
        reorder: 0.05,
        duplicate: 0.05,
        loss: 0.02,
        conflict: 0.02,
        fragment: 0.02,
        ipv6: 0.1,
        vlan: 0.05,
        ..CampusConfig::default()
    };
    let (pcap, truth, _) = Campus::new(cfg).to_bytes();
    let truth = streamcap_gen::CampusFlowTruth::parse_jsonl(&truth).expect("truth parses");
    for (mode, policy, delivery) in [
        (ReassemblyMode::Fast, OverlapPolicy::Bsd, Delivery::Chunks),
        (
            ReassemblyMode::Strict,
            OverlapPolicy::Linux,
            Delivery::Chunks,
        ),
        (ReassemblyMode::Fast, OverlapPolicy::Bsd, Delivery::Segments),
    ] {
        let flows = run(
            Config {
                mode,
                policy,
                delivery,
                ..Config::default()
            },
            pcap.clone(),
        );
        let (mut digests, mut lossy) = (0, 0);
        for t in &truth {
            let proto = ip_proto(&t.proto);
            // When the client's packets were all lost, the server is the initiator.
            let f = flows
                .iter()
                .find(|f| {
                    let same = (f.orig, f.resp) == (t.client, t.server)
                        || (f.orig, f.resp) == (t.server, t.client);
                    same && f.proto == proto && f.vlan == t.vlan.first().copied()
                })
                .unwrap_or_else(|| panic!("flow {} ({}) not found", t.id, t.label));
            let flipped = f.orig != t.client;
            let ctx = format!("{mode} {policy} {delivery} flow {} ({})", t.id, t.label);
            // UDP has no sequence numbers: a duplicated datagram reaches the
            // application twice, while the truth describes the intended stream.
            if proto == 17 && t.impairments.duplicated > 0 {
                continue;
            }
            for (i, d) in [&t.to_server, &t.to_client].into_iter().enumerate() {
                if d.packets == 0 {
                    continue; // a direction never on the wire has no observable length
                }
                let i = if flipped { 1 - i } else { i };
                let c = &f.counters[i];
                let lost: u64 = d.lost.iter().map(|r| r.end - r.start).sum();
                // A datagram sent in fragments is one packet of its
                // reassembled length.
                assert_eq!(c.pkts, d.datagrams, "{ctx} dir {i} packets");
                assert_eq!(c.bytes, d.datagram_bytes, "{ctx} dir {i} IP bytes");
                if proto == 17 {
                    // A lost datagram leaves no trace: UDP streams are what arrived.
                    assert_eq!(
                        c.stream_bytes,
                        d.stream_len - lost,
                        "{ctx} dir {i} stream bytes"
                    );
                    assert_eq!(c.captured, d.stream_len - lost, "{ctx} dir {i} captured");
                    if lost > 0 {
                        lossy += 1;
                        continue;
                    }
                }
                assert_eq!(c.stream_bytes, d.stream_len, "{ctx} dir {i} stream bytes");
                assert_eq!(c.missing, lost, "{ctx} dir {i} missing");
                assert_eq!(
                    c.captured + c.missing,
                    d.stream_len,
                    "{ctx} dir {i} captured"
                );
                let policy_free = d.conflicts.iter().all(|k| !k.conflict_first);
                if lost == 0 && policy_free {
                    assert_eq!(hex::encode(&f.digest[i]), d.sha256, "{ctx} dir {i} content");
                    digests += 1;
                } else {
                    lossy += 1;
                }
            }
        }
        eprintln!("{mode} {policy}: {} flows, {digests} directions digest-checked, {lossy} with loss or policy-dependent conflicts", truth.len());
        assert!(digests > 500);
    }
}

/// Statistics only (cutoff 0, the default of `streamcap flows`) tells the same
/// story about holes as full reassembly: on the impaired campus trace and on
/// the shipped sample, every direction's `missing`, gap flag, stream length
/// and packet counts are the same as with no cutoff; only captured bytes
/// become discarded ones.
#[test]
fn cutoff_zero_reports_the_same_holes_as_full_reassembly() {
    use streamcap_gen::{Campus, CampusConfig};
    let cfg = CampusConfig {
        seed: 11,
        packets: 20_000,
        concurrency: 200,
        reorder: 0.05,
        duplicate: 0.05,
        loss: 0.03,
        conflict: 0.02,
        fragment: 0.02,
        ..CampusConfig::default()
    };
    let (campus, _, _) = Campus::new(cfg).to_bytes();
    let sample = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    for (name, pcap) in [("campus", campus), ("sample", sample)] {
        for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
            let with = |cutoff| {
                run(
                    Config {
                        cutoff,
                        mode,
                        ..Config::default()
                    },
                    pcap.clone(),
                )
            };
            let (full, stats_only) = (with(None), with(Some(0)));
            assert_eq!(full.len(), stats_only.len());
            let mut holes = 0;
            for (a, b) in full.iter().zip(&stats_only) {
                assert_eq!((a.orig, a.resp, a.end), (b.orig, b.resp, b.end));
                for i in 0..2 {
                    let ctx = format!("{name} {mode} {} -> {} dir {i}", a.orig, a.resp);
                    let (x, y) = (&a.counters[i], &b.counters[i]);
                    assert_eq!(y.missing, x.missing, "{ctx}: {x:?} vs {y:?}");
                    assert_eq!(y.stream_bytes, x.stream_bytes, "{ctx}");
                    assert_eq!((y.pkts, y.bytes), (x.pkts, x.bytes), "{ctx}");
                    assert_eq!(y.captured, 0, "{ctx}");
                    assert_eq!(
                        y.discarded + y.dropped,
                        x.captured + x.discarded + x.dropped,
                        "{ctx}"
                    );
                    assert_eq!(
                        a.errors[i].contains(StreamErrors::GAP),
                        b.errors[i].contains(StreamErrors::GAP),
                        "{ctx}"
                    );
                    holes += usize::from(x.missing > 0);
                }
            }
            eprintln!(
                "{name} {mode}: {} flows, {holes} directions with holes",
                full.len()
            );
            assert!(holes > 0, "{name} {mode}: the trace has holes");
        }
    }
}
