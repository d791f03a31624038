//! The layer-7 classifier (`streamcap-apps`): arbitrary bytes for both
//! directions, cut into arbitrary pieces. Input: a configuration byte (bit
//! 0: UDP; bits 1-3: which ports), two bytes giving the initiator's share
//! of the payload, a count of cut sizes (at most 16) and the sizes, then
//! the payload. Checks: no panic; TCP: the whole classification (label,
//! TLS details, SSH lines…) is the same delivered at once, in the given
//! pieces, byte by byte, and with the pieces repeated (a retransmission
//! overlapping what came before); a direction once done stays done; the
//! bytes read stay within the inspection limits. UDP: the pieces are
//! datagrams; no panic, and the bytes read stay within
//! `MAX_DATAGRAMS × INSPECT_LIMIT` per direction.
//!
//! Not in `checks/mod.rs` (see `rules.rs`); the stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions_classify.rs`.
use streamcap_apps::classify::{
    decide, App, Classification, Evidence, Progress, Transport, INSPECT_LIMIT, MAX_DATAGRAMS,
    TLS_WALK_LIMIT,
};

const PORTS: [(u16, u16); 8] = [
    (40000, 80),
    (40000, 443),
    (40000, 21),
    (40000, 25),
    (40000, 123),
    (40000, 6379),
    (51000, 3389),
    (1234, 5678),
];

fn pieces<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < data.len() {
        let n = if cuts.is_empty() {
            data.len()
        } else {
            cuts[k % cuts.len()]
        };
        let end = (i + n).min(data.len());
        out.push(&data[i..end]);
        i = end;
        k += 1;
    }
    out
}

/// Feeds a TCP direction piece by piece (with `repeat`, each piece is
/// sent again together with the next one, as a retransmission would).
fn stream(parts: &[&[u8]], repeat: bool) -> Evidence {
    let mut e = Evidence::new();
    let mut off = 0u64;
    let mut done = false;
    let mut prev: &[u8] = &[];
    for p in parts {
        let progress = if repeat && !prev.is_empty() {
            let mut both = prev.to_vec();
            both.extend_from_slice(p);
            e.feed_stream(off - prev.len() as u64, &both)
        } else {
            e.feed_stream(off, p)
        };
        assert!(
            !done || progress == Progress::Done,
            "a done direction came back"
        );
        done = progress == Progress::Done;
        off += p.len() as u64;
        prev = p;
    }
    let bound = (INSPECT_LIMIT as u64).max(TLS_WALK_LIMIT);
    assert!(e.inspected() <= bound, "read {} bytes", e.inspected());
    e
}

fn tcp(ports: (u16, u16), o: &[&[u8]], r: &[&[u8]], repeat: bool) -> Classification {
    let (mut a, mut b) = (stream(o, repeat), stream(r, repeat));
    let c = decide(Transport::Tcp, ports.0, ports.1, &a, &b);
    // Finishing (the end of the streams) changes nothing for decide.
    a.finish();
    b.finish();
    assert_eq!(decide(Transport::Tcp, ports.0, ports.1, &a, &b), c);
    c
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&cfg, rest)) = data.split_first() else {
        return;
    };
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return;
    };
    let Some((&ncuts, rest)) = rest.split_first() else {
        return;
    };
    let ncuts = usize::from(ncuts % 17).min(rest.len());
    let cuts: Vec<usize> = rest[..ncuts]
        .iter()
        .map(|&b| usize::from(b).max(1))
        .collect();
    let payload = &rest[ncuts..];
    let split = usize::from(u16::from_le_bytes(*len)) % (payload.len() + 1);
    let (orig, resp) = payload.split_at(split);
    let ports = PORTS[usize::from(cfg >> 1) % PORTS.len()];
    if cfg & 1 == 1 {
        let (mut a, mut b) = (Evidence::new(), Evidence::new());
        for d in pieces(orig, &cuts) {
            a.feed_datagram(d);
        }
        for d in pieces(resp, &cuts) {
            b.feed_datagram(d);
        }
        let c = decide(Transport::Udp, ports.0, ports.1, &a, &b);
        let max = MAX_DATAGRAMS as u64 * INSPECT_LIMIT as u64;
        assert!(a.inspected() <= max && b.inspected() <= max);
        let _ = c.app.name();
        return;
    }
    let whole = tcp(ports, &[orig], &[resp], false);
    let cut = tcp(ports, &pieces(orig, &cuts), &pieces(resp, &cuts), false);
    assert_eq!(cut, whole, "cut in pieces of {cuts:?}");
    let rep = tcp(ports, &pieces(orig, &cuts), &pieces(resp, &cuts), true);
    assert_eq!(rep, whole, "pieces repeated");
    if payload.len() <= 6000 {
        let ones = tcp(ports, &pieces(orig, &[1]), &pieces(resp, &[1]), false);
        assert_eq!(ones, whole, "byte by byte");
    }
    if whole.app != App::Unknown {
        assert!(whole.app.zeek_service().is_some());
    }
}
