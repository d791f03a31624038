//! Unit tests of the defragmenter: the rules of the module documentation,
//! one by one, then random fragments checked against the internal
//! accounting.

use super::*;
use crate::reassembly::policy::OverlapPolicy;
use std::net::{Ipv4Addr, Ipv6Addr};

fn key(id: u32) -> FragKey {
    FragKey {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        id,
        proto: 17,
        vlan: 0,
    }
}

/// The hand-written `Hash` agrees with `Eq`: equal keys hash alike, and
/// keys that differ in any one field (an IPv4 address and the IPv6
/// address with the same 128 bits included) hash apart.
#[test]
fn key_hash_agrees_with_eq() {
    use std::hash::BuildHasher;
    let hasher = hashbrown::DefaultHashBuilder::default();
    let h = |k: &FragKey| hasher.hash_one(k);
    let base = key(7);
    assert_eq!(h(&base), h(&key(7)));
    let v6_same_bits = IpAddr::V6(Ipv6Addr::from_bits(u128::from(
        Ipv4Addr::new(10, 0, 0, 1).to_bits(),
    )));
    let variants = [
        FragKey { id: 8, ..base },
        FragKey { proto: 6, ..base },
        FragKey { vlan: 1, ..base },
        FragKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)),
            ..base
        },
        FragKey {
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)),
            ..base
        },
        FragKey {
            src: base.dst,
            dst: base.src,
            ..base
        },
        FragKey {
            src: v6_same_bits,
            ..base
        },
        FragKey {
            dst: v6_same_bits,
            ..base
        },
    ];
    let mut seen = std::collections::HashSet::new();
    assert!(seen.insert(h(&base)));
    for v in &variants {
        assert_ne!(*v, base);
        assert!(seen.insert(h(v)), "{v:?} hashes like another key");
    }
}

fn feed(
    d: &mut Defragmenter,
    t: u64,
    k: FragKey,
    offset: u32,
    more: bool,
    data: &[u8],
) -> Option<Vec<u8>> {
    feed_wire(d, t, k, offset, more, data).map(|(b, _)| b)
}

/// [`feed`], with the number of fragments of the completed datagram.
fn feed_wire(
    d: &mut Defragmenter,
    t: u64,
    k: FragKey,
    offset: u32,
    more: bool,
    data: &[u8],
) -> Option<(Vec<u8>, u32)> {
    match d.process(
        Timestamp(t),
        k,
        Fragment { offset, more },
        data,
        data.len() as u32,
    ) {
        DefragOutcome::Complete(r) => {
            assert_eq!(r.wire_len as usize, r.data.len(), "a whole datagram");
            Some((r.data.to_vec(), r.fragments))
        }
        DefragOutcome::Pending => None,
    }
}

/// Feeds a fragment of which only `data` was captured out of `wire_len`
/// bytes; returns what was passed on and its length on the wire.
fn feed_cut(
    d: &mut Defragmenter,
    k: FragKey,
    offset: u32,
    more: bool,
    data: &[u8],
    wire_len: u32,
) -> Option<(Vec<u8>, u32)> {
    match d.process(Timestamp(0), k, Fragment { offset, more }, data, wire_len) {
        DefragOutcome::Complete(r) => Some((r.data.to_vec(), r.wire_len)),
        DefragOutcome::Pending => None,
    }
}

