//! From application messages to wire flows: where TCP sends are cut into
//! segments (straddling signatures or not), which segments are reordered,
//! which signatures meet a conflicting retransmission, and the resulting
//! occurrences.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use crate::capture::{Direction, FlowGenerator, GeneratedFlow};
use crate::prng::SplitMix64;
use crate::tcp::{Handshake, SegmentInfo, TcpConversation};
use crate::truth::{ByteRange, Protocol};
use crate::udp::UdpFlow;

use super::apps::{Msg, Script};
use super::signature::Signature;
use super::{Occurrence, OverlapConflict, Placement, SignatureIn};

/// Per-flow choices of a TCP flow.
pub(super) struct TcpParams {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub seed: u64,
    /// Start and packet spacing, ns.
    pub timing: (u64, u64),
    pub mss: usize,
    pub midstream: bool,
    pub reorder: bool,
    pub conflict: bool,
}

/// Segmentation wishes for one planted signature.
#[derive(Clone, Copy, Debug)]
struct MarkPlan {
    /// Message and mark index within it.
    msg: usize,
    sig: usize,
    /// Position within the message, and length.
    pos: usize,
    len: usize,
    /// Straddle: bytes in the first segment.
    split: Option<usize>,
    /// Put a segment boundary shortly before it, with a segment before
    /// that is neither the direction's first nor another signature's, so
    /// that the two can be swapped.
    hole: bool,
}

/// Chooses the cuts of a send of `len` bytes: one inside every straddling
/// signature, a hole segment before every signature that asks for one, and
/// otherwise every `mss` bytes, never inside a non-straddling signature.
/// `marks` are this send's, sorted by position; a hole that does not fit is
/// dropped from the mark.
fn plan_cuts(
    len: usize,
    first_of_dir: bool,
    mss: usize,
    marks: &mut [MarkPlan],
    rng: &mut SplitMix64,
) -> Vec<usize> {
    let mut required = Vec::new();
    let mut lo = 0;
    for m in marks.iter_mut() {
        if m.hole {
            // The hole segment [b, a) must not be the direction's first.
            let bmin = if first_of_dir && lo == 0 { 1 } else { lo };
            if m.pos > bmin {
                let a = rng.range(
                    (bmin + 1).max(m.pos.saturating_sub(24)) as u64,
                    m.pos as u64,
                ) as usize;
                let b = rng.range(bmin.max(a.saturating_sub(25)) as u64, a as u64 - 1) as usize;
                required.push(a);
                if b > 0 {
                    required.push(b);
                }
            } else {
                m.hole = false;
            }
        }
        if let Some(j) = m.split {
            required.push(m.pos + j);
        }
        lo = m.pos + m.len;
    }
    required.sort_unstable();
    required.dedup();
    let mut cuts = Vec::new();
    let mut last = 0;
    for target in required.into_iter().chain([len]) {
        while target - last > mss {
            let mut c = last + mss;
            if let Some(m) = marks.iter().find(|m| m.pos < c && c < m.pos + m.len) {
                if m.pos > last {
                    c = m.pos;
                }
            }
            cuts.push(c);
            last = c;
        }
        if target < len {
            cuts.push(target);
        }
        last = target;
    }
    cuts
}

/// Bytes that differ from `b` at every position and never form the marker.
fn other_bytes(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&x| if x == b'#' { b'%' } else { b'#' })
        .collect()
}

fn conversation(p: &TcpParams, msgs: &[Msg], cuts: &[Vec<usize>], label: &str) -> TcpConversation {
    let mut conv = TcpConversation::new(p.client, p.server)
        .seed(p.seed)
        .timing(p.timing.0, p.timing.1)
        .mss(p.mss)
        .label(label);
    if p.midstream {
        conv = conv.handshake(Handshake::None);
    }
    for (m, c) in msgs.iter().zip(cuts) {
        conv = conv.send_cut(m.dir, m.bytes.clone(), c.clone());
    }
    conv
}

