//! An ordered store of not-yet-delivered byte ranges, with target-based
//! overlap resolution.
//!
//! Segments are kept in a `BTreeMap` keyed by start offset and never overlap
//! one another, so inserting or removing a segment costs O(log n) plus the
//! number of stored segments it overlaps: no sequence of segments makes a
//! single packet cost O(n) (the lesson of Zeek issue #575).
//!
//! Besides data, a range can hold a placeholder: bytes that were seen but
//! *dropped* for lack of memory, or bytes known to be *missing* (cut by the
//! snapshot length). Placeholders keep the accounting exact: when the delivery
//! point reaches them, their bytes are counted as dropped or missing, once.
//! Data always replaces a placeholder; a placeholder never replaces data.

use super::policy::OverlapPolicy;
use crate::deliver::Budget;
use std::collections::BTreeMap;

/// What a stored range holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored {
    /// Bytes to deliver.
    Data(Box<[u8]>),
    /// Bytes that were seen but not stored for lack of memory.
    Dropped,
    /// Bytes known to be absent (cut by the snapshot length).
    Missing,
}

/// What an inserted range carries.
#[derive(Copy, Clone, Debug)]
pub enum Incoming<'a> {
    /// Bytes (their length is the range's length).
    Data(&'a [u8]),
    /// A dropped-bytes placeholder.
    Dropped,
    /// A missing-bytes placeholder.
    Missing,
}

/// Adjacent data ranges are merged while the result stays within this size.
pub const MERGE_MAX: usize = 4096;

#[derive(Debug)]
struct Seg {
    end: u64,
    what: Stored,
}

/// What an insertion did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct InsertOutcome {
    /// Bytes of the new range that overlapped stored ranges.
    pub overlapped: u64,
    /// Stored data segments whose overlapping bytes differed from the new bytes.
    pub conflicts: u64,
    /// New bytes turned into a dropped placeholder because the budget was full.
    pub dropped: u64,
}

/// The out-of-order store of one stream.
#[derive(Debug, Default)]
pub struct Assembler {
    segs: BTreeMap<u64, Seg>,
    data_bytes: usize,
}

impl Assembler {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Number of stored ranges.
    pub fn segments(&self) -> usize {
        self.segs.len()
    }

    /// Data bytes stored (charged to the budget).
    pub fn data_bytes(&self) -> usize {
        self.data_bytes
    }

    /// Start of the first stored range.
    pub fn first_start(&self) -> Option<u64> {
        self.segs.keys().next().copied()
    }

    /// End of the last stored range.
    pub fn last_end(&self) -> Option<u64> {
        self.segs.values().next_back().map(|s| s.end)
    }

    /// Removes and returns the first range if it starts at or before `at`.
    /// The data stays charged to the budget: the caller moves or releases it.
    pub fn pop_front(&mut self, at: u64) -> Option<(u64, u64, Stored)> {
        let (&start, _) = self.segs.first_key_value()?;
        if start > at {
            return None;
        }
        let (start, seg) = self.segs.pop_first()?;
        if let Stored::Data(d) = &seg.what {
            self.data_bytes -= d.len();
        }
        Some((start, seg.end, seg.what))
    }

    /// Drops everything, releasing its data from the budget.
    pub fn clear(&mut self, budget: &mut Budget) {
        budget.release(self.data_bytes);
        self.data_bytes = 0;
        self.segs.clear();
    }

    /// Drops every stored byte at or after `at` (a FIN ends the stream there),
    /// releasing its data from the budget.
    pub fn truncate_from(&mut self, at: u64, budget: &mut Budget) {
        let tail = self.segs.split_off(&at);
        for seg in tail.into_values() {
            if let Stored::Data(d) = seg.what {
                self.data_bytes -= d.len();
                budget.release(d.len());
            }
        }
        if let Some((&start, seg)) = self.segs.iter_mut().next_back() {
            if seg.end > at {
                seg.end = at;
                if let Stored::Data(d) = &mut seg.what {
                    let keep = (at - start) as usize;
                    let cut = d.len() - keep;
                    *d = d[..keep].into();
                    self.data_bytes -= cut;
                    budget.release(cut);
                }
            }
        }
    }