/// Payload bytes held by live datagrams.
fn payload_held(d: &Defragmenter) -> u32 {
    d.store
        .in_table()
        .into_iter()
        .map(|i| d.store.slot(i))
        .filter(|s| s.state == State::Live)
        .map(|s| s.asm.covered())
        .sum()
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

/// Checks the internal accounting against a full recount.
fn check_invariants(d: &Defragmenter) {
    let slots: Vec<_> = d
        .store
        .in_table()
        .into_iter()
        .map(|i| d.store.slot(i))
        .collect();
    assert_eq!(slots.len(), d.store.len());
    assert!(slots.len() <= d.cfg.max_datagrams);
    assert_eq!(
        d.store.oldest_deadline(),
        slots.first().map_or(u64::MAX, |s| s.deadline)
    );
    assert_eq!(
        d.store.live(),
        slots.iter().filter(|s| s.state == State::Live).count()
    );
    assert!(slots.iter().all(|s| s.state != State::Free));
    assert_eq!(d.store.memory(), d.store.recount_memory());
    assert!(d.bytes_held() <= d.cfg.max_bytes);
    let held: u64 = slots
        .iter()
        .filter(|s| s.state == State::Live)
        .map(|s| u64::from(s.frags))
        .sum();
    assert_eq!(d.frags_held, held);
    let st = &d.stats;
    assert_eq!(st.fragments_dropped, st.dropped.total());
    assert_eq!(
        st.fragments,
        st.fragments_reassembled + st.fragments_dropped + d.frags_held
    );
    for s in slots.iter().filter(|s| s.state == State::Live) {
        assert!(s.frags as usize <= d.cfg.max_fragments_per_datagram);
        let pieces = s.asm.pieces();
        for w in pieces.windows(2) {
            assert!(w[0].end <= w[1].start, "pieces overlap or unsorted");
        }
        assert!(pieces.iter().all(|p| p.start < p.end));
        let covered: u32 = pieces.iter().map(|p| p.end - p.start).sum();
        assert_eq!(covered, s.asm.covered());
        assert!(s.asm.max_end() <= s.wire_end);
        if let Some(t) = s.total {
            assert!(s.wire_end <= t);
        }
    }
}

#[test]
fn in_order() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(20);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
    assert_eq!(d.in_progress(), 1);
    assert_eq!(payload_held(&d), 16);
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), Some(p));
    assert_eq!(d.in_progress(), 0);
    assert_eq!(payload_held(&d), 0);
    assert_eq!(d.stats().reassembled, 1);
    assert_eq!(d.stats().fragments, 3);
    assert_eq!(d.stats().overlaps, 0);
    check_invariants(&d);
}

/// A completed datagram reports the fragments it took (duplicates
/// included); one that came whole counts one.
#[test]
fn completed_datagram_reports_its_fragments() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(40);
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), None);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    let (bytes, n) = feed_wire(&mut d, 0, key(1), 8, true, &p[8..16]).expect("complete");
    assert_eq!(bytes, p);
    assert_eq!(n, 4);
    // An unfragmented datagram (offset 0, no more fragments) is one.
    let (_, n) = feed_wire(&mut d, 0, key(2), 0, false, &p[..12]).expect("complete");
    assert_eq!(n, 1);
}

#[test]
fn reversed() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(1500);
    let chunks: Vec<(usize, &[u8])> = p.chunks(504).enumerate().collect();
    let mut got = None;
    for &(i, c) in chunks.iter().rev() {
        assert!(got.is_none());
        let more = i + 1 < chunks.len();
        got = feed(&mut d, 0, key(7), (i * 504) as u32, more, c);
    }
    assert_eq!(got, Some(p));
    assert_eq!(d.in_progress(), 0);
    check_invariants(&d);
}

#[test]
fn whole_datagram_in_one_fragment() {
    let mut d = Defragmenter::new(DefragConfig::default());
    assert_eq!(
        feed(&mut d, 0, key(1), 0, false, b"abc"),
        Some(b"abc".to_vec())
    );
    assert_eq!(d.in_progress(), 0);
    check_invariants(&d);
}

#[test]
fn interleaved() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let a = payload(24);
    let b: Vec<u8> = payload(24).iter().map(|x| !x).collect();
    let mut kb = key(1);
    kb.src = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)); // same id, other source
    let ka = key(1);
    assert_eq!(feed(&mut d, 0, ka, 0, true, &a[..8]), None);
    assert_eq!(feed(&mut d, 0, kb, 16, false, &b[16..]), None);
    assert_eq!(feed(&mut d, 0, kb, 0, true, &b[..8]), None);
    assert_eq!(feed(&mut d, 0, ka, 16, false, &a[16..]), None);
    assert_eq!(d.in_progress(), 2);
    assert_eq!(feed(&mut d, 0, kb, 8, true, &b[8..16]), Some(b));
    assert_eq!(feed(&mut d, 0, ka, 8, true, &a[8..16]), Some(a));
    assert_eq!(d.stats().reassembled, 2);
    check_invariants(&d);
}

#[test]
fn duplicates() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(24);
    assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..16]), None);
    assert_eq!(payload_held(&d), 16);
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), Some(p));
    assert_eq!(d.stats().overlaps, 3);
    assert_eq!(d.stats().overlap_conflicts, 0);
    assert_eq!(d.stats().fragments_dropped, 0);
    check_invariants(&d);
}

/// Each character of `s` is one 8-byte block filled with it.
fn pat(s: &str) -> Vec<u8> {
    s.bytes().flat_map(|c| [c; 8]).collect()
}

