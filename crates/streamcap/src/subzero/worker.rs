//! The worker's side of subzero copy: when a stream direction is listed in
//! the flow-drop map, when its entry is taken back, and how the counts of
//! the dropped packets join the stream's (see [`crate::subzero`]).

use super::{DropCounts, DropKey, InsertError};
use crate::decode::TcpSegment;
use crate::deliver::{Budget, Handler, StreamParams};
use crate::dispatch::Worker;
use crate::flow::conn::{Conn, Kind};
use crate::flow::direction::{DirState, F_DISCARD};
use crate::flow::{FlowOf, ListId, Side};
use crate::time::Timestamp;
use std::cmp::Reverse;

/// The flush queue's side number of a subzero entry timeout for side A
/// (side B is one more).
pub(crate) const SUBZERO_A: u8 = 3;

/// Where a direction's entry stands.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum Status {
    /// Not listed (yet).
    #[default]
    Unlisted,
    /// Listed: the map drops the direction's packets.
    Listed,
    /// Taken back when its timeout fell due: listed again, with twice the
    /// timeout, once a packet shows the stream is still active.
    TimedOut,
    /// The map refused it (full): not tried again before `until`.
    Refused,
}

/// One direction's entry in the flow-drop map.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    status: Status,
    /// How many times it was listed: the timeout is the first one times
    /// 2^(level - 1).
    level: u8,
    /// When it times out (listed) or may be tried again (refused), ns of
    /// packet time.
    until: u64,
    /// The stream offset of the delivery point when it was listed, from
    /// which the map's TCP advance counts.
    from: u64,
}

impl Entry {
    fn listed(&self) -> bool {
        self.status == Status::Listed
    }
}

/// The timeout of an entry listed for the `level`-th time.
fn timeout_at(first: u64, level: u8) -> u64 {
    let shift = u32::from(level.saturating_sub(1)).min(20);
    first.saturating_mul(1 << shift)
}

/// Adds what the map dropped for direction `me` of a connection of `kind`
/// to its counters, as if the worker had seen those packets; `from` is the
/// stream offset at which the entry was listed.
pub(crate) fn merge<S>(
    me: &mut DirState<S>,
    kind: Kind,
    c: &DropCounts,
    from: u64,
    defaults: &[StreamParams; 2],
    budget: &mut Budget,
) {
    if c.pkts == 0 {
        return;
    }
    me.count(c.pkts, c.bytes, defaults);
    if let Some(t) = c.last {
        me.end = me.end.max(t);
    }
    let e = me.x(defaults);
    let next = e.tcp.next;
    // Packets processed since the listing (on their way before it) moved
    // `next` already: only what lies past it is new.
    let advance = match kind {
        Kind::Tcp => from.saturating_add(c.advance).saturating_sub(next),
        _ => c.payload,
    };
    // As `Cx::commit_gap` notes discarded bytes: in the chunk buffer of a
    // stream that has one, so the next chunk reports the gap.
    if advance > 0 && (e.buf.is_some() || e.chunks > 0) {
        e.buf_mut().note_gap(next, advance, budget);
    }
    e.tcp.next = next + advance;
    e.tcp.max_end = e.tcp.max_end.max(e.tcp.next);
    let k = &mut e.counters;
    k.stream_bytes += advance;
    k.discarded += advance;
    k.retransmitted += c.payload.saturating_sub(advance);
    k.pkts_discarded += c.data_pkts;
}

/// Whether direction `me` of `conn` may be listed: a TCP or UDP stream past
/// its cutoff (or discarded), with nothing buffered or waiting out of order
/// and no FIN, of a connection that is not closing, not listed already and
/// not refused lately.
fn may_list<S>(conn: &Conn<S>, me: &DirState<S>, defaults: &[StreamParams; 2], now: u64) -> bool {
    if !matches!(conn.kind, Kind::Tcp | Kind::Udp) || conn.closing.is_some() {
        return false;
    }
    let Some(e) = me.ext.as_deref() else {
        return false;
    };
    match e.subzero.status {
        Status::Listed => return false,
        Status::Refused if now < e.subzero.until => return false,
        _ => {}
    }
    let past = me.has(F_DISCARD) || e.tcp.next >= me.params(defaults).cutoff;
    let pending = e.buf.as_ref().is_some_and(|b| b.fresh_len() > 0);
    past && e.tcp.fin.is_none() && !pending && e.ooo.as_ref().is_none_or(|a| a.is_empty())
}

