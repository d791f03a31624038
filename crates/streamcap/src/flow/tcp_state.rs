//! TCP connection tracking: handshake, connection reuse, RST validation,
//! FIN placement, and what an acknowledgment proves about the peer's
//! stream (fast mode gives up holes the receiver has skipped).

use super::conn::{mark_closing, pair, Kind};
use super::direction::{DirState, F_DISCARD, F_ISN, F_WSCALE};
use super::{FlowOf, ListId};
use crate::config::ReassemblyMode;
use crate::decode::TcpSegment;
use crate::deliver::context::{cx, Outcome};
use crate::deliver::{EndReason, Handler, PacketRecord, StreamErrors};
use crate::dispatch::Worker;
use crate::reassembly::tcp::TcpSeq;
use crate::source::RawPacket;

impl<H: Handler> Worker<H> {
    pub(crate) fn handle_tcp(
        &mut self,
        frame: &RawPacket<'_>,
        seg: &TcpSegment<'_>,
        flow: &FlowOf,
        ip_len: u32,
    ) {
        let ts = frame.ts;
        let side = flow.side;
        let f = seg.flags;
        let pure_syn = f.syn() && !f.ack();
        let idx = match self.find_flow(flow) {
            Some(i) => {
                let reuse = pure_syn
                    && self.table.get(i).is_some_and(|c| {
                        let t = &c.dirs[side.index()];
                        c.closing.is_some()
                            || match t.isn() {
                                Some(isn) => isn != seg.seq,
                                None => t.started() && t.base() != Some(seg.seq.wrapping_add(1)),
                            }
                    });
                if reuse {
                    self.terminate(i, EndReason::Evicted);
                    self.create_conn(frame, flow, side, Kind::Tcp)
                } else {
                    if self.cfg.subzero.is_some() {
                        self.subzero_before(i, side, seg);
                    }
                    i
                }
            }
            None => {
                let len = seg.payload_wire_len.saturating_add(u32::from(f.fin()));
                let late = self.closed.is_late(
                    &flow.key,
                    side,
                    seg.seq,
                    len,
                    f.syn(),
                    self.now,
                    self.cfg.time_wait,
                );
                if late {
                    self.stats.late_packets += 1;
                    return;
                }
                let orig = if f.syn() && f.ack() {
                    side.other()
                } else {
                    side
                };
                self.create_conn(frame, flow, orig, Kind::Tcp)
            }
        };
        self.begin_packet(idx, side, ip_len, ts);
        let wire = u64::from(seg.payload_wire_len);
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let is_orig = side == conn.orig_side;
        if pure_syn && is_orig {
            conn.handshake |= 1;
        }
        if f.syn() && f.ack() && !is_orig {
            conn.handshake |= 2;
        }
        let h = &mut conn.history;
        if f.syn() {
            h.push(if f.ack() { b'H' } else { b'S' }, is_orig);
        }
        if f.fin() {
            h.push(b'F', is_orig);
        }
        if f.rst() {
            h.push(b'R', is_orig);
        }
        if wire > 0 {
            h.push(b'D', is_orig);
        } else if f.ack() && !f.syn() && !f.fin() && !f.rst() {
            h.push(b'A', is_orig);
        }
        let handshake_ok = conn.handshake == 3;
        let conn_id = conn.conn_id;
        let (me, opp) = pair(&mut conn.dirs, side);
        me.window = seg.window;

        if f.rst() {
            if rst_valid(me, opp, seg.seq) {
                conn.closing.get_or_insert(EndReason::Rst);
                mark_closing(conn);
            } else {
                me.errors.insert(StreamErrors::INVALID_RST);
                self.stats.invalid_rsts += 1;
            }
            let list = if conn.closing.is_some() {
                ListId::Closing
            } else {
                ListId::Tcp
            };
            self.touch(idx, list);
            return;
        }
        if f.syn() {
            if !me.has(F_ISN) {
                me.isn = seg.seq;
                me.set_flag(F_ISN, true);
            }
            // A SYN fixes the stream start unless data already did.
            if !me.started() || (me.tcp().next == 0 && me.tcp().max_end == 0) {
                me.set_base(seg.seq.wrapping_add(1));
            }
            me.wscale = seg.window_scale.unwrap_or(0);
            me.set_flag(F_WSCALE, seg.window_scale.is_some());
            if f.ack() && !opp.started() {
                opp.set_base(seg.ack);
            }
        }
        let data_seq = seg.seq.wrapping_add(u32::from(f.syn()));
        if !me.started() && (wire > 0 || f.fin()) {
            me.set_base(data_seq);
        }
        let gap_before = me.errors.contains(StreamErrors::GAP);
        let mut retransmitted = false;
        if wire > 0 {
            let off = me.offset_of(data_seq).unwrap_or(0);
            let p = me.params(&self.defaults);
            let reject = p.mode == ReassemblyMode::Strict && !handshake_ok;
            let may_deliver = !reject && !me.has(F_DISCARD) && me.tcp().next < p.cutoff;
            // Prioritized packet loss judges what would be stored: new
            // bytes (not a retransmission, not past the FIN, not a jump
            // the reassembler ignores), except in the packets that create
            // or end a stream.
            let jump = self.cfg.max_seq_jump;
            let fresh = |t: &TcpSeq| {
                off.saturating_add(wire as i64) > t.next as i64
                    && t.fin.is_none_or(|fin| off < fin as i64)
                    && off <= t.next.saturating_add(jump).min(i64::MAX as u64) as i64
            };
            let ppl_drop = may_deliver
                && !(f.syn() || f.fin() || f.rst())
                && self.overload.pressured(self.budget.used())
                && fresh(me.tcp())
                && self.overload.drops(
                    &mut self.stats.overload,
                    self.budget.used(),
                    p.priority,
                    off.max(0) as u64,
                    wire,
                );
            let x = me.x(&self.defaults);
            if self.cfg.need_packets
                && may_deliver
                && !ppl_drop
                && self.budget.try_charge(std::mem::size_of::<PacketRecord>())
            {
                x.buf_mut().packets.push(PacketRecord {
                    ts,
                    offset: off.max(0) as u64,
                    len: wire as u32,
                    ip_len,
                    seq: seg.seq,
                    ack: seg.ack,
                    flags: f.0,
                    window: seg.window,
                });
            }
            let before = Outcome::of(&x.counters);
            let mut cx = cx!(self, key, side, &mut *me, &*opp, conn_id, idx, self.now, reject);
            cx.ppl_drop = ppl_drop;
            cx.tcp_data(off, seg.payload, wire, &self.cfg);
            let c = &mut cx.e().counters;
            before.classify(c);
            retransmitted = c.retransmitted > before.retransmitted;
        }
        if f.fin() && me.tcp().fin.is_none() {
            // Like a receiver, accept a FIN only inside the receive window:
            // not below what was delivered, not past the window.
            let window = receive_window(me, opp);
            match me.offset_of(data_seq.wrapping_add(wire as u32)) {
                Some(off)
                    if off >= me.tcp().next as i64
                        && off as u64 <= me.tcp().max_end.saturating_add(window) =>
                {
                    let fin = off as u64;
                    let x = me.x(&self.defaults);
                    x.tcp.fin = Some(fin);
                    // The FIN's sequence number proves every byte before it was
                    // sent: bytes not seen by then are missing, not absent.
                    x.tcp.max_end = x.tcp.max_end.max(fin);
                    if x.tcp.max_end > fin {
                        // Stored bytes past the FIN are not part of the stream.
                        if let Some(a) = x.ooo.as_mut() {
                            a.truncate_from(fin, &mut self.budget);
                        }
                        x.tcp.max_end = fin;
                        me.errors.insert(StreamErrors::DATA_AFTER_FIN);
                    }
                    if opp.tcp().fin.is_some() {
                        conn.closing.get_or_insert(EndReason::Fin);
                    }
                }
                _ => me.errors.insert(StreamErrors::BAD_SEQ),
            }
        }
        if me.tcp().fin.is_some() {
            let mut cx = cx!(self, key, side, &mut *me, &*opp, conn_id, idx, self.now, false);
            cx.complete_at_fin();
        }
        if retransmitted {
            conn.history.push(b'T', is_orig);
        }
        if !gap_before && me.errors.contains(StreamErrors::GAP) {
            conn.history.push(b'G', is_orig);
        }
        // The acknowledgment tells what the peer's stream has reached.
        if f.ack() {
            let window = receive_window(opp, me);
            if let Some(a) = opp.offset_of(seg.ack) {
                // Only acknowledgments inside the window count (an ACK of the
                // FIN acknowledges one past the last byte).
                let t = opp.tcp();
                let a = t.fin.map_or(a, |fin| a.min(fin as i64));
                if a > 0 && (a as u64) > t.acked && a as u64 <= t.max_end.saturating_add(window) {
                    let t = &mut opp.x(&self.defaults).tcp;
                    t.acked = a as u64;
                    // The receiver has bytes the capture never showed: they
                    // were sent, so they are part of the stream (missing).
                    t.max_end = t.max_end.max(a as u64);
                }
            }
            if opp.params(&self.defaults).mode == ReassemblyMode::Fast
                && opp.ooo_waiting()
                && opp.tcp().acked > opp.tcp().next
            {
                let mut cx = cx!(
                    self,
                    key,
                    side.other(),
                    opp,
                    &*me,
                    conn_id,
                    idx,
                    self.now,
                    false
                );
                let acked = cx.me.tcp().acked;
                while cx.next() < acked && cx.skip_hole_until(acked) {}
                cx.complete_at_fin();
                if opp.errors.contains(StreamErrors::GAP) {
                    conn.history.push(b'G', !is_orig);
                }
            }
        }
        let list = if conn.closing.is_some() {
            mark_closing(conn);
            ListId::Closing
        } else {
            ListId::Tcp
        };
        self.touch(idx, list);
    }
}

/// An RST is honoured when its sequence number lies in the receive window
/// (RFC 793/5961), or when the sender's sequence space is unknown.
pub(crate) fn rst_valid<S>(me: &DirState<S>, peer: &DirState<S>, seq: u32) -> bool {
    let Some(off) = me.offset_of(seq) else {
        return true;
    };
    let window = receive_window(me, peer);
    let t = me.tcp();
    let acked = if t.acked > 0 {
        t.acked.min(t.next)
    } else {
        t.next
    };
    let lower = acked as i64 - 1;
    off >= lower && off <= t.max_end.saturating_add(window).min(i64::MAX as u64) as i64
}

/// The window the peer advertised for `me`'s bytes (scaled when both SYNs
/// carried the option), or the largest possible when the peer was never seen.
pub(crate) fn receive_window<S>(me: &DirState<S>, peer: &DirState<S>) -> u64 {
    if peer.window == 0 && !peer.started() {
        u64::from(u16::MAX) << 14
    } else {
        let scale = match (me.wscale(), peer.wscale()) {
            (Some(_), Some(s)) => s,
            _ => 0,
        };
        (u64::from(peer.window) << scale).max(1)
    }
}
