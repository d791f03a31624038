//! The HTTP analyser (`streamcap-apps`) on arbitrary conversations: both
//! directions' bytes, with gaps, fed whole, byte by byte, and in pieces
//! cut where the input says, with the chunk kept (chunk delivery) or
//! copied by the parser (segment delivery). Checks: no panic; the same
//! records whatever the pieces and the keeping; every record's depth is
//! unique and they run from 1 up; a body is at least as long as the bytes
//! missing from it; without gaps, the same records (times aside) through
//! the engine with segment delivery (events of 1, 7 and 64 Ki bytes), and
//! no panic with chunk delivery (chunks of 1, 5 and 16 KiB bytes).
//!
//! Input: a selector byte (bit 0: hash bodies; bits 1-7: the seed of the
//! cuts), then segments: a control byte (bit 0: from the server; bit 1:
//! a gap) and a length byte (1-256), then that many bytes (none for a
//! gap). Up to 8 KiB of conversation.
//!
//! Not in `checks/mod.rs` (see `rules.rs`); its stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions.rs`.
use etherparse::PacketBuilder;
use streamcap::deliver::Delivery;
use streamcap::flow::Direction;
use streamcap::{Config, LinkType, RawPacket, Timestamp, Worker};
use streamcap_apps::http::{ConnMeta, Http, HttpConfig, HttpRecord, Session};

/// One piece of the conversation.
enum Seg<'a> {
    Bytes(Direction, &'a [u8]),
    Gap(Direction, u64),
}

fn parse(data: &[u8]) -> Option<(u8, Vec<Seg<'_>>)> {
    let (&sel, mut rest) = data.split_first()?;
    let mut segs = Vec::new();
    let mut total = 0usize;
    while rest.len() >= 2 {
        let (c, len) = (rest[0], usize::from(rest[1]) + 1);
        rest = &rest[2..];
        let d = if c & 1 == 0 {
            Direction::Orig
        } else {
            Direction::Resp
        };
        if c & 2 != 0 {
            segs.push(Seg::Gap(d, len as u64));
            continue;
        }
        let len = len.min(rest.len());
        if len == 0 {
            break;
        }
        segs.push(Seg::Bytes(d, &rest[..len]));
        rest = &rest[len..];
        total += len;
        if total > 8 << 10 {
            return None;
        }
    }
    Some((sel, segs))
}

fn meta() -> ConnMeta {
    ConnMeta {
        uid: "Cfuzz".into(),
        orig: ("10.0.0.1".parse().unwrap(), 40000),
        resp: ("10.0.0.2".parse().unwrap(), 80),
    }
}

/// Records as JSON lines, without their times.
fn untimed(r: &[HttpRecord]) -> Vec<String> {
    r.iter()
        .map(|r| {
            let j = r.to_json();
            j[j.find(",\"uid\"").unwrap_or(0)..].to_string()
        })
        .collect()
}

/// Feeds the conversation cut by `cut` (the length of each piece).
fn session(
    segs: &[Seg<'_>],
    config: &HttpConfig,
    keep: bool,
    cut: &mut dyn FnMut() -> usize,
) -> Vec<HttpRecord> {
    let mut out = Vec::new();
    let mut s = Session::new(meta(), config, keep);
    for seg in segs {
        match seg {
            Seg::Bytes(d, b) => {
                let mut at = 0;
                while at < b.len() {
                    let n = cut().clamp(1, b.len() - at);
                    s.feed(*d, &b[at..at + n], Timestamp(1), &mut out);
                    at += n;
                }
            }
            Seg::Gap(d, n) => s.gap(*d, *n),
        }
    }
    s.finish(Timestamp(2), &mut out);
    out
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((sel, segs)) = parse(data) else {
        return;
    };
    let config = HttpConfig {
        hash_bodies: sel & 1 != 0,
        ..HttpConfig::default()
    };
    let whole = session(&segs, &config, true, &mut || usize::MAX);
    let mut seed = u64::from(sel >> 1) | 0x9e37_79b9_0000_0000;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 23) as usize + 1
    };
    for keep in [true, false] {
        for (name, got) in [
            ("bytes", session(&segs, &config, keep, &mut || 1)),
            ("threes", session(&segs, &config, keep, &mut || 3)),
            ("random", session(&segs, &config, keep, &mut random)),
            ("whole", session(&segs, &config, keep, &mut || usize::MAX)),
        ] {
            assert_eq!(got, whole, "{name} pieces, keep {keep}");
        }
    }
    let mut depths: Vec<u64> = whole.iter().map(|r| r.trans_depth).collect();
    depths.sort_unstable();
    assert!(
        depths.iter().enumerate().all(|(i, &d)| d == i as u64 + 1),
        "depths {depths:?}"
    );
    for r in &whole {
        assert!(r.request_body_len >= r.request_missing);
        assert!(r.response_body_len >= r.response_missing);
        let _ = r.to_tsv();
    }
    if segs.iter().any(|s| matches!(s, Seg::Gap(..))) {
        return;
    }
    let frames = frames(&segs);
    let want = untimed(&whole);
    for (delivery, chunk) in [
        (Delivery::Segments, 1),
        (Delivery::Segments, 7),
        (Delivery::Segments, 64 << 10),
        (Delivery::Chunks, 1),
        (Delivery::Chunks, 5),
        (Delivery::Chunks, 16 << 10),
    ] {
        let cfg = Config {
            delivery,
            chunk_size: chunk,
            ..Config::default()
        };
        let mut w = Worker::new(cfg, Http::new(config.clone(), Vec::new()));
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
        let got = w.into_handler().sink;
        if delivery == Delivery::Segments {
            // The engine names the connection; the rest must agree.
            let strip = |v: Vec<String>| -> Vec<String> {
                v.into_iter()
                    .map(|j| j[j.find(",\"trans_depth\"").unwrap_or(0)..].to_string())
                    .collect()
            };
            assert_eq!(
                strip(untimed(&got)),
                strip(want.clone()),
                "engine, segments of {chunk}; input {data:?}"
            );
        }
    }
}

/// A handshake, the conversation's segments (each acknowledged), FINs.
fn frames(segs: &[Seg<'_>]) -> Vec<Vec<u8>> {
    let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (cp, sp) = (40000u16, 80u16);
    let (mut cseq, mut sseq) = (1000u32, 5000u32);
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
    push(true, cseq, 0, true, false, &[]);
    push(false, sseq, cseq + 1, true, false, &[]);
    cseq += 1;
    sseq += 1;
    push(true, cseq, sseq, false, false, &[]);
    for seg in segs {
        if let Seg::Bytes(d, b) = seg {
            if *d == Direction::Orig {
                push(true, cseq, sseq, false, false, b);
                cseq = cseq.wrapping_add(b.len() as u32);
            } else {
                push(false, sseq, cseq, false, false, b);
                sseq = sseq.wrapping_add(b.len() as u32);
            }
        }
    }
    push(true, cseq, sseq, false, true, &[]);
    push(false, sseq, cseq + 1, false, true, &[]);
    push(true, cseq + 1, sseq + 1, false, false, &[]);
    out
}
