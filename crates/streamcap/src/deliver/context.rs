//! The delivery context of one stream direction ([`Cx`]): commits bytes at
//! the delivery point, accounts gaps, fills and hands over chunks (or
//! segments in place), and calls the application's callbacks with the
//! stream descriptor.

use crate::deliver::{
    records_from, Budget, BufferPool, Chunk, DataReason, Delivery, Handler, Opposite, Overload,
    OwnedChunk, PacketRecord, Stream, StreamCounters, StreamErrors, StreamParams,
};
use crate::flow::direction::{DirState, Ext, F_CUTOFF, F_DISCARD, F_KEEP};
use crate::flow::{FlowKey, Side};
use crate::reassembly::assembler::{Incoming, Stored};
use crate::time::Timestamp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

pub(crate) type FlushQueue = BinaryHeap<Reverse<(u64, u32, u64, u8)>>;

/// What a stream's bytes go through: the context of one direction while the
/// engine commits bytes to it and delivers chunks to the handler.
pub(crate) struct Cx<'a, H: Handler> {
    pub(crate) handler: &'a mut H,
    pub(crate) key: &'a FlowKey,
    pub(crate) side: Side,
    pub(crate) me: &'a mut DirState<H::State>,
    pub(crate) opp: &'a DirState<H::State>,
    pub(crate) conn_id: u64,
    /// The worker's stream parameters, by direction.
    pub(crate) defaults: &'a [StreamParams; 2],
    pub(crate) budget: &'a mut Budget,
    /// Prioritized packet loss: a priority set from a callback joins its levels.
    pub(crate) overload: &'a mut Overload,
    /// The worker's spare chunk-buffer vectors.
    pub(crate) pool: &'a mut BufferPool,
    pub(crate) flush: &'a mut FlushQueue,
    pub(crate) slot: u32,
    pub(crate) now: Timestamp,
    /// Strict mode without a handshake: everything is discarded.
    pub(crate) reject: bool,
    /// Measure time spent in callbacks.
    pub(crate) timed: bool,
    /// Prioritized packet loss gave up this packet's payload: bytes that
    /// would be stored or delivered are dropped instead.
    pub(crate) ppl_drop: bool,
}

#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum GapKind {
    Missing,
    Dropped,
    Discarded,
}