/// Feeds `(offset, more, fill, len)` fragments; returns the first
/// completed datagram and the stats.
fn run(policy: OverlapPolicy, frags: &[(u32, bool, u8, usize)]) -> (Option<Vec<u8>>, DefragStats) {
    let mut d = Defragmenter::new(DefragConfig {
        policy,
        ..DefragConfig::default()
    });
    let mut got = None;
    for &(off, more, fill, len) in frags {
        let r = feed(&mut d, 0, key(1), off, more, &vec![fill; len]);
        check_invariants(&d);
        if got.is_none() {
            got = r;
        }
    }
    (got, d.stats().clone())
}

/// Expected results in `OverlapPolicy::ALL` order: first, last, linux,
/// bsd, windows, solaris.
fn check_policies(
    frags: &[(u32, bool, u8, usize)],
    want: [&str; 6],
    overlaps: u64,
    conflicts: u64,
) {
    for (p, w) in OverlapPolicy::ALL.into_iter().zip(want) {
        let (got, stats) = run(p, frags);
        assert_eq!(
            got.as_deref().map(String::from_utf8_lossy),
            Some(String::from_utf8_lossy(&pat(w))),
            "policy {p}, fragments {frags:?}"
        );
        assert_eq!(stats.overlaps, overlaps, "{p}");
        assert_eq!(stats.overlap_conflicts, conflicts, "{p}");
    }
}

#[test]
fn overlap_inside_earlier() {
    // Old [0,24) A; new [8,16) B starts inside it and ends inside it.
    check_policies(
        &[
            (0, true, b'A', 24),
            (8, true, b'B', 8),
            (24, false, b'C', 8),
        ],
        ["AAAC", "ABAC", "AAAC", "AAAC", "AAAC", "AAAC"],
        1,
        1,
    );
    // Reverse arrival: new [0,24) covers old [8,16), starting before it.
    check_policies(
        &[
            (8, true, b'B', 8),
            (0, true, b'A', 24),
            (24, false, b'C', 8),
        ],
        ["ABAC", "AAAC", "AAAC", "AAAC", "AAAC", "AAAC"],
        1,
        1,
    );
}

#[test]
fn overlap_extending_past() {
    // Old [0,16) A; new [8,24) B starts inside and extends past (left overlap).
    check_policies(
        &[
            (0, true, b'A', 16),
            (8, true, b'B', 16),
            (24, false, b'C', 8),
        ],
        ["AABC", "ABBC", "AABC", "AABC", "AABC", "ABBC"],
        1,
        1,
    );
}

#[test]
fn overlap_starting_before() {
    // Old [8,24) B; new [0,16) A starts before it and ends inside (right overlap).
    check_policies(
        &[
            (8, true, b'B', 16),
            (0, true, b'A', 16),
            (24, false, b'C', 8),
        ],
        ["ABBC", "AABC", "AABC", "AABC", "AABC", "ABBC"],
        1,
        1,
    );
}

#[test]
fn overlap_same_start() {
    // Old [0,8) A; new [0,16) B: same start, longer.
    check_policies(
        &[
            (0, true, b'A', 8),
            (0, true, b'B', 16),
            (16, false, b'C', 8),
        ],
        ["ABC", "BBC", "BBC", "ABC", "ABC", "BBC"],
        1,
        1,
    );
    // Old [0,16) B; new [0,8) A: same start, shorter.
    check_policies(
        &[
            (0, true, b'B', 16),
            (0, true, b'A', 8),
            (16, false, b'C', 8),
        ],
        ["BBC", "ABC", "BBC", "BBC", "BBC", "BBC"],
        1,
        1,
    );
}

#[test]
fn overlap_same_range() {
    // Same range with a hole before it: Solaris keeps the first copy.
    check_policies(
        &[
            (8, true, b'A', 8),
            (8, true, b'B', 8),
            (0, true, b'Z', 8),
            (16, false, b'C', 8),
        ],
        ["ZAC", "ZBC", "ZAC", "ZAC", "ZAC", "ZAC"],
        1,
        1,
    );
    // Same range, no hole before it: Solaris takes the new copy.
    check_policies(
        &[
            (0, true, b'Z', 8),
            (8, true, b'A', 8),
            (8, true, b'B', 8),
            (16, false, b'C', 8),
        ],
        ["ZAC", "ZBC", "ZAC", "ZAC", "ZAC", "ZBC"],
        1,
        1,
    );
}

#[test]
fn overlap_several_pieces() {
    // Stored [8,16) a and [24,32) c; new [8,32) b has the same start as the
    // first (and is longer) and covers the second starting before it.
    check_policies(
        &[
            (8, true, b'a', 8),
            (24, true, b'c', 8),
            (8, true, b'b', 24),
            (0, true, b'z', 8),
            (32, false, b'e', 8),
        ],
        ["zabce", "zbbbe", "zbbbe", "zabbe", "zabbe", "zbbbe"],
        2,
        2,
    );
}

