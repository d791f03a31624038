//! Handing connections over between workers: everything a [`Worker`] keeps
//! for the connections of a set of buckets, taken out of one worker
//! ([`Worker::export_buckets`]) and put into another
//! ([`Worker::import_handover`]), so that the second goes on as if it had
//! seen those connections from their first packet.
//!
//! What a connection is, in a worker, and how each part moves:
//!
//! - the flow-table entry: key and connection record (both directions'
//!   counters, times, flags, status, errors, sequence state, window and
//!   scale, parameters, the chunk buffer with its undelivered bytes, kept
//!   and overlap bytes and packet records, the out-of-order store, the
//!   subzero entry, the handler's per-stream state `H::State`, the history
//!   letters, the closing reason, the handshake bits, the connection id):
//!   moved whole, the id unchanged;
//! - its place in the expiry queues: its class and last-activity time,
//!   re-queued in the new table (the new worker's next timer check is
//!   lowered to its deadline);
//! - its timers in the flush queue (flush timeouts, active-timeout reports,
//!   subzero listings), which name the connection's slot: moved with their
//!   deadlines and re-aimed at its new slot;
//! - its memory-budget charge (chunk buffers, out-of-order bytes, packet
//!   records): released by the old worker, charged to the new one (past
//!   the limit if need be: the bytes exist);
//! - its priority: noted among the new worker's priority levels;
//! - the recently-closed entries of the buckets' connections that already
//!   ended ([`crate::flow`]'s `closed`), whose late packets must not open
//!   a connection: moved with their deadlines;
//! - with subzero copy, the flow-drop map's counts are taken into the
//!   connection before it leaves (its entries leave the map; the new
//!   worker lists the stream again when it qualifies).
//!
//! What does not move: statistics (each worker counts what it processed;
//! a connection's creation is counted where it was created, its end where
//! it ended, so the workers' sums are those of one worker), the fragment
//! reassembler (every worker of the group reassembles every fragment, see
//! [`super::bucket`]), spare buffers, and the handler itself (only
//! per-stream state lives with the connection).
//!
//! Time: the hand-over carries the old worker's clock. The new worker
//! first advances its own clock to it (firing its own timers that fall
//! due, as a packet at that time would), then takes the connections, then
//! fires at once any of their timers already due by its clock (a clock
//! ahead of the old worker's): a connection is never kept past a deadline
//! of the clock it lives under.

use super::bucket::{BucketSet, Buckets};
use crate::deliver::{EndReason, Handler, PacketRecord};
use crate::dispatch::Worker;
use crate::flow::closed::MovedClosed;
use crate::flow::conn::Conn;
use crate::flow::{FlowKey, ListId};
use crate::time::Timestamp;
use hashbrown::HashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A worker's share of the buckets: the bucket function and the buckets it
/// owns now ([`Worker::with_buckets`]).
pub(crate) struct Owned {
    pub(crate) map: Buckets,
    pub(crate) set: BucketSet,
}

impl Owned {
    /// Whether the worker owns bucket `b`.
    #[inline]
    pub(crate) fn has(&self, b: u16) -> bool {
        self.set.contains(b)
    }
}

/// One connection on its way between workers.
struct MovedFlow<S> {
    key: FlowKey,
    conn: Conn<S>,
    list: ListId,
    last_seen: Timestamp,
    /// Its flush-queue timers: (deadline, side number).
    timers: Vec<(u64, u8)>,
    /// Budget bytes its buffers hold.
    charged: usize,
}

/// The connections of a set of buckets, taken out of one worker
/// ([`Worker::export_buckets`]) for another ([`Worker::import_handover`]).
/// `Send` when the handler's per-stream state is, so it can cross to the
/// new worker's thread.
pub struct FlowHandover<S> {
    buckets: BucketSet,
    now: Timestamp,
    flows: Vec<MovedFlow<S>>,
    closed: Vec<MovedClosed>,
}

impl<S> FlowHandover<S> {
    /// The buckets handed over.
    pub fn buckets(&self) -> &BucketSet {
        &self.buckets
    }

    /// The old worker's clock when it let them go.
    pub fn time(&self) -> Timestamp {
        self.now
    }

    /// Open (or lingering) connections handed over.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// Recently closed connections handed over.
    pub fn closed(&self) -> usize {
        self.closed.len()
    }

    /// Stream-data bytes (memory-budget charge) handed over.
    pub fn bytes(&self) -> usize {
        self.flows.iter().map(|f| f.charged).sum()
    }
}

impl<S> std::fmt::Debug for FlowHandover<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowHandover")
            .field("buckets", &self.buckets.len())
            .field("time", &self.now)
            .field("flows", &self.flows.len())
            .field("closed", &self.closed.len())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// The budget bytes a connection's buffers hold: chunk-buffer bytes and
/// packet records, out-of-order bytes.
fn charged<S>(conn: &Conn<S>) -> usize {
    conn.dirs
        .iter()
        .filter_map(|d| d.ext.as_deref())
        .map(|e| {
            let buf = e.buf.as_ref().map_or(0, |b| {
                b.data.len() + b.packets.len() * std::mem::size_of::<PacketRecord>()
            });
            buf + e.ooo.as_ref().map_or(0, |a| a.data_bytes())
        })
        .sum()
}

impl<H: Handler> Worker<H> {
    /// Makes this worker one of a group sharing the buckets of `map`: it
    /// owns `owned` to begin with (its share of an
    /// [`IndirectionTable`](super::IndirectionTable)), and the buckets it
    /// exports and imports later. A router sends it the packets of its
    /// buckets, and every IP fragment: of those, it counts the frames
    /// whose fragment bucket it owns and processes the datagrams whose
    /// bucket it owns (see [`super::bucket`]). Its other packets are
    /// processed as they come, unchecked.
    pub fn with_buckets(mut self, map: Buckets, owned: BucketSet) -> Self {
        self.owned = Some(Box::new(Owned { map, set: owned }));
        self
    }