impl<H: Handler> Cx<'_, H> {
    /// This direction's extension (allocated on first use).
    #[inline]
    pub(crate) fn e(&mut self) -> &mut Ext {
        self.me.x(self.defaults)
    }

    #[inline]
    pub(crate) fn next(&self) -> u64 {
        self.me.tcp().next
    }

    pub(crate) fn call<R>(&mut self, f: impl FnOnce(&mut H, &mut Stream<'_, H::State>) -> R) -> R {
        let t0 = self.timed.then(Instant::now);
        let mut info = self.me.info(self.conn_id, self.defaults);
        let (opp, conn_id, defaults) = (self.opp, self.conn_id, self.defaults);
        let build = || opp.info(conn_id, defaults);
        let mut s = Stream {
            info: &mut info,
            opposite: Opposite {
                built: std::cell::OnceCell::new(),
                build: &build,
            },
            key: self.key,
            side: self.side,
            state: &mut self.me.user,
            slot: self.slot,
        };
        let r = f(self.handler, &mut s);
        if info.params_set {
            self.overload.note(info.params.priority);
        }
        self.me.write_back(&info, self.defaults);
        if let Some(t0) = t0 {
            self.e().processing_ns += t0.elapsed().as_nanos() as u64;
        }
        r
    }

    pub(crate) fn cutoff_now(&self) -> u64 {
        let c = self.me.params(self.defaults).cutoff;
        if self.me.has(F_DISCARD) || self.reject {
            c.min(self.next())
        } else {
            c
        }
    }

    /// Calls the data callback with `chunk`; returns whether it kept the
    /// chunk (`keep_chunk`).
    pub(crate) fn hand_over(&mut self, chunk: &Chunk<'_>) -> bool {
        self.me.set_flag(F_KEEP, false);
        self.call(|h, s| h.on_data(s, chunk));
        let keep = self.me.has(F_KEEP);
        self.me.set_flag(F_KEEP, false);
        keep
    }

    /// Hands the buffered new bytes to the data callback.
    pub(crate) fn deliver(&mut self, reason: DataReason) {
        if H::TAKES_CHUNKS {
            self.deliver_owned(reason);
            return;
        }
        let Some(e) = self.me.ext.as_deref_mut() else {
            return;
        };
        if e.fresh_len() == 0 {
            return;
        }
        let Some(mut buf) = e.buf.take() else {
            return;
        };
        let end = buf.end();
        let later = records_from(&mut buf.packets, end);
        e.chunks += 1;
        let chunk = Chunk {
            data: &buf.data,
            offset: buf.start,
            new_from: buf.fresh,
            reason,
            gap: buf.gap,
            packets: &buf.packets,
        };
        let keep = self.hand_over(&chunk);
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        let p = e.params;
        let overlap = p.overlap.min(p.chunk_size / 2);
        let buf = e.buf.insert(buf);
        buf.consume(keep, overlap, budget);
        if !later.is_empty() {
            buf.packets = later;
        }
    }

    /// [`Cx::deliver`] for a handler that takes chunks by value
    /// ([`Handler::TAKES_CHUNKS`]): the buffer and its packet records go to
    /// the handler, still charged to the budget until the handler returns
    /// them; the stream goes on with a new buffer that starts with the
    /// overlap bytes (copied, and charged, when the budget has room; else
    /// the next chunk starts at its new bytes). `keep_chunk` is the
    /// handler's to implement.
    fn deliver_owned(&mut self, reason: DataReason) {
        let Some(e) = self.me.ext.as_deref_mut() else {
            return;
        };
        if e.fresh_len() == 0 {
            return;
        }
        let Some(buf) = e.buf.as_mut() else {
            return;
        };
        let end = buf.end();
        let later = records_from(&mut buf.packets, end);
        e.chunks += 1;
        let p = e.params;
        let overlap = p.overlap.min(p.chunk_size / 2).min(buf.data.len());
        let data = std::mem::take(&mut buf.data);
        let packets = std::mem::replace(&mut buf.packets, later);
        let charged = data.len() + packets.len() * std::mem::size_of::<PacketRecord>();
        let chunk = OwnedChunk {
            offset: buf.start,
            new_from: buf.fresh,
            reason,
            gap: buf.gap.take(),
            data,
            packets,
            charged,
        };
        let mut next = Vec::new();
        if overlap > 0 && self.budget.try_charge(overlap) {
            self.pool.reserve(&mut next, overlap, p.chunk_size.max(1));
            next.extend_from_slice(&chunk.data[chunk.data.len() - overlap..]);
        }
        buf.start = end - next.len() as u64;
        buf.fresh = next.len();
        buf.kept = 0;
        buf.pending_since = None;
        buf.data = next;
        let released = self.call(|h, s| h.on_chunk_owned(s, chunk));
        self.budget.release(released);
        self.me.set_flag(F_KEEP, false);
    }

    /// Appends bytes at the delivery point, delivering full chunks; with
    /// segment delivery, delivers them at once, in place when nothing is
    /// buffered and no overlap is asked for, with `reason` ([`DataReason::Segment`], or
    /// [`DataReason::Packet`] for a per-packet protocol). Stops early if a
    /// callback lowers the cutoff; returns how many bytes were accounted.
    pub(crate) fn commit_data(&mut self, data: &[u8], reason: DataReason) -> usize {
        let mut done = 0;
        while done < data.len() {
            let limit = self.cutoff_now();
            let next = self.next();
            if next >= limit {
                break;
            }
            let (now, slot, conn_id, side) = (self.now, self.slot, self.conn_id, self.side);
            let e = self.me.x(self.defaults);
            let cs = e.params.chunk_size.max(1);
            let segments = e.params.delivery == Delivery::Segments;
            let to_limit = (limit - next).min(usize::MAX as u64) as usize;
            if self.ppl_drop {
                // Up to the cutoff the bytes are dropped; past it they are
                // discarded, as they would have been (`settle_cutoff`).
                let take = (data.len() - done).min(to_limit);
                self.commit_gap(take as u64, GapKind::Dropped);
                done += take;
                continue;
            }
            if !H::TAKES_CHUNKS
                && segments
                && e.params.overlap == 0
                && e.buf.as_ref().is_none_or(|b| b.data.is_empty())
            {
                let take = cs.min(data.len() - done).min(to_limit);
                self.deliver_in_place(&data[done..done + take], reason);
                done += take;
                continue;
            }
            let fill = e.buf.as_ref().map_or(0, |b| b.fill());
            let room = cs.saturating_sub(fill).max(1);
            let take = room.min(data.len() - done).min(to_limit);
            if !self.budget.try_charge(take) {
                let rest = (data.len() - done) as u64;
                self.commit_gap(rest, GapKind::Dropped);
                return data.len();
            }
            let flush_timeout = e.params.flush_timeout;
            let buf = e.buf_mut();
            // Most streams are short: the vector starts small and doubles up
            // to the chunk size, so idle or short streams do not each pin a
            // whole chunk of memory; the pool spares the allocator.
            self.pool.reserve(&mut buf.data, take, cs);
            if buf.fresh_len() == 0 {
                buf.pending_since = Some(now);
                // (With segment delivery nothing waits for the timeout.)
                if let Some(ft) = flush_timeout.filter(|_| !segments) {
                    self.flush.push(Reverse((
                        now.0.saturating_add(ft),
                        slot,
                        conn_id,
                        side as u8,
                    )));
                }
            }
            buf.data.extend_from_slice(&data[done..done + take]);
            let full = buf.fill() >= cs;
            done += take;
            let c = &mut e.counters;
            c.captured += take as u64;
            c.stream_bytes += take as u64;
            e.tcp.next += take as u64;
            if segments {
                self.deliver(reason);
            } else if full {
                self.deliver(DataReason::Full);
            }
        }
        done
    }

    /// Segment delivery of `bytes`, which begin at the delivery point and
    /// fit the cutoff, while the chunk buffer holds no bytes: they are
    /// accounted and handed to the data callback where they lie (in the
    /// packet or the out-of-order store), with the gap before them and the
    /// records of the packets waiting whose payload begins before their
    /// end. Copied afterwards only if the callback keeps them (and the
    /// budget has room). A stream whose bytes all go this way creates no
    /// chunk buffer (it would cost a cache line more per packet) until it
    /// needs one: for a gap after its first event, packet records or kept
    /// bytes.
    pub(crate) fn deliver_in_place(&mut self, bytes: &[u8], reason: DataReason) {
        let e = self.me.x(self.defaults);
        let len = bytes.len();
        let offset = e.tcp.next;
        let end = offset + len as u64;
        let (gap, mut packets, later) = match e.buf.as_mut() {
            Some(b) => {
                b.start = end;
                b.pending_since = None;
                let mut packets = std::mem::take(&mut b.packets);
                let later = records_from(&mut packets, end);
                (b.gap.take(), packets, later)
            }
            None => (e.first_gap(), Vec::new(), Vec::new()),
        };
        e.chunks += 1;
        let c = &mut e.counters;
        c.captured += len as u64;
        c.stream_bytes += len as u64;
        e.tcp.next += len as u64;
        let chunk = Chunk {
            data: bytes,
            offset,
            new_from: 0,
            reason,
            gap,
            packets: &packets,
        };
        let keep = self.hand_over(&chunk);
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        if packets.capacity() > 0 {
            budget.release(packets.len() * std::mem::size_of::<PacketRecord>());
            packets.clear();
            if let Some(b) = e.buf.as_mut() {
                b.packets = if later.is_empty() { packets } else { later };
            }
        }
        if keep && budget.try_charge(len) {
            let cs = e.params.chunk_size.max(1);
            let b = e.buf_mut();
            self.pool.reserve(&mut b.data, len, cs);
            b.data.extend_from_slice(bytes);
            b.start = offset;
            (b.fresh, b.kept) = (len, len);
        }
    }

    /// Accounts `len` bytes at the delivery point that will not be delivered.
    pub(crate) fn commit_gap(&mut self, len: u64, kind: GapKind) {
        if len == 0 {
            return;
        }
        // Discarded bytes follow the cutoff (or a discard): the chunk before
        // them is the last one.
        self.deliver(if kind == GapKind::Discarded {
            DataReason::Cutoff
        } else {
            DataReason::Gap
        });
        let limit = self.cutoff_now();
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        let off = e.tcp.next;
        // Nothing buffered or delivered, and nothing to report: bytes past
        // the cutoff (and holes past it) need no buffer.
        if e.buf.is_some() || e.chunks > 0 || (kind != GapKind::Discarded && off < limit) {
            e.buf_mut().note_gap(off, len, budget);
        }
        let c = &mut e.counters;
        c.stream_bytes += len;
        let err = match kind {
            GapKind::Missing => {
                c.missing += len;
                StreamErrors::GAP
            }
            GapKind::Dropped => {
                c.dropped += len;
                StreamErrors::GAP.union(StreamErrors::DROPPED)
            }
            GapKind::Discarded => {
                c.discarded += len;
                StreamErrors::default()
            }
        };
        e.tcp.next += len;
        self.me.errors.insert(err);
    }

    /// Commits stored ranges that start at the delivery point.
    pub(crate) fn drain(&mut self) {
        loop {
            let Some(e) = self.me.ext.as_deref_mut() else {
                return;
            };
            let next = e.tcp.next;
            let Some(a) = e.ooo.as_mut() else {
                return;
            };
            let Some((start, end, what)) = a.pop_front(next) else {
                return;
            };
            if end <= next {
                if let Stored::Data(d) = what {
                    self.budget.release(d.len());
                }
                continue;
            }
            let skip = (next - start) as usize;
            match what {
                Stored::Data(d) => {
                    self.budget.release(d.len());
                    let consumed =
                        self.commit_data(d.get(skip..).unwrap_or(&[]), DataReason::Segment);
                    if consumed < d.len() - skip {
                        // A callback lowered the cutoff: the rest was seen but
                        // is past it (settled by `settle_cutoff`).
                        let budget = &mut *self.budget;
                        let e = self.me.x(self.defaults);
                        let (at, policy) = (e.tcp.next, e.params.policy);
                        if let Some(a) = e.ooo.as_mut() {
                            a.insert(at, end, Incoming::Discarded, policy, at, budget);
                        }
                        return;
                    }
                }
                Stored::Dropped => self.commit_gap(end - next, GapKind::Dropped),
                Stored::Discarded => self.commit_gap(end - next, GapKind::Discarded),
                Stored::Missing => self.commit_gap(end - next, GapKind::Missing),
            }
        }
    }

    /// Gives up the hole before the first stored range (before or past the
    /// cutoff alike: bytes never seen are missing) and commits what follows.
    /// Returns false when there was nothing to give up.
    pub(crate) fn skip_hole(&mut self) -> bool {
        self.skip_hole_until(u64::MAX)
    }

    /// Gives up the hole before the first stored range, but not past stream
    /// offset `limit`: an acknowledgment up to `limit` proves the receiver
    /// has every byte before it (so the capture missed them), not the bytes
    /// after it, which a retransmission may still bring. Commits what
    /// follows when the hole is closed. Returns false when nothing moved.
    pub(crate) fn skip_hole_until(&mut self, limit: u64) -> bool {
        let first = self
            .me
            .ext
            .as_ref()
            .and_then(|e| e.ooo.as_ref())
            .and_then(|a| a.first_start());
        let Some(first) = first else {
            return false;
        };
        let next = self.next();
        let end = first.min(limit);
        if end > next {
            self.commit_gap(end - next, GapKind::Missing);
        }
        self.drain();
        self.settle_cutoff();
        self.next() > next
    }

    /// Once the delivery point reaches the cutoff: the last chunk goes out,
    /// stored bytes past it become discarded placeholders (their ranges are
    /// kept, so holes between them are still told apart) and the ones at the
    /// delivery point are committed as discarded.
    pub(crate) fn settle_cutoff(&mut self) {
        let limit = self.cutoff_now();
        if self.next() < limit {
            return;
        }
        self.deliver(DataReason::Cutoff);
        if !self.me.has(F_DISCARD) && !self.reject {
            self.me.set_flag(F_CUTOFF, true);
        }
        if let Some(e) = self.me.ext.as_deref_mut() {
            if let Some(b) = e.buf.as_mut() {
                self.budget
                    .release(b.packets.len() * std::mem::size_of::<PacketRecord>());
                b.packets.clear();
            }
            if let Some(a) = e.ooo.as_mut() {
                a.discard_from(limit, self.budget);
            }
        }
        self.drain();
    }

    /// Once the delivery point has reached the direction's FIN, every byte
    /// of the stream is known: delivers what is buffered as the last chunk
    /// ([`DataReason::Termination`]) and frees the buffer now, rather than
    /// when the closed connection is terminated after lingering
    /// (`close_linger`), which kept a partial chunk per direction of every
    /// closed connection in memory. Nothing can follow: bytes past a FIN are
    /// not part of the stream.
    pub(crate) fn complete_at_fin(&mut self) {
        let Some(e) = self.me.ext.as_deref() else {
            return;
        };
        let done = e.tcp.fin.is_some_and(|fin| e.tcp.next >= fin);
        let holds = e
            .buf
            .as_ref()
            .is_some_and(|b| b.data.capacity() > 0 || b.packets.capacity() > 0);
        if !done || !holds {
            return;
        }
        self.deliver(DataReason::Termination);
        if let Some(b) = self.me.ext.as_deref_mut().and_then(|e| e.buf.as_mut()) {
            b.release_memory(self.budget, self.pool);
        }
    }

    /// Termination: every hole is given up, the last chunk delivered.
    pub(crate) fn finish(&mut self) {
        while self.skip_hole() {
            if !self.me.ooo_waiting() {
                break;
            }
        }
        // What remains before the highest byte known to be sent was never
        // seen (seen bytes are delivered or stored), cutoff or not.
        let (next, max_end) = (self.next(), self.me.tcp().max_end);
        if max_end > next {
            self.commit_gap(max_end - next, GapKind::Missing);
        }
        self.deliver(DataReason::Termination);
    }
}