    fn store(&mut self, start: u64, end: u64, what: Stored) {
        if let Stored::Data(d) = &what {
            self.data_bytes += d.len();
        }
        self.segs.insert(start, Seg { end, what });
    }

    fn hole_before(&self, start: u64, floor: u64) -> bool {
        start > floor
            && self
                .segs
                .range(..start)
                .next_back()
                .is_none_or(|(_, s)| s.end < start)
    }

    /// Inserts the range `[start, end)` carrying `incoming`, resolving overlaps
    /// with stored ranges by `policy`. Bytes below `floor` (already delivered)
    /// are ignored. Data is charged to `budget`; data that does not fit becomes
    /// a dropped placeholder.
    pub fn insert(
        &mut self,
        start: u64,
        end: u64,
        incoming: Incoming<'_>,
        policy: OverlapPolicy,
        floor: u64,
        budget: &mut Budget,
    ) -> InsertOutcome {
        let mut out = InsertOutcome::default();
        let ns = start.max(floor);
        if ns >= end {
            return out;
        }
        let ne = end;
        let incoming = match incoming {
            Incoming::Data(d) => {
                let skip = (ns - start) as usize;
                Incoming::Data(d.get(skip..).unwrap_or(&[]))
            }
            other => other,
        };
        if let Incoming::Data(d) = incoming {
            debug_assert_eq!(d.len() as u64, ne - ns);
        }

        // Resolve each overlapped stored range.
        let mut overlapped: Vec<u64> = Vec::new();
        if let Some((&k, s)) = self.segs.range(..ns).next_back() {
            if s.end > ns {
                overlapped.push(k);
            }
        }
        overlapped.extend(self.segs.range(ns..ne).map(|(&k, _)| k));
        for os in overlapped {
            let hole = self.hole_before(os, floor);
            let Some(seg) = self.segs.get(&os) else {
                continue;
            };
            let oe = seg.end;
            let (a, b) = (os.max(ns), oe.min(ne));
            out.overlapped += b - a;
            let new_wins = match (&incoming, &seg.what) {
                (Incoming::Data(nd), Stored::Data(od)) => {
                    let new_bytes = &nd[(a - ns) as usize..(b - ns) as usize];
                    let old_bytes = &od[(a - os) as usize..(b - os) as usize];
                    if new_bytes != old_bytes {
                        out.conflicts += 1;
                    }
                    policy.new_wins((os, oe), (ns, ne), hole)
                }
                (Incoming::Data(_), _) => true,
                _ => false,
            };
            if new_wins {
                let Some(seg) = self.segs.remove(&os) else {
                    continue;
                };
                let (left, right) = match seg.what {
                    Stored::Data(od) => {
                        self.data_bytes -= od.len();
                        budget.release(od.len());
                        let l = &od[..(a - os) as usize];
                        let r = &od[(b - os) as usize..];
                        // Parts of what was just released: re-charging them always fits.
                        let _ = budget.try_charge(l.len() + r.len());
                        (Stored::Data(l.into()), Stored::Data(r.into()))
                    }
                    Stored::Dropped => (Stored::Dropped, Stored::Dropped),
                    Stored::Missing => (Stored::Missing, Stored::Missing),
                };
                if a > os {
                    self.store(os, a, left);
                }
                if oe > b {
                    self.store(b, oe, right);
                }
            }
        }

        // Fill the parts of [ns, ne) that no stored range covers.
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        let mut cursor = ns;
        if let Some((_, s)) = self.segs.range(..ns).next_back() {
            cursor = cursor.max(s.end.min(ne));
        }
        for (&s, seg) in self.segs.range(ns..ne) {
            if s > cursor {
                gaps.push((cursor, s));
            }
            cursor = cursor.max(seg.end);
        }
        if cursor < ne {
            gaps.push((cursor, ne));
        }
        for &(gs, ge) in &gaps {
            let what = match incoming {
                Incoming::Data(d) => {
                    let piece = &d[(gs - ns) as usize..(ge - ns) as usize];
                    if budget.try_charge(piece.len()) {
                        Stored::Data(piece.into())
                    } else {
                        out.dropped += ge - gs;
                        Stored::Dropped
                    }
                }
                Incoming::Dropped => Stored::Dropped,
                Incoming::Missing => Stored::Missing,
            };
            self.store(gs, ge, what);
        }
        // Under `first` and `last` the outcome does not depend on where stored
        // segments begin and end, so adjacent data can be merged; the OS
        // policies look at segment boundaries, so data keeps its shapes there.
        let merge_data = matches!(policy, OverlapPolicy::First | OverlapPolicy::Last);
        self.coalesce(ns, ne, merge_data);
        out
    }

