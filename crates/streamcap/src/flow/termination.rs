//! Ending connections: final data and termination events for both
//! directions, the flow-end event, and the end of the input (every open
//! connection terminates in creation order).

use super::conn::{pair, Conn, Kind};
use super::direction::{DirState, F_CREATED};
use super::Side;
use crate::config::ReassemblyMode;
use crate::deliver::context::cx;
use crate::deliver::{EndReason, FlowEnd, Handler, StreamErrors, StreamStatus};
use crate::dispatch::Worker;
use crate::stats::{end_index, GlobalStats};
use crate::time::Timestamp;

/// How many connections ahead [`Worker::finish`] prefetches the extensions
/// of the connections it terminates (and twice as far, their records).
pub(crate) const FINISH_AHEAD: usize = 8;

impl<H: Handler> Worker<H> {
    /// Ends a connection: final data, termination events, flow-end event.
    pub(crate) fn terminate(&mut self, idx: u32, reason: EndReason) {
        if self.cfg.subzero.is_some() {
            self.subzero_take_all(idx);
        }
        let Some((key, mut conn)) = self.table.remove(idx) else {
            return;
        };
        if reason == EndReason::Timeout && conn.kind == Kind::Tcp && conn.closing.is_some() {
            // A closed connection at the end of its linger: its late
            // packets must not open another.
            let end = |d: &DirState<H::State>| {
                let base = d.base()?;
                let t = d.tcp();
                let last = t.fin.map_or(t.max_end, |fin| fin + 1);
                Some(base.wrapping_add(last as u32))
            };
            let ends = [end(&conn.dirs[0]), end(&conn.dirs[1])];
            let cap = self.cfg.max_flows / 16;
            (self.closed).insert(key, ends, self.now, self.cfg.time_wait, cap);
        }
        let reason = conn.closing.unwrap_or(reason);
        let conn_id = conn.conn_id;
        for side in [conn.orig_side, conn.orig_side.other()] {
            let (me, opp) = pair(&mut conn.dirs, side);
            if me.has(F_CREATED) {
                if conn.kind == Kind::Tcp && conn.handshake != 3 {
                    me.errors.insert(StreamErrors::NO_HANDSHAKE);
                }
                let reject = me.params(&self.defaults).mode == ReassemblyMode::Strict
                    && conn.kind == Kind::Tcp
                    && conn.handshake != 3;
                let mut cx = cx!(self, &key, side, me, &*opp, conn_id, idx, self.now, reject);
                cx.finish();
                if cx.me.errors.contains(StreamErrors::GAP) {
                    // Holes given up at termination are gaps too.
                    conn.history.push(b'G', side == conn.orig_side);
                }
                cx.me.status = StreamStatus::Closed(reason);
                if H::WANTS_ON_CLOSE {
                    cx.call(|h, s| h.on_close(s));
                }
                let counters = me.counters();
                self.stats.totals.add(&counters);
                self.streams_ended += 1;
                // The default priority's totals are the rest (`Worker::stats`).
                let priority = me.params(&self.defaults).priority;
                if priority != self.cfg.priority {
                    let level = self.stats.overload.level_mut(priority);
                    level.streams += 1;
                    level.totals.add(&counters);
                }
                self.stats.chunks += me.ext.as_ref().map_or(0, |e| e.chunks);
            } else {
                me.status = StreamStatus::Closed(reason);
            }
            if let Some(e) = me.ext.as_deref_mut() {
                if let Some(b) = e.buf.as_mut() {
                    b.clear(&mut self.budget, &mut self.pool);
                }
                if let Some(a) = e.ooo.as_mut() {
                    a.clear(&mut self.budget);
                }
            }
        }
        let (first, last) = (conn.first(), conn.last());
        let mut letters = [0u8; 16];
        let history = conn.history.render(&mut letters);
        let (a, b) = conn.dirs.split_at_mut(1);
        let (o, r) = match conn.orig_side {
            Side::A => (&mut a[0], &mut b[0]),
            Side::B => (&mut b[0], &mut a[0]),
        };
        let (oi, ri) = (
            o.info(conn_id, &self.defaults),
            r.info(conn_id, &self.defaults),
        );
        let mut fe = FlowEnd {
            key: &key,
            orig_side: conn.orig_side,
            orig: &oi,
            resp: &ri,
            orig_state: &mut o.user,
            resp_state: &mut r.user,
            history,
            first,
            last,
            update: false,
        };
        self.handler.on_flow_end(&mut fe);
        self.stats.flows_ended[end_index(reason)] += 1;
    }

    /// Ends the input: the packets gathered for locality buffering are
    /// processed, every open connection terminates (`eof`, or how it
    /// closed if it was lingering), and the final statistics are returned.
    pub fn finish(&mut self) -> GlobalStats {
        // Packets gathered for locality come first.
        self.flush_locality();
        // No packet comes after this: nothing needs to find a flow by key.
        // (Freed first, so that the memory peak stays where it was.)
        self.table.release_index();
        // Terminate in order of creation for a deterministic event order.
        // (Serials grow with insertion, so insertion order is that order.)
        let slots = self
            .table
            .slots_in_insertion_order()
            .unwrap_or_else(|| self.table.slots_by(|c| c.conn_id));
        debug_assert!(
            slots.windows(2).all(|w| {
                let id = |i| self.table.get(i).map(|c: &Conn<H::State>| c.conn_id);
                id(w[0]) < id(w[1])
            }),
            "connections terminate in the order they were created"
        );
        // Creation order is not memory order: each connection's lines are
        // prefetched a few connections ahead (its record, then its
        // extensions, which the record points to), so that their misses
        // overlap instead of stalling each termination in turn.
        for (n, &idx) in slots.iter().enumerate() {
            if let Some((k, c)) = slots.get(n + 2 * FINISH_AHEAD).and_then(|&i| {
                self.table.warm_expiry(i);
                self.table.entry(i)
            }) {
                std::hint::black_box(k.proto());
                c.warm();
            }
            if let Some((_, c)) = slots
                .get(n + FINISH_AHEAD)
                .and_then(|&i| self.table.entry(i))
            {
                for e in c.dirs.iter().filter_map(|d| d.ext.as_deref()) {
                    e.warm();
                }
            }
            self.terminate(idx, EndReason::Eof);
        }
        self.flush.clear();
        // Datagrams still waiting for fragments will never complete: count them.
        self.defrag.expire(Timestamp(u64::MAX));
        self.stats()
    }
}
