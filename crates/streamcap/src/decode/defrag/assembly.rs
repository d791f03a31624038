//! One datagram's bytes while its fragments arrive: the pieces kept so far
//! and the buffer that holds them.
//!
//! The buffer is addressed by datagram offset (byte `o` of the datagram is
//! `buf[o]`), so a fragment is copied once, to its place, and a complete
//! datagram is the buffer's first `total` bytes: nothing is assembled at the
//! end. The pieces say which bytes the buffer holds: sorted, disjoint runs,
//! each the part of one fragment that was kept (a fragment that overlaps
//! stored pieces is split around the parts it loses, and a piece that loses
//! to it is trimmed or split). The overlap rules of the module documentation
//! of [`super`] are decided against these pieces.
//!
//! The buffer and the piece list keep their capacity when the datagram is
//! done, so a slot reused for the next datagram allocates nothing; what they
//! occupy is reported by [`Assembly::footprint`] and charged to the
//! defragmenter's memory limit by the store.

use crate::reassembly::policy::OverlapPolicy;

/// A run of stored bytes, `[start, end)` in datagram offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) start: u32,
    pub(super) end: u32,
}

/// Where a fragment goes and the capacities it needs, from
/// [`Assembly::plan`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    /// Index of the first piece that ends after the fragment's start.
    first: usize,
    /// The fragment overlaps no piece.
    clear: bool,
    /// Buffer and piece-list capacities needed.
    buf: usize,
    pieces: usize,
}

/// What inserting a fragment found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Inserted {
    /// Stored pieces the fragment overlapped.
    pub(super) overlaps: u64,
    /// Of those, the ones whose overlapping bytes differ.
    pub(super) conflicts: u64,
}

/// The bytes of one datagram received so far.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    /// Sorted by `start`, disjoint, never empty runs.
    pieces: Vec<Piece>,
    /// `buf[o]` is the datagram's byte `o` wherever a piece covers `o`;
    /// other bytes are filler (zeros, or bytes of an earlier datagram).
    buf: Vec<u8>,
    /// Sum of the pieces' lengths.
    covered: u32,
    /// Scratch for [`Assembly::insert`]: (piece index, start, end) of the
    /// overlaps the new fragment wins, and the runs of it that are kept.
    wins: Vec<(usize, u32, u32)>,
    keep: Vec<Piece>,
}

impl Assembly {
    /// Forgets the bytes, keeping the capacity. The buffer keeps its
    /// length too (its bytes become filler), so that the next datagram's
    /// fragments are copied over initialized bytes without filling gaps.
    pub(super) fn clear(&mut self) {
        self.pieces.clear();
        self.covered = 0;
    }

    /// Frees the buffers.
    pub(super) fn release(&mut self) {
        self.clear();
        self.pieces = Vec::new();
        self.buf = Vec::new();
        self.wins = Vec::new();
        self.keep = Vec::new();
    }

    /// Bytes of memory the assembly occupies (buffer and piece list
    /// capacity, scratch included).
    pub(super) fn footprint(&self) -> usize {
        self.buf.capacity()
            + (self.pieces.capacity() + self.keep.capacity()) * std::mem::size_of::<Piece>()
            + self.wins.capacity() * std::mem::size_of::<(usize, u32, u32)>()
    }

    /// Bytes stored (the pieces' total length).
    pub(super) fn covered(&self) -> u32 {
        self.covered
    }

    /// End of the last piece (0 when empty).
    #[cfg(test)]
    pub(super) fn max_end(&self) -> u32 {
        self.pieces.last().map_or(0, |p| p.end)
    }

    /// Forgets the stored bytes at and past offset `end`.
    pub(super) fn truncate(&mut self, end: u32) {
        let keep = self.pieces.partition_point(|p| p.start < end);
        for p in self.pieces.drain(keep..) {
            self.covered -= p.end - p.start;
        }
        if let Some(last) = self.pieces.last_mut() {
            if last.end > end {
                self.covered -= last.end - end;
                last.end = end;
            }
        }
    }