impl<H: Handler> Worker<H> {
    /// Before a TCP segment from side `side` of connection `idx` is
    /// processed: a SYN, FIN or RST of a listed direction takes its entry
    /// back, so the stream is where the dropped packets left it; so does a
    /// segment that starts past the delivery point, one the program let
    /// through for another reason than timing (an IP fragment, IPv6
    /// extension headers) after it had dropped some. Other segments of a
    /// listed direction were on their way before it was listed: they come
    /// before the dropped ones.
    pub(crate) fn subzero_before(&mut self, idx: u32, side: Side, seg: &TcpSegment<'_>) {
        let Some(conn) = self.table.get(idx) else {
            return;
        };
        let me = &conn.dirs[side.index()];
        if !me.ext.as_deref().is_some_and(|e| e.subzero.listed()) {
            return;
        }
        let f = seg.flags;
        let past = || {
            me.offset_of(seg.seq)
                .is_some_and(|o| o > me.tcp().next as i64)
        };
        if f.syn() || f.fin() || f.rst() || past() {
            self.subzero_take(idx, side);
        }
    }

    /// After a packet of `flow` is processed: lists its direction if it may
    /// be (see `may_list`). The connection is the one the packet reached
    /// (`Worker::last_slot`), or, if that slot now holds another, looked up.
    #[inline(never)]
    pub(crate) fn subzero_after(&mut self, flow: &FlowOf) {
        let slot = self.last_slot;
        let idx = match self.table.entry(slot) {
            Some((k, _)) if *k == flow.key => slot,
            _ => match self.find_flow(flow) {
                Some(i) => i,
                None => return,
            },
        };
        self.subzero_list(idx, flow.side);
    }

    /// Lists direction `side` of connection `idx` if it may be: for the
    /// first time, or after its entry timed out with twice the timeout
    /// (Scap V-E), or after it was taken back for another reason at the
    /// timeout it had.
    fn subzero_list(&mut self, idx: u32, side: Side) {
        let Some(sz) = self.cfg.subzero.clone() else {
            return;
        };
        let now = self.now.0;
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let me = &conn.dirs[side.index()];
        if !may_list(conn, me, &self.defaults, now) {
            return;
        }
        let Some(dk) = DropKey::of(key, side) else {
            return;
        };
        let id = conn.conn_id;
        let kind = conn.kind;
        let me = &mut conn.dirs[side.index()];
        let base = me.base();
        let Some(e) = me.ext.as_deref_mut() else {
            return;
        };
        let from = e.tcp.next;
        let seq = match kind {
            Kind::Tcp => match base {
                Some(b) => Some(b.wrapping_add(from as u32)),
                None => return,
            },
            _ => None,
        };
        let entry = &mut e.subzero;
        entry.from = from;
        match sz.map.insert(&dk, seq) {
            Ok(()) => {
                if entry.level == 0 {
                    self.stats.subzero.installed += 1;
                } else {
                    self.stats.subzero.reinstalled += 1;
                }
                if entry.level == 0 || entry.status == Status::TimedOut {
                    entry.level = entry.level.saturating_add(1);
                }
                entry.status = Status::Listed;
                entry.until = now.saturating_add(timeout_at(sz.timeout, entry.level));
            }
            Err(err) => {
                match err {
                    InsertError::Full => self.stats.subzero.map_full += 1,
                    InsertError::Failed(_) => self.stats.subzero.failed += 1,
                }
                entry.status = Status::Refused;
                entry.until = now.saturating_add(sz.timeout);
            }
        }
        let side_no = SUBZERO_A + side.index() as u8;
        self.flush.push(Reverse((entry.until, idx, id, side_no)));
    }

