//! The flow table: a keyed hash map into a slab of entries, with one
//! least-recently-used list per timeout class.
//!
//! Every entry sits on exactly one list; touching an entry moves it to the
//! list's tail in O(1). Because all entries of a list share one timeout and
//! time (packet time) only moves forward, the head of each list is the next to
//! expire, so expiry costs O(1) amortized per packet. The hash map uses
//! `hashbrown`'s default hasher, which is seeded randomly when the table is
//! created, so an attacker cannot predict collisions (hash flooding).

use super::FlowKey;
use crate::time::Timestamp;
use hashbrown::HashMap;
use slab::Slab;

/// Which expiry list an entry is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ListId {
    /// Open TCP connections.
    Tcp = 0,
    /// UDP flows.
    Udp = 1,
    /// Other protocols.
    Other = 2,
    /// Connections that have closed (FIN/RST) and linger to absorb late packets.
    Closing = 3,
}

const LISTS: usize = 4;
const NIL: u32 = u32::MAX;

struct Entry<T> {
    key: FlowKey,
    prev: u32,
    next: u32,
    list: ListId,
    last_seen: Timestamp,
    value: T,
}

#[derive(Copy, Clone)]
struct List {
    head: u32,
    tail: u32,
}

/// A table of flows keyed by [`FlowKey`], holding a value `T` per flow.
pub struct FlowTable<T> {
    map: HashMap<FlowKey, u32>,
    slab: Slab<Entry<T>>,
    lists: [List; LISTS],
}

impl<T> Default for FlowTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FlowTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        FlowTable {
            map: HashMap::new(),
            slab: Slab::new(),
            lists: [List {
                head: NIL,
                tail: NIL,
            }; LISTS],
        }
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The slot of `key`, if present.
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        self.map.get(key).copied()
    }

    /// Inserts a new flow (the key must not be present) at the tail of `list`.
    pub fn insert(&mut self, key: FlowKey, list: ListId, now: Timestamp, value: T) -> u32 {
        let idx = self.slab.insert(Entry {
            key,
            prev: NIL,
            next: NIL,
            list,
            last_seen: now,
            value,
        }) as u32;
        self.map.insert(key, idx);
        self.link_tail(idx, list);
        idx
    }

    /// Removes a flow, returning its key and value.
    pub fn remove(&mut self, idx: u32) -> Option<(FlowKey, T)> {
        if !self.slab.contains(idx as usize) {
            return None;
        }
        self.unlink(idx);
        let e = self.slab.remove(idx as usize);
        self.map.remove(&e.key);
        Some((e.key, e.value))
    }

    /// Marks a flow as active at `now` and moves it to the tail of `list`.
    pub fn touch(&mut self, idx: u32, list: ListId, now: Timestamp) {
        self.unlink(idx);
        if let Some(e) = self.slab.get_mut(idx as usize) {
            e.last_seen = e.last_seen.max(now);
        }
        self.link_tail(idx, list);
    }

    /// The value of a flow.
    pub fn get(&self, idx: u32) -> Option<&T> {
        self.slab.get(idx as usize).map(|e| &e.value)
    }

    /// The value of a flow, mutably.
    pub fn get_mut(&mut self, idx: u32) -> Option<&mut T> {
        self.slab.get_mut(idx as usize).map(|e| &mut e.value)
    }

    /// The key and value of a flow.
    pub fn entry_mut(&mut self, idx: u32) -> Option<(&FlowKey, &mut T)> {
        self.slab
            .get_mut(idx as usize)
            .map(|e| (&e.key, &mut e.value))
    }

    /// When the flow was last active.
    pub fn last_seen(&self, idx: u32) -> Option<Timestamp> {
        self.slab.get(idx as usize).map(|e| e.last_seen)
    }

    /// The least recently active flow of `list` with its last-activity time.
    pub fn oldest(&self, list: ListId) -> Option<(u32, Timestamp)> {
        let h = self.lists[list as usize].head;
        (h != NIL).then(|| (h, self.slab[h as usize].last_seen))
    }

    /// The least recently active flow over all lists (eviction candidate),
    /// preferring flows that have already closed.
    pub fn eviction_candidate(&self) -> Option<u32> {
        if let Some((i, _)) = self.oldest(ListId::Closing) {
            return Some(i);
        }
        [ListId::Tcp, ListId::Udp, ListId::Other]
            .into_iter()
            .filter_map(|l| self.oldest(l))
            .min_by_key(|&(_, t)| t)
            .map(|(i, _)| i)
    }

    /// Slots of every flow (for draining at the end).
    pub fn slots(&self) -> Vec<u32> {
        self.slab.iter().map(|(i, _)| i as u32).collect()
    }

    fn link_tail(&mut self, idx: u32, list: ListId) {
        let l = &mut self.lists[list as usize];
        let old_tail = l.tail;
        l.tail = idx;
        if old_tail == NIL {
            l.head = idx;
        }
        if old_tail != NIL {
            self.slab[old_tail as usize].next = idx;
        }
        let e = &mut self.slab[idx as usize];
        e.prev = old_tail;
        e.next = NIL;
        e.list = list;
    }

    fn unlink(&mut self, idx: u32) {
        let Some(e) = self.slab.get(idx as usize) else {
            return;
        };
        let (prev, next, list) = (e.prev, e.next, e.list as usize);
        if prev != NIL {
            self.slab[prev as usize].next = next;
        } else {
            self.lists[list].head = next;
        }
        if next != NIL {
            self.slab[next as usize].prev = prev;
        } else {
            self.lists[list].tail = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: u16) -> FlowKey {
        FlowKey::new(
            "10.0.0.1".parse().unwrap(),
            p,
            "10.0.0.2".parse().unwrap(),
            80,
            6,
            0,
        )
        .0
    }

    #[test]
    fn lru_order_and_removal() {
        let mut t = FlowTable::new();
        let a = t.insert(key(1), ListId::Tcp, Timestamp(1), 'a');
        let b = t.insert(key(2), ListId::Tcp, Timestamp(2), 'b');
        let c = t.insert(key(3), ListId::Udp, Timestamp(3), 'c');
        assert_eq!(t.oldest(ListId::Tcp), Some((a, Timestamp(1))));
        t.touch(a, ListId::Tcp, Timestamp(4));
        assert_eq!(t.oldest(ListId::Tcp), Some((b, Timestamp(2))));
        assert_eq!(t.eviction_candidate(), Some(b));
        t.touch(b, ListId::Closing, Timestamp(5));
        assert_eq!(t.eviction_candidate(), Some(b));
        assert_eq!(t.remove(b).map(|(_, v)| v), Some('b'));
        assert_eq!(t.eviction_candidate(), Some(c));
        assert_eq!(t.find(&key(1)), Some(a));
        assert_eq!(t.find(&key(2)), None);
        assert_eq!(t.len(), 2);
        assert!(t.remove(b).is_none());
    }
}
