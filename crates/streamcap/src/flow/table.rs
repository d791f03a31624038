//! The flow table: a keyed hash index into a slab of entries, with one
//! expiry queue per timeout class.
//!
//! Every entry belongs to exactly one class ([`ListId`]); all entries of a
//! class share one timeout, so the next to expire is the one least recently
//! active. Each class keeps a min-heap of (time, slot) pairs, and each slot
//! its true last-activity time. Marking an entry active (once per packet)
//! only writes that time: the heap entry is left behind and repositioned
//! lazily, when it reaches the top of its heap and its time turns out to be
//! stale. So the per-packet cost is one store, and the heaps' order work is
//! paid at most once per entry and timeout period (an entry active all the
//! time is repositioned when its stale time would have expired). Moving to
//! another class (a connection that closes) or removal makes the entry's old
//! heap pair dead (a per-slot generation number no longer matches it); dead
//! pairs are dropped when they surface, and all heaps are compacted when dead
//! pairs outnumber the live ones, so the queues never hold more than about
//! two pairs per flow. [`oldest`](FlowTable::oldest) is exact: it returns the
//! entry with the smallest last-activity time (ties: the lower slot).
//!
//! Layout, for the per-packet path: the hash index holds only 8-byte
//! [`Indexed`] pairs (slot number and 32-bit hash, in hashbrown's
//! `HashTable`), and a lookup compares the key stored in the slab entry that
//! the packet needs next anyway, so a lookup touches the index (small enough
//! to stay in cache) and then the one entry. Because the index keeps each
//! flow's hash, growing it never reads the slab: under a flood of new flows
//! (one per packet) that saves a cache miss per flow and growth step. The
//! last-activity times live in their own dense array (16 bytes per slot),
//! next to the generation numbers that outlive a slot's occupant. The hasher
//! is `hashbrown`'s default, seeded randomly when the table is created, so an
//! attacker cannot predict collisions (hash flooding).

use super::FlowKey;
use crate::time::Timestamp;
use hashbrown::{DefaultHashBuilder, HashTable};
use slab::Slab;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;

/// Which expiry class (timeout) an entry belongs to.
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

/// A key's hash in one table ([`FlowTable::hash_of`]); meaningless in another
/// (each table's hasher is seeded differently).
#[derive(Copy, Clone, Debug)]
pub struct FlowHash(u32);

struct Entry<T> {
    key: FlowKey,
    value: T,
}

/// A slot's expiry state, kept apart from the entry itself (16 bytes, and it
/// outlives the slot's occupant: the generation number must, so that a heap
/// pair of a removed flow never matches the next flow in the slot).
#[derive(Copy, Clone)]
struct Link {
    /// The occupant's last activity.
    last_seen: Timestamp,
    /// Bumped on removal and on every class change: only the heap pair
    /// queued with the current number is live.
    gen: u32,
    /// The occupant's class (a [`ListId`] as `u8`).
    list: u8,
}

const UNLINKED: Link = Link {
    last_seen: Timestamp::ZERO,
    gen: 0,
    list: 0,
};

/// A heap pair: a slot queued at a time no later than its last activity.
/// Ordered by time, then slot (the derive's field order).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: Timestamp,
    slot: u32,
    gen: u32,
}

/// Heap pairs beyond twice the flow count (plus this slack) trigger a
/// compaction of every queue.
const COMPACT_SLACK: usize = 1024;

