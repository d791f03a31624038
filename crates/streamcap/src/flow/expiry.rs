//! Timers on packet time: inactivity timeouts (per protocol, and the close
//! linger of finished connections) and stream flush timeouts.

use super::{ListId, Side};
use crate::deliver::context::cx;
use crate::deliver::{DataReason, EndReason, FlowEnd, Handler};
use crate::dispatch::Worker;
use crate::flow::conn::pair;
use crate::subzero::SUBZERO_A;
use crate::time::Timestamp;
use std::cmp::Reverse;

/// The flush queue's side number of an active-timeout report.
const ACTIVE: u8 = 2;

impl<H: Handler> Worker<H> {
    pub(crate) fn expire(&mut self) {
        if self.timers_held {
            // A locality batch is being processed: its timers fire after it.
            return;
        }
        let now = self.now;
        while let Some(&Reverse((deadline, slot, id, side))) = self.flush.peek() {
            if deadline > now.0 {
                break;
            }
            self.flush.pop();
            match side {
                0 => self.flush_stream(slot, id, Side::A),
                1 => self.flush_stream(slot, id, Side::B),
                ACTIVE => self.active_update(slot, id, deadline),
                SUBZERO_A => self.subzero_due(slot, id, Side::A, deadline),
                _ => self.subzero_due(slot, id, Side::B, deadline),
            }
        }
        let lists = [
            (ListId::Tcp, self.cfg.tcp_timeout),
            (ListId::Udp, self.cfg.udp_timeout),
            (ListId::Other, self.cfg.other_timeout),
            (ListId::Closing, self.cfg.close_linger),
        ];
        let mut next = Timestamp(u64::MAX);
        for (list, timeout) in lists {
            while let Some((idx, last)) = self.table.oldest(list) {
                let deadline = last.add_nanos(timeout);
                if deadline > now {
                    next = next.min(deadline);
                    break;
                }
                if self.cfg.subzero.is_some() && self.subzero_refresh(idx, list, timeout) {
                    // Packets dropped early show it is not idle.
                    continue;
                }
                self.terminate(idx, EndReason::Timeout);
            }
        }
        self.next_check = next;
        self.defrag.expire(now);
    }

    /// Marks a flow active now and as belonging to `list`, keeping
    /// `next_check` a lower bound of every queue's next deadline.
    #[inline]
    pub(crate) fn touch(&mut self, idx: u32, list: ListId) {
        if self.table.touch(idx, list, self.now) {
            self.note_deadline(list);
        }
    }

    /// The inactivity timeout of `list`.
    pub(crate) fn timeout_of(&self, list: ListId) -> u64 {
        match list {
            ListId::Tcp => self.cfg.tcp_timeout,
            ListId::Udp => self.cfg.udp_timeout,
            ListId::Other => self.cfg.other_timeout,
            ListId::Closing => self.cfg.close_linger,
        }
    }

    /// Lowers `next_check` to the deadline of a flow of `list` queued now.
    pub(crate) fn note_deadline(&mut self, list: ListId) {
        let timeout = match list {
            ListId::Tcp => self.cfg.tcp_timeout,
            ListId::Udp => self.cfg.udp_timeout,
            ListId::Other => self.cfg.other_timeout,
            ListId::Closing => self.cfg.close_linger,
        };
        self.next_check = self.next_check.min(self.now.add_nanos(timeout));
    }

    /// Queues the first active-timeout report of a new connection (in
    /// the flush queue, under the side number [`ACTIVE`]: one queue, one
    /// test on the packet path).
    pub(crate) fn schedule_active(&mut self, slot: u32, id: u64) {
        if let Some(at) = self.cfg.active_timeout.filter(|&t| t > 0) {
            self.flush
                .push(Reverse((self.now.0.saturating_add(at), slot, id, ACTIVE)));
        }
    }

    /// An active timeout fell due: the connection, if still open and seen
    /// since the interval began, is reported, and its next report queued.
    ///
    /// The next deadline is the first of the connection's intervals after
    /// the present: a capture whose clock leaps (months, in some real
    /// files) gives one report, not one per interval leapt over.
    fn active_update(&mut self, slot: u32, id: u64, deadline: u64) {
        let Some(at) = self.cfg.active_timeout.filter(|&t| t > 0) else {
            return;
        };
        let now = self.now.0;
        if self.cfg.subzero.is_some() && self.table.get(slot).is_some_and(|c| c.conn_id == id) {
            self.subzero_sync(slot);
        }
        let Some((key, conn)) = self.table.entry_mut(slot) else {
            return;
        };
        if conn.conn_id != id || conn.closing.is_some() {
            // Gone, or closed and lingering: its end comes soon.
            return;
        }
        let leapt = now.saturating_sub(deadline) / at;
        let next = deadline.saturating_add(at.saturating_mul(leapt.saturating_add(1)));
        if conn.last().0 <= deadline.saturating_sub(at) {
            // Nothing new since the interval began: no report.
            self.flush.push(Reverse((next, slot, id, ACTIVE)));
            return;
        }
        let (first, last) = (conn.first(), conn.last());
        let mut letters = [0u8; 16];
        let history = conn.history.render(&mut letters);
        let orig_side = conn.orig_side;
        let (a, b) = conn.dirs.split_at_mut(1);
        let (o, r) = match orig_side {
            Side::A => (&mut a[0], &mut b[0]),
            Side::B => (&mut b[0], &mut a[0]),
        };
        let (oi, ri) = (o.info(id, &self.defaults), r.info(id, &self.defaults));
        let mut fe = FlowEnd {
            key,
            orig_side,
            orig: &oi,
            resp: &ri,
            orig_state: &mut o.user,
            resp_state: &mut r.user,
            history,
            first,
            last,
            update: true,
        };
        self.handler.on_flow_update(&mut fe);
        self.flush.push(Reverse((next, slot, id, ACTIVE)));
    }

    pub(crate) fn flush_stream(&mut self, slot: u32, id: u64, side: Side) {
        let now = self.now;
        let Some((key, conn)) = self.table.entry_mut(slot) else {
            return;
        };
        if conn.conn_id != id {
            return;
        }
        let (me, opp) = pair(&mut conn.dirs, side);
        let pending = me
            .ext
            .as_ref()
            .and_then(|e| e.buf.as_ref())
            .and_then(|b| b.pending_since);
        let (Some(since), Some(ft)) = (pending, me.params(&self.defaults).flush_timeout) else {
            return;
        };
        if since.add_nanos(ft) > now {
            self.flush
                .push(Reverse((since.0.saturating_add(ft), slot, id, side as u8)));
            return;
        }
        let mut cx = cx!(self, key, side, me, &*opp, id, slot, now, false);
        cx.deliver(DataReason::FlushTimeout);
    }
}
