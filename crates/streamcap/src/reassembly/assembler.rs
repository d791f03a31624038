//! An ordered store of not-yet-delivered byte ranges, with target-based
//! overlap resolution.
//!
//! Segments are kept in a `BTreeMap` keyed by start offset and never overlap
//! one another, so inserting or removing a segment costs O(log n) plus the
//! number of stored segments it overlaps: no sequence of segments makes a
//! single packet cost O(n) (the lesson of Zeek issue #575).
//!
//! Besides data, a range can hold a placeholder: bytes that were seen but
//! *dropped* for lack of memory, bytes that were seen but *discarded* (past
//! the cutoff: their sequence range is remembered, their payload is not), or
//! bytes known to be *missing* (cut by the snapshot length). Placeholders keep
//! the accounting exact: when the delivery point reaches them, their bytes are
//! counted as dropped, discarded or missing, once, and a hole between stored
//! ranges is told apart from bytes that were seen.
//! Data always replaces a placeholder; a placeholder never replaces data; a
//! discarded placeholder (bytes seen) replaces a missing one (bytes not seen).

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
    /// Bytes that were seen but not stored by decision (past the cutoff).
    Discarded,
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
    /// A discarded-bytes placeholder (seen, not copied: past the cutoff).
    Discarded,
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
    /// Bytes under dropped placeholders.
    dropped_bytes: u64,
    /// Bytes under discarded placeholders.
    discarded_bytes: u64,
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

    /// Bytes under discarded placeholders (seen past the cutoff; no payload
    /// held, nothing charged to the budget).
    pub fn discarded_bytes(&self) -> u64 {
        self.discarded_bytes
    }

    /// Adds (`add`) or removes the tally of a range of `len` bytes holding `what`.
    fn tally(&mut self, what: &Stored, len: u64, add: bool) {
        let (counter, n) = match what {
            Stored::Data(d) => {
                if add {
                    self.data_bytes += d.len();
                } else {
                    self.data_bytes -= d.len();
                }
                return;
            }
            Stored::Dropped => (&mut self.dropped_bytes, len),
            Stored::Discarded => (&mut self.discarded_bytes, len),
            Stored::Missing => return,
        };
        if add {
            *counter += n;
        } else {
            *counter -= n;
        }
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
        self.tally(&seg.what, seg.end - start, false);
        Some((start, seg.end, seg.what))
    }

    /// Drops everything, releasing its data from the budget.
    pub fn clear(&mut self, budget: &mut Budget) {
        budget.release(self.data_bytes);
        self.data_bytes = 0;
        self.dropped_bytes = 0;
        self.discarded_bytes = 0;
        self.segs.clear();
    }

    /// Turns every stored byte at or after `at` that is data or a dropped
    /// placeholder into a discarded placeholder (the cutoff moved to `at`):
    /// the data is released from the budget, the ranges are remembered.
    /// Costs nothing when there is no such byte.
    pub fn discard_from(&mut self, at: u64, budget: &mut Budget) {
        if self.data_bytes == 0 && self.dropped_bytes == 0 {
            return;
        }
        // A range straddling `at` is split there first.
        if let Some((&start, seg)) = self.segs.range(..at).next_back() {
            if seg.end > at && !matches!(seg.what, Stored::Discarded | Stored::Missing) {
                if let Some(seg) = self.segs.remove(&start) {
                    self.tally(&seg.what, seg.end - start, false);
                    let (left, right) = match seg.what {
                        Stored::Data(d) => {
                            let keep = (at - start) as usize;
                            budget.release(d.len() - keep);
                            (Stored::Data(d[..keep].into()), Stored::Discarded)
                        }
                        other => (other, Stored::Discarded),
                    };
                    self.store(start, at, left);
                    self.store(at, seg.end, right);
                }
            }
        }
        let keys: Vec<u64> = self
            .segs
            .range(at..)
            .filter(|(_, s)| matches!(s.what, Stored::Data(_) | Stored::Dropped))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            let Some(seg) = self.segs.remove(&k) else {
                continue;
            };
            self.tally(&seg.what, seg.end - k, false);
            if let Stored::Data(d) = &seg.what {
                budget.release(d.len());
            }
            self.store(k, seg.end, Stored::Discarded);
        }
        self.coalesce(at, u64::MAX, false);
    }

    /// Drops every stored byte at or after `at` (a FIN ends the stream there),
    /// releasing its data from the budget.
    pub fn truncate_from(&mut self, at: u64, budget: &mut Budget) {
        let tail = self.segs.split_off(&at);
        for (start, seg) in tail {
            self.tally(&seg.what, seg.end - start, false);
            if let Stored::Data(d) = seg.what {
                budget.release(d.len());
            }
        }
        let last = self.segs.iter().next_back().map(|(&k, s)| (k, s.end));
        if let Some((start, end)) = last.filter(|&(_, end)| end > at) {
            if let Some(seg) = self.segs.remove(&start) {
                self.tally(&seg.what, end - start, false);
                let what = match seg.what {
                    Stored::Data(d) => {
                        let keep = (at - start) as usize;
                        budget.release(d.len() - keep);
                        Stored::Data(d[..keep].into())
                    }
                    other => other,
                };
                self.store(start, at, what);
            }
        }
    }

    fn store(&mut self, start: u64, end: u64, what: Stored) {
        self.tally(&what, end - start, true);
        self.segs.insert(start, Seg { end, what });
    }

    /// Stores placeholder `what` over `[ns, ne)` when no stored range
    /// overlaps it, merged with a neighbour of the same kind that it touches;
    /// false (nothing changed) when something overlaps. The result is the
    /// general path's (one gap filled, then `coalesce`), without its look-ups
    /// and temporary lists: segments past the cutoff arriving out of order
    /// take this path, and on a flood of them (3,000 shuffled segments per
    /// connection) the general path cost about 3,300 instructions a packet.
    fn place_apart(&mut self, ns: u64, ne: u64, what: Stored) -> bool {
        let same = |s: &Seg| {
            matches!(
                (&s.what, &what),
                (Stored::Dropped, Stored::Dropped)
                    | (Stored::Discarded, Stored::Discarded)
                    | (Stored::Missing, Stored::Missing)
            )
        };
        let prev = self
            .segs
            .range(..ns)
            .next_back()
            .map(|(&k, s)| (k, s.end, same(s)));
        if prev.is_some_and(|(_, end, _)| end > ns) {
            return false;
        }
        let next = self
            .segs
            .range(ns..)
            .next()
            .map(|(&k, s)| (k, s.end, same(s)));
        if next.is_some_and(|(k, _, _)| k < ne) {
            return false;
        }
        self.tally(&what, ne - ns, true);
        let mut end = ne;
        if let Some((k, e, true)) = next {
            if k == ne {
                self.segs.remove(&k);
                end = e;
            }
        }
        match prev {
            Some((k, pend, true)) if pend == ns => {
                if let Some(p) = self.segs.get_mut(&k) {
                    p.end = end;
                }
            }
            _ => {
                self.segs.insert(ns, Seg { end, what });
            }
        }
        true
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
        let placeholder = match incoming {
            Incoming::Data(_) => None,
            Incoming::Dropped => Some(Stored::Dropped),
            Incoming::Discarded => Some(Stored::Discarded),
            Incoming::Missing => Some(Stored::Missing),
        };
        if let Some(what) = placeholder {
            if self.place_apart(ns, ne, what) {
                return out;
            }
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
                (Incoming::Discarded, Stored::Missing) => true,
                _ => false,
            };
            if new_wins {
                let Some(seg) = self.segs.remove(&os) else {
                    continue;
                };
                self.tally(&seg.what, oe - os, false);
                let (left, right) = match seg.what {
                    Stored::Data(od) => {
                        budget.release(od.len());
                        let l = &od[..(a - os) as usize];
                        let r = &od[(b - os) as usize..];
                        // Parts of what was just released: re-charging them always fits.
                        let _ = budget.try_charge(l.len() + r.len());
                        (Stored::Data(l.into()), Stored::Data(r.into()))
                    }
                    Stored::Dropped => (Stored::Dropped, Stored::Dropped),
                    Stored::Discarded => (Stored::Discarded, Stored::Discarded),
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

        // Fill the parts of [ns, ne) that no stored range covers, left to
        // right (one look-up per stored range or gap, no temporary list).
        let mut cursor = ns;
        if let Some((_, s)) = self.segs.range(..ns).next_back() {
            cursor = cursor.max(s.end.min(ne));
        }
        while cursor < ne {
            let (gs, ge) = match self.segs.range(cursor..ne).next() {
                Some((&s, seg)) if s <= cursor => {
                    cursor = seg.end;
                    continue;
                }
                Some((&s, _)) => (cursor, s),
                None => (cursor, ne),
            };
            cursor = ge;
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
                Incoming::Discarded => Stored::Discarded,
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
        // The keys to visit: usually two or three (the range before, the new
        // one, the one after), so they go in an array on the stack, and in a
        // vector only when there are more.
        let mut few = [0u64; 8];
        let mut n = 0;
        let mut many = Vec::new();
        for (&k, _) in self.segs.range(start..=to) {
            if n < few.len() {
                few[n] = k;
                n += 1;
            } else {
                if many.is_empty() {
                    many.extend_from_slice(&few);
                }
                many.push(k);
            }
        }
        let keys = if many.is_empty() {
            &few[..n]
        } else {
            &many[..]
        };
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
                    (Stored::Dropped, Stored::Dropped)
                    | (Stored::Discarded, Stored::Discarded)
                    | (Stored::Missing, Stored::Missing) => true,
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

    #[test]
    fn discarded_placeholders_charge_nothing_and_replace_only_missing() {
        let mut b = Budget::new(100);
        let mut a = Assembler::new();
        a.insert(0, 4, Incoming::Missing, OverlapPolicy::Bsd, 0, &mut b);
        a.insert(10, 20, Incoming::Discarded, OverlapPolicy::Bsd, 0, &mut b);
        a.insert(20, 30, Incoming::Discarded, OverlapPolicy::Bsd, 0, &mut b);
        assert_eq!(a.ranges(), vec![(0, 4, false), (10, 30, false)], "merged");
        assert_eq!((b.used(), a.discarded_bytes()), (0, 20));
        // Seen bytes replace bytes known to be cut; data replaces both.
        a.insert(2, 6, Incoming::Discarded, OverlapPolicy::Bsd, 0, &mut b);
        a.insert(12, 14, Incoming::Data(b"ab"), OverlapPolicy::Bsd, 0, &mut b);
        let got: Vec<_> = std::iter::from_fn(|| a.pop_front(u64::MAX)).collect();
        assert_eq!(
            got,
            vec![
                (0, 2, Stored::Missing),
                (2, 6, Stored::Discarded),
                (10, 12, Stored::Discarded),
                (12, 14, Stored::Data(b"ab".to_vec().into())),
                (14, 30, Stored::Discarded),
            ]
        );
        assert_eq!((a.discarded_bytes(), a.data_bytes()), (0, 0));
    }

    /// Placeholders of every kind, inserted in shuffled order into gaps and
    /// over each other, against a byte-by-byte model of the kind rules (a
    /// discarded byte replaces a missing one, nothing else replaces anything):
    /// every byte ends up with the model's kind, the counters match, and
    /// touching ranges of one kind are always merged.
    #[test]
    fn shuffled_placeholders_match_a_byte_model() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut b = Budget::new(1 << 20);
            let mut a = Assembler::new();
            // 0 = nothing, 1 = missing, 2 = discarded, 3 = dropped.
            let mut model = [0u8; 256];
            for _ in 0..40 {
                let start = next() % 240;
                let end = (start + 1 + next() % 16).min(256);
                let (incoming, kind) = match next() % 3 {
                    0 => (Incoming::Missing, 1),
                    1 => (Incoming::Discarded, 2),
                    _ => (Incoming::Dropped, 3),
                };
                a.insert(start, end, incoming, OverlapPolicy::Bsd, 0, &mut b);
                for m in &mut model[start as usize..end as usize] {
                    if *m == 0 || (*m == 1 && kind == 2) {
                        *m = kind;
                    }
                }
            }
            let discarded = model.iter().filter(|&&m| m == 2).count() as u64;
            assert_eq!(a.discarded_bytes(), discarded);
            let mut got = [0u8; 256];
            let mut last: Option<(u64, u8)> = None;
            while let Some((s, e, what)) = a.pop_front(u64::MAX) {
                let kind = match what {
                    Stored::Missing => 1,
                    Stored::Discarded => 2,
                    Stored::Dropped => 3,
                    Stored::Data(_) => unreachable!("no data was inserted"),
                };
                assert!(
                    last.is_none_or(|(le, lk)| le < s || lk != kind),
                    "touching ranges of one kind left unmerged at {s}"
                );
                got[s as usize..e as usize].fill(kind);
                last = Some((e, kind));
            }
            assert_eq!(got, model);
        }
    }

    #[test]
    fn discard_from_turns_data_past_a_point_into_placeholders() {
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
        a.insert(30, 35, Incoming::Missing, OverlapPolicy::Bsd, 0, &mut b);
        a.discard_from(5, &mut b);
        assert_eq!(
            a.ranges(),
            vec![
                (0, 5, true),
                (5, 10, false),
                (20, 30, false),
                (30, 35, false)
            ]
        );
        assert_eq!((b.used(), a.data_bytes(), a.discarded_bytes()), (5, 5, 15));
        a.truncate_from(25, &mut b);
        assert_eq!(a.discarded_bytes(), 10);
        a.clear(&mut b);
        assert_eq!((b.used(), a.discarded_bytes()), (0, 0));
    }

    /// Merging visits every range it may join, however many: twenty
    /// adjacent data ranges (kept apart by `bsd`) become one discarded
    /// placeholder when the cutoff moves before them (more ranges than the
    /// merge's list on the stack holds), and twenty adjacent placeholders
    /// inserted in reverse order end as one range too.
    #[test]
    fn merging_joins_runs_longer_than_its_stack_list() {
        let mut b = Budget::new(1 << 20);
        let mut a = Assembler::new();
        for i in 0..20u64 {
            let bytes = [i as u8; 10];
            let start = 100 + 10 * i;
            a.insert(
                start,
                start + 10,
                Incoming::Data(&bytes),
                OverlapPolicy::Bsd,
                0,
                &mut b,
            );
        }
        assert_eq!(a.segments(), 20, "bsd keeps segment boundaries");
        a.discard_from(100, &mut b);
        assert_eq!(a.ranges(), vec![(100, 300, false)]);
        assert_eq!((b.used(), a.discarded_bytes()), (0, 200));

        let mut a = Assembler::new();
        for i in (0..20u64).rev() {
            let start = 10 * i;
            a.insert(
                start,
                start + 10,
                Incoming::Missing,
                OverlapPolicy::Bsd,
                0,
                &mut b,
            );
        }
        assert_eq!(a.ranges(), vec![(0, 200, false)]);
    }
}
