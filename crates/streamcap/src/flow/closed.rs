//! Recently closed TCP connections: what is left of a connection that ended
//! by FIN or RST once its close linger is over, so that its late packets
//! (retransmitted FINs, which a sender backs off exponentially for a minute
//! or more, final ACKs, a retransmitted tail of data) are recognised as
//! late instead of opening a second, handshake-less connection with the
//! same addresses and ports.
//!
//! Each entry keeps, per side, the sequence number one past the last byte
//! (FIN included) that side was known to send. A later segment of that side
//! that lies wholly at or before it, starting at most [`LATE_WINDOW`] before
//! it, belongs to the closed connection; anything else (a SYN, new data
//! past the end, a sequence number elsewhere) is a new connection and
//! removes the entry. Entries live [`Config::time_wait`] after the
//! connection ended or after its latest late packet, and there are at most
//! [`Config::max_flows`]` / 16` of them (65,536 by default; the oldest goes
//! first), about 200 bytes each with their share of the hash table and of
//! the expiry queue: at most 13 MiB by default, outside the stream-data
//! budget.
//!
//! [`Config::time_wait`]: crate::Config::time_wait
//! [`Config::max_flows`]: crate::Config::max_flows

use super::{FlowKey, Side};
use crate::time::Timestamp;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use std::collections::VecDeque;

/// How far before a side's last sequence number a late segment may start:
/// a retransmission of the connection's tail. A new connection that reuses
/// the addresses and ports without a SYN in the capture lands in this range
/// of the 4 GiB sequence space by chance with probability 1/256.
pub const LATE_WINDOW: u32 = 1 << 24;

/// One closed connection.
#[derive(Copy, Clone, Debug)]
struct Closed {
    /// Per side ([`Side::index`]): one past the last sequence number sent.
    ends: [Option<u32>; 2],
    /// Forgotten after this time.
    until: Timestamp,
}

/// A remembered closed connection on its way to another worker.
#[derive(Copy, Clone, Debug)]
pub(crate) struct MovedClosed {
    pub(crate) key: FlowKey,
    closed: Closed,
}

/// The recently closed connections of one worker. The map uses hashbrown's
/// default hasher, randomly seeded as the flow table's, so an attacker
/// cannot aim collisions at it.
#[derive(Debug, Default)]
pub(crate) struct ClosedConns {
    by_key: HashMap<FlowKey, Closed>,
    /// (deadline, key) in deadline order; an entry whose deadline no longer
    /// matches the map's was refreshed or replaced and is skipped.
    queue: VecDeque<(Timestamp, FlowKey)>,
}

impl ClosedConns {
    /// Remembers a connection that ended at `now`, with each side's end
    /// sequence number, until `now + lifetime`; keeps at most `cap`.
    pub(crate) fn insert(
        &mut self,
        key: FlowKey,
        ends: [Option<u32>; 2],
        now: Timestamp,
        lifetime: u64,
        cap: usize,
    ) {
        if cap == 0 || lifetime == 0 || ends == [None, None] {
            return;
        }
        self.expire(now);
        while self.by_key.len() >= cap {
            if !self.pop_oldest() {
                break;
            }
        }
        let until = now.add_nanos(lifetime);
        self.by_key.insert(key, Closed { ends, until });
        self.queue.push_back((until, key));
        self.compact();
    }

