//! The NIDS against the generator's ground truth: signatures planted in
//! HTTP, SMTP, FTP, DNS, TLS SNI, other TCP and UDP payloads, half of them
//! across segment boundaries, some in reordered segments, some under a
//! conflicting overlap, some in flows whose handshake precedes the
//! capture. With one content rule per signature, every planted (flow,
//! direction, signature) must alert, at the planted offset, and nothing
//! else — whatever the delivery, the chunk size, the number of workers and
//! the engine.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use streamcap::deliver::Delivery;
use streamcap::{Capture, OverlapPolicy};
use streamcap_apps::nids::{parse_rules, Alert, CompileOptions, EngineKind, Nids, RuleSet, Vars};
use streamcap_gen::nids::{generate, NidsConfig, NidsTrace};
use streamcap_gen::Protocol;

/// (proto, sender, receiver, sid, offset): offset in the direction's
/// stream (TCP) or in the datagram (UDP).
type Key = (u8, SocketAddr, SocketAddr, u32, u64);

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

/// What the truth says must alert under `policy` (first or last): the
/// first present occurrence of each (flow, direction, signature).
fn expected(trace: &NidsTrace, policy: OverlapPolicy) -> BTreeSet<Key> {
    let mut seen = BTreeSet::new();
    let mut out = BTreeSet::new();
    let mut occ = trace.occurrences.clone();
    occ.sort_by_key(|o| (o.flow, o.direction as u8, o.sid, o.datagram, o.offset));
    for o in occ {
        let present = match policy {
            OverlapPolicy::First => o.present_first,
            OverlapPolicy::Last => o.present_last,
            _ => unreachable!("the truth knows first and last"),
        };
        let (src, dst) = match o.direction {
            streamcap_gen::Direction::ToServer => (o.client, o.server),
            streamcap_gen::Direction::ToClient => (o.server, o.client),
        };
        let proto = match o.proto {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
        };
        if present && seen.insert((o.flow, o.direction as u8, o.sid)) {
            out.insert((proto, src, dst, o.sid, o.offset));
        }
    }
    out
}

struct Run {
    delivery: Delivery,
    chunk: usize,
    workers: usize,
    policy: OverlapPolicy,
    engine: EngineKind,
}

fn alerts(path: &std::path::Path, rules_text: &str, r: &Run) -> BTreeSet<Key> {
    let parsed = parse_rules(rules_text, "generated.rules", &Vars::default());
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let opts = CompileOptions {
        engine: r.engine,
        ..CompileOptions::default()
    };
    let set = Arc::new(RuleSet::compile(parsed.rules, &Default::default(), &opts).unwrap());
    let cap = Capture::builder()
        .delivery(r.delivery)
        .chunk_size(r.chunk)
        .policy(r.policy)
        .build();
    let par = streamcap::dispatch::workers::Parallel::workers(r.workers);
    let report = cap
        .run_file_parallel(path, &par, |_| {
            (Nids::new(set.clone(), Vec::<Alert>::new()), ())
        })
        .unwrap();
    assert!(report.stats.totals.invariant_holds());
    let mut out = BTreeSet::new();
    for w in &report.workers {
        for a in &w.handler.sink {
            let sid = set.rules()[a.rule as usize].rule.sid;
            let key = (
                a.proto,
                SocketAddr::new(a.src.0, a.src.1),
                SocketAddr::new(a.dst.0, a.dst.1),
                sid,
                a.datagram_offset.unwrap_or(a.stream_offset),
            );
            assert!(out.insert(key), "alerted twice: {key:?}");
        }
    }
    out
}

fn check(trace: &NidsTrace, runs: &[Run]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nids.pcap");
    std::fs::write(&path, trace.pcap_bytes()).unwrap();
    let rules = trace.rules();
    for r in runs {
        let want = expected(trace, r.policy);
        let got = alerts(&path, &rules, r);
        let missed: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missed.is_empty() && extra.is_empty(),
            "{} chunk {} {} workers {:?} {:?}: {} expected, missed {missed:?}, extra {extra:?}",
            r.delivery,
            r.chunk,
            r.workers,
            r.policy,
            r.engine,
            want.len()
        );
    }
}

#[test]
fn every_planted_signature_alerts_and_nothing_else() {
    let trace = generate(&NidsConfig::default());
    let mut runs = Vec::new();
    for engine in engines() {
        for (delivery, chunks) in [
            (Delivery::Chunks, &[1usize, 2, 7, 64, 1460, 16 << 10][..]),
            (Delivery::Segments, &[1, 100, 64 << 10][..]),
        ] {
            for &chunk in chunks {
                for workers in [1, 2] {
                    for policy in [OverlapPolicy::First, OverlapPolicy::Last] {
                        runs.push(Run {
                            delivery,
                            chunk,
                            workers,
                            policy,
                            engine,
                        });
                    }
                }
            }
        }
    }
    check(&trace, &runs);
}

#[test]
fn every_impairment_at_once_on_another_seed() {
    let trace = generate(&NidsConfig {
        seed: 7,
        flows: 300,
        reorder: 0.6,
        conflict: 0.5,
        midstream: 0.4,
        ..NidsConfig::default()
    });
    let mut runs = Vec::new();
    for engine in engines() {
        for policy in [OverlapPolicy::First, OverlapPolicy::Last] {
            runs.push(Run {
                delivery: Delivery::Chunks,
                chunk: 3,
                workers: 2,
                policy,
                engine,
            });
            runs.push(Run {
                delivery: Delivery::Segments,
                chunk: 64 << 10,
                workers: 1,
                policy,
                engine,
            });
        }
    }
    check(&trace, &runs);
}
