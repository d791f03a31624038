//! The flow table: a keyed hash index into a slab of entries, with one
//! least-recently-used list per timeout class.
//!
//! Every entry sits on exactly one list; touching an entry moves it to the
//! list's tail in O(1). Because all entries of a list share one timeout and
//! time (packet time) only moves forward, the head of each list is the next to
//! expire, so expiry costs O(1) amortized per packet.
//!
//! Layout, for the per-packet path: the hash index holds only 8-byte
//! [`Indexed`] pairs (slot number and 32-bit hash, in hashbrown's
//! `HashTable`), and a lookup compares the key stored in the slab entry that
//! the packet needs next anyway, so a lookup touches the index (small enough
//! to stay in cache) and then the one entry. Because the index keeps each
//! flow's hash, growing it never reads the slab: under a flood of new flows
//! (one per packet) that saves a cache miss per flow and growth step. The list
//! links live in their own dense array, so moving an entry to a list's tail
//! does not pull its neighbours' (large) entries into the cache. The hasher
//! is `hashbrown`'s default, seeded randomly when the table is created, so an
//! attacker cannot predict collisions (hash flooding).

use super::FlowKey;
use crate::time::Timestamp;
use hashbrown::{DefaultHashBuilder, HashTable};
use slab::Slab;
use std::hash::BuildHasher;

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

/// One index entry: where the flow is and its hash, so the index can grow
/// without reading the slab.
#[derive(Copy, Clone)]
struct Indexed {
    slot: u32,
    hash: u32,
}

/// The 64-bit hash hashbrown sees for a stored 32-bit hash: both halves the
/// same, so the bucket (low bits) and the tag (top 7 bits) come from
/// different bits of it for any table below 2^25 buckets.
#[inline]
fn spread(hash: u32) -> u64 {
    u64::from(hash) * 0x1_0000_0001
}
const NIL: u32 = u32::MAX;

/// A key's hash in one table ([`FlowTable::hash_of`]); meaningless in another
/// (each table's hasher is seeded differently).
#[derive(Copy, Clone, Debug)]
pub struct FlowHash(u32);

struct Entry<T> {
    key: FlowKey,
    value: T,
}

/// An entry's place on its list, kept apart from the entry itself (16
/// bytes: which list it is on is not stored, an entry at a list's end is
/// found among the four lists' heads and tails).
#[derive(Copy, Clone)]
struct Link {
    prev: u32,
    next: u32,
    last_seen: Timestamp,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
    last_seen: Timestamp::ZERO,
};

#[derive(Copy, Clone)]
struct List {
    head: u32,
    tail: u32,
}

/// A table of flows keyed by [`FlowKey`], holding a value `T` per flow.
pub struct FlowTable<T> {
    index: HashTable<Indexed>,
    hasher: DefaultHashBuilder,
    slab: Slab<Entry<T>>,
    links: Vec<Link>,
    lists: [List; LISTS],
}