/// Builds a [`Cx`] from the worker's shared parts (handler, budget, flush
/// queue) and one direction of a connection, borrowing the fields disjointly.
macro_rules! cx {
    ($w:ident, $key:expr, $side:expr, $me:expr, $opp:expr, $id:expr, $slot:expr, $now:expr, $reject:expr) => {
        $crate::deliver::context::Cx {
            handler: &mut $w.handler,
            key: $key,
            side: $side,
            me: $me,
            opp: $opp,
            conn_id: $id,
            defaults: &$w.defaults,
            budget: &mut $w.budget,
            overload: &mut $w.overload,
            pool: &mut $w.pool,
            flush: &mut $w.flush,
            slot: $slot,
            now: $now,
            reject: $reject,
            timed: $w.cfg.measure_processing_time,
            ppl_drop: false,
        }
    };
}
pub(crate) use cx;

/// The counters that tell what became of a packet's payload, taken before
/// the payload is processed.
pub(crate) struct Outcome {
    pub(crate) dropped: u64,
    pub(crate) discarded: u64,
    pub(crate) captured: u64,
    pub(crate) retransmitted: u64,
}

impl Outcome {
    pub(crate) fn of(c: &StreamCounters) -> Outcome {
        Outcome {
            dropped: c.dropped,
            discarded: c.discarded,
            captured: c.captured,
            retransmitted: c.retransmitted,
        }
    }

    /// Counts the packet as dropped, discarded or captured, by what its
    /// payload added to the counters since `self` was taken.
    pub(crate) fn classify(&self, c: &mut StreamCounters) {
        if c.dropped > self.dropped {
            c.pkts_dropped += 1;
        } else if c.discarded > self.discarded {
            c.pkts_discarded += 1;
        } else if c.captured > self.captured {
            c.pkts_captured += 1;
        }
    }
}
