//! Evasion suite: the classic target-based reassembly cases (Ptacek &
//! Newsham; Novak & Sturges, "Target-Based TCP Stream Reassembly", 2007; the
//! Snort stream5 / Suricata overlap tests) run through the whole engine —
//! frames → `Worker` → delivered stream bytes — under every overlap policy,
//! for TCP segments and for IPv4 fragments.
//!
//! The expected results are written out below as tables, one row per case,
//! one column per policy (`first, last, linux, bsd, windows, solaris`, the
//! order of `OverlapPolicy::ALL`), so they read as a specification. They
//! follow the rules tabulated in `reassembly/policy.rs`; each cell was derived
//! from that table (old segment `O`, new segment `N`):
//!
//! - left overlap (`O` begins first): old wins, except `last`, and `solaris`
//!   when `N` extends past `O`;
//! - right overlap (`N` begins first, ends inside `O`): new wins for `last`,
//!   `linux`, `bsd`, `windows`;
//! - same start, `N` shorter: old wins except `last`;
//! - `N` covers `O`: new wins except `first`; at the same start only `linux`
//!   and `solaris` take a longer `N`; an exact copy of `O` replaces it only
//!   under `last`, and under `solaris` when no hole lies just before `O`.
//!
//! A policy only decides between bytes not yet delivered, so every case puts
//! a hole at the front of the stream: the segments wait out of order, and the
//! hole is filled last (the "out-of-order variant"). Cases where the first
//! copy was already delivered are checked separately: delivered bytes are
//! final under every policy.

mod support;

use etherparse::{IpNumber, Ipv4Header, Ipv6FragmentHeader, Ipv6Header, UdpHeader};
use streamcap::decode::DecodeError;
use streamcap::deliver::StreamErrors;
use streamcap::Worker;
use streamcap::{
    Config, GlobalStats, LinkType, OverlapPolicy, RawPacket, ReassemblyMode, Timestamp,
};
use support::*;

fn client() -> Ep {
    ep("10.0.0.1", 40000)
}
fn server() -> Ep {
    ep("10.0.0.2", 80)
}

/// Runs `frames` through one worker with `policy` for TCP and fragments, and
/// checks the global accounting invariant.
fn run(policy: OverlapPolicy, frames: &[Vec<u8>]) -> (Recorder, GlobalStats) {
    run_mode(policy, ReassemblyMode::Fast, frames)
}

/// [`run`] in the given TCP reassembly mode.
fn run_mode(
    policy: OverlapPolicy,
    mode: ReassemblyMode,
    frames: &[Vec<u8>],
) -> (Recorder, GlobalStats) {
    let mut cfg = Config {
        policy,
        mode,
        ..Config::default()
    };
    cfg.defrag.policy = policy;
    run_worker(cfg, frames)
}

/// A segment (or fragment) of the scenario: `[start, end)` in stream units,
/// filled with `fill`.
type Seg = (u32, u32, u8);