    /// Merges adjacent ranges of the same kind around `[from, to]`, so that a
    /// run of tiny segments does not stay a run of tiny ranges that every
    /// later overlapping segment has to visit. Placeholders always merge;
    /// data ranges (when `merge_data`) merge up to [`MERGE_MAX`] bytes, which
    /// bounds the copying per merge.
    fn coalesce(&mut self, from: u64, to: u64, merge_data: bool) {
        let start = self
            .segs
            .range(..from)
            .next_back()
            .map_or(from, |(&k, _)| k);
        let keys: Vec<u64> = self.segs.range(start..=to).map(|(&k, _)| k).collect();
        let mut cur = match keys.first() {
            Some(&k) => k,
            None => return,
        };
        for &k in &keys[1..] {
            let (Some(a), Some(b)) = (self.segs.get(&cur), self.segs.get(&k)) else {
                cur = k;
                continue;
            };
            let mergeable = a.end == k
                && match (&a.what, &b.what) {
                    (Stored::Data(x), Stored::Data(y)) => {
                        merge_data && x.len() + y.len() <= MERGE_MAX
                    }
                    (Stored::Dropped, Stored::Dropped) | (Stored::Missing, Stored::Missing) => true,
                    _ => false,
                };
            if !mergeable {
                cur = k;
                continue;
            }
            let Some(b) = self.segs.remove(&k) else {
                continue;
            };
            if let Some(a) = self.segs.get_mut(&cur) {
                a.end = b.end;
                if let (Stored::Data(x), Stored::Data(y)) = (&mut a.what, b.what) {
                    let mut joined = Vec::with_capacity(x.len() + y.len());
                    joined.extend_from_slice(x);
                    joined.extend_from_slice(&y);
                    *x = joined.into_boxed_slice();
                }
            }
        }
    }