#[test]
fn timeout() {
    let sec = 1_000_000_000;
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(16);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    d.expire(Timestamp(29 * sec));
    assert_eq!(d.in_progress(), 1);
    // A later fragment does not extend the deadline.
    assert_eq!(feed(&mut d, 29 * sec, key(2), 0, true, &p[..8]), None);
    d.expire(Timestamp(30 * sec));
    assert_eq!(d.in_progress(), 1);
    assert_eq!(d.stats().timed_out, 1);
    assert_eq!(payload_held(&d), 8);
    // The completing fragment of the expired datagram starts a new one.
    assert_eq!(feed(&mut d, 30 * sec, key(1), 8, false, &p[8..]), None);
    assert_eq!(d.in_progress(), 2);
    check_invariants(&d);
    // Without expire(): process() notices the overdue datagram itself.
    assert_eq!(feed(&mut d, 60 * sec, key(2), 8, false, &p[8..]), None);
    assert_eq!(d.stats().timed_out, 2);
    assert_eq!(d.stats().fragments_dropped, 2);
    assert_eq!(d.stats().dropped.timed_out, 2);
    check_invariants(&d);
    d.expire(Timestamp(u64::MAX));
    assert_eq!(d.in_progress(), 0);
    assert_eq!(payload_held(&d), 0);
    assert_eq!(d.stats().timed_out, 4);
    assert_eq!(d.stats().reassembled, 0);
    check_invariants(&d);
}

/// A fragment beyond the limit is dropped alone: the datagram keeps what it
/// has and still completes.
#[test]
fn too_many_fragments() {
    let mut d = Defragmenter::new(DefragConfig {
        max_fragments_per_datagram: 3,
        ..DefragConfig::default()
    });
    let p = payload(32);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 16, true, &p[16..24]), None);
    assert_eq!(d.stats().dropped.too_many, 1);
    assert_eq!(d.in_progress(), 1);
    check_invariants(&d);
    // Full: even the missing pieces are refused now.
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), None);
    assert_eq!(d.stats().dropped.too_many, 2);
    // Other datagrams are unaffected.
    assert_eq!(feed(&mut d, 0, key(2), 8, false, &p[8..16]), None);
    assert_eq!(
        feed(&mut d, 0, key(2), 0, true, &p[..8]),
        Some(p[..16].to_vec())
    );
    check_invariants(&d);
    d.expire(Timestamp(u64::MAX));
    assert_eq!(d.stats().timed_out, 1);
    assert_eq!(d.stats().dropped.timed_out, 3);
    check_invariants(&d);

    let mut d = Defragmenter::new(DefragConfig {
        max_fragments_per_datagram: 4,
        ..DefragConfig::default()
    });
    for (off, more) in [(0, true), (8, true), (8, true)] {
        assert_eq!(
            feed(
                &mut d,
                0,
                key(1),
                off,
                more,
                &p[off as usize..off as usize + 8]
            ),
            None
        );
    }
    assert_eq!(
        feed(&mut d, 0, key(1), 16, false, &p[16..]),
        Some(p.clone())
    );
    check_invariants(&d);
}

#[test]
fn full_table_evicts_oldest() {
    let mut d = Defragmenter::new(DefragConfig {
        max_datagrams: 2,
        ..DefragConfig::default()
    });
    let p = payload(16);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 1, key(2), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 2, key(3), 0, true, &p[..8]), None);
    assert_eq!(d.stats().evicted, 1);
    assert_eq!(d.in_progress(), 2);
    // Key 1 was evicted: its last fragment starts over.
    assert_eq!(feed(&mut d, 3, key(1), 8, false, &p[8..]), None);
    assert_eq!(d.stats().evicted, 2); // evicted key 2
    assert_eq!(feed(&mut d, 3, key(3), 8, false, &p[8..]), Some(p.clone()));
    check_invariants(&d);

    let mut z = Defragmenter::new(DefragConfig {
        max_datagrams: 0,
        ..DefragConfig::default()
    });
    assert_eq!(feed(&mut z, 0, key(1), 0, true, &p[..8]), None);
    assert_eq!(z.stats().dropped.evicted, 1);
    assert_eq!(z.in_progress(), 0);
    check_invariants(&z);
}