    /// Length of the run of stored bytes that starts at offset 0.
    pub(super) fn prefix(&self) -> u32 {
        let mut at = 0;
        for p in &self.pieces {
            if p.start != at {
                break;
            }
            at = p.end;
        }
        at
    }

    /// The datagram's first `n` bytes (all stored, see [`Assembly::prefix`]).
    pub(super) fn bytes(&self, n: u32) -> &[u8] {
        debug_assert!(n <= self.prefix());
        self.buf.get(..n as usize).unwrap_or_default()
    }

    /// The pieces, for checks.
    #[cfg(test)]
    pub(super) fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// Where a fragment `[ns, ns + len)` goes and what it needs: see
    /// [`Plan`]. `max_len` is the largest datagram (the buffer never needs
    /// to grow past it).
    #[inline]
    pub(super) fn plan(&self, ns: u32, len: u32, max_len: usize) -> Plan {
        let ne = ns.saturating_add(len);
        let first = self.pieces.partition_point(|p| p.end <= ns);
        let clear = self.pieces.get(first).is_none_or(|p| p.start >= ne);
        // A fragment adds one piece per run it keeps (one more than the
        // pieces it overlaps) and splits at most one piece in two.
        let new_pieces = if clear {
            1
        } else {
            let last = first + self.pieces[first..].partition_point(|p| p.start < ne);
            (last - first) + 2
        };
        let end = ne as usize;
        let cap = self.buf.capacity();
        let buf = if end > cap {
            end.max(cap.saturating_mul(2).min(max_len))
        } else {
            cap
        };
        let need = self.pieces.len() + new_pieces;
        let pcap = self.pieces.capacity();
        let pieces = if need > pcap {
            need.max(pcap.saturating_mul(2)).max(4)
        } else {
            pcap
        };
        Plan {
            first,
            clear,
            buf,
            pieces,
        }
    }

    /// By how much [`Assembly::reserve`] of `plan` will grow the footprint.
    #[inline]
    pub(super) fn growth(&self, plan: &Plan) -> usize {
        let piece = std::mem::size_of::<Piece>();
        let mut n =
            (plan.buf - self.buf.capacity()) + (plan.pieces - self.pieces.capacity()) * piece;
        if !plan.clear {
            // The scratch lists follow the piece list's capacity.
            n += plan.pieces.saturating_sub(self.keep.capacity()) * piece
                + plan.pieces.saturating_sub(self.wins.capacity())
                    * std::mem::size_of::<(usize, u32, u32)>();
        }
        n
    }

    /// Makes room for the fragment of `plan`, so that [`Assembly::insert`]
    /// allocates nothing; returns by how much the footprint grew.
    #[inline]
    pub(super) fn reserve(&mut self, plan: &Plan) -> usize {
        if plan.buf == self.buf.capacity()
            && plan.pieces == self.pieces.capacity()
            && (plan.clear || self.wins.capacity() >= plan.pieces)
        {
            return 0;
        }
        let before = self.footprint();
        self.buf.reserve_exact(plan.buf - self.buf.len());
        self.pieces.reserve_exact(plan.pieces - self.pieces.len());
        if !plan.clear {
            // The scratch lists hold at most one entry per overlapped piece
            // and one more.
            let n = self.pieces.capacity();
            self.wins.reserve_exact(n.saturating_sub(self.wins.len()));
            self.keep.reserve_exact(n.saturating_sub(self.keep.len()));
        }
        self.footprint() - before
    }