    /// Whether a segment of `side` with sequence number `seq` that occupies
    /// `len` sequence numbers (payload, plus one for a FIN; `syn`: it
    /// carries a SYN) and finds no open connection for `key` at `now` is a
    /// late packet of a closed one: it lies wholly at or before that side's
    /// end, within [`LATE_WINDOW`]. A segment that reaches past the end
    /// carries bytes the closed connection never had (the peer went on
    /// after all), so it starts a new connection. A late packet keeps the
    /// entry another `lifetime`; a packet that starts a new connection
    /// removes it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn is_late(
        &mut self,
        key: &FlowKey,
        side: Side,
        seq: u32,
        len: u32,
        syn: bool,
        now: Timestamp,
        lifetime: u64,
    ) -> bool {
        if self.by_key.is_empty() {
            return false;
        }
        self.expire(now);
        let Entry::Occupied(mut e) = self.by_key.entry(*key) else {
            return false;
        };
        let late = !syn
            && e.get().ends[side.index()].is_some_and(|end| {
                let back = end.wrapping_sub(seq);
                back <= LATE_WINDOW && len <= back
            });
        if !late {
            e.remove();
            return false;
        }
        let until = now.add_nanos(lifetime);
        e.get_mut().until = until;
        self.queue.push_back((until, *key));
        self.compact();
        true
    }

    /// Removes and returns every remembered connection whose key satisfies
    /// `pick` (forgetting those whose time is over at `now` first), for
    /// another worker's [`ClosedConns::adopt`].
    pub(crate) fn take_where(
        &mut self,
        now: Timestamp,
        mut pick: impl FnMut(&FlowKey) -> bool,
    ) -> Vec<MovedClosed> {
        self.expire(now);
        let mut out = Vec::new();
        self.by_key.retain(|key, c| {
            if pick(key) {
                out.push(MovedClosed {
                    key: *key,
                    closed: *c,
                });
                false
            } else {
                true
            }
        });
        if !out.is_empty() {
            let map = &self.by_key;
            self.queue
                .retain(|(until, key)| map.get(key).is_some_and(|c| c.until == *until));
        }
        out
    }

    /// Remembers connections another worker remembered
    /// ([`ClosedConns::take_where`]) until their own deadlines, keeping the
    /// queue in deadline order. A key already remembered here keeps the
    /// later deadline's entry.
    pub(crate) fn adopt(&mut self, moved: Vec<MovedClosed>) {
        for MovedClosed { key, closed } in moved {
            if self
                .by_key
                .get(&key)
                .is_some_and(|c| c.until >= closed.until)
            {
                continue;
            }
            self.by_key.insert(key, closed);
            let at = self
                .queue
                .partition_point(|&(until, _)| until <= closed.until);
            self.queue.insert(at, (closed.until, key));
        }
        self.compact();
    }

    /// Connections remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Forgets the connections whose time is over.
    fn expire(&mut self, now: Timestamp) {
        while let Some(&(until, _)) = self.queue.front() {
            if until > now {
                break;
            }
            self.pop_oldest();
        }
    }

    /// Removes the queue's first pair, and its connection if the pair is
    /// current. Returns false when the queue is empty.
    fn pop_oldest(&mut self) -> bool {
        let Some((until, key)) = self.queue.pop_front() else {
            return false;
        };
        if let Entry::Occupied(e) = self.by_key.entry(key) {
            if e.get().until == until {
                e.remove();
            }
        }
        true
    }

    /// Drops stale queue pairs when they outnumber the connections, so the
    /// queue stays within twice the map's size.
    fn compact(&mut self) {
        if self.queue.len() > 2 * self.by_key.len() + 16 {
            let map = &self.by_key;
            self.queue
                .retain(|(until, key)| map.get(key).is_some_and(|c| c.until == *until));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16) -> (FlowKey, Side) {
        FlowKey::from_ipv4([10, 0, 0, 1], port, [10, 0, 0, 2], 80, 6)
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn late_segments_near_the_end_only() {
        let mut c = ClosedConns::default();
        // 10.0.0.1 sorts first: the client is side A.
        let (k, client) = key(1000);
        assert_eq!(client, Side::A);
        let t = Timestamp(100 * S);
        let insert = |c: &mut ClosedConns| c.insert(k, [Some(5000), None], t, 60 * S, 10);
        insert(&mut c);
        // A retransmitted FIN (the sequence number before the end, one
        // sequence number long), the last ACK, the tail of the data again.
        assert!(c.is_late(&k, Side::A, 4999, 1, false, t, 60 * S), "FIN");
        assert!(c.is_late(&k, Side::A, 5000, 0, false, t, 60 * S), "ACK");
        assert!(c.is_late(&k, Side::A, 4000, 1000, false, t, 60 * S), "tail");
        let far = 5000u32.wrapping_sub(LATE_WINDOW);
        assert!(c.is_late(&k, Side::A, far, 0, false, t, 60 * S));
        assert!(!c.is_late(&k, Side::A, 4999, 0, true, t, 60 * S), "a SYN");
        assert_eq!(c.len(), 0, "a new connection ends the entry");
        insert(&mut c);
        assert!(
            !c.is_late(&k, Side::B, 1, 0, false, t, 60 * S),
            "no known end"
        );
        assert_eq!(c.len(), 0);
        insert(&mut c);
        assert!(
            !c.is_late(&k, Side::A, 5001, 0, false, t, 60 * S),
            "past the end"
        );
        insert(&mut c);
        // New data at the end: the connection went on (a reset its host
        // ignored, then a pause): not late.
        assert!(
            !c.is_late(&k, Side::A, 5000, 100, false, t, 60 * S),
            "new data"
        );
        insert(&mut c);
        assert!(
            !c.is_late(&k, Side::A, 4990, 20, false, t, 60 * S),
            "reaching past"
        );
        insert(&mut c);
        let too_far = 5000u32.wrapping_sub(LATE_WINDOW + 1);
        assert!(!c.is_late(&k, Side::A, too_far, 0, false, t, 60 * S));
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn entries_expire_unless_refreshed_by_late_packets() {
        let mut c = ClosedConns::default();
        let (k, _) = key(1000);
        c.insert(k, [Some(10), Some(10)], Timestamp(0), 60 * S, 10);
        // Refreshed at 50 s: alive until 110 s.
        assert!(c.is_late(&k, Side::A, 9, 0, false, Timestamp(50 * S), 60 * S));
        assert!(c.is_late(&k, Side::A, 9, 0, false, Timestamp(109 * S), 60 * S));
        assert!(!c.is_late(&k, Side::A, 9, 0, false, Timestamp(170 * S), 60 * S));
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn bounded_by_the_cap_and_the_queue_stays_small() {
        let mut c = ClosedConns::default();
        for p in 0..100u16 {
            let (k, _) = key(p);
            c.insert(k, [Some(1), None], Timestamp(u64::from(p)), 60 * S, 8);
        }
        assert_eq!(c.len(), 8);
        let (k, _) = key(99);
        for i in 0..1000u64 {
            assert!(c.is_late(&k, Side::A, 1, 0, false, Timestamp(1000 + i), 60 * S));
        }
        assert_eq!(c.len(), 8);
        assert!(c.queue.len() <= 2 * c.len() + 17, "{}", c.queue.len());
    }
}