/// One pairwise case: `pre` segments arrive first, then the old segment `O`
/// (filled with `o`), then the new one `N` (filled with `n`); finally the
/// hole `[0, lowest start)` is filled with `h`. `want` is the delivered stream
/// per policy, in `OverlapPolicy::ALL` order.
struct Case {
    name: &'static str,
    pre: &'static [Seg],
    old: (u32, u32),
    new: (u32, u32),
    want: [&'static str; 6],
}

const fn case(
    name: &'static str,
    old: (u32, u32),
    new: (u32, u32),
    want: [&'static str; 6],
) -> Case {
    Case {
        name,
        pre: &[],
        old,
        new,
        want,
    }
}

/// The expected stream per (case, policy). Old segment bytes are `o`, new
/// ones `n`, the hole filled last `h` (and `p`: a segment just before `O`).
/// Each shape appears twice: as stated, and "reversed" (the two segments
/// arrive in the other order, so the other copy is the original).
#[rustfmt::skip]
const CASES: &[Case] = &[
    //                                                              first                   last                    linux                   bsd                     windows                 solaris
    case("N covers O: starts before, ends after", (8, 16), (6, 18), ["hhhhhhnnoooooooonn", "hhhhhhnnnnnnnnnnnn", "hhhhhhnnnnnnnnnnnn", "hhhhhhnnnnnnnnnnnn", "hhhhhhnnnnnnnnnnnn", "hhhhhhnnnnnnnnnnnn"]),
    case("N inside O (reversed cover)",         (6, 18), (8, 16), ["hhhhhhoooooooooooo", "hhhhhhoonnnnnnnnoo", "hhhhhhoooooooooooo", "hhhhhhoooooooooooo", "hhhhhhoooooooooooo", "hhhhhhoooooooooooo"]),
    case("N starts before, ends inside",         (8, 16), (6, 12), ["hhhhhhnnoooooooo", "hhhhhhnnnnnnoooo", "hhhhhhnnnnnnoooo", "hhhhhhnnnnnnoooo", "hhhhhhnnnnnnoooo", "hhhhhhnnoooooooo"]),
    case("N starts inside, ends after (reversed)", (6, 12), (8, 16), ["hhhhhhoooooonnnn", "hhhhhhoonnnnnnnn", "hhhhhhoooooonnnn", "hhhhhhoooooonnnn", "hhhhhhoooooonnnn", "hhhhhhoonnnnnnnn"]),
    case("N starts inside, ends after",          (8, 16), (12, 20), ["hhhhhhhhoooooooonnnn", "hhhhhhhhoooonnnnnnnn", "hhhhhhhhoooooooonnnn", "hhhhhhhhoooooooonnnn", "hhhhhhhhoooooooonnnn", "hhhhhhhhoooonnnnnnnn"]),
    case("N starts before, ends inside (reversed)", (12, 20), (8, 16), ["hhhhhhhhnnnnoooooooo", "hhhhhhhhnnnnnnnnoooo", "hhhhhhhhnnnnnnnnoooo", "hhhhhhhhnnnnnnnnoooo", "hhhhhhhhnnnnnnnnoooo", "hhhhhhhhnnnnoooooooo"]),
    case("N entirely inside O",                  (8, 16), (10, 14), ["hhhhhhhhoooooooo", "hhhhhhhhoonnnnoo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo"]),
    case("N covers O (reversed inside)",         (10, 14), (8, 16), ["hhhhhhhhnnoooonn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn"]),
    case("same start, N shorter",                (8, 16), (8, 12), ["hhhhhhhhoooooooo", "hhhhhhhhnnnnoooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo"]),
    case("same start, N longer (reversed)",      (8, 12), (8, 16), ["hhhhhhhhoooonnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhoooonnnn", "hhhhhhhhoooonnnn", "hhhhhhhhnnnnnnnn"]),
    case("same start, N longer",                 (8, 16), (8, 20), ["hhhhhhhhoooooooonnnn", "hhhhhhhhnnnnnnnnnnnn", "hhhhhhhhnnnnnnnnnnnn", "hhhhhhhhoooooooonnnn", "hhhhhhhhoooooooonnnn", "hhhhhhhhnnnnnnnnnnnn"]),
    case("same start, N shorter (reversed)",     (8, 20), (8, 16), ["hhhhhhhhoooooooooooo", "hhhhhhhhnnnnnnnnoooo", "hhhhhhhhoooooooooooo", "hhhhhhhhoooooooooooo", "hhhhhhhhoooooooooooo", "hhhhhhhhoooooooooooo"]),
    case("same end, N starts before",            (8, 16), (4, 16), ["hhhhnnnnoooooooo", "hhhhnnnnnnnnnnnn", "hhhhnnnnnnnnnnnn", "hhhhnnnnnnnnnnnn", "hhhhnnnnnnnnnnnn", "hhhhnnnnnnnnnnnn"]),
    case("same end, N starts inside (reversed)", (4, 16), (8, 16), ["hhhhoooooooooooo", "hhhhoooonnnnnnnn", "hhhhoooooooooooo", "hhhhoooooooooooo", "hhhhoooooooooooo", "hhhhoooooooooooo"]),
    case("same end, N starts inside",            (8, 16), (12, 16), ["hhhhhhhhoooooooo", "hhhhhhhhoooonnnn", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo"]),
    case("same end, N starts before (reversed)", (12, 16), (8, 16), ["hhhhhhhhnnnnoooo", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn", "hhhhhhhhnnnnnnnn"]),
    case("same range, hole just before O",       (8, 16), (8, 16), ["hhhhhhhhoooooooo", "hhhhhhhhnnnnnnnn", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo", "hhhhhhhhoooooooo"]),
    Case {
        name: "same range, no hole just before O",
        pre: &[(4, 8, b'p')],
        old: (8, 16),
        new: (8, 16),
        want:                                                     ["hhhhppppoooooooo", "hhhhppppnnnnnnnn", "hhhhppppoooooooo", "hhhhppppoooooooo", "hhhhppppoooooooo", "hhhhppppnnnnnnnn"],
    },
    // The segment that fills the hole is itself a new segment overlapping
    // stored data: it goes through the policy like any other.
    case("hole filler starts before O, ends inside", (4, 12), (0, 8), ["nnnnoooooooo", "nnnnnnnnoooo", "nnnnnnnnoooo", "nnnnnnnnoooo", "nnnnnnnnoooo", "nnnnoooooooo"]),
    case("hole filler covers O",                 (4, 12), (0, 16), ["nnnnoooooooonnnn", "nnnnnnnnnnnnnnnn", "nnnnnnnnnnnnnnnn", "nnnnnnnnnnnnnnnn", "nnnnnnnnnnnnnnnn", "nnnnnnnnnnnnnnnn"]),
];

impl Case {
    /// The segments in arrival order: `pre`, `O`, `N`, then the hole filler
    /// (if there is a hole in front).
    fn segments(&self) -> Vec<Seg> {
        let mut segs: Vec<Seg> = self.pre.to_vec();
        segs.push((self.old.0, self.old.1, b'o'));
        segs.push((self.new.0, self.new.1, b'n'));
        let lo = segs.iter().map(|s| s.0).min().unwrap_or(0);
        if lo > 0 {
            segs.push((0, lo, b'h'));
        }
        segs
    }

    /// Bytes where `O` and `N` overlap.
    fn overlap(&self) -> u64 {
        let a = self.old.0.max(self.new.0);
        let b = self.old.1.min(self.new.1);
        u64::from(b.saturating_sub(a))
    }
}

/// The client's segments at stream offsets (one byte per unit), after a handshake.
fn tcp_frames(segs: &[Seg]) -> Vec<Vec<u8>> {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 7_000, 90_000);
    c.handshake();
    let base = c.cseq;
    for &(s, e, fill) in segs {
        let payload = vec![fill; (e - s) as usize];
        c.frames
            .push(tcp(cl, sv, base.wrapping_add(s), c.sseq, ACK, &payload));
    }
    c.frames
}

/// Every case under every policy, in both modes (the handshake was seen, so
/// strict mode reassembles too; the hole is filled, so neither mode gives it up).
#[test]
fn tcp_overlaps_behind_a_hole_follow_the_policy_table() {
    for (case, mode) in CASES
        .iter()
        .flat_map(|c| [(c, ReassemblyMode::Fast), (c, ReassemblyMode::Strict)])
    {
        let frames = tcp_frames(&case.segments());
        for (policy, want) in OverlapPolicy::ALL.into_iter().zip(case.want) {
            let ctx = format!("{} / {policy} / {mode}", case.name);
            let (r, stats) = run_mode(policy, mode, &frames);
            let o = r.get(0, "orig");
            assert_eq!(String::from_utf8_lossy(&o.data), want, "{ctx}");
            assert!(o.gaps.is_empty(), "{ctx}: no gap");
            let info = o.closed.as_ref().expect("stream closed at the end");
            let c = &info.counters;
            // O and N disagree on every overlapping byte: one conflict.
            assert_eq!(c.overlap_conflicts, 1, "{ctx}");
            assert!(
                info.errors.contains(StreamErrors::OVERLAP_CONFLICT),
                "{ctx}"
            );
            assert!(!info.errors.contains(StreamErrors::GAP), "{ctx}");
            // The overlapping bytes count once in the stream, and as repeated.
            assert_eq!(c.retransmitted, case.overlap(), "{ctx}");
            let len = want.len() as u64;
            assert_eq!(
                (
                    c.stream_bytes,
                    c.captured,
                    c.missing,
                    c.dropped,
                    c.discarded
                ),
                (len, len, 0, 0, 0),
                "{ctx}"
            );
            assert!(c.invariant_holds(), "{ctx}");
            assert_eq!(stats.totals.overlap_conflicts, 1, "{ctx}");
        }
    }
}

/// An exact copy of a waiting segment overlaps it but is no conflict, under
/// every policy.
#[test]
fn tcp_exact_duplicate_behind_a_hole_is_not_a_conflict() {
    let frames = tcp_frames(&[(4, 12, b'o'), (4, 12, b'o'), (0, 4, b'h')]);
    for policy in OverlapPolicy::ALL {
        let (r, _) = run(policy, &frames);
        let o = r.get(0, "orig");
        assert_eq!(o.data, b"hhhhoooooooo", "{policy}");
        let info = o.closed.as_ref().expect("closed");
        assert_eq!(info.counters.overlap_conflicts, 0, "{policy}");
        assert_eq!(info.counters.retransmitted, 8, "{policy}");
        assert!(!info.errors.contains(StreamErrors::OVERLAP_CONFLICT));
    }
}

/// The original copy arrives at the delivery point and is delivered at once:
/// whatever the policy, a later contradicting copy cannot change it; the
/// contradiction is counted and flagged, and bytes past the delivered ones
/// are taken from the new segment.
#[test]
fn tcp_overlaps_of_delivered_bytes_keep_the_first_copy_under_every_policy() {
    // (case, N) with O = [0, 8) delivered first; expected stream for every policy.
    #[rustfmt::skip]
    let cases: [(&str, (u32, u32), &str); 6] = [
        ("same range",                 (0, 8),  "oooooooo"),
        ("same start, N shorter",      (0, 4),  "oooooooo"),
        ("same start, N longer",       (0, 12), "oooooooonnnn"),
        ("N entirely inside",          (2, 6),  "oooooooo"),
        ("N starts inside, ends after", (4, 12), "oooooooonnnn"),
        ("same end, N starts inside",  (4, 8),  "oooooooo"),
    ];
    for (name, new, want) in cases {
        let frames = tcp_frames(&[(0, 8, b'o'), (new.0, new.1, b'n')]);
        for policy in OverlapPolicy::ALL {
            let ctx = format!("{name} / {policy}");
            let (r, _) = run(policy, &frames);
            let o = r.get(0, "orig");
            assert_eq!(String::from_utf8_lossy(&o.data), want, "{ctx}");
            let info = o.closed.as_ref().expect("closed");
            assert_eq!(info.counters.overlap_conflicts, 1, "{ctx}");
            assert!(
                info.errors.contains(StreamErrors::OVERLAP_CONFLICT),
                "{ctx}"
            );
            let len = want.len() as u64;
            assert_eq!(
                (info.counters.stream_bytes, info.counters.captured),
                (len, len),
                "{ctx}"
            );
        }
    }
}

/// An insertion through a bogus IPv4 total length: a segment whose total
/// length is below its header length (but not 0, which TSO captures show)
/// is dropped by the receiver (Linux `ip_rcv_core`), so it must not become
/// stream data. Sent first, in order, it would be delivered at once and win
/// against the real segment under every policy; it is dropped and counted
/// as a bad IP header instead, on the per-packet path and on the batch path
/// (whose fast path reads plain IPv4 frames itself).
#[test]
fn tcp_insertion_through_a_bogus_ip_total_length_is_dropped() {
    let (cl, sv) = (client(), server());
    let mut c = Conv::new(cl, sv, 7_000, 90_000);
    c.handshake();
    let mut evil = tcp(cl, sv, c.cseq, c.sseq, ACK | PSH, b"GET /evil");
    evil[14 + 2..14 + 4].copy_from_slice(&19u16.to_be_bytes());
    c.frames.push(evil);
    c.client(b"GET /good", 100);
    for policy in OverlapPolicy::ALL {
        let (r, stats) = run(policy, &c.frames);
        assert_eq!(r.get(0, "orig").data, b"GET /good", "{policy}");
        assert_eq!(stats.decode_error(DecodeError::BadIpHeader), 1, "{policy}");
        let mut cfg = Config {
            policy,
            ..Config::default()
        };
        cfg.defrag.policy = policy;
        let mut w = Worker::new(cfg, Recorder::default());
        let pkts: Vec<RawPacket<'_>> = c
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| RawPacket {
                ts: Timestamp::from_secs_nanos(1_000, i as u64 * 1_000_000),
                link: LinkType::ETHERNET,
                data: f,
                orig_len: f.len() as u32,
                record: i as u64 + 1,
                interface: 0,
            })
            .collect();
        w.process_batch(&pkts);
        let stats = w.finish();
        assert_eq!(
            w.handler().get(0, "orig").data,
            b"GET /good",
            "{policy} (batch)"
        );
        assert_eq!(stats.decode_error(DecodeError::BadIpHeader), 1, "{policy}");
    }
}

/// A Novak/Suricata-style composite: nine segments after a one-byte hole,
/// then eight more overlapping them in every shape, then the hole. Units are
/// bytes for TCP and 8-byte blocks for fragments.
///
/// ```text
/// offset   0123456789012345678901234 5
/// first     AAA BBCCC D  EEFFFGGHHI
/// then       JJJJ  KKKLLLMMM N  OP QQQ
/// last     0
/// ```
#[rustfmt::skip]
const COMPOSITE: &[Seg] = &[
    (1, 4, b'A'), (5, 7, b'B'), (7, 10, b'C'), (11, 12, b'D'), (14, 16, b'E'),
    (16, 19, b'F'), (19, 21, b'G'), (21, 23, b'H'), (23, 24, b'I'),
    (2, 6, b'J'),   // left overlap of A, right overlap of B
    (7, 10, b'K'),  // same range as C, no hole before it (B ends at 7)
    (10, 13, b'L'), // covers D, starting before it
    (13, 16, b'M'), // covers E, starting before it, same end
    (17, 18, b'N'), // inside F
    (20, 21, b'O'), // starts inside G, same end
    (21, 22, b'P'), // same start as H, shorter
    (23, 26, b'Q'), // same start as I, longer
    (0, 1, b'0'),   // the hole
];

/// `COMPOSITE` reassembled, per policy in `OverlapPolicy::ALL` order.
const COMPOSITE_WANT: [(OverlapPolicy, &str); 6] = [
    (OverlapPolicy::First, "0AAAJBBCCCLDLMEEFFFGGHHIQQ"),
    (OverlapPolicy::Last, "0AJJJJBKKKLLLMMMFNFGOPHQQQ"),
    (OverlapPolicy::Linux, "0AAAJJBCCCLLLMMMFFFGGHHQQQ"),
    (OverlapPolicy::Bsd, "0AAAJJBCCCLLLMMMFFFGGHHIQQ"),
    (OverlapPolicy::Windows, "0AAAJJBCCCLLLMMMFFFGGHHIQQ"),
    (OverlapPolicy::Solaris, "0AJJJBBKKKLLLMMMFFFGGHHQQQ"),
];

/// (new segment, stored range) pairs that overlap in `COMPOSITE`: J with A
/// and B, and one each for K..Q.
const COMPOSITE_OVERLAPS: u64 = 9;

#[test]
fn tcp_composite_novak_scenario() {
    let frames = tcp_frames(COMPOSITE);
    for (policy, want) in COMPOSITE_WANT {
        let (r, _) = run(policy, &frames);
        let o = r.get(0, "orig");
        assert_eq!(String::from_utf8_lossy(&o.data), want, "{policy}");
        let info = o.closed.as_ref().expect("closed");
        assert_eq!(
            info.counters.overlap_conflicts, COMPOSITE_OVERLAPS,
            "{policy}"
        );
        assert_eq!(info.counters.stream_bytes, 26, "{policy}");
        assert_eq!(info.counters.missing, 0, "{policy}");
        assert!(info.counters.invariant_holds());
    }
}

// ---------------------------------------------------------------------------
// IPv4 fragments. The defragmenter resolves overlaps with the same
// `OverlapPolicy` (`Config::defrag.policy`), comparing each new fragment with
// every stored piece (`decode/defrag.rs`). The cases are the TCP ones with
// each unit an 8-byte block; the datagram is UDP: its 8-byte header goes in
// the fragment at offset 0 (together with the hole filler, arriving last but
// one), and a trailer block `t` after everything is the last fragment.
// ---------------------------------------------------------------------------

/// One Ethernet frame carrying an IPv4 fragment at byte `offset` of the
/// datagram `id` (10.0.0.1 → 10.0.0.2, UDP).
fn frag4(id: u16, offset: u32, more: bool, part: &[u8]) -> Vec<u8> {
    let mut ip = Ipv4Header::new(
        part.len() as u16,
        64,
        IpNumber::UDP,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
    )
    .expect("valid header");
    ip.identification = id;
    ip.more_fragments = more;
    ip.fragment_offset = ((offset / 8) as u16).try_into().expect("offset fits");
    ip.header_checksum = ip.calc_header_checksum();
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    f.extend_from_slice(&ip.to_bytes());
    f.extend_from_slice(part);
    f
}

/// One Ethernet frame carrying an IPv6 fragment at byte `offset` of the
/// datagram `id` (2001:db8::1 → 2001:db8::2, UDP).
fn frag6(id: u32, offset: u32, more: bool, part: &[u8]) -> Vec<u8> {
    let ip = Ipv6Header {
        payload_length: (8 + part.len()) as u16,
        next_header: IpNumber::IPV6_FRAGMENTATION_HEADER,
        hop_limit: 64,
        source: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        destination: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        ..Default::default()
    };
    let fh = Ipv6FragmentHeader::new(
        IpNumber::UDP,
        ((offset / 8) as u16).try_into().expect("offset fits"),
        more,
        id,
    );
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd];
    f.extend_from_slice(&ip.to_bytes());
    f.extend_from_slice(&fh.to_bytes());
    f.extend_from_slice(part);
    f
}

/// The fragments of a scenario given in 8-byte units, in arrival order:
/// every segment but the hole filler, then the UDP header (with the filler,
/// if any), then the trailer that completes the datagram.
fn fragment_frames(segs: &[Seg]) -> Vec<Vec<u8>> {
    fragment_frames_with(segs, |offset, more, part| frag4(77, offset, more, part))
}

/// [`fragment_frames`] with the fragment builder `frag` (IPv4 or IPv6).
fn fragment_frames_with(segs: &[Seg], frag: impl Fn(u32, bool, &[u8]) -> Vec<u8>) -> Vec<Vec<u8>> {
    let end = segs.iter().map(|s| s.1).max().unwrap_or(0);
    // Units of the datagram's UDP payload: unit u lies at byte 8 * (u + 1).
    let udp_len = 8 + 8 * (end as usize + 1);
    let header = UdpHeader {
        source_port: 5353,
        destination_port: 53,
        length: udp_len as u16,
        checksum: 0,
    };
    let mut frames = Vec::new();
    let mut first = header.to_bytes().to_vec();
    for &(s, e, fill) in segs {
        let block = vec![fill; 8 * (e - s) as usize];
        if s == 0 {
            first.extend_from_slice(&block);
        } else {
            frames.push(frag(8 * (s + 1), true, &block));
        }
    }
    frames.push(frag(0, true, &first));
    frames.push(frag(8 * (end + 1), false, &[b't'; 8]));
    frames
}

/// `want` with every unit widened to 8 bytes, followed by the trailer.
fn widened(want: &str) -> Vec<u8> {
    let mut v: Vec<u8> = want.bytes().flat_map(|b| [b; 8]).collect();
    v.extend_from_slice(&[b't'; 8]);
    v
}

#[test]
fn ipv4_fragment_overlaps_follow_the_policy_table() {
    for case in CASES {
        let frames = fragment_frames(&case.segments());
        for (policy, want) in OverlapPolicy::ALL.into_iter().zip(case.want) {
            let ctx = format!("{} / {policy}", case.name);
            let (r, stats) = run(policy, &frames);
            let u = r.get(0, "orig");
            assert_eq!(
                String::from_utf8_lossy(&u.data),
                String::from_utf8_lossy(&widened(want)),
                "{ctx}"
            );
            assert_eq!(stats.defrag.reassembled, 1, "{ctx}");
            assert_eq!(stats.defrag.overlaps, 1, "{ctx}");
            assert_eq!(stats.defrag.overlap_conflicts, 1, "{ctx}");
            assert_eq!(stats.defrag.fragments_dropped, 0, "{ctx}");
            assert_eq!(stats.fragments, frames.len() as u64, "{ctx}");
            // The datagram is one packet of its flow, however many
            // fragments carried it.
            let info = u.closed.as_ref().expect("closed");
            assert_eq!(info.counters.pkts, 1, "{ctx}");
            assert_eq!(info.counters.stream_bytes, 8 * (want.len() as u64 + 1));
        }
    }
}

#[test]
fn ipv4_fragment_exact_duplicate_is_an_overlap_not_a_conflict() {
    let frames = fragment_frames(&[(4, 12, b'o'), (4, 12, b'o'), (0, 4, b'h')]);
    for policy in OverlapPolicy::ALL {
        let (r, stats) = run(policy, &frames);
        assert_eq!(r.get(0, "orig").data, widened("hhhhoooooooo"), "{policy}");
        assert_eq!(
            (stats.defrag.overlaps, stats.defrag.overlap_conflicts),
            (1, 0),
            "{policy}"
        );
    }
}

#[test]
fn ipv4_fragment_composite_novak_scenario() {
    let frames = fragment_frames(COMPOSITE);
    for (policy, want) in COMPOSITE_WANT {
        let (r, stats) = run(policy, &frames);
        assert_eq!(
            String::from_utf8_lossy(&r.get(0, "orig").data),
            String::from_utf8_lossy(&widened(want)),
            "{policy}"
        );
        assert_eq!(stats.defrag.reassembled, 1, "{policy}");
        assert_eq!(stats.defrag.overlaps, COMPOSITE_OVERLAPS, "{policy}");
        assert_eq!(
            stats.defrag.overlap_conflicts, COMPOSITE_OVERLAPS,
            "{policy}"
        );
    }
}

/// IPv6 fragments go through the same defragmenter and policy: every case
/// gives the IPv4 result. (RFC 5722 tells hosts to drop IPv6 datagrams with
/// overlapping fragments; streamcap reassembles them by the configured
/// policy and counts the overlaps, so a monitor still sees the content.)
#[test]
fn ipv6_fragment_overlaps_follow_the_policy_table() {
    for case in CASES {
        let frames = fragment_frames_with(&case.segments(), |offset, more, part| {
            frag6(0x0102_0304, offset, more, part)
        });
        for (policy, want) in OverlapPolicy::ALL.into_iter().zip(case.want) {
            let ctx = format!("{} / {policy}", case.name);
            let (r, stats) = run(policy, &frames);
            assert_eq!(
                String::from_utf8_lossy(&r.get(0, "orig").data),
                String::from_utf8_lossy(&widened(want)),
                "{ctx}"
            );
            assert_eq!(stats.defrag.reassembled, 1, "{ctx}");
            assert_eq!(
                (stats.defrag.overlaps, stats.defrag.overlap_conflicts),
                (1, 1),
                "{ctx}"
            );
        }
    }
}