/// A fragment ending past the size limit is dropped alone.
#[test]
fn too_large() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(64);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    // Ends at 65536 > 65535: the classic "ping of death".
    assert_eq!(feed(&mut d, 0, key(1), 65528, false, &p[..8]), None);
    assert_eq!(d.stats().dropped.too_large, 1);
    assert_eq!(d.in_progress(), 1);
    assert_eq!(payload_held(&d), 8);
    // Ending exactly at the limit is fine.
    assert_eq!(feed(&mut d, 0, key(2), 65528, false, &p[..7]), None);
    assert_eq!(d.in_progress(), 2);
    // The datagram the oversized fragment claimed to belong to completes.
    assert_eq!(
        feed(&mut d, 0, key(1), 8, false, &p[8..20]),
        Some(p[..20].to_vec())
    );
    check_invariants(&d);
}

/// The memory limit counts the buffers; when a fragment does not fit, free
/// slots give back their buffers, then the oldest other datagrams go; a
/// fragment that cannot fit even alone is dropped.
#[test]
fn memory_full() {
    let p = payload(4096);
    let mut d = Defragmenter::new(DefragConfig {
        max_bytes: 3000,
        ..DefragConfig::default()
    });
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..1024]), None);
    assert_eq!(feed(&mut d, 0, key(2), 0, true, &p[..1024]), None);
    check_invariants(&d);
    // A third does not fit: key 1, the oldest, is evicted.
    assert_eq!(feed(&mut d, 0, key(3), 0, true, &p[..1024]), None);
    assert_eq!(d.stats().memory_full, 1);
    assert_eq!(d.stats().dropped.memory, 1);
    assert_eq!(d.in_progress(), 2);
    check_invariants(&d);
    // Key 2 (now the oldest) grows by evicting key 3, not itself.
    assert_eq!(feed(&mut d, 0, key(2), 1024, true, &p[1024..2048]), None);
    assert_eq!(d.stats().memory_full, 2);
    assert_eq!(d.in_progress(), 1);
    check_invariants(&d);
    // Growing past the limit on its own: the fragment is dropped, the
    // datagram keeps what it has.
    assert_eq!(feed(&mut d, 0, key(2), 2048, true, &p[2048..3072]), None);
    assert_eq!(d.stats().dropped.memory, 3);
    assert_eq!(d.in_progress(), 1);
    assert_eq!(payload_held(&d), 2048);
    // A fragment bigger than the whole limit.
    assert_eq!(feed(&mut d, 0, key(4), 0, true, &p[..4096]), None);
    assert_eq!(d.stats().dropped.memory, 4);
    check_invariants(&d);
    // Completed datagrams' buffers are reused, then given back when needed.
    let mut d = Defragmenter::new(DefragConfig {
        max_bytes: 3000,
        ..DefragConfig::default()
    });
    for id in 0..4 {
        assert_eq!(feed(&mut d, 0, key(id), 0, true, &p[..512]), None);
        assert!(feed(&mut d, 0, key(id), 512, false, &p[512..1000]).is_some());
        check_invariants(&d);
    }
    assert!(d.bytes_held() >= 1000, "a buffer is kept for reuse");
    assert_eq!(feed(&mut d, 0, key(9), 0, true, &p[..2048]), None);
    assert_eq!(d.stats().memory_full, 0, "spare buffers went first");
    assert_eq!(payload_held(&d), 2048);
    check_invariants(&d);
}

/// A datagram cut by the snapshot length is passed on as soon as its first
/// fragment is there, with the bytes captured from offset 0 and its length
/// on the wire as far as known; its later fragments are dropped.
#[test]
fn cut_datagrams_are_passed_on_from_their_first_fragment() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(48);
    // The first fragment cut: passed on at once, its own wire length.
    assert_eq!(
        feed_cut(&mut d, key(1), 0, true, &p[..12], 24),
        Some((p[..12].to_vec(), 24))
    );
    assert_eq!(d.stats().cut, 1);
    assert_eq!(d.in_progress(), 0);
    // The rest is swallowed.
    assert_eq!(feed(&mut d, 0, key(1), 24, false, &p[24..]), None);
    assert_eq!(d.stats().dropped.after_cut, 1);
    check_invariants(&d);
    // A later fragment cut, the last one seen: the datagram's wire length
    // is known; the bytes stop where the cut is.
    assert_eq!(feed(&mut d, 0, key(2), 32, false, &p[32..]), None);
    assert_eq!(feed_cut(&mut d, key(2), 16, true, &p[16..20], 16), None);
    assert_eq!(
        feed_cut(&mut d, key(2), 0, true, &p[..16], 16),
        Some((p[..20].to_vec(), 48))
    );
    // Cut with a hole before the cut: the bytes stop at the hole.
    assert_eq!(feed(&mut d, 0, key(3), 0, true, &p[..8]), None);
    assert_eq!(
        feed_cut(&mut d, key(3), 16, true, &p[16..20], 16),
        Some((p[..8].to_vec(), 32))
    );
    // The first fragment cut inside the IP header's payload at 0 bytes.
    assert_eq!(
        feed_cut(&mut d, key(4), 0, true, &[], 24),
        Some((Vec::new(), 24))
    );
    // Extra bytes (link padding) are ignored.
    let r = d.process(
        Timestamp(0),
        key(5),
        Fragment {
            offset: 0,
            more: false,
        },
        &p,
        10,
    );
    assert!(matches!(r, DefragOutcome::Complete(r) if r.data == &p[..10] && r.wire_len == 10));
    assert_eq!(d.stats().cut, 4);
    assert_eq!(d.stats().reassembled, 1);
    check_invariants(&d);
    // Passed entries expire without counting as lost.
    d.expire(Timestamp(u64::MAX));
    assert_eq!(d.stats().timed_out, 0);
    assert_eq!(d.store.len(), 0);
    check_invariants(&d);
}