    /// Stores fragment bytes `nd` at offset `ns`, resolving overlaps with
    /// stored pieces by `policy`. Keeps the pieces sorted and disjoint and
    /// `covered` exact.
    /// `plan` is this fragment's [`Assembly::plan`], reserved.
    #[inline]
    pub(super) fn insert(
        &mut self,
        plan: &Plan,
        policy: OverlapPolicy,
        ns: u32,
        nd: &[u8],
    ) -> Inserted {
        let ne = ns.saturating_add(nd.len() as u32);
        let mut found = Inserted::default();
        let first = plan.first;
        // Fast path: the fragment overlaps nothing (in-order arrival, or a
        // hole filled exactly).
        if plan.clear {
            self.write(ns, nd);
            self.pieces.insert(first, Piece { start: ns, end: ne });
            self.covered += ne - ns;
            return found;
        }

        // Decide every overlap against the pieces as they are before this
        // fragment. Pieces are disjoint and sorted, so their ends are too.
        self.wins.clear();
        self.keep.clear();
        let mut cursor = ns;
        let mut last = first;
        for (i, p) in self.pieces.iter().enumerate().skip(first) {
            if p.start >= ne {
                break;
            }
            last = i + 1;
            let (os, oe) = (p.start, p.end);
            let (a, b) = (os.max(ns), oe.min(ne));
            let prev_end = i
                .checked_sub(1)
                .and_then(|j| self.pieces.get(j))
                .map(|q| q.end);
            let hole_before = os > 0 && prev_end != Some(os);
            found.overlaps += 1;
            let old = self.buf.get(a as usize..b as usize);
            let new = nd.get((a - ns) as usize..(b - ns) as usize);
            if old != new {
                found.conflicts += 1;
            }
            if policy.new_wins(
                (u64::from(os), u64::from(oe)),
                (u64::from(ns), u64::from(ne)),
                hole_before,
            ) {
                self.wins.push((i, a, b));
            } else {
                if a > cursor {
                    self.keep.push(Piece {
                        start: cursor,
                        end: a,
                    });
                }
                cursor = b;
            }
        }
        if cursor < ne {
            self.keep.push(Piece {
                start: cursor,
                end: ne,
            });
        }

        // The kept runs of the new fragment (which include the overlaps it
        // wins) go to their place in the buffer.
        for k in 0..self.keep.len() {
            let Some(&Piece { start, end }) = self.keep.get(k) else {
                break;
            };
            if let Some(part) = nd.get((start - ns) as usize..(end - ns) as usize) {
                self.write(start, part);
            }
        }

        // Cut the lost ranges out of the old pieces, last first so indices
        // hold, then merge the kept runs in: both stay inside the window
        // [first, last) of overlapped pieces.
        for &(i, a, b) in self.wins.iter().rev() {
            let Some(&Piece { start: os, end: oe }) = self.pieces.get(i) else {
                continue;
            };
            self.covered -= b - a;
            match (a == os, b == oe) {
                (true, true) => {
                    self.pieces.remove(i);
                    last -= 1;
                }
                (true, false) => self.pieces[i].start = b,
                (false, true) => self.pieces[i].end = a,
                (false, false) => {
                    self.pieces[i].end = a;
                    self.pieces.insert(i + 1, Piece { start: b, end: oe });
                    last += 1;
                }
            }
        }
        let mut at = first;
        for k in 0..self.keep.len() {
            let Some(&run) = self.keep.get(k) else {
                break;
            };
            while at < last && self.pieces.get(at).is_some_and(|p| p.start < run.start) {
                at += 1;
            }
            self.pieces.insert(at, run);
            self.covered += run.end - run.start;
            at += 1;
            last += 1;
        }
        found
    }

    /// Copies `data` to offset `at` of the buffer, growing it (with filler
    /// before `at` if there is a gap).
    fn write(&mut self, at: u32, data: &[u8]) {
        let at = at as usize;
        let len = self.buf.len();
        if at >= len {
            self.buf.resize(at, 0);
            self.buf.extend_from_slice(data);
        } else {
            let inside = (len - at).min(data.len());
            let (old, new) = data.split_at(inside);
            if let Some(dst) = self.buf.get_mut(at..at + inside) {
                dst.copy_from_slice(old);
            }
            self.buf.extend_from_slice(new);
        }
    }
}
