//! The NIDS's matching across chunk splits (`streamcap-apps`): patterns
//! and a client's byte stream from the input, the stream sent in segments
//! cut where the input says, matched with chunk delivery in chunks of 1, 3
//! and 16 KiB bytes and with segment delivery, by aho-corasick and (where
//! it loads) Hyperscan. Checks: no panic; every run gives the same alerts;
//! each single-content rule alerts exactly when, and where, a naive search
//! of the whole stream finds its first occurrence within its offset and
//! depth.
//!
//! Input: a selector byte (bit 0: caseless patterns; bits 1-2: depth
//! given), a pattern count byte (1-8), then per pattern a length byte
//! (1-16) and its bytes, then a cut count byte, that many cut bytes
//! (segment lengths 1-256), and the rest as the stream.
//!
//! Not in `checks/mod.rs` (see `rules.rs`); its stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions.rs`.
use etherparse::PacketBuilder;
use std::sync::Arc;
use streamcap::deliver::Delivery;
use streamcap::{Config, LinkType, RawPacket, Timestamp, Worker};
use streamcap_apps::nids::rule::{Content, PayloadMatch, Rule, RuleProto};
use streamcap_apps::nids::{Alert, CompileOptions, EngineKind, Nids, RuleSet};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let Some((&count, r)) = rest.split_first() else {
        return;
    };
    rest = r;
    let mut patterns: Vec<Vec<u8>> = Vec::new();
    for _ in 0..(count % 8 + 1) {
        let Some((&len, r)) = rest.split_first() else {
            return;
        };
        let len = usize::from(len % 16 + 1).min(r.len());
        if len == 0 {
            return;
        }
        patterns.push(r[..len].to_vec());
        rest = &r[len..];
    }
    let Some((&ncut, r)) = rest.split_first() else {
        return;
    };
    let ncut = usize::from(ncut).min(r.len());
    let cuts: Vec<usize> = r[..ncut].iter().map(|&c| usize::from(c) + 1).collect();
    let stream = &r[ncut..];
    if stream.is_empty() || stream.len() > 4096 {
        return;
    }
    let caseless = sel & 1 != 0;
    let depth = match (sel >> 1) & 3 {
        0 => None,
        d => Some(u32::from(d) * 40),
    };
    let rules: Vec<Rule> = patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut c = Content::new(p.clone());
            c.nocase = caseless;
            c.depth = depth.map(|d| d.max(p.len() as u32));
            rule(i as u32 + 1, vec![PayloadMatch::Content(c)])
        })
        .collect();
    let frames = frames(stream, &cuts);
    let mut engines = vec![EngineKind::AhoCorasick];
    if EngineKind::hyperscan_available().is_ok() {
        engines.push(EngineKind::Hyperscan);
    }
    let mut results = Vec::new();
    for engine in engines {
        let opts = CompileOptions {
            engine,
            ..CompileOptions::default()
        };
        let Ok(set) = RuleSet::compile(rules.clone(), &Default::default(), &opts) else {
            return;
        };
        let set = Arc::new(set);
        for (delivery, chunk) in [
            (Delivery::Chunks, 1),
            (Delivery::Chunks, 3),
            (Delivery::Chunks, 16 << 10),
            (Delivery::Segments, 64 << 10),
        ] {
            let cfg = Config {
                delivery,
                chunk_size: chunk,
                ..Config::default()
            };
            let mut w = Worker::new(cfg, Nids::new(set.clone(), Vec::<Alert>::new()));
            for (n, f) in (1u64..).zip(&frames) {
                w.process(&RawPacket {
                    ts: Timestamp(1_000_000_000 + n * 1000),
                    link: LinkType::ETHERNET,
                    data: f,
                    orig_len: f.len() as u32,
                    record: n,
                    interface: 0,
                });
            }
            let stats = w.finish();
            assert!(stats.totals.invariant_holds());
            let mut got: Vec<(u32, u64)> = w
                .into_handler()
                .sink
                .iter()
                .map(|a| (set.rules()[a.rule as usize].rule.sid, a.stream_offset))
                .collect();
            got.sort();
            results.push(got);
        }
    }
    assert!(
        results.windows(2).all(|w| w[0] == w[1]),
        "runs disagree: {results:?}"
    );
    // Each rule alerts at its first occurrence within the depth.
    let mut want = Vec::new();
    for (i, p) in patterns.iter().enumerate() {
        let limit = depth.map_or(stream.len(), |d| {
            (d as usize).max(p.len()).min(stream.len())
        });
        let found = (0..=limit.saturating_sub(p.len())).find(|&at| {
            let w = &stream[at..at + p.len()];
            if caseless {
                w.eq_ignore_ascii_case(p)
            } else {
                w == p.as_slice()
            }
        });
        if let Some(at) = found.filter(|at| at + p.len() <= limit) {
            want.push((i as u32 + 1, at as u64));
        }
    }
    want.sort();
    assert_eq!(results[0], want, "alerts against a naive search");
}

fn rule(sid: u32, matches: Vec<PayloadMatch>) -> Rule {
    Rule::new(sid, RuleProto::Tcp, matches)
}

/// A handshake, the client's stream in segments of the cut lengths (the
/// last one takes the rest), and both FINs.
fn frames(stream: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (cp, sp) = (40000u16, 80u16);
    let (cisn, sisn) = (1000u32, 5000u32);
    let mut out = Vec::new();
    let mut push = |from_client: bool, seq: u32, ack: u32, syn: bool, fin: bool, payload: &[u8]| {
        let b = if from_client {
            PacketBuilder::ethernet2([1; 6], [2; 6])
                .ipv4(c, s, 64)
                .tcp(cp, sp, seq, 65535)
        } else {
            PacketBuilder::ethernet2([2; 6], [1; 6])
                .ipv4(s, c, 64)
                .tcp(sp, cp, seq, 65535)
        };
        let b = if syn { b.syn() } else { b };
        let b = if ack != 0 { b.ack(ack) } else { b };
        let b = if fin { b.fin() } else { b };
        let mut f = Vec::new();
        if b.write(&mut f, payload).is_ok() {
            out.push(f);
        }
    };
    push(true, cisn, 0, true, false, &[]);
    push(false, sisn, cisn + 1, true, false, &[]);
    push(true, cisn + 1, sisn + 1, false, false, &[]);
    let mut at = 0;
    let mut cut = cuts.iter().copied();
    while at < stream.len() {
        let len = cut.next().unwrap_or(stream.len()).min(stream.len() - at);
        push(
            true,
            cisn + 1 + at as u32,
            sisn + 1,
            false,
            false,
            &stream[at..at + len],
        );
        at += len;
    }
    let end = cisn + 1 + stream.len() as u32;
    push(true, end, sisn + 1, false, true, &[]);
    push(false, sisn + 1, end + 1, false, true, &[]);
    push(true, end + 1, sisn + 2, false, false, &[]);
    out
}
