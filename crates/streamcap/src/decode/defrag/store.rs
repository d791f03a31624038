//! The datagrams being reassembled: a slab of slots, a hash index from
//! [`FragKey`] to slot, and the creation-order list that eviction and expiry
//! walk.
//!
//! Slots are allocated once and reused: a datagram that completes, expires
//! or is evicted leaves its slot, with its buffers' capacity, to the next
//! datagram, so a steady flow of fragments allocates nothing. The index
//! holds slot numbers (4 bytes each) and finds a key by the hash stored in
//! its slot. The creation-order list is threaded through the slots (a
//! doubly linked list), so the oldest datagram is found, and any datagram
//! unlinked, in O(1): with packet time going forward, creation order is
//! deadline order.
//!
//! Memory: [`Store::memory`] is the footprint of every slot's buffers, those
//! of free slots included, so that what the defragmenter holds is what it
//! counts; [`Store::release_spare`] gives back the buffers of free slots
//! first when memory runs short.

use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

use super::assembly::Assembly;
use super::FragKey;

/// No slot (end of the list).
pub(super) const NIL: u32 = u32::MAX;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Nothing: on the free list.
    Free,
    /// A datagram being reassembled.
    Live,
    /// A datagram cut by the snaplen that was passed on: it holds no bytes
    /// and swallows its remaining fragments until its deadline.
    Passed,
}

/// One datagram (or a free slot).
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) key: FragKey,
    hash: u64,
    /// Neighbours in creation order.
    prev: u32,
    next: u32,
    /// Packet time (ns) at which it expires.
    pub(super) deadline: u64,
    pub(super) state: State,
    /// Fragments accepted.
    pub(super) frags: u32,
    /// Payload length, once the last fragment has been seen.
    pub(super) total: Option<u32>,
    /// Highest end (on the wire) of the fragments accepted.
    pub(super) wire_end: u32,
    /// Lowest offset of a byte that a fragment carried on the wire but the
    /// capture cut (`u32::MAX`: none).
    pub(super) cut: u32,
    /// A fragment at offset 0 was accepted.
    pub(super) has_first: bool,
    pub(super) asm: Assembly,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            key: FragKey {
                src: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                dst: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                id: 0,
                proto: 0,
                vlan: 0,
            },
            hash: 0,
            prev: NIL,
            next: NIL,
            deadline: 0,
            state: State::Free,
            frags: 0,
            total: None,
            wire_end: 0,
            cut: u32::MAX,
            has_first: false,
            asm: Assembly::default(),
        }
    }
}

/// The slots, their index and their order.
#[derive(Debug)]
pub(super) struct Store {
    slots: Vec<Slot>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// Oldest and newest slot in the table.
    head: u32,
    tail: u32,
    /// The oldest slot's deadline (`u64::MAX` when the table is empty),
    /// kept here so that checking for expiry on every packet does not read
    /// the oldest slot, which is rarely in cache.
    head_deadline: u64,
    /// Free slots that may have buffers, reused first (the last freed
    /// first: its buffers are likely in cache), and free slots whose
    /// buffers were released.
    spare: Vec<u32>,
    empty: Vec<u32>,
    /// Slots in the table (live and passed).
    len: usize,
    /// Live slots.
    live: usize,
    /// Sum of every slot's footprint.
    memory: usize,
}

impl Store {
    /// An empty store.
    pub(super) fn new() -> Store {
        Store {
            slots: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            head: NIL,
            tail: NIL,
            head_deadline: u64::MAX,
            spare: Vec::new(),
            empty: Vec::new(),
            len: 0,
            live: 0,
            memory: 0,
        }
    }