/// Builds a TCP flow from `script`; returns it with its occurrences
/// (`flow` still 0).
///
/// `balance` is the number of straddling minus non-straddling occurrences
/// so far in the trace: the coin that decides is overridden when it drifts
/// past 2, so that about half of all TCP occurrences straddle.
pub(super) fn tcp_flow(
    script: &Script,
    p: &TcpParams,
    set: &[Signature],
    balance: &mut i64,
    rng: &mut SplitMix64,
) -> (GeneratedFlow, Vec<Occurrence>) {
    let mut msgs = script.msgs.clone();
    let mut label = format!("nids-{}", script.app.name());
    for (on, name) in [
        (p.midstream, "+midstream"),
        (p.reorder, "+reorder"),
        (p.conflict, "+conflict"),
    ] {
        if on {
            label.push_str(name);
        }
    }

    // 1. Where each send starts in its direction, and its cuts.
    let mut sent = [0u64; 2];
    let mut starts = Vec::with_capacity(msgs.len());
    let mut cuts = Vec::with_capacity(msgs.len());
    let mut plans: Vec<MarkPlan> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let d = usize::from(m.dir == Direction::ToClient);
        starts.push(sent[d]);
        let mut mine: Vec<MarkPlan> = m
            .marks
            .iter()
            .map(|mk| {
                let len = set[mk.sig].bytes.len();
                let coin = rng.chance(1, 2);
                let straddle = match *balance {
                    b if b > 2 => false,
                    b if b < -2 => true,
                    _ => coin,
                };
                *balance += if straddle { 1 } else { -1 };
                let split = straddle.then(|| match rng.below(4) {
                    0 => 1,
                    1 => len / 2,
                    2 => len - 1,
                    _ => rng.range(1, len as u64 - 1) as usize,
                });
                MarkPlan {
                    msg: i,
                    sig: mk.sig,
                    pos: mk.at,
                    len,
                    split,
                    hole: p.reorder || p.conflict,
                }
            })
            .collect();
        cuts.push(plan_cuts(
            m.bytes.len(),
            sent[d] == 0,
            p.mss,
            &mut mine,
            rng,
        ));
        plans.extend(mine);
        sent[d] += m.bytes.len() as u64;
    }
    let segs = conversation(p, &msgs, &cuts, &label).data_segments();
    let by_dir = |dir: Direction| -> Vec<SegmentInfo> {
        segs.iter().filter(|s| s.dir == dir).copied().collect()
    };
    let dir_segs = [by_dir(Direction::ToServer), by_dir(Direction::ToClient)];

    // 2. Per occurrence: the segments, the swap, the conflict.
    let mut used = BTreeSet::new();
    let mut swaps = Vec::new();
    let mut conflicts = Vec::new();
    let mut occ = Vec::new();
    for mp in &plans {
        let dir = msgs[mp.msg].dir;
        let ds = &dir_segs[usize::from(dir == Direction::ToClient)];
        let start = starts[mp.msg] + mp.pos as u64;
        let end = start + mp.len as u64;
        let Some(ki) = ds
            .iter()
            .position(|s| s.range.start <= start && start < s.range.end)
        else {
            continue; // unreachable: every stream byte is in a segment
        };
        let k = ds[ki];
        let crosses = k.range.end < end;
        let mut o = Occurrence {
            flow: 0,
            proto: Protocol::Tcp,
            client: p.client,
            server: p.server,
            direction: dir,
            signature: mp.sig,
            sid: set[mp.sig].sid,
            carrier: set[mp.sig].carrier,
            offset: start,
            len: mp.len as u64,
            datagram: None,
            crosses_segment: crosses,
            split: crosses.then(|| k.range.end - start),
            midstream: p.midstream,
            reordered: false,
            conflict: None,
            present_first: true,
            present_last: true,
        };
        let hole = ki.checked_sub(1).map(|hi| ds[hi]).filter(|h| {
            mp.hole
                && h.range.start > 0
                && h.range.start >= starts[mp.msg]
                && !used.contains(&h.index)
                && !used.contains(&k.index)
        });
        if let Some(h) = hole {
            swaps.push((h.index, k.index));
            used.insert(h.index);
            used.insert(k.index);
            o.reordered = true;
            if p.conflict {
                let range = ByteRange {
                    start,
                    end: end.min(k.range.end),
                };
                let n = range.len() as usize;
                let sig_part = &set[mp.sig].bytes[..n];
                let placement = if rng.chance(1, 2) {
                    Placement::After
                } else {
                    Placement::Before
                };
                let signature_in = if rng.chance(1, 2) {
                    SignatureIn::Original
                } else {
                    SignatureIn::Retransmission
                };
                let bytes = match signature_in {
                    SignatureIn::Original => other_bytes(sig_part),
                    SignatureIn::Retransmission => {
                        let at = mp.pos;
                        msgs[mp.msg].bytes[at..at + n].copy_from_slice(&other_bytes(sig_part));
                        sig_part.to_vec()
                    }
                };
                conflicts.push((dir, start, bytes, placement));
                // The bytes seen first win under `first`: the original's
                // when the retransmission comes after it.
                let first_is_sig =
                    (placement == Placement::After) == (signature_in == SignatureIn::Original);
                o.present_first = first_is_sig;
                o.present_last = !first_is_sig;
                o.conflict = Some(OverlapConflict {
                    placement,
                    signature_in,
                    range,
                });
            }
        }
        occ.push(o);
    }

    // 3. More reordering in long sends.
    if p.reorder {
        for (i, m) in msgs.iter().enumerate() {
            let ds = &dir_segs[usize::from(m.dir == Direction::ToClient)];
            let (s, e) = (starts[i], starts[i] + m.bytes.len() as u64);
            let inside: Vec<&SegmentInfo> = ds
                .iter()
                .filter(|x| x.range.start >= s && x.range.end <= e)
                .collect();
            let pairs: Vec<(usize, usize)> = inside
                .windows(2)
                .filter(|w| w[0].range.start > 0)
                .map(|w| (w[0].index, w[1].index))
                .filter(|(a, b)| !used.contains(a) && !used.contains(b))
                .collect();
            if inside.len() >= 3 && !pairs.is_empty() && rng.chance(1, 2) {
                let (a, b) = *rng.pick(&pairs);
                swaps.push((a, b));
                used.insert(a);
                used.insert(b);
            }
        }
    }

    // 4. The final conversation.
    let mut conv = conversation(p, &msgs, &cuts, &label);
    for (a, b) in swaps {
        conv = conv.swap_segments(a, b);
    }
    for (dir, offset, bytes, placement) in conflicts {
        conv = conv.conflict(dir, offset, bytes, placement.into());
    }
    occ.sort_by_key(|o| (o.direction, o.offset));
    (conv.generate(), occ)
}