#[test]
fn one_byte_fragments() {
    let mut d = Defragmenter::new(DefragConfig::default());
    // A non-last 1-byte fragment rounds down to nothing: malformed.
    assert_eq!(feed(&mut d, 0, key(1), 0, true, b"a"), None);
    assert_eq!(d.stats().dropped.malformed, 1);
    // Offsets must be multiples of 8.
    assert_eq!(feed(&mut d, 0, key(1), 1, false, b"b"), None);
    assert_eq!(d.stats().dropped.malformed, 2);
    // Zero length.
    assert_eq!(feed(&mut d, 0, key(1), 8, false, b""), None);
    assert_eq!(d.stats().dropped.malformed, 3);
    assert_eq!(d.in_progress(), 0);
    // A 1-byte last fragment is fine.
    assert_eq!(feed(&mut d, 0, key(1), 8, false, b"z"), None);
    assert_eq!(
        feed(&mut d, 0, key(1), 0, true, b"01234567"),
        Some(b"01234567z".to_vec())
    );
    assert_eq!(d.stats().fragments_dropped, 3);
    check_invariants(&d);
}

/// A non-last fragment whose length is not a multiple of 8 keeps its
/// first multiple of 8 bytes (as Linux does).
#[test]
fn odd_non_last_fragments_are_rounded_down() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(40);
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..18]), None);
    assert_eq!(payload_held(&d), 16);
    assert_eq!(
        feed(&mut d, 0, key(1), 16, false, &p[16..]),
        Some(p.clone())
    );
    assert_eq!(d.stats().fragments_dropped, 0);
    check_invariants(&d);
}

#[test]
fn offset_overflow() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let big = vec![0u8; 65535];
    // Highest IPv4 offset plus a big fragment: past the datagram limit.
    assert_eq!(feed(&mut d, 0, key(1), 65528, false, &big), None);
    assert_eq!(d.stats().dropped.too_large, 1);
    // offset + len overflowing u32.
    let r = d.process(
        Timestamp(0),
        key(2),
        Fragment {
            offset: u32::MAX - 7,
            more: true,
        },
        &big[..16],
        16,
    );
    assert_eq!(r, DefragOutcome::Pending);
    assert_eq!(d.stats().dropped.malformed, 1);
    // wire_len near u32::MAX with little data: no overflow either.
    let r = d.process(
        Timestamp(0),
        key(3),
        Fragment {
            offset: 8,
            more: true,
        },
        &big[..8],
        u32::MAX,
    );
    assert_eq!(r, DefragOutcome::Pending);
    assert_eq!(d.stats().dropped.malformed, 2);
    assert_eq!(d.in_progress(), 0);
    check_invariants(&d);
}