    /// The hash of `key` in the index.
    #[inline]
    pub(super) fn hash(&self, key: &FragKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The slot of `key` (hashed as `hash`), if it is in the table.
    #[inline]
    pub(super) fn find(&self, hash: u64, key: &FragKey) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash, |&i| {
                slots.get(i as usize).is_some_and(|s| s.key == *key)
            })
            .copied()
    }

    /// Slots in the table.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Live slots (datagrams being reassembled).
    pub(super) fn live(&self) -> usize {
        self.live
    }

    /// Bytes of memory the slots' buffers occupy.
    pub(super) fn memory(&self) -> usize {
        self.memory
    }

    /// The oldest slot in the table.
    pub(super) fn oldest(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The deadline of the oldest slot (`u64::MAX` when empty).
    #[inline]
    pub(super) fn oldest_deadline(&self) -> u64 {
        self.head_deadline
    }

    /// The slot created after `idx`.
    pub(super) fn newer(&self, idx: u32) -> Option<u32> {
        self.slots
            .get(idx as usize)
            .map(|s| s.next)
            .filter(|&n| n != NIL)
    }

    /// Slot `idx`. Only called with indices the store handed out.
    #[inline]
    pub(super) fn slot(&self, idx: u32) -> &Slot {
        &self.slots[idx as usize]
    }

    /// Slot `idx`, mutably. Changing its buffers' capacity must be followed
    /// by [`Store::refresh_memory`].
    #[inline]
    pub(super) fn slot_mut(&mut self, idx: u32) -> &mut Slot {
        &mut self.slots[idx as usize]
    }

    /// Accounts for `n` more bytes of footprint (a slot's buffers grew).
    #[inline]
    pub(super) fn add_memory(&mut self, n: usize) {
        self.memory += n;
    }

    /// Accounts for a change of slot `idx`'s footprint from `before` bytes.
    #[inline]
    pub(super) fn refresh_memory(&mut self, idx: u32, before: usize) {
        let after = self.slot(idx).asm.footprint();
        self.memory = (self.memory + after).saturating_sub(before);
    }

    /// Puts a new live datagram `key` (hashed as `hash`) in the table, as
    /// the newest. The caller made room ([`Store::len`] below its limit).
    pub(super) fn insert(&mut self, hash: u64, key: FragKey, deadline: u64) -> u32 {
        let idx = match self.spare.pop().or_else(|| self.empty.pop()) {
            Some(i) => i,
            None => {
                self.slots.push(Slot::new());
                (self.slots.len() - 1) as u32
            }
        };
        let tail = self.tail;
        let s = &mut self.slots[idx as usize];
        s.key = key;
        s.hash = hash;
        s.prev = tail;
        s.next = NIL;
        s.deadline = deadline;
        s.state = State::Live;
        s.frags = 0;
        s.total = None;
        s.wire_end = 0;
        s.cut = u32::MAX;
        s.has_first = false;
        s.asm.clear();
        match self.slots.get_mut(tail as usize) {
            Some(t) => t.next = idx,
            None => {
                self.head = idx;
                self.head_deadline = deadline;
            }
        }
        self.tail = idx;
        let slots = &self.slots;
        self.index
            .insert_unique(hash, idx, |&i| slots.get(i as usize).map_or(0, |s| s.hash));
        self.len += 1;
        self.live += 1;
        idx
    }

    /// Turns live slot `idx` into a passed one (see [`State::Passed`]).
    pub(super) fn mark_passed(&mut self, idx: u32) {
        let s = self.slot_mut(idx);
        if s.state == State::Live {
            s.state = State::Passed;
            self.live -= 1;
        }
    }

    /// Takes slot `idx` out of the table. Its bytes stay readable until the
    /// slot is reused (a completed datagram is returned from them).
    pub(super) fn remove(&mut self, idx: u32) {
        let Some(s) = self.slots.get_mut(idx as usize) else {
            return;
        };
        if s.state == State::Free {
            return;
        }
        if s.state == State::Live {
            self.live -= 1;
        }
        s.state = State::Free;
        let (prev, next, hash) = (s.prev, s.next, s.hash);
        match self.slots.get_mut(prev as usize) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.slots.get_mut(next as usize) {
            Some(n) => {
                n.prev = prev;
                if prev == NIL {
                    self.head_deadline = n.deadline;
                }
            }
            None => {
                self.tail = prev;
                if prev == NIL {
                    self.head_deadline = u64::MAX;
                }
            }
        }
        if let Ok(e) = self.index.find_entry(hash, |&i| i == idx) {
            e.remove();
        }
        self.len -= 1;
        // Whether its buffers have capacity or not: [`Store::release_spare`]
        // finds out.
        self.spare.push(idx);
    }

    /// Frees the buffers of free slots until `need` more bytes fit in
    /// `limit`; false if they do not even then.
    pub(super) fn release_spare(&mut self, need: usize, limit: usize) -> bool {
        while self.memory + need > limit {
            let Some(idx) = self.spare.pop() else {
                return false;
            };
            let before = self.slot(idx).asm.footprint();
            self.slot_mut(idx).asm.release();
            self.refresh_memory(idx, before);
            self.empty.push(idx);
        }
        true
    }

    /// Frees the buffers of slot `idx` (in the table or not).
    pub(super) fn release(&mut self, idx: u32) {
        let before = self.slot(idx).asm.footprint();
        self.slot_mut(idx).asm.release();
        self.refresh_memory(idx, before);
    }

    /// Every slot in the table, oldest first (for checks).
    #[cfg(test)]
    pub(super) fn in_table(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.head;
        while let Some(s) = self.slots.get(at as usize) {
            out.push(at);
            at = s.next;
        }
        out
    }

    /// Recounts the memory of every slot (for checks).
    #[cfg(test)]
    pub(super) fn recount_memory(&self) -> usize {
        self.slots.iter().map(|s| s.asm.footprint()).sum()
    }
}