/// A table of flows keyed by [`FlowKey`], holding a value `T` per flow.
pub struct FlowTable<T> {
    index: HashTable<Indexed>,
    hasher: DefaultHashBuilder,
    slab: Slab<Entry<T>>,
    links: Vec<Link>,
    queues: [BinaryHeap<Reverse<Due>>; LISTS],
    /// Whether a flow was ever removed: until then the slab has no holes
    /// and its slot order is the order of insertion.
    removed_any: bool,
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
            queues: Default::default(),
            removed_any: false,
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
        let gen = self.links[i].gen;
        self.links[i] = Link {
            last_seen: now,
            gen,
            list: list as u8,
        };
        self.enqueue(idx, list);
        idx
    }

    /// The expiry class of a flow.
    pub fn list_of(&self, idx: u32) -> Option<ListId> {
        if !self.slab.contains(idx as usize) {
            return None;
        }
        const CLASSES: [ListId; LISTS] = [ListId::Tcp, ListId::Udp, ListId::Other, ListId::Closing];
        let link = self.links.get(idx as usize)?;
        CLASSES.get(usize::from(link.list)).copied()
    }

    /// Forgets that slot order is insertion order: flows were inserted that
    /// were created elsewhere (moved in from another table), so
    /// [`slots_in_insertion_order`](Self::slots_in_insertion_order) must not
    /// be taken for their creation order any more.
    pub fn forget_insertion_order(&mut self) {
        self.removed_any = true;
    }

    /// Slots of every flow whose key satisfies `pick`, in slot order.
    pub fn slots_where(&self, mut pick: impl FnMut(&FlowKey) -> bool) -> Vec<u32> {
        self.slab
            .iter()
            .filter(|(_, e)| pick(&e.key))
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Removes a flow, returning its key and value.
    pub fn remove(&mut self, idx: u32) -> Option<(FlowKey, T)> {
        let key = self.slab.get(idx as usize)?.key;
        if let Some(link) = self.links.get_mut(idx as usize) {
            // Its heap pair is dead from now on.
            link.gen = link.gen.wrapping_add(1);
        }
        // After `release_index` the index is empty: no probe to pay.
        if !self.index.is_empty() {
            let hash = self.hash(&key);
            if let Ok(found) = self.index.find_entry(spread(hash), |e| e.slot == idx) {
                found.remove();
            }
        }
        let e = self.slab.remove(idx as usize);
        self.removed_any = true;
        Some((e.key, e.value))
    }

    /// Marks a flow as active at `now` (a time before its last activity
    /// changes nothing) and as belonging to `list`. Returns whether the flow
    /// changed class, i.e. whether `list`'s next expiry may now be earlier.
    #[inline]
    pub fn touch(&mut self, idx: u32, list: ListId, now: Timestamp) -> bool {
        if !self.slab.contains(idx as usize) {
            return false;
        }
        let Some(link) = self.links.get_mut(idx as usize) else {
            return false;
        };
        if link.last_seen < now {
            link.last_seen = now;
        }
        if link.list == list as u8 {
            return false;
        }
        link.list = list as u8;
        link.gen = link.gen.wrapping_add(1);
        self.enqueue(idx, list);
        true
    }

    /// Asks the CPU to prefetch the expiry state that [`touch`](Self::touch)
    /// will read and write for slot `idx` (a hint only: any slot number is
    /// accepted). It lives apart from the entry, so warming the entry does
    /// not warm it.
    #[inline]
    pub fn warm_expiry(&self, idx: u32) {
        prefetch_index::prefetch_index(&self.links, idx as usize);
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

    /// The least recently active flow of `list` with its last-activity time
    /// (ties: the lower slot). Drops dead heap pairs and repositions stale
    /// ones on the way, hence `&mut`.
    pub fn oldest(&mut self, list: ListId) -> Option<(u32, Timestamp)> {
        let queue = &mut self.queues[list as usize];
        loop {
            let mut top = queue.peek_mut()?;
            let Reverse(due) = *top;
            let link = self.links.get(due.slot as usize).copied();
            match link {
                Some(l) if l.gen == due.gen && l.last_seen == due.at => {
                    return Some((due.slot, due.at));
                }
                // Active since it was queued: queue it at its true time
                // (later, so it sinks) and look again.
                Some(l) if l.gen == due.gen => top.0.at = l.last_seen,
                _ => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
    }

    /// The least recently active flow over all lists (eviction candidate),
    /// preferring flows that have already closed.
    pub fn eviction_candidate(&mut self) -> Option<u32> {
        if let Some((i, _)) = self.oldest(ListId::Closing) {
            return Some(i);
        }
        [ListId::Tcp, ListId::Udp, ListId::Other]
            .into_iter()
            .filter_map(|l| self.oldest(l))
            .min_by_key(|&(i, t)| (t, i))
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

    /// Slots of every flow in the order they were inserted, when that
    /// order is known without reading the flows: no flow was ever removed,
    /// so no slot was reused and slot order is insertion order. `None`
    /// otherwise (then [`slots_by`](Self::slots_by) with an insertion
    /// serial gives it). At the end of a SYN flood (200,000 flows) this
    /// spares a pass over 30 MB of flows before the pass that removes them.
    pub fn slots_in_insertion_order(&self) -> Option<Vec<u32>> {
        if self.removed_any {
            return None;
        }
        // No holes: the flows are in slots 0..len.
        Some((0..self.slab.len() as u32).collect())
    }

    /// Frees the key index ahead of removing every flow: [`find`](Self::find)
    /// finds nothing afterwards, while [`remove`](Self::remove), the queues and
    /// slot access keep working, and removal no longer costs a hash probe
    /// (a cache miss per flow in a large table). Flows inserted afterwards
    /// are indexed again; those present before stay unfindable by key.
    pub fn release_index(&mut self) {
        self.index = HashTable::new();
    }

    /// Queues `idx` on `list` with its current generation and last
    /// activity, compacting every queue first when dead pairs pile up.
    fn enqueue(&mut self, idx: u32, list: ListId) {
        let queued: usize = self.queues.iter().map(BinaryHeap::len).sum();
        if queued >= 2 * self.slab.len() + COMPACT_SLACK {
            self.compact();
        }
        let link = self.links[idx as usize];
        self.queues[list as usize].push(Reverse(Due {
            at: link.last_seen,
            slot: idx,
            gen: link.gen,
        }));
    }

    /// Drops every dead heap pair and brings every live one's time up to
    /// date (O(pairs)).
    fn compact(&mut self) {
        let links = &self.links;
        for queue in &mut self.queues {
            let mut pairs = std::mem::take(queue).into_vec();
            pairs.retain_mut(|Reverse(due)| match links.get(due.slot as usize) {
                Some(l) if l.gen == due.gen => {
                    due.at = l.last_seen;
                    true
                }
                _ => false,
            });
            *queue = BinaryHeap::from(pairs);
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

    /// Insertion order is known from the slots alone until a flow is
    /// removed (its slot may then be reused out of order).
    #[test]
    fn insertion_order_until_a_removal() {
        let mut t = FlowTable::new();
        let slots: Vec<u32> = (0..5)
            .map(|p| t.insert(key(p), ListId::Tcp, Timestamp(u64::from(p)), p))
            .collect();
        assert_eq!(t.slots_in_insertion_order(), Some(slots.clone()));
        // Removing nothing changes nothing.
        assert!(t.remove(99).is_none());
        assert_eq!(t.slots_in_insertion_order(), Some(slots.clone()));
        t.remove(slots[1]);
        let again = t.insert(key(9), ListId::Tcp, Timestamp(9), 9);
        assert_eq!(again, slots[1], "the freed slot is reused");
        assert_eq!(t.slots_in_insertion_order(), None);
        // The serial order still gives it.
        assert_eq!(t.slots_by(|&serial| serial), vec![0, 2, 3, 4, again]);
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
                Some(slot) => {
                    t.touch(slot, ListId::Udp, Timestamp(u64::from(step)));
                }
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

    /// The lazy queues against a plain model: under random inserts, touches
    /// (some changing class), removals and expiry, `oldest` is always the
    /// flow of the class with the smallest last activity (ties: lower slot),
    /// and the queues never hold much more than two pairs per flow (at the peak
    /// flow count).
    #[test]
    fn lazy_queues_match_a_model() {
        use std::collections::HashMap;
        const CLASSES: [ListId; 4] = [ListId::Tcp, ListId::Udp, ListId::Other, ListId::Closing];
        let mut t = FlowTable::new();
        // port -> (slot, class, last_seen)
        let mut model: HashMap<u16, (u32, ListId, u64)> = HashMap::new();
        let mut x = 0x9e37_79b9u32;
        let mut now = 0u64;
        let mut peak = 0;
        for step in 0..60_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            now += u64::from(x % 3); // repeated times exercise the tie order
            let p = (x % 2000) as u16;
            let class = CLASSES[(x >> 20) as usize % 4];
            match model.get(&p).copied() {
                Some((slot, _, _)) if x % 5 == 0 => {
                    assert_eq!(t.remove(slot).map(|(_, v)| v), Some(p));
                    model.remove(&p);
                }
                Some((slot, old, _)) => {
                    // Mostly the same class, sometimes another one.
                    let list = if x % 7 == 0 { class } else { old };
                    assert_eq!(t.touch(slot, list, Timestamp(now)), list != old);
                    model.insert(p, (slot, list, now));
                }
                None => {
                    let slot = t.insert(key(p), class, Timestamp(now), p);
                    model.insert(p, (slot, class, now));
                }
            }
            if step % 97 == 0 {
                // Expire the oldest few of one class, as the engine does;
                // never TCP's (a long timeout) until the end, so that its
                // dead pairs pile up and only compaction clears them.
                let list = CLASSES[1 + step as usize % 3];
                for _ in 0..3 {
                    let want = model
                        .values()
                        .filter(|m| m.1 == list)
                        .map(|m| (m.2, m.0))
                        .min();
                    let got = t.oldest(list).map(|(slot, ts)| (ts.0, slot));
                    assert_eq!(got, want, "step {step}");
                    let Some((_, slot)) = got else { break };
                    let (_, v) = t.remove(slot).expect("oldest is present");
                    model.remove(&v);
                }
            }
            // Removals leave pairs behind until the next insertion or
            // class change compacts: the bound holds against the peak.
            peak = peak.max(t.len());
            let queued: usize = t.queues.iter().map(BinaryHeap::len).sum();
            assert!(
                queued <= 2 * peak + COMPACT_SLACK + 1,
                "step {step}: {queued} pairs"
            );
        }
        assert_eq!(t.len(), model.len());
        for list in CLASSES {
            let mut want: Vec<(u64, u32)> = model
                .values()
                .filter(|m| m.1 == list)
                .map(|m| (m.2, m.0))
                .collect();
            want.sort_unstable();
            let mut got = Vec::new();
            while let Some((slot, ts)) = t.oldest(list) {
                got.push((ts.0, slot));
                t.remove(slot);
            }
            assert_eq!(got, want);
        }
        assert!(t.is_empty());
    }
}