    /// The stored data as `(start, bytes)` pairs, for tests and debugging.
    pub fn ranges(&self) -> Vec<(u64, u64, bool)> {
        self.segs
            .iter()
            .map(|(&s, seg)| (s, seg.end, matches!(seg.what, Stored::Data(_))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(a: &mut Assembler, budget: &mut Budget) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some((_, _, what)) = a.pop_front(u64::MAX) {
            if let Stored::Data(d) = what {
                budget.release(d.len());
                out.extend_from_slice(&d);
            }
        }
        out
    }

    #[test]
    fn disjoint_and_adjacent() {
        let mut b = Budget::new(1 << 20);
        let mut a = Assembler::new();
        a.insert(
            10,
            13,
            Incoming::Data(b"def"),
            OverlapPolicy::Bsd,
            0,
            &mut b,
        );
        a.insert(
            5,
            10,
            Incoming::Data(b"abcde"),
            OverlapPolicy::Bsd,
            0,
            &mut b,
        );
        assert_eq!(a.segments(), 2, "bsd keeps segment boundaries");
        assert_eq!(b.used(), 8);
        a.insert(
            13,
            15,
            Incoming::Data(b"gh"),
            OverlapPolicy::First,
            0,
            &mut b,
        );
        assert_eq!(
            a.segments(),
            2,
            "first merges the new data into its neighbour"
        );
        assert_eq!(b.used(), 10);
        assert_eq!(contents(&mut a, &mut b), b"abcdedefgh");
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn policies() {
        let cases: [((u64, u64), [&str; 6]); 4] = [
            // new starts inside old, extends past: left overlap
            (
                (15, 25),
                [
                    "oooooooooonnnnn",
                    "ooooonnnnnnnnnn",
                    "oooooooooonnnnn",
                    "oooooooooonnnnn",
                    "oooooooooonnnnn",
                    "ooooonnnnnnnnnn",
                ],
            ),
            // new starts before, ends inside: right overlap
            (
                (5, 15),
                [
                    "nnnnnoooooooooo",
                    "nnnnnnnnnnooooo",
                    "nnnnnnnnnnooooo",
                    "nnnnnnnnnnooooo",
                    "nnnnnnnnnnooooo",
                    "nnnnnoooooooooo",
                ],
            ),
            // new covers old, starting earlier
            (
                (5, 25),
                [
                    "nnnnnoooooooooonnnnn",
                    "nnnnnnnnnnnnnnnnnnnn",
                    "nnnnnnnnnnnnnnnnnnnn",
                    "nnnnnnnnnnnnnnnnnnnn",
                    "nnnnnnnnnnnnnnnnnnnn",
                    "nnnnnnnnnnnnnnnnnnnn",
                ],
            ),
            // same start, longer
            (
                (10, 25),
                [
                    "oooooooooonnnnn",
                    "nnnnnnnnnnnnnnn",
                    "nnnnnnnnnnnnnnn",
                    "oooooooooonnnnn",
                    "oooooooooonnnnn",
                    "nnnnnnnnnnnnnnn",
                ],
            ),
        ];
        for ((ns, ne), want) in cases {
            for (p, w) in OverlapPolicy::ALL.into_iter().zip(want) {
                let mut b = Budget::new(1 << 20);
                let mut a = Assembler::new();
                a.insert(10, 20, Incoming::Data(&[b'o'; 10]), p, 0, &mut b);
                let n = vec![b'n'; (ne - ns) as usize];
                let out = a.insert(ns, ne, Incoming::Data(&n), p, 0, &mut b);
                assert_eq!(out.conflicts, 1);
                assert_eq!(
                    String::from_utf8(contents(&mut a, &mut b)).unwrap(),
                    w,
                    "{p} new=[{ns},{ne})"
                );
                assert_eq!(b.used(), 0);
            }
        }
    }

    #[test]
    fn new_inside_old_keeps_old_except_last_and_solaris_rule() {
        for p in OverlapPolicy::ALL {
            let mut b = Budget::new(1 << 20);
            let mut a = Assembler::new();
            a.insert(10, 30, Incoming::Data(&[b'o'; 20]), p, 0, &mut b);
            a.insert(15, 20, Incoming::Data(&[b'n'; 5]), p, 0, &mut b);
            let s = String::from_utf8(contents(&mut a, &mut b)).unwrap();
            let want = if p == OverlapPolicy::Last {
                "ooooonnnnnoooooooooo"
            } else {
                "oooooooooooooooooooo"
            };
            assert_eq!(s, want, "{p}");
        }
    }

    #[test]
    fn exact_duplicate_is_not_a_conflict() {
        let mut b = Budget::new(1 << 20);
        let mut a = Assembler::new();
        a.insert(
            0,
            4,
            Incoming::Data(b"abcd"),
            OverlapPolicy::Last,
            0,
            &mut b,
        );
        let o = a.insert(
            0,
            4,
            Incoming::Data(b"abcd"),
            OverlapPolicy::Last,
            0,
            &mut b,
        );
        assert_eq!((o.overlapped, o.conflicts), (4, 0));
        assert_eq!(b.used(), 4);
    }

    #[test]
    fn budget_full_makes_placeholders_that_data_replaces() {
        let mut b = Budget::new(4);
        let mut a = Assembler::new();
        let o = a.insert(
            0,
            8,
            Incoming::Data(b"abcdefgh"),
            OverlapPolicy::First,
            0,
            &mut b,
        );
        assert_eq!(o.dropped, 8);
        assert_eq!(a.ranges(), vec![(0, 8, false)]);
        a.insert(2, 4, Incoming::Data(b"cd"), OverlapPolicy::First, 0, &mut b);
        assert_eq!(a.ranges(), vec![(0, 2, false), (2, 4, true), (4, 8, false)]);
        // A placeholder never replaces data.
        a.insert(0, 8, Incoming::Missing, OverlapPolicy::Last, 0, &mut b);
        assert_eq!(a.ranges(), vec![(0, 2, false), (2, 4, true), (4, 8, false)]);
        assert_eq!(b.used(), 2);
    }

    #[test]
    fn truncate_from_trims_and_releases() {
        let mut b = Budget::new(100);
        let mut a = Assembler::new();
        a.insert(
            0,
            10,
            Incoming::Data(b"0123456789"),
            OverlapPolicy::Bsd,
            0,
            &mut b,
        );
        a.insert(
            20,
            30,
            Incoming::Data(b"abcdefghij"),
            OverlapPolicy::Bsd,
            0,
            &mut b,
        );
        a.truncate_from(5, &mut b);
        assert_eq!(a.ranges(), vec![(0, 5, true)]);
        assert_eq!((b.used(), a.data_bytes()), (5, 5));
        assert_eq!(contents(&mut a, &mut b), b"01234");
    }

    /// Under `first`, a segment covering a run of tiny stored ranges merges
    /// them, so later copies of it visit a handful of ranges, not hundreds.
    #[test]
    fn tiny_ranges_merge_under_first() {
        let mut b = Budget::new(1 << 20);
        let mut a = Assembler::new();
        for i in 0..700u64 {
            let off = 1 + 2 * i;
            a.insert(
                off,
                off + 1,
                Incoming::Data(b"o"),
                OverlapPolicy::First,
                0,
                &mut b,
            );
        }
        assert_eq!(a.segments(), 700);
        let cover = vec![b'n'; 1400];
        let out = a.insert(
            1,
            1401,
            Incoming::Data(&cover),
            OverlapPolicy::First,
            0,
            &mut b,
        );
        assert_eq!(out.overlapped, 700);
        assert_eq!(a.segments(), 1);
        let again = a.insert(
            1,
            1401,
            Incoming::Data(&cover),
            OverlapPolicy::First,
            0,
            &mut b,
        );
        assert_eq!(again.overlapped, 1400);
        assert_eq!(b.used(), 1400);
        // Under bsd the covering segment wins where it starts first: one range
        // for the first old byte (same start: old wins), one for the rest.
        let mut a = Assembler::new();
        let mut b = Budget::new(1 << 20);
        for i in 0..10u64 {
            a.insert(
                1 + 2 * i,
                2 + 2 * i,
                Incoming::Data(b"o"),
                OverlapPolicy::Bsd,
                0,
                &mut b,
            );
        }
        a.insert(
            1,
            21,
            Incoming::Data(&cover[..20]),
            OverlapPolicy::Bsd,
            0,
            &mut b,
        );
        assert_eq!(a.ranges(), vec![(1, 2, true), (2, 21, true)]);
    }

    #[test]
    fn floor_trims_delivered_bytes() {
        let mut b = Budget::new(100);
        let mut a = Assembler::new();
        a.insert(
            0,
            10,
            Incoming::Data(b"0123456789"),
            OverlapPolicy::Bsd,
            6,
            &mut b,
        );
        assert_eq!(contents(&mut a, &mut b), b"6789");
    }

    #[test]
    fn many_tiny_overlapping_segments_stay_consistent() {
        let mut b = Budget::new(1 << 20);
        let mut a = Assembler::new();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let s = x % 4000;
            let l = 1 + (x >> 20) % 40;
            let data: Vec<u8> = (s..s + l).map(|i| i as u8).collect();
            let p = OverlapPolicy::ALL[(x >> 40) as usize % 6];
            a.insert(s, s + l, Incoming::Data(&data), p, 0, &mut b);
        }
        // Ranges are disjoint and ordered, and the budget matches the stored bytes.
        let r = a.ranges();
        assert!(r.windows(2).all(|w| w[0].1 <= w[1].0));
        assert_eq!(b.used(), a.data_bytes());
        // Every stored byte equals its offset (all inserts agreed), whatever the policy.
        while let Some((s, _, what)) = a.pop_front(u64::MAX) {
            if let Stored::Data(d) = what {
                assert!(d
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == (s + i as u64) as u8));
            }
        }
    }
}