    /// The buckets this worker owns (`None`: not one of a bucket group).
    pub fn buckets(&self) -> Option<&BucketSet> {
        self.owned.as_deref().map(|o| &o.set)
    }

    /// Gives this worker's connections ids `first`, `first + step`,
    /// `first + 2 step`, … (by default 0, 1, 2, …): with `first` the
    /// worker's index and `step` the group's size, ids are unique across
    /// the group, and a connection keeps its id when it moves.
    pub fn with_conn_ids(mut self, first: u64, step: u64) -> Self {
        self.next_conn_id = first;
        self.conn_id_step = step.max(1);
        self
    }

    /// Takes every connection of `buckets` out of this worker, with all
    /// the engine keeps for it (see the module documentation), for
    /// [`Worker::import_handover`] on another worker of the group; the
    /// worker no longer owns those buckets. Packets gathered for locality
    /// buffering are processed first, and, with a decoupled analysis
    /// stage, what it gave back so far is applied.
    ///
    /// Call it once every packet of those buckets routed to this worker
    /// before the change has been processed. A worker without a bucket
    /// function ([`Worker::with_buckets`]) owns no bucket: the hand-over
    /// is empty.
    pub fn export_buckets(&mut self, buckets: &BucketSet) -> FlowHandover<H::State> {
        self.collect_returns();
        self.flush_locality();
        let now = self.now;
        let mut h = FlowHandover {
            buckets: buckets.clone(),
            now,
            flows: Vec::new(),
            closed: Vec::new(),
        };
        let Some(map) = self.owned.as_deref().map(|o| o.map.clone()) else {
            h.buckets = BucketSet::new();
            return h;
        };
        let moving = |k: &FlowKey| buckets.contains(map.of_flow(k));
        let slots = self.table.slots_where(moving);
        if self.cfg.subzero.is_some() {
            for &idx in &slots {
                self.subzero_take_all(idx);
            }
        }
        let mut by_slot: HashMap<u32, usize> = HashMap::with_capacity(slots.len());
        for idx in slots {
            let (Some(list), Some(last_seen)) =
                (self.table.list_of(idx), self.table.last_seen(idx))
            else {
                continue;
            };
            let Some((key, conn)) = self.table.remove(idx) else {
                continue;
            };
            let bytes = charged(&conn);
            self.budget.release(bytes);
            by_slot.insert(idx, h.flows.len());
            h.flows.push(MovedFlow {
                key,
                conn,
                list,
                last_seen,
                timers: Vec::new(),
                charged: bytes,
            });
        }
        if !h.flows.is_empty() && !self.flush.is_empty() {
            let mut kept = Vec::with_capacity(self.flush.len());
            for Reverse((at, slot, id, side)) in std::mem::take(&mut self.flush).into_vec() {
                let mine = by_slot
                    .get(&slot)
                    .copied()
                    .filter(|&i| h.flows.get(i).is_some_and(|f| f.conn.conn_id == id));
                match mine.and_then(|i| h.flows.get_mut(i)) {
                    Some(f) => f.timers.push((at, side)),
                    None => kept.push(Reverse((at, slot, id, side))),
                }
            }
            self.flush = BinaryHeap::from(kept);
        }
        h.closed = self.closed.take_where(now, moving);
        if let Some(o) = self.owned.as_deref_mut() {
            o.set.subtract(buckets);
        }
        self.last_slot = u32::MAX;
        h
    }

    /// Takes in the connections another worker of the group let go
    /// ([`Worker::export_buckets`]); the worker owns their buckets from now
    /// on. Its clock first advances to the hand-over's (see the module
    /// documentation for the time rule). Call it before any packet of
    /// those buckets routed after the change reaches this worker. Both
    /// workers must have the same configuration.
    ///
    /// Should a connection with the same key already be here (the ordering
    /// rule was broken: a packet reached this worker before its bucket),
    /// that connection ends ([`EndReason::Evicted`]) and the handed-over
    /// one takes its place.
    pub fn import_handover(&mut self, h: FlowHandover<H::State>) {
        self.collect_returns();
        self.flush_locality();
        self.step_clock(h.now);
        for f in h.flows {
            if let Some(old) = self.table.find(&f.key) {
                self.terminate(old, EndReason::Evicted);
            }
            for d in &f.conn.dirs {
                if let Some(e) = d.ext.as_deref() {
                    self.overload.note(e.params.priority);
                }
            }
            self.budget.charge_moved(f.charged);
            let id = f.conn.conn_id;
            let hash = self.table.hash_of(&f.key);
            let idx = self
                .table
                .insert_hashed(f.key, hash, f.list, f.last_seen, f.conn);
            for (at, side) in f.timers {
                self.flush.push(Reverse((at, idx, id, side)));
            }
            let deadline = f.last_seen.add_nanos(self.timeout_of(f.list));
            self.next_check = self.next_check.min(deadline);
        }
        self.table.forget_insertion_order();
        self.stats.max_flows = self.stats.max_flows.max(self.table.len() as u64);
        self.closed.adopt(h.closed);
        if let Some(o) = self.owned.as_deref_mut() {
            o.set.union_with(&h.buckets);
        }
        let due = self.flush.peek().map_or(u64::MAX, |Reverse(e)| e.0);
        if self.now >= self.next_check || self.now.0 >= due {
            self.expire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handover_is_send_when_the_state_is() {
        fn send<T: Send>() {}
        send::<FlowHandover<()>>();
        send::<FlowHandover<Vec<u8>>>();
    }
}
