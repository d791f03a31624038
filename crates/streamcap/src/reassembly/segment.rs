//! How a TCP segment's payload extends its stream: retransmissions and
//! conflicting overlaps, in-order commits, the out-of-order store and its
//! limits, and the part past the cutoff, which is counted but never copied.

use crate::config::Config;
use crate::deliver::context::{Cx, GapKind};
use crate::deliver::{DataReason, Handler, StreamErrors};
use crate::fast_path_enabled;
use crate::flow::direction::{F_CUTOFF, F_DISCARD};
use crate::reassembly::assembler::Incoming;

impl<H: Handler> Cx<'_, H> {
    /// Processes TCP payload: `present` bytes captured of `wire` bytes on the
    /// wire, starting at stream offset `off` (may be negative: before the start).
    pub(crate) fn tcp_data(&mut self, off: i64, present: &[u8], wire: u64, cfg: &Config) {
        // Prioritized packet loss gave up this segment's own bytes only:
        // what it releases from the out-of-order store is delivered.
        let ppl = std::mem::take(&mut self.ppl_drop);
        if fast_path_enabled() && self.discard_in_order(off, present, wire) {
            return;
        }
        let end = off.saturating_add(wire as i64);
        if end <= 0 {
            self.e().counters.retransmitted += wire;
            return;
        }
        let mut present = present;
        let mut s = off;
        if s < 0 {
            let skip = s.unsigned_abs();
            present = present.get(skip as usize..).unwrap_or(&[]);
            self.e().counters.retransmitted += skip;
            s = 0;
        }
        let (s, mut e) = (s as u64, end as u64);
        if let Some(fin) = self.me.tcp().fin {
            if s >= fin {
                self.me.errors.insert(StreamErrors::DATA_AFTER_FIN);
                return;
            }
            e = e.min(fin);
        }
        if s > self.next().saturating_add(cfg.max_seq_jump) {
            self.me.errors.insert(StreamErrors::BAD_SEQ);
            return;
        }
        let present_end = (s + present.len() as u64).min(e);
        let next = self.next();
        if s < next {
            let re = e.min(next);
            self.e().counters.retransmitted += re - s;
            let pe = present_end.min(re);
            if pe > s {
                self.check_conflict(s, &present[..(pe - s) as usize]);
            }
        }
        let t = &mut self.e().tcp;
        t.max_end = t.max_end.max(e);
        let limit = self.cutoff_now();
        let ns = s.max(next);
        let ce = e.min(limit);
        // Where the part of the segment past the cutoff begins.
        let mut rest = ns;
        if ns < ce {
            let pe = present_end.clamp(ns, ce);
            let in_order = ns == next && !self.me.ooo_waiting();
            if in_order {
                // `pe > ns` means the captured bytes reach past the delivery point.
                let bytes = if pe > ns {
                    &present[(ns - s) as usize..(pe - s) as usize]
                } else {
                    &[][..]
                };
                self.ppl_drop = ppl;
                let consumed = self.commit_data(bytes, DataReason::Segment);
                self.ppl_drop = false;
                if consumed as u64 == pe - ns && ce > pe {
                    self.me.errors.insert(StreamErrors::TRUNCATED);
                    self.commit_gap(ce - pe, GapKind::Missing);
                }
                rest = self.next();
            } else {
                let budget = &mut *self.budget;
                let x = self.me.x(self.defaults);
                let policy = x.params.policy;
                let a = x.ooo.get_or_insert_with(Default::default);
                let mut out = Default::default();
                if pe > ns {
                    let incoming = if ppl {
                        Incoming::Dropped
                    } else {
                        Incoming::Data(&present[(ns - s) as usize..(pe - s) as usize])
                    };
                    out = a.insert(ns, pe, incoming, policy, next, budget);
                }
                let truncated = ce > pe;
                if truncated {
                    a.insert(pe, ce, Incoming::Missing, policy, next, budget);
                }
                let c = &mut x.counters;
                c.retransmitted += out.overlapped;
                c.overlap_conflicts += out.conflicts;
                let errors = &mut self.me.errors;
                if truncated {
                    errors.insert(StreamErrors::TRUNCATED);
                }
                if out.conflicts > 0 {
                    errors.insert(StreamErrors::OVERLAP_CONFLICT);
                }
                if out.dropped > 0 || (ppl && pe > ns) {
                    errors.insert(StreamErrors::DROPPED);
                }
                self.drain();
                self.enforce_ooo_limits(cfg);
                rest = ce.max(self.next());
            }
        }
        if rest < e {
            self.past_cutoff(rest, present_end, e, cfg);
        }
        self.settle_cutoff();
    }

    /// The common case of a statistics-only run, in a few instructions: a
    /// segment at the delivery point of a stream already past its cutoff,
    /// with nothing buffered or stored, is only counted (discarded, and
    /// missing where the capture cut it). Exactly what the general path of
    /// `tcp_data` does for such a segment; returns false, changing nothing,
    /// for any other segment.
    #[inline]
    pub(crate) fn discard_in_order(&mut self, off: i64, present: &[u8], wire: u64) -> bool {
        let limit = self.cutoff_now();
        let Some(e) = self.me.ext.as_deref_mut() else {
            return false;
        };
        let start = e.tcp.next;
        let fits = off >= 0
            && off as u64 == start
            && start >= limit
            && e.tcp.fin.is_none()
            && e.buf.is_none()
            && e.ooo.as_ref().is_none_or(|a| a.is_empty());
        if !fits {
            return false;
        }
        let end = start + wire;
        let seen = (present.len() as u64).min(wire);
        let cut = wire - seen;
        e.tcp.next = end;
        e.tcp.max_end = e.tcp.max_end.max(end);
        let c = &mut e.counters;
        c.stream_bytes += wire;
        c.discarded += seen;
        if cut > 0 {
            c.missing += cut;
            self.me
                .errors
                .insert(StreamErrors::TRUNCATED.union(StreamErrors::GAP));
        }
        if !self.me.has(F_DISCARD) && !self.reject {
            self.me.set_flag(F_CUTOFF, true);
        }
        true
    }

    /// Accounts the part `[from, end)` of a TCP segment that lies past the
    /// cutoff. Nothing is copied, but the range is remembered: at the delivery
    /// point it is committed as discarded at once (the in-order case, as cheap
    /// as before), else it is stored as a discarded placeholder, which costs
    /// no payload memory, so that a hole before it that never fills is still
    /// counted missing, exactly as below the cutoff. Bytes from `present_end`
    /// on were cut by the snapshot length (missing).
    pub(crate) fn past_cutoff(&mut self, from: u64, present_end: u64, end: u64, cfg: &Config) {
        let pe = present_end.clamp(from, end);
        if pe < end {
            self.me.errors.insert(StreamErrors::TRUNCATED);
        }
        let next = self.next();
        if from == next && !self.me.ooo_waiting() {
            self.commit_gap(pe - from, GapKind::Discarded);
            self.commit_gap(end - pe, GapKind::Missing);
            return;
        }
        let budget = &mut *self.budget;
        let x = self.me.x(self.defaults);
        let policy = x.params.policy;
        let a = x.ooo.get_or_insert_with(Default::default);
        if pe > from {
            let out = a.insert(from, pe, Incoming::Discarded, policy, next, budget);
            x.counters.retransmitted += out.overlapped;
        }
        if end > pe {
            a.insert(pe, end, Incoming::Missing, policy, next, budget);
        }
        self.drain();
        self.enforce_ooo_limits(cfg);
    }

    pub(crate) fn check_conflict(&mut self, start: u64, bytes: &[u8]) {
        let Some(buf) = self.me.ext.as_ref().and_then(|e| e.buf.as_ref()) else {
            return;
        };
        let a = start.max(buf.start);
        let b = (start + bytes.len() as u64).min(buf.end());
        if a >= b {
            return;
        }
        let old = &buf.data[(a - buf.start) as usize..(b - buf.start) as usize];
        let new = &bytes[(a - start) as usize..(b - start) as usize];
        if old != new {
            self.e().counters.overlap_conflicts += 1;
            self.me.errors.insert(StreamErrors::OVERLAP_CONFLICT);
        }
    }

    pub(crate) fn enforce_ooo_limits(&mut self, cfg: &Config) {
        while let Some(a) = self.me.ext.as_ref().and_then(|e| e.ooo.as_ref()) {
            // Discarded placeholders count like the data they stand for, so
            // holes are given up at the same point whatever the cutoff.
            let held = (a.data_bytes() as u64).saturating_add(a.discarded_bytes());
            if held <= cfg.max_ooo_bytes as u64 && a.segments() <= cfg.max_ooo_segments {
                break;
            }
            if !self.skip_hole() {
                break;
            }
        }
    }
}