    /// Takes direction `side` of connection `idx` back from the map if it is
    /// listed, and adds its counts. Returns whether it was listed.
    pub(crate) fn subzero_take(&mut self, idx: u32, side: Side) -> bool {
        let Some(sz) = self.cfg.subzero.as_ref() else {
            return false;
        };
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return false;
        };
        let kind = conn.kind;
        let me = &mut conn.dirs[side.index()];
        let Some(e) = me.ext.as_deref_mut().filter(|e| e.subzero.listed()) else {
            return false;
        };
        e.subzero.status = Status::Unlisted;
        let from = e.subzero.from;
        let Some(dk) = DropKey::of(key, side) else {
            return false;
        };
        if let Some(c) = sz.map.take(&dk) {
            self.stats.subzero.pkts += c.pkts;
            self.stats.subzero.bytes += c.bytes;
            merge(me, kind, &c, from, &self.defaults, &mut self.budget);
        }
        true
    }

    /// Takes both directions of connection `idx` back (before it
    /// terminates).
    pub(crate) fn subzero_take_all(&mut self, idx: u32) {
        self.subzero_take(idx, Side::A);
        self.subzero_take(idx, Side::B);
    }

    /// An entry's timer fell due: if it is still the same listing, the
    /// entry is taken back (listed again with twice the timeout when a
    /// packet shows the stream active); a refusal ends.
    pub(crate) fn subzero_due(&mut self, slot: u32, id: u64, side: Side, deadline: u64) {
        let Some(conn) = self.table.get_mut(slot).filter(|c| c.conn_id == id) else {
            return;
        };
        let Some(e) = conn.dirs[side.index()].ext.as_deref_mut() else {
            return;
        };
        if e.subzero.until != deadline {
            return;
        }
        match e.subzero.status {
            Status::Listed => {
                self.subzero_take(slot, side);
                if let Some(e) = self
                    .table
                    .get_mut(slot)
                    .and_then(|c| c.dirs[side.index()].ext.as_deref_mut())
                {
                    e.subzero.status = Status::TimedOut;
                }
                self.stats.subzero.timed_out += 1;
            }
            Status::Refused => {
                e.subzero.status = Status::Unlisted;
            }
            _ => {}
        }
    }

    /// The inactivity timeout of connection `idx` (in `list`, `timeout`
    /// ns) fell due: its listed directions are taken back, and if they show
    /// packets within the timeout the connection is not idle: it is marked
    /// active at its last packet and listed again. Returns whether it stays.
    pub(crate) fn subzero_refresh(&mut self, idx: u32, list: ListId, timeout: u64) -> bool {
        let listed = |w: &Self, s: Side| {
            w.table.get(idx).is_some_and(|c| {
                c.dirs[s.index()]
                    .ext
                    .as_deref()
                    .is_some_and(|e| e.subzero.listed())
            })
        };
        let sides = [Side::A, Side::B].map(|s| listed(self, s));
        if !sides.contains(&true) {
            return false;
        }
        for (s, was) in [Side::A, Side::B].into_iter().zip(sides) {
            if was {
                self.subzero_take(idx, s);
            }
        }
        let Some(last) = self.table.get(idx).map(|c| c.last()) else {
            return false;
        };
        if last.add_nanos(timeout) <= self.now {
            return false;
        }
        self.table.touch(idx, list, last);
        self.note_deadline_at(list, last);
        for (s, was) in [Side::A, Side::B].into_iter().zip(sides) {
            if was {
                self.relist(idx, s);
            }
        }
        true
    }

    /// Lists a direction that was just taken back again, at the same level
    /// (an interim report or an inactivity check, not a timeout).
    pub(crate) fn relist(&mut self, idx: u32, side: Side) {
        self.subzero_list(idx, side);
    }

    /// Before an interim report of connection `idx`: its listed directions
    /// are taken back and listed again, so the report counts what the map
    /// dropped.
    pub(crate) fn subzero_sync(&mut self, idx: u32) {
        for s in [Side::A, Side::B] {
            if self.subzero_take(idx, s) {
                self.relist(idx, s);
            }
        }
    }

    /// Lowers `next_check` to the deadline of a flow of `list` last active
    /// at `at`.
    fn note_deadline_at(&mut self, list: ListId, at: Timestamp) {
        let timeout = match list {
            ListId::Tcp => self.cfg.tcp_timeout,
            ListId::Udp => self.cfg.udp_timeout,
            ListId::Other => self.cfg.other_timeout,
            ListId::Closing => self.cfg.close_linger,
        };
        self.next_check = self.next_check.min(at.add_nanos(timeout));
    }
}