impl<T> Default for FlowTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FlowTable<T> {
    /// An empty table with a freshly seeded hasher.
    pub fn new() -> Self {
        FlowTable {
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            slab: Slab::new(),
            links: Vec::new(),
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

    /// The table's hash of `key`, for [`probable_slot`](Self::probable_slot).
    #[inline]
    pub fn hash_of(&self, key: &FlowKey) -> FlowHash {
        FlowHash(self.hash(key))
    }

    /// The keyed hash of `key`, folded to 32 bits.
    #[inline]
    fn hash(&self, key: &FlowKey) -> u32 {
        let h = self.hasher.hash_one(key);
        (h ^ (h >> 32)) as u32
    }

    /// The slot of `key`, if present.
    #[inline(always)]
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        self.find_hashed(key, self.hash_of(key))
    }

    /// [`find`](Self::find) with the key's hash ([`hash_of`](Self::hash_of))
    /// already computed.
    #[inline(always)]
    pub fn find_hashed(&self, key: &FlowKey, hash: FlowHash) -> Option<u32> {
        let hash = hash.0;
        let slab = &self.slab;
        self.index
            .find(spread(hash), |e| {
                e.hash == hash && slab.get(e.slot as usize).is_some_and(|e| e.key == *key)
            })
            .map(|e| e.slot)
    }

    /// The slot that probably holds `key`: the first flow with the same
    /// 32-bit hash, found without reading any entry (so that looking up many
    /// keys in a row does not wait on one entry after the other). Verify with
    /// [`find`](Self::find) before relying on it.
    #[inline]
    pub fn probable_slot(&self, hash: FlowHash) -> Option<u32> {
        let hash = hash.0;
        self.index
            .find(spread(hash), |e| e.hash == hash)
            .map(|e| e.slot)
    }

    /// Inserts a new flow (the key must not be present) at the tail of `list`.
    pub fn insert(&mut self, key: FlowKey, list: ListId, now: Timestamp, value: T) -> u32 {
        let hash = self.hash_of(&key);
        self.insert_hashed(key, hash, list, now, value)
    }

    /// [`insert`](Self::insert) with the key's hash
    /// ([`hash_of`](Self::hash_of)) already computed.
    pub fn insert_hashed(
        &mut self,
        key: FlowKey,
        hash: FlowHash,
        list: ListId,
        now: Timestamp,
        value: T,
    ) -> u32 {
        let hash = hash.0;
        let idx = self.slab.insert(Entry { key, value }) as u32;
        self.index
            .insert_unique(spread(hash), Indexed { slot: idx, hash }, |e| {
                spread(e.hash)
            });
        let i = idx as usize;
        if i >= self.links.len() {
            self.links.resize(i + 1, UNLINKED);
        }
        self.links[i] = Link {
            last_seen: now,
            ..UNLINKED
        };
        self.link_tail(idx, list);
        idx
    }

    /// Removes a flow, returning its key and value.
    pub fn remove(&mut self, idx: u32) -> Option<(FlowKey, T)> {
        let key = self.slab.get(idx as usize)?.key;
        self.unlink(idx);
        // After `release_index` the index is empty: no probe to pay.
        if !self.index.is_empty() {
            let hash = self.hash(&key);
            if let Ok(found) = self.index.find_entry(spread(hash), |e| e.slot == idx) {
                found.remove();
            }
        }
        let e = self.slab.remove(idx as usize);
        Some((e.key, e.value))
    }

    /// Marks a flow as active at `now` and moves it to the tail of `list`.
    #[inline]
    pub fn touch(&mut self, idx: u32, list: ListId, now: Timestamp) {
        if !self.slab.contains(idx as usize) {
            return;
        }
        let Some(link) = self.links.get_mut(idx as usize) else {
            return;
        };
        if link.last_seen < now {
            link.last_seen = now;
        }
        if self.lists[list as usize].tail == idx {
            return; // already last: nothing moves
        }
        self.unlink(idx);
        self.link_tail(idx, list);
    }

    /// The value of a flow.
    #[inline]
    pub fn get(&self, idx: u32) -> Option<&T> {
        self.slab.get(idx as usize).map(|e| &e.value)
    }

    /// The value of a flow, mutably.
    #[inline]
    pub fn get_mut(&mut self, idx: u32) -> Option<&mut T> {
        self.slab.get_mut(idx as usize).map(|e| &mut e.value)
    }

    /// The key and value of a flow.
    #[inline]
    pub fn entry(&self, idx: u32) -> Option<(&FlowKey, &T)> {
        self.slab.get(idx as usize).map(|e| (&e.key, &e.value))
    }

    /// The key and value of a flow.
    #[inline]
    pub fn entry_mut(&mut self, idx: u32) -> Option<(&FlowKey, &mut T)> {
        self.slab
            .get_mut(idx as usize)
            .map(|e| (&e.key, &mut e.value))
    }

    /// When the flow was last active.
    pub fn last_seen(&self, idx: u32) -> Option<Timestamp> {
        if !self.slab.contains(idx as usize) {
            return None;
        }
        self.links.get(idx as usize).map(|l| l.last_seen)
    }

    /// The least recently active flow of `list` with its last-activity time.
    pub fn oldest(&self, list: ListId) -> Option<(u32, Timestamp)> {
        let h = self.lists[list as usize].head;
        (h != NIL).then(|| (h, self.links[h as usize].last_seen))
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

    /// Slots of every flow, ordered by `order(value)` (for draining at the
    /// end in a deterministic order; ties keep slot order).
    pub fn slots_by<K: Ord>(&self, order: impl Fn(&T) -> K) -> Vec<u32> {
        // Each value is read once, in slab order, rather than once per
        // comparison in random order.
        let mut v: Vec<(K, u32)> = self
            .slab
            .iter()
            .map(|(i, e)| (order(&e.value), i as u32))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, i)| i).collect()
    }