/// Builds a UDP flow from `script`: one datagram per message. Returns it
/// with its occurrences (`flow` still 0).
pub(super) fn udp_flow(
    script: &Script,
    client: SocketAddr,
    server: SocketAddr,
    seed: u64,
    timing: (u64, u64),
    set: &[Signature],
) -> (GeneratedFlow, Vec<Occurrence>) {
    let mut flow = UdpFlow::new(client, server)
        .seed(seed)
        .timing(timing.0, timing.1)
        .label(format!("nids-{}", script.app.name()));
    let mut count = [0u64; 2];
    let mut occ = Vec::new();
    for m in &script.msgs {
        let d = usize::from(m.dir == Direction::ToClient);
        for mk in &m.marks {
            let s = &set[mk.sig];
            occ.push(Occurrence {
                flow: 0,
                proto: Protocol::Udp,
                client,
                server,
                direction: m.dir,
                signature: s.index,
                sid: s.sid,
                carrier: s.carrier,
                offset: mk.at as u64,
                len: s.bytes.len() as u64,
                datagram: Some(count[d]),
                crosses_segment: false,
                split: None,
                midstream: false,
                reordered: false,
                conflict: None,
                present_first: true,
                present_last: true,
            });
        }
        count[d] += 1;
        flow = flow.datagram(m.dir, m.bytes.clone());
    }
    occ.sort_by_key(|o| (o.direction, o.datagram, o.offset));
    (flow.generate(), occ)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(pos: usize, len: usize, split: Option<usize>, hole: bool) -> MarkPlan {
        MarkPlan {
            msg: 0,
            sig: 0,
            pos,
            len,
            split,
            hole,
        }
    }

    #[test]
    fn cuts_respect_marks_and_mss() {
        let mut rng = SplitMix64::new(7);
        for round in 0..2000 {
            let len = rng.range(200, 5000) as usize;
            let mss = *rng.pick(&[536, 1200, 1460]);
            let first = rng.chance(1, 2);
            let mut marks = Vec::new();
            let mut at = rng.range(0, 40) as usize;
            while at + 80 < len && marks.len() < 3 {
                let n = rng.range(16, 40) as usize;
                let split = rng
                    .chance(1, 2)
                    .then(|| rng.range(1, n as u64 - 1) as usize);
                marks.push(mark(at, n, split, rng.chance(1, 2)));
                at += n + rng.range(16, 900) as usize;
            }
            let cuts = plan_cuts(len, first, mss, &mut marks, &mut rng);
            let mut bounds = vec![0];
            bounds.extend(&cuts);
            bounds.push(len);
            assert!(
                bounds.windows(2).all(|w| w[0] < w[1]),
                "{round}: {bounds:?}"
            );
            assert!(bounds.windows(2).all(|w| w[1] - w[0] <= mss), "{round}");
            for m in &marks {
                let inside: Vec<usize> = cuts
                    .iter()
                    .copied()
                    .filter(|&c| m.pos < c && c < m.pos + m.len)
                    .collect();
                assert_eq!(
                    inside,
                    m.split.map(|j| m.pos + j).into_iter().collect::<Vec<_>>()
                );
                if m.hole {
                    // A segment ends at or before the mark and the one
                    // before it starts after the direction's first byte.
                    let k = bounds.iter().rposition(|&b| b <= m.pos).unwrap();
                    assert!(k >= 1, "{round}");
                    assert!(!first || bounds[k - 1] > 0, "{round}");
                }
            }
        }
    }
}