/// What is held wins over a fragment that contradicts it: the fragment is
/// dropped (or trimmed), never the datagram.
#[test]
fn conflicting_ends() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let p = payload(32);
    // Two last fragments with different totals: the second is dropped and
    // the first fragment completes the datagram with the first total.
    assert_eq!(feed(&mut d, 0, key(1), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..24]), None);
    assert_eq!(d.stats().dropped.inconsistent, 1);
    assert_eq!(
        feed(&mut d, 0, key(1), 0, true, &p[..8]),
        Some(p[..16].to_vec())
    );
    // Data past the known end: cut off, the rest kept.
    assert_eq!(feed(&mut d, 0, key(2), 16, false, &p[16..24]), None);
    assert_eq!(feed(&mut d, 0, key(2), 8, true, &p[8..32]), None);
    assert_eq!(
        feed(&mut d, 0, key(2), 0, true, &p[..8]),
        Some(p[..24].to_vec())
    );
    // A fragment starting at or past the known end: dropped.
    assert_eq!(feed(&mut d, 0, key(3), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(3), 16, true, &p[16..24]), None);
    assert_eq!(d.stats().dropped.inconsistent, 2);
    // A last fragment ending before bytes already held: they are cut off.
    assert_eq!(feed(&mut d, 0, key(4), 16, true, &p[16..32]), None);
    assert_eq!(feed(&mut d, 0, key(4), 8, false, &p[8..16]), None);
    assert_eq!(payload_held(&d), 8 + 8, "key 3's [8, 16) and key 4's");
    assert_eq!(
        feed(&mut d, 0, key(4), 0, true, &p[..8]),
        Some(p[..16].to_vec())
    );
    // ... and so are bytes straddling the end.
    assert_eq!(feed(&mut d, 0, key(6), 0, true, &p[..24]), None);
    assert_eq!(
        feed(&mut d, 0, key(6), 16, false, &p[16..20]),
        Some(p[..20].to_vec())
    );
    assert_eq!(d.in_progress(), 1);
    assert_eq!(d.stats().dropped.inconsistent, 2);
    // The same last fragment twice is fine.
    assert_eq!(feed(&mut d, 0, key(5), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(5), 8, false, &p[8..16]), None);
    assert_eq!(
        feed(&mut d, 0, key(5), 0, true, &p[..8]),
        Some(p[..16].to_vec())
    );
    assert_eq!(d.stats().fragments_dropped, 2);
    check_invariants(&d);
}

/// Under the Linux policy, fragments that disagree on where the datagram
/// ends make it corrupt, as in Linux's `ip_frag_queue`: the whole datagram
/// is discarded, so a forged last fragment can neither cut a datagram
/// short nor complete it with its own bytes.
#[test]
fn conflicting_ends_under_the_linux_policy_discard_the_datagram() {
    let mut d = Defragmenter::new(DefragConfig {
        policy: OverlapPolicy::Linux,
        ..DefragConfig::default()
    });
    let p = payload(32);
    let discarded = |d: &Defragmenter| (d.stats().inconsistent, d.stats().dropped.inconsistent);
    // Two last fragments with different ends: the datagram goes, and the
    // first fragment starts a new one that never completes.
    assert_eq!(feed(&mut d, 0, key(1), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..24]), None);
    assert_eq!(discarded(&d), (1, 2));
    assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
    // A forged last fragment ahead of the real ones: the real last one
    // gives another end and the datagram goes; the real first and middle
    // fragments then never complete, as on the receiving host.
    assert_eq!(feed(&mut d, 0, key(2), 8, false, b"FORGED!!"), None);
    assert_eq!(feed(&mut d, 0, key(2), 16, false, &p[16..24]), None);
    assert_eq!(discarded(&d), (2, 4));
    assert_eq!(feed(&mut d, 0, key(2), 0, true, &p[..8]), None);
    assert_eq!(feed(&mut d, 0, key(2), 8, true, &p[8..16]), None);
    // A last fragment ending before bytes already seen.
    assert_eq!(feed(&mut d, 0, key(4), 16, true, &p[16..32]), None);
    assert_eq!(feed(&mut d, 0, key(4), 8, false, &p[8..16]), None);
    assert_eq!(discarded(&d), (3, 6));
    // A fragment reaching past the known end.
    assert_eq!(feed(&mut d, 0, key(3), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(3), 8, true, &p[8..24]), None);
    assert_eq!(discarded(&d), (4, 8));
    // The same last fragment twice is fine.
    assert_eq!(feed(&mut d, 0, key(5), 8, false, &p[8..16]), None);
    assert_eq!(feed(&mut d, 0, key(5), 8, false, &p[8..16]), None);
    assert_eq!(
        feed(&mut d, 0, key(5), 0, true, &p[..8]),
        Some(p[..16].to_vec())
    );
    assert_eq!(discarded(&d), (4, 8));
    // Still held: key 1's first fragment and key 2's first and middle.
    assert_eq!(d.in_progress(), 2);
    check_invariants(&d);
}