    /// Frees the key index ahead of removing every flow: [`find`](Self::find)
    /// finds nothing afterwards, while [`remove`](Self::remove), the lists and
    /// slot access keep working, and removal no longer costs a hash probe
    /// (a cache miss per flow in a large table). Flows inserted afterwards
    /// are indexed again; those present before stay unfindable by key.
    pub fn release_index(&mut self) {
        self.index = HashTable::new();
    }

    fn link_tail(&mut self, idx: u32, list: ListId) {
        let l = &mut self.lists[list as usize];
        let old_tail = l.tail;
        l.tail = idx;
        if old_tail == NIL {
            l.head = idx;
        } else {
            self.links[old_tail as usize].next = idx;
        }
        let e = &mut self.links[idx as usize];
        e.prev = old_tail;
        e.next = NIL;
    }

    fn unlink(&mut self, idx: u32) {
        let Some(e) = self.links.get(idx as usize) else {
            return;
        };
        let (prev, next) = (e.prev, e.next);
        if prev != NIL {
            self.links[prev as usize].next = next;
        } else if let Some(l) = self.lists.iter_mut().find(|l| l.head == idx) {
            l.head = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else if let Some(l) = self.lists.iter_mut().find(|l| l.tail == idx) {
            l.tail = prev;
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

    /// Draining: slots come in the requested order, and after the index is
    /// released every flow can still be removed, with its list links intact.
    #[test]
    fn drain_in_order_after_release() {
        let mut t = FlowTable::new();
        for (p, rank) in [(1, 30u32), (2, 10), (3, 20), (4, 40)] {
            t.insert(key(p), ListId::Tcp, Timestamp(u64::from(p)), rank);
        }
        let order = t.slots_by(|&rank| rank);
        let ranks: Vec<u32> = order.iter().filter_map(|&i| t.get(i).copied()).collect();
        assert_eq!(ranks, [10, 20, 30, 40]);
        t.release_index();
        assert_eq!(t.find(&key(1)), None);
        let late = t.insert(key(9), ListId::Udp, Timestamp(9), 99);
        assert_eq!(t.find(&key(9)), Some(late));
        for &i in &order[..2] {
            assert!(t.remove(i).is_some());
        }
        assert_eq!(
            t.oldest(ListId::Tcp).map(|(i, _)| t.get(i).copied()),
            Some(Some(30))
        );
        for &i in &order[2..] {
            assert!(t.remove(i).is_some());
        }
        assert_eq!(t.oldest(ListId::Tcp), None);
        assert_eq!(t.remove(late).map(|(_, v)| v), Some(99));
        assert!(t.is_empty());
    }

    /// The index stays consistent with the slab through growth, slot reuse
    /// and removals (checked against a plain map).
    #[test]
    fn index_survives_churn() {
        use std::collections::HashMap;
        let mut t = FlowTable::new();
        let mut model: HashMap<u16, u32> = HashMap::new();
        let mut x = 12345u32;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let p = (x % 3000) as u16;
            match model.get(&p).copied() {
                Some(slot) if x % 3 == 0 => {
                    assert_eq!(t.remove(slot).map(|(_, v)| v), Some(p));
                    model.remove(&p);
                }
                Some(slot) => t.touch(slot, ListId::Udp, Timestamp(u64::from(step))),
                None => {
                    let slot = t.insert(key(p), ListId::Tcp, Timestamp(u64::from(step)), p);
                    model.insert(p, slot);
                }
            }
        }
        assert_eq!(t.len(), model.len());
        for (p, slot) in &model {
            assert_eq!(t.find(&key(*p)), Some(*slot));
            assert_eq!(t.get(*slot), Some(p));
        }
        // Lists hold every entry once, oldest first.
        let mut seen = 0;
        for list in [ListId::Tcp, ListId::Udp] {
            let mut last = Timestamp::ZERO;
            while let Some((slot, ts)) = t.oldest(list) {
                assert!(ts >= last);
                last = ts;
                t.remove(slot);
                seen += 1;
            }
        }
        assert_eq!(seen, model.len());
        assert!(t.is_empty());
    }
}
