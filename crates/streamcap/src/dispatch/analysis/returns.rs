//! The capture stage's end of the hand-off: what the analysis stage gives
//! back (budget bytes, buffers, decisions) applied to the worker before its
//! next packet.

use crate::config::ReassemblyMode;
use crate::deliver::context::cx;
use crate::deliver::StreamStatus;
use crate::deliver::{Decision, Handler};
use crate::dispatch::Worker;
use crate::flow::conn::{pair, Kind};
use crate::flow::direction::F_DISCARD;

impl<H: Handler> Worker<H> {
    /// Takes back what the handler returns: releases the budget bytes of
    /// the chunks it is done with, pools their buffers and applies the
    /// decisions its callbacks took, in order.
    #[inline(never)]
    pub(crate) fn apply_returns(&mut self) {
        let mut r = std::mem::take(&mut self.returns);
        self.handler.collect_returns(&mut r);
        self.budget.release(r.released);
        r.released = 0;
        for b in r.buffers.drain(..) {
            self.pool.put(b);
        }
        for d in r.decisions.drain(..) {
            self.apply_decision(d);
        }
        self.returns = r;
    }

    /// Applies a callback's decision to its stream, if the stream still
    /// exists and is not closed: `discard` (which stays set) and the
    /// parameters, exactly as when the callback runs in place; a cutoff now
    /// behind the delivery point ends delivery at once (the chunk buffered
    /// goes out as the last one).
    pub(crate) fn apply_decision(&mut self, d: Decision) {
        let s = d.stream;
        let Some((key, conn)) = self.table.entry_mut(s.slot) else {
            return;
        };
        if conn.conn_id != s.conn_id {
            return;
        }
        let conn_id = conn.conn_id;
        let no_handshake = conn.kind == Kind::Tcp && conn.handshake != 3;
        let (me, opp) = pair(&mut conn.dirs, s.side);
        if matches!(me.status, StreamStatus::Closed(_)) {
            return;
        }
        if d.discard {
            me.set_flag(F_DISCARD, true);
        }
        if let Some(p) = d.params {
            if p != *me.params(&self.defaults) {
                me.x(&self.defaults).params = p;
            }
            self.overload.note(p.priority);
        }
        // As termination does: strict mode without a handshake delivers nothing.
        let reject = no_handshake && me.params(&self.defaults).mode == ReassemblyMode::Strict;
        let mut cx = cx!(self, key, s.side, me, &*opp, conn_id, s.slot, self.now, reject);
        cx.settle_cutoff();
    }
}