#[test]
fn ipv6_32bit_ids() {
    let mut d = Defragmenter::new(DefragConfig::default());
    let k = |id| FragKey {
        src: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        dst: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2)),
        id,
        proto: 6,
        vlan: 0,
    };
    let a = payload(16);
    let b: Vec<u8> = a.iter().map(|x| x ^ 0x55).collect();
    // Same low 16 bits, different high bits: distinct datagrams.
    assert_eq!(feed(&mut d, 0, k(0x0001_beef), 0, true, &a[..8]), None);
    assert_eq!(feed(&mut d, 0, k(0xffff_beef), 0, true, &b[..8]), None);
    assert_eq!(d.in_progress(), 2);
    assert_eq!(feed(&mut d, 0, k(0xffff_beef), 8, false, &b[8..]), Some(b));
    assert_eq!(feed(&mut d, 0, k(0x0001_beef), 8, false, &a[8..]), Some(a));
    assert_eq!(d.stats().overlaps, 0);
    check_invariants(&d);
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_fragments_never_panic() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut total = DefragStats::default();
    for policy in OverlapPolicy::ALL {
        let cfg = DefragConfig {
            max_fragments_per_datagram: 8,
            max_datagrams: 4,
            max_bytes: 64 * 1024,
            timeout_ns: 300_000,
            policy,
            ..DefragConfig::default()
        };
        let mut d = Defragmenter::new(cfg);
        let buf = payload(70_000);
        let mut t = 0u64;
        for _ in 0..10_000 {
            t += rng.below(20_000);
            if rng.below(50) == 0 && t > 100_000 {
                t -= 100_000; // packet time going backwards
            }
            let k = key(rng.below(6) as u32);
            let offset = match rng.below(10) {
                0 => rng.next() as u32,
                1 => 65528,
                _ => (rng.below(32) * 8) as u32,
            };
            let len = match rng.below(10) {
                0 => rng.below(70_000) as usize,
                1 => rng.below(9) as usize,
                _ => ((1 + rng.below(8)) * 8) as usize,
            };
            let more = rng.below(8) != 0;
            let wire_len = if rng.below(30) == 0 {
                len as u32 + 1
            } else {
                len as u32
            };
            let r = d.process(
                Timestamp(t),
                k,
                Fragment { offset, more },
                &buf[..len],
                wire_len,
            );
            if let DefragOutcome::Complete(r) = r {
                assert!(r.wire_len <= 65535);
                assert!(r.data.len() <= r.wire_len as usize);
                assert!(r.fragments >= 1);
            }
            assert!(d.bytes_held() <= 64 * 1024);
            assert!(d.in_progress() <= 4);
            if rng.below(3) == 0 {
                d.expire(Timestamp(t));
            }
            check_invariants(&d);
        }
        assert!(d.stats().reassembled > 0, "{policy}: {:?}", d.stats());
        assert!(d.stats().overlaps > 0);
        let st = d.stats();
        total.add(st);
    }
    // Every path was exercised.
    let dropped = total.dropped;
    for (name, n) in [
        ("reassembled", total.reassembled),
        ("cut", total.cut),
        ("timed_out", total.timed_out),
        ("evicted", total.evicted),
        ("memory_full", total.memory_full),
        ("overlap_conflicts", total.overlap_conflicts),
    ]
    .into_iter()
    .chain(dropped.by_reason())
    {
        assert!(n > 0, "{name} never happened: {total:?}");
    }
}

#[test]
fn random_consistent_fragments_reassemble_exactly() {
    let mut rng = XorShift(12345);
    for round in 0..300 {
        let policy = OverlapPolicy::ALL[round % 6];
        let mut d = Defragmenter::new(DefragConfig {
            policy,
            ..DefragConfig::default()
        });
        let len = 1 + rng.below(3000) as usize;
        let p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let units = len.div_ceil(8);
        // A partition into fragments plus some overlapping extras, all
        // carrying the true bytes.
        let mut frags: Vec<(usize, usize)> = Vec::new();
        let mut at = 0;
        while at < units {
            let n = 1 + rng.below(60) as usize;
            frags.push((at * 8, ((at + n) * 8).min(len)));
            at += n;
        }
        for _ in 0..rng.below(8) {
            let s = rng.below(units as u64) as usize;
            let e = s + 1 + rng.below(40) as usize;
            frags.push((s * 8, (e * 8).min(len)));
        }
        for i in (1..frags.len()).rev() {
            frags.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut got = None;
        for &(s, e) in &frags {
            let r = feed(&mut d, 0, key(9), s as u32, e != len, &p[s..e]);
            if got.is_none() {
                got = r;
            }
            if got.is_none() {
                check_invariants(&d);
            }
        }
        assert_eq!(got.as_deref(), Some(&p[..]), "round {round}");
        assert_eq!(d.stats().overlap_conflicts, 0);
    }
}
