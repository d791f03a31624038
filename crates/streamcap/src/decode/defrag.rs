//! IPv4 and IPv6 fragment reassembly, bounded and policy-driven.
//!
//! The decoder hands every fragment's IP payload to a [`Defragmenter`] with the
//! fragment's position ([`Fragment`]) and the datagram it belongs to
//! ([`FragKey`]). When the last missing piece arrives, [`Defragmenter::process`]
//! returns the whole, contiguous IP payload (transport header and data).
//!
//! # Overlaps
//!
//! Overlapping fragments are resolved with the configured [`OverlapPolicy`]:
//! the new fragment is compared with every stored piece it overlaps, and
//! [`OverlapPolicy::new_wins`] decides, for that overlap, whether the new bytes
//! replace the stored ones (the stored piece is trimmed or split) or are
//! discarded. Stored pieces are the fragments as they were kept, i.e. after
//! earlier trims. `hole_before_old` is true when the stored piece does not
//! start at offset 0 and the byte just before it has not been received.
//! Every (new fragment, stored piece) overlap counts in
//! [`DefragStats::overlaps`]; those whose overlapping bytes differ also count in
//! [`DefragStats::overlap_conflicts`], so exact duplicates are overlaps but not
//! conflicts.
//!
//! # Limits and failures
//!
//! Nothing grows without bound: the number of datagrams in the table, the
//! fragments per datagram, the size of a datagram and the total payload bytes
//! held are all capped ([`DefragConfig`]), and the expiry queue is compacted so
//! it stays proportional to the table.
//!
//! - A fragment that is malformed on its own (zero length, offset not a
//!   multiple of 8, a non-last fragment whose length is not a multiple of 8,
//!   `offset + length` overflowing `u32`) is dropped and counted in
//!   [`DefragStats::bad`]; its datagram is left alone, since a forged or
//!   corrupted fragment says nothing about the others.
//! - A fragment that makes its datagram impossible or inconsistent kills the
//!   datagram: cut by the snaplen ([`DefragStats::truncated`]), ending past
//!   `max_datagram_size` ([`DefragStats::too_large`]), a second last fragment
//!   with a different total length or data beyond the known end
//!   ([`DefragStats::bad`]), one fragment too many
//!   ([`DefragStats::too_many_fragments`]), or no memory left for it
//!   ([`DefragStats::memory_full`]). A killed datagram's bytes are freed at
//!   once, but it stays in the table as a *dead* entry (holding no bytes) until
//!   its timeout, so its remaining fragments are dropped (counted only in
//!   [`DefragStats::fragments_dropped`]) instead of starting a reassembly that
//!   can never complete. A dead entry takes a table slot: it is only created
//!   when the table has room for it (a datagram already in the table just
//!   turns dead), and it is evicted like any other entry, oldest first,
//!   without being counted as a loss.
//! - When the table is full, a fragment of a new datagram evicts the oldest
//!   datagram (by creation order) — [`DefragStats::too_many_datagrams`] counts
//!   each live datagram evicted this way.
//! - When a fragment does not fit in `max_bytes`, the oldest other datagrams are
//!   evicted until it does ([`DefragStats::memory_full`] counts each); if the
//!   fragment's own datagram is the oldest, or the fragment alone is bigger
//!   than `max_bytes`, that datagram is killed instead (counted once more). The
//!   check uses the fragment's full length, before overlap trimming.
//!
//! # Timeouts
//!
//! A datagram must complete within `timeout_ns` of its *first* fragment's
//! packet time (later fragments do not extend it). [`Defragmenter::expire`]
//! drops overdue datagrams in O(1) amortized time; [`Defragmenter::process`]
//! also treats an overdue datagram as expired before using it, so a late
//! fragment starts a new reassembly even if `expire` was not called.

use std::collections::VecDeque;
use std::net::IpAddr;

use hashbrown::HashMap;

use crate::reassembly::policy::OverlapPolicy;
use crate::time::Timestamp;

/// Identifies one datagram being reassembled.
///
/// Two fragments belong to the same datagram exactly when their keys are
/// equal. `id` is 32 bits wide so IPv6 fragment identifications fit; IPv4
/// identifications are zero-extended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FragKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IPv4 identification (zero-extended) or IPv6 fragment identification.
    pub id: u32,
    /// IPv4 protocol or IPv6 next header of the fragmented payload.
    pub proto: u8,
    /// VLAN identifier(s) the packet was seen on, as the decoder encodes them.
    pub vlan: u32,
}

impl std::hash::Hash for FragKey {
    /// Feeds the key to the (keyed) hasher as three words, consistent with
    /// the derived `Eq`: equal keys write equal words. Hashing each field as
    /// derived (each address's family and bytes, then each integer) took
    /// seven hasher calls per key, and a fragment looks its datagram up
    /// several times: on a flood of fragments, 18 % of `flows`' instructions
    /// went to hashing keys.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let bits = |ip: IpAddr| match ip {
            IpAddr::V4(a) => (u128::from(a.to_bits()), 0u64),
            IpAddr::V6(a) => (a.to_bits(), 1u64),
        };
        let (src, src_v6) = bits(self.src);
        let (dst, dst_v6) = bits(self.dst);
        h.write_u128(src);
        h.write_u128(dst);
        h.write_u128(
            u128::from(self.id)
                | u128::from(self.proto) << 32
                | u128::from(src_v6 | dst_v6 << 1) << 40
                | u128::from(self.vlan) << 64,
        );
    }
}

/// One fragment's position within its datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Offset of the fragment's first byte in the datagram's IP payload, in
    /// bytes (the header's offset field times 8). Must be a multiple of 8.
    pub offset: u32,
    /// The "more fragments" flag: false for the datagram's last fragment.
    pub more: bool,
    /// The fragment packet's IP-layer length (IP total length, headers
    /// included), summed per datagram into [`WireCount::ip_bytes`].
    pub ip_len: u32,
}

/// What a completed datagram took on the wire: its fragments and their
/// IP-layer bytes, so that a connection counts the packets that were sent,
/// not the datagrams they carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireCount {
    /// Fragments received for the datagram (duplicates included).
    pub fragments: u32,
    /// Sum of those fragments' [`Fragment::ip_len`].
    pub ip_bytes: u64,
}

/// Limits and policy of a [`Defragmenter`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefragConfig {
    /// Most fragments accepted for one datagram (duplicates included); one
    /// more kills the datagram. Default 64.
    pub max_fragments_per_datagram: usize,
    /// Most datagrams in the table (live and dead); a new one evicts the
    /// oldest. Default 4096.
    pub max_datagrams: usize,
    /// Largest reassembled IP payload, in bytes; a fragment ending past it
    /// kills its datagram. Default 65535.
    pub max_datagram_size: usize,
    /// How long a datagram may take to complete, from its first fragment, in
    /// nanoseconds of packet time. Default 30 s.
    pub timeout_ns: u64,
    /// How overlapping fragments are resolved. Default [`OverlapPolicy::Bsd`],
    /// as for TCP.
    pub policy: OverlapPolicy,
    /// Most fragment payload bytes held across all datagrams. Default 16 MiB.
    pub max_bytes: usize,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            max_fragments_per_datagram: 64,
            max_datagrams: 4096,
            max_datagram_size: 65535,
            timeout_ns: 30_000_000_000,
            policy: OverlapPolicy::Bsd,
            max_bytes: 16 << 20,
        }
    }
}

/// Counters kept by a [`Defragmenter`]; they only ever increase.
///
/// Every fragment fed is part of a returned datagram (counted in
/// `fragments_reassembled`), still held, or counted in `fragments_dropped`.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct DefragStats {
    /// Fragments fed to [`Defragmenter::process`].
    pub fragments: u64,
    /// Datagrams completed and returned.
    pub reassembled: u64,
    /// Fragments carried in those datagrams.
    pub fragments_reassembled: u64,
    /// Live datagrams dropped because they did not complete in time.
    pub timed_out: u64,
    /// Overlaps between a new fragment and a stored piece (one per pair).
    pub overlaps: u64,
    /// Overlaps whose overlapping bytes differ (exact duplicates are not
    /// conflicts).
    pub overlap_conflicts: u64,
    /// Datagrams killed for having too many fragments.
    pub too_many_fragments: u64,
    /// Live datagrams evicted because the table was full (plus fragments
    /// dropped because the table can hold nothing).
    pub too_many_datagrams: u64,
    /// Fragments ending past `max_datagram_size` (their datagram is killed).
    pub too_large: u64,
    /// Fragments cut by the capture's snaplen (their datagram is killed).
    pub truncated: u64,
    /// Malformed fragments (dropped) and inconsistent ones: a second last
    /// fragment with another total length, data past the known end (their
    /// datagram is killed).
    pub bad: u64,
    /// Datagrams evicted or killed because `max_bytes` was reached.
    pub memory_full: u64,
    /// Every fragment thrown away, for any reason: rejected on arrival, sent
    /// to a dead datagram, or held by a datagram when it was dropped.
    pub fragments_dropped: u64,
}

impl DefragStats {
    /// Adds another defragmenter's counters (workers that each reassembled
    /// their own share of the fragments).
    pub fn add(&mut self, o: &DefragStats) {
        self.fragments += o.fragments;
        self.reassembled += o.reassembled;
        self.fragments_reassembled += o.fragments_reassembled;
        self.timed_out += o.timed_out;
        self.overlaps += o.overlaps;
        self.overlap_conflicts += o.overlap_conflicts;
        self.too_many_fragments += o.too_many_fragments;
        self.too_many_datagrams += o.too_many_datagrams;
        self.too_large += o.too_large;
        self.truncated += o.truncated;
        self.bad += o.bad;
        self.memory_full += o.memory_full;
        self.fragments_dropped += o.fragments_dropped;
    }
}

/// The result of feeding one fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragOutcome<'a> {
    /// The datagram is not complete yet, or the fragment was dropped (see
    /// [`DefragStats`]).
    Pending,
    /// The datagram is complete: its whole IP payload (transport header and
    /// data), contiguous, borrowed from the defragmenter's reusable buffer
    /// (the datagram has been freed), and the fragments that carried it on
    /// the wire (a datagram that was not fragmented counts as one).
    Complete(&'a [u8], WireCount),
}

/// A stored, non-overlapping run of bytes of one datagram.
#[derive(Debug)]
struct Piece {
    start: u32,
    data: Vec<u8>,
}

impl Piece {
    /// End offset (exclusive). Cannot overflow: every piece lies inside a
    /// fragment whose end was checked to fit in `u32`.
    fn end(&self) -> u32 {
        self.start.saturating_add(self.data.len() as u32)
    }
}

/// One datagram being reassembled (or a dead entry).
#[derive(Debug)]
struct Datagram {
    /// Distinguishes this entry from earlier ones with the same key in the
    /// expiry queue.
    gen: u64,
    /// Packet time (ns) at which it expires.
    deadline: u64,
    /// Sorted by `start`, disjoint, all inside `[0, total)` once `total` is known.
    pieces: Vec<Piece>,
    /// Total payload length, once the last fragment has been seen.
    total: Option<u32>,
    /// Sum of the pieces' lengths.
    bytes: usize,
    /// Fragments accepted.
    frags: usize,
    /// Sum of the accepted fragments' IP-layer lengths.
    ip_bytes: u64,
    /// Killed: holds nothing, drops whatever arrives until its deadline.
    dead: bool,
}

impl Datagram {
    fn max_end(&self) -> u32 {
        self.pieces.last().map_or(0, Piece::end)
    }
}

/// Reassembles IPv4 and IPv6 fragments into datagrams.
///
/// Guarantees: never panics on any input; memory held is bounded by
/// [`DefragConfig`] (`bytes_held() <= max_bytes`, `in_progress() <=
/// max_datagrams`); completed datagrams are returned from one reusable buffer,
/// so no allocation happens per completed datagram once the buffer has grown.
#[derive(Debug)]
pub struct Defragmenter {
    cfg: DefragConfig,
    table: HashMap<FragKey, Datagram>,
    /// (deadline, key, gen) in creation order; entries whose gen no longer
    /// matches the table are stale and skipped lazily.
    fifo: VecDeque<(u64, FragKey, u64)>,
    next_gen: u64,
    /// Table entries that are not dead.
    live: usize,
    bytes_held: usize,
    frags_held: usize,
    stats: DefragStats,
    out: Vec<u8>,
    scratch_win: Vec<(usize, u32, u32)>,
    scratch_keep: Vec<(u32, u32)>,
}

impl Defragmenter {
    /// Creates an empty defragmenter with the given limits and policy.
    pub fn new(cfg: DefragConfig) -> Self {
        Defragmenter {
            cfg,
            table: HashMap::new(),
            fifo: VecDeque::new(),
            next_gen: 0,
            live: 0,
            bytes_held: 0,
            frags_held: 0,
            stats: DefragStats::default(),
            out: Vec::new(),
            scratch_win: Vec::new(),
            scratch_keep: Vec::new(),
        }
    }

    /// Feeds one fragment.
    ///
    /// `data` is the fragment's IP payload as present in the capture and
    /// `wire_len` its length per the IP header. Bytes past `wire_len` (link
    /// padding) are ignored. If `data` is shorter than `wire_len` the fragment
    /// was cut by the snaplen: its datagram can never be completed, so it is
    /// killed (counted in `truncated`) rather than left waiting.
    ///
    /// Returns [`DefragOutcome::Complete`] with the datagram's whole payload
    /// when this fragment completes it (a fragment with offset 0 and no more
    /// fragments completes at once), else [`DefragOutcome::Pending`]. See the
    /// module documentation for the overlap, limit and failure rules.
    pub fn process(
        &mut self,
        now: Timestamp,
        key: FragKey,
        frag: Fragment,
        data: &[u8],
        wire_len: u32,
    ) -> DefragOutcome<'_> {
        self.stats.fragments += 1;
        self.expire_key(now, &key);

        let len = wire_len as usize;
        let Some(data) = data.get(..len) else {
            self.stats.truncated += 1;
            return self.reject_and_kill(now, key);
        };
        let end = frag.offset.checked_add(wire_len);
        let Some(end) =
            end.filter(|_| len != 0 && frag.offset % 8 == 0 && (!frag.more || len % 8 == 0))
        else {
            self.stats.bad += 1;
            self.stats.fragments_dropped += 1;
            return DefragOutcome::Pending;
        };
        if end as usize > self.cfg.max_datagram_size {
            self.stats.too_large += 1;
            return self.reject_and_kill(now, key);
        }

        match self.table.get(&key) {
            Some(d) if d.dead => {
                self.stats.fragments_dropped += 1;
                return DefragOutcome::Pending;
            }
            Some(d) => {
                let inconsistent = match d.total {
                    Some(total) if frag.more => end > total,
                    Some(total) => end != total,
                    None => !frag.more && d.max_end() > end,
                };
                if inconsistent {
                    self.stats.bad += 1;
                    return self.reject_and_kill(now, key);
                }
                if d.frags >= self.cfg.max_fragments_per_datagram {
                    self.stats.too_many_fragments += 1;
                    return self.reject_and_kill(now, key);
                }
            }
            None => {
                if self.cfg.max_fragments_per_datagram == 0 {
                    self.stats.too_many_fragments += 1;
                    return self.reject_and_kill(now, key);
                }
                if frag.offset == 0 && !frag.more {
                    // A whole datagram in one fragment: nothing to hold.
                    self.out.clear();
                    self.out.extend_from_slice(data);
                    self.stats.reassembled += 1;
                    self.stats.fragments_reassembled += 1;
                    let wire = WireCount {
                        fragments: 1,
                        ip_bytes: u64::from(frag.ip_len),
                    };
                    return DefragOutcome::Complete(&self.out, wire);
                }
                if !self.make_slot() {
                    self.stats.too_many_datagrams += 1;
                    self.stats.fragments_dropped += 1;
                    return DefragOutcome::Pending;
                }
            }
        }

        if !self.make_room(&key, len) {
            self.stats.memory_full += 1;
            return self.reject_and_kill(now, key);
        }

        // One look-up finds the datagram or makes it; a new one joins the
        // expiry queue once this fragment is stored (below).
        let deadline = now.add_nanos(self.cfg.timeout_ns).as_nanos();
        let mut created = None;
        let d = match self.table.entry(key) {
            hashbrown::hash_map::Entry::Occupied(o) => o.into_mut(),
            hashbrown::hash_map::Entry::Vacant(v) => {
                self.next_gen = self.next_gen.wrapping_add(1);
                created = Some(self.next_gen);
                self.live += 1;
                v.insert(Datagram {
                    gen: self.next_gen,
                    deadline,
                    pieces: Vec::new(),
                    total: None,
                    bytes: 0,
                    frags: 0,
                    ip_bytes: 0,
                    dead: false,
                })
            }
        };

        let before = d.bytes;
        insert_fragment(
            d,
            self.cfg.policy,
            &mut self.stats,
            &mut self.scratch_win,
            &mut self.scratch_keep,
            frag.offset,
            data,
        );
        self.bytes_held = (self.bytes_held + d.bytes).saturating_sub(before);
        d.frags += 1;
        d.ip_bytes += u64::from(frag.ip_len);
        self.frags_held += 1;
        if !frag.more {
            d.total = Some(end);
        }
        let complete = d.total.is_some_and(|t| d.bytes == t as usize);
        if let Some(gen) = created {
            self.push_fifo(deadline, key, gen);
        }
        if !complete {
            return DefragOutcome::Pending;
        }

        let Some(d) = self.table.remove(&key) else {
            return DefragOutcome::Pending;
        };
        self.live -= 1;
        self.bytes_held = self.bytes_held.saturating_sub(d.bytes);
        self.frags_held = self.frags_held.saturating_sub(d.frags);
        self.stats.fragments_reassembled += d.frags as u64;
        self.stats.reassembled += 1;
        let wire = WireCount {
            fragments: u32::try_from(d.frags).unwrap_or(u32::MAX),
            ip_bytes: d.ip_bytes,
        };
        self.out.clear();
        for p in &d.pieces {
            self.out.extend_from_slice(&p.data);
        }
        debug_assert_eq!(self.out.len(), d.bytes);
        DefragOutcome::Complete(&self.out, wire)
    }

    /// Drops datagrams not completed within the timeout of their first
    /// fragment, as of packet time `now` (not the wall clock).
    ///
    /// O(1) amortized per call: deadlines are kept in creation order, which
    /// is deadline order as long as packet time does not go backwards (if it
    /// does, some datagrams merely expire a little late).
    pub fn expire(&mut self, now: Timestamp) {
        while let Some(&(deadline, key, gen)) = self.fifo.front() {
            if deadline > now.as_nanos() {
                break;
            }
            self.fifo.pop_front();
            if self.table.get(&key).is_some_and(|d| d.gen == gen) {
                if let Some(d) = self.table.remove(&key) {
                    if !d.dead {
                        self.stats.timed_out += 1;
                    }
                    self.discard(&d);
                }
            }
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> &DefragStats {
        &self.stats
    }

    /// Datagrams being reassembled (dead entries excluded).
    pub fn in_progress(&self) -> usize {
        self.live
    }

    /// Fragment payload bytes currently held; never more than `max_bytes`.
    pub fn bytes_held(&self) -> usize {
        self.bytes_held
    }

    fn new_gen(&mut self) -> u64 {
        self.next_gen = self.next_gen.wrapping_add(1);
        self.next_gen
    }

    /// Removes `key`'s entry if its deadline has passed.
    fn expire_key(&mut self, now: Timestamp, key: &FragKey) {
        if self
            .table
            .get(key)
            .is_some_and(|d| d.deadline <= now.as_nanos())
        {
            if let Some(d) = self.table.remove(key) {
                if !d.dead {
                    self.stats.timed_out += 1;
                }
                self.discard(&d);
            }
        }
    }

    /// Accounts for a datagram removed from the table without completing.
    fn discard(&mut self, d: &Datagram) {
        self.bytes_held = self.bytes_held.saturating_sub(d.bytes);
        self.frags_held = self.frags_held.saturating_sub(d.frags);
        self.stats.fragments_dropped += d.frags as u64;
        if !d.dead {
            self.live -= 1;
        }
    }

    /// Drops the current fragment and kills its datagram.
    fn reject_and_kill(&mut self, now: Timestamp, key: FragKey) -> DefragOutcome<'static> {
        self.stats.fragments_dropped += 1;
        if let Some(d) = self.table.get_mut(&key) {
            if !d.dead {
                d.dead = true;
                let pieces = std::mem::take(&mut d.pieces);
                drop(pieces);
                let (bytes, frags) = (d.bytes, d.frags);
                d.bytes = 0;
                d.frags = 0;
                d.ip_bytes = 0;
                d.total = None;
                self.bytes_held = self.bytes_held.saturating_sub(bytes);
                self.frags_held = self.frags_held.saturating_sub(frags);
                self.stats.fragments_dropped += frags as u64;
                self.live -= 1;
            }
        } else if self.table.len() < self.cfg.max_datagrams {
            let gen = self.new_gen();
            let deadline = now.add_nanos(self.cfg.timeout_ns).as_nanos();
            self.table.insert(
                key,
                Datagram {
                    gen,
                    deadline,
                    pieces: Vec::new(),
                    total: None,
                    bytes: 0,
                    frags: 0,
                    ip_bytes: 0,
                    dead: true,
                },
            );
            self.push_fifo(deadline, key, gen);
        }
        DefragOutcome::Pending
    }

    fn push_fifo(&mut self, deadline: u64, key: FragKey, gen: u64) {
        // Completed and killed datagrams leave stale entries behind; compact
        // when they could outnumber the table, which keeps the queue bounded
        // at O(1) amortized cost (at least `max_datagrams + 64` pushes happen
        // between two compactions).
        if self.fifo.len() >= self.cfg.max_datagrams.saturating_mul(2).saturating_add(64) {
            let table = &self.table;
            self.fifo
                .retain(|(_, k, g)| table.get(k).is_some_and(|d| d.gen == *g));
        }
        self.fifo.push_back((deadline, key, gen));
    }

    /// Evicts the oldest entry in the table (live or dead), discarding
    /// stale queue entries on the way, unless it is `except`. Returns
    /// whether the evicted entry was live; `None` if nothing was evicted
    /// (the table is empty, or its oldest entry is `except`). One look-up
    /// per queue entry: finding the oldest and removing it used to take
    /// one each, and the stale entry left behind a third (under a flood of
    /// fragments, where almost every new datagram evicts one, 2 of 3
    /// look-ups).
    fn evict_oldest(&mut self, except: Option<&FragKey>) -> Option<bool> {
        while let Some(&(_, key, gen)) = self.fifo.front() {
            match self.table.entry(key) {
                hashbrown::hash_map::Entry::Occupied(o) if o.get().gen == gen => {
                    if except == Some(&key) {
                        return None;
                    }
                    let d = o.remove();
                    self.fifo.pop_front();
                    self.discard(&d);
                    return Some(!d.dead);
                }
                _ => {
                    self.fifo.pop_front();
                }
            }
        }
        None
    }

    /// Makes room in the table for one new entry, evicting the oldest.
    fn make_slot(&mut self) -> bool {
        while self.table.len() >= self.cfg.max_datagrams {
            let Some(live) = self.evict_oldest(None) else {
                return false;
            };
            if live {
                self.stats.too_many_datagrams += 1;
            }
        }
        true
    }

    /// Makes room for `len` more bytes by evicting the oldest datagrams other
    /// than `key`; false if `key` itself would have to go.
    fn make_room(&mut self, key: &FragKey, len: usize) -> bool {
        if len > self.cfg.max_bytes {
            return false;
        }
        while self.bytes_held + len > self.cfg.max_bytes {
            match self.evict_oldest(Some(key)) {
                Some(live) => {
                    if live {
                        self.stats.memory_full += 1;
                    }
                }
                None => return false,
            }
        }
        true
    }
}

/// Stores fragment `[ns, ns + nd.len())` into `d`, resolving overlaps with
/// `policy`. Keeps `d.pieces` sorted and disjoint and `d.bytes` exact.
fn insert_fragment(
    d: &mut Datagram,
    policy: OverlapPolicy,
    stats: &mut DefragStats,
    wins: &mut Vec<(usize, u32, u32)>,
    keep: &mut Vec<(u32, u32)>,
    ns: u32,
    nd: &[u8],
) {
    let ne = ns.saturating_add(nd.len() as u32);
    wins.clear();
    keep.clear();

    // Decide every overlap against the pieces as they are before this
    // fragment. Pieces are disjoint and sorted, so their ends are sorted too.
    let first = d.pieces.partition_point(|p| p.end() <= ns);
    let mut cursor = ns;
    for i in first..d.pieces.len() {
        let p = &d.pieces[i];
        if p.start >= ne {
            break;
        }
        let (os, oe) = (p.start, p.end());
        let (a, b) = (os.max(ns), oe.min(ne));
        let hole_before = os > 0 && (i == 0 || d.pieces[i - 1].end() != os);
        stats.overlaps += 1;
        let old_bytes = &p.data[(a - os) as usize..(b - os) as usize];
        let new_bytes = &nd[(a - ns) as usize..(b - ns) as usize];
        if old_bytes != new_bytes {
            stats.overlap_conflicts += 1;
        }
        if policy.new_wins(
            (u64::from(os), u64::from(oe)),
            (u64::from(ns), u64::from(ne)),
            hole_before,
        ) {
            wins.push((i, a, b));
        } else {
            if a > cursor {
                keep.push((cursor, a));
            }
            cursor = b;
        }
    }
    if cursor < ne {
        keep.push((cursor, ne));
    }

    // Cut the losing ranges out of the old pieces, last first so indices hold.
    for &(i, a, b) in wins.iter().rev() {
        let p = &mut d.pieces[i];
        let (os, oe) = (p.start, p.end());
        d.bytes -= (b - a) as usize;
        match (a == os, b == oe) {
            (true, true) => {
                d.pieces.remove(i);
            }
            (true, false) => {
                p.data.drain(..(b - os) as usize);
                p.start = b;
            }
            (false, true) => p.data.truncate((a - os) as usize),
            (false, false) => {
                let right = p.data[(b - os) as usize..].to_vec();
                p.data.truncate((a - os) as usize);
                d.pieces.insert(
                    i + 1,
                    Piece {
                        start: b,
                        data: right,
                    },
                );
            }
        }
    }

    // Add the winning parts of the new fragment; they overlap nothing now.
    for &(s, e) in keep.iter() {
        let pos = d.pieces.partition_point(|p| p.start < s);
        let data = nd[(s - ns) as usize..(e - ns) as usize].to_vec();
        d.bytes += data.len();
        d.pieces.insert(pos, Piece { start: s, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn key(id: u32) -> FragKey {
        FragKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            id,
            proto: 17,
            vlan: 0,
        }
    }

    /// The hand-written `Hash` agrees with `Eq`: equal keys hash alike, and
    /// keys that differ in any one field (an IPv4 address and the IPv6
    /// address with the same 128 bits included) hash apart.
    #[test]
    fn key_hash_agrees_with_eq() {
        use std::hash::BuildHasher;
        let hasher = hashbrown::DefaultHashBuilder::default();
        let h = |k: &FragKey| hasher.hash_one(k);
        let base = key(7);
        assert_eq!(h(&base), h(&key(7)));
        let v6_same_bits = IpAddr::V6(Ipv6Addr::from_bits(u128::from(
            Ipv4Addr::new(10, 0, 0, 1).to_bits(),
        )));
        let variants = [
            FragKey { id: 8, ..base },
            FragKey { proto: 6, ..base },
            FragKey { vlan: 1, ..base },
            FragKey {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)),
                ..base
            },
            FragKey {
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)),
                ..base
            },
            FragKey {
                src: base.dst,
                dst: base.src,
                ..base
            },
            FragKey {
                src: v6_same_bits,
                ..base
            },
            FragKey {
                dst: v6_same_bits,
                ..base
            },
        ];
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(h(&base)));
        for v in &variants {
            assert_ne!(*v, base);
            assert!(seen.insert(h(v)), "{v:?} hashes like another key");
        }
    }

    fn feed(
        d: &mut Defragmenter,
        t: u64,
        k: FragKey,
        offset: u32,
        more: bool,
        data: &[u8],
    ) -> Option<Vec<u8>> {
        feed_wire(d, t, k, offset, more, data).map(|(b, _)| b)
    }

    /// [`feed`], with the completed datagram's wire count.
    fn feed_wire(
        d: &mut Defragmenter,
        t: u64,
        k: FragKey,
        offset: u32,
        more: bool,
        data: &[u8],
    ) -> Option<(Vec<u8>, WireCount)> {
        match d.process(
            Timestamp(t),
            k,
            Fragment {
                offset,
                more,
                ip_len: 20 + data.len() as u32,
            },
            data,
            data.len() as u32,
        ) {
            DefragOutcome::Complete(b, w) => Some((b.to_vec(), w)),
            DefragOutcome::Pending => None,
        }
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    /// Checks the internal accounting against a full recount.
    fn check_invariants(d: &Defragmenter) {
        let bytes: usize = d.table.values().map(|g| g.bytes).sum();
        let real: usize = d
            .table
            .values()
            .flat_map(|g| g.pieces.iter())
            .map(|p| p.data.len())
            .sum();
        assert_eq!(bytes, real);
        assert_eq!(d.bytes_held, bytes);
        assert!(d.bytes_held <= d.cfg.max_bytes);
        assert!(d.table.len() <= d.cfg.max_datagrams);
        assert_eq!(d.live, d.table.values().filter(|g| !g.dead).count());
        let frags: usize = d.table.values().map(|g| g.frags).sum();
        assert_eq!(d.frags_held, frags);
        assert_eq!(
            d.stats.fragments,
            d.stats.fragments_reassembled + d.stats.fragments_dropped + d.frags_held as u64
        );
        assert!(d.fifo.len() <= d.cfg.max_datagrams * 2 + 65);
        for g in d.table.values() {
            assert!(g.frags <= d.cfg.max_fragments_per_datagram);
            for w in g.pieces.windows(2) {
                assert!(w[0].end() <= w[1].start, "pieces overlap or unsorted");
            }
            if let Some(t) = g.total {
                assert!(g.max_end() <= t);
            }
        }
    }

    #[test]
    fn in_order() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(20);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
        assert_eq!(d.in_progress(), 1);
        assert_eq!(d.bytes_held(), 16);
        assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), Some(p));
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        assert_eq!(d.stats().reassembled, 1);
        assert_eq!(d.stats().fragments, 3);
        assert_eq!(d.stats().overlaps, 0);
        check_invariants(&d);
    }

    /// A completed datagram reports the fragments it took on the wire
    /// (duplicates included) and the sum of their IP lengths.
    #[test]
    fn completed_datagram_reports_its_fragments() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(40);
        assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), None);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        let (bytes, w) = feed_wire(&mut d, 0, key(1), 8, true, &p[8..16]).expect("complete");
        assert_eq!(bytes, p);
        assert_eq!(w.fragments, 4);
        assert_eq!(w.ip_bytes, (20 + 24) + 3 * (20 + 8));
        // An unfragmented datagram (offset 0, no more fragments) is one packet.
        let (_, w) = feed_wire(&mut d, 0, key(2), 0, false, &p[..12]).expect("complete");
        assert_eq!(
            w,
            WireCount {
                fragments: 1,
                ip_bytes: 32
            }
        );
    }

    #[test]
    fn reversed() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(1500);
        let chunks: Vec<(usize, &[u8])> = p.chunks(504).enumerate().collect();
        let mut got = None;
        for &(i, c) in chunks.iter().rev() {
            assert!(got.is_none());
            let more = i + 1 < chunks.len();
            got = feed(&mut d, 0, key(7), (i * 504) as u32, more, c);
        }
        assert_eq!(got, Some(p));
        assert_eq!(d.in_progress(), 0);
        check_invariants(&d);
    }

    #[test]
    fn whole_datagram_in_one_fragment() {
        let mut d = Defragmenter::new(DefragConfig::default());
        assert_eq!(
            feed(&mut d, 0, key(1), 0, false, b"abc"),
            Some(b"abc".to_vec())
        );
        assert_eq!(d.in_progress(), 0);
        check_invariants(&d);
    }

    #[test]
    fn interleaved() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let a = payload(24);
        let b: Vec<u8> = payload(24).iter().map(|x| !x).collect();
        let mut kb = key(1);
        kb.src = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)); // same id, other source
        let ka = key(1);
        assert_eq!(feed(&mut d, 0, ka, 0, true, &a[..8]), None);
        assert_eq!(feed(&mut d, 0, kb, 16, false, &b[16..]), None);
        assert_eq!(feed(&mut d, 0, kb, 0, true, &b[..8]), None);
        assert_eq!(feed(&mut d, 0, ka, 16, false, &a[16..]), None);
        assert_eq!(d.in_progress(), 2);
        assert_eq!(feed(&mut d, 0, kb, 8, true, &b[8..16]), Some(b));
        assert_eq!(feed(&mut d, 0, ka, 8, true, &a[8..16]), Some(a));
        assert_eq!(d.stats().reassembled, 2);
        check_invariants(&d);
    }

    #[test]
    fn duplicates() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(24);
        assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..16]), None);
        assert_eq!(d.bytes_held(), 16);
        assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), Some(p));
        assert_eq!(d.stats().overlaps, 3);
        assert_eq!(d.stats().overlap_conflicts, 0);
        assert_eq!(d.stats().fragments_dropped, 0);
        check_invariants(&d);
    }

    /// Each character of `s` is one 8-byte block filled with it.
    fn pat(s: &str) -> Vec<u8> {
        s.bytes().flat_map(|c| [c; 8]).collect()
    }

    /// Feeds `(offset, more, fill, len)` fragments; returns the first
    /// completed datagram and the stats.
    fn run(
        policy: OverlapPolicy,
        frags: &[(u32, bool, u8, usize)],
    ) -> (Option<Vec<u8>>, DefragStats) {
        let mut d = Defragmenter::new(DefragConfig {
            policy,
            ..DefragConfig::default()
        });
        let mut got = None;
        for &(off, more, fill, len) in frags {
            let r = feed(&mut d, 0, key(1), off, more, &vec![fill; len]);
            check_invariants(&d);
            if got.is_none() {
                got = r;
            }
        }
        (got, d.stats().clone())
    }

    /// Expected results in `OverlapPolicy::ALL` order: first, last, linux,
    /// bsd, windows, solaris.
    fn check_policies(
        frags: &[(u32, bool, u8, usize)],
        want: [&str; 6],
        overlaps: u64,
        conflicts: u64,
    ) {
        for (p, w) in OverlapPolicy::ALL.into_iter().zip(want) {
            let (got, stats) = run(p, frags);
            assert_eq!(
                got.as_deref().map(String::from_utf8_lossy),
                Some(String::from_utf8_lossy(&pat(w))),
                "policy {p}, fragments {frags:?}"
            );
            assert_eq!(stats.overlaps, overlaps, "{p}");
            assert_eq!(stats.overlap_conflicts, conflicts, "{p}");
        }
    }

    #[test]
    fn overlap_inside_earlier() {
        // Old [0,24) A; new [8,16) B starts inside it and ends inside it.
        check_policies(
            &[
                (0, true, b'A', 24),
                (8, true, b'B', 8),
                (24, false, b'C', 8),
            ],
            ["AAAC", "ABAC", "AAAC", "AAAC", "AAAC", "AAAC"],
            1,
            1,
        );
        // Reverse arrival: new [0,24) covers old [8,16), starting before it.
        check_policies(
            &[
                (8, true, b'B', 8),
                (0, true, b'A', 24),
                (24, false, b'C', 8),
            ],
            ["ABAC", "AAAC", "AAAC", "AAAC", "AAAC", "AAAC"],
            1,
            1,
        );
    }

    #[test]
    fn overlap_extending_past() {
        // Old [0,16) A; new [8,24) B starts inside and extends past (left overlap).
        check_policies(
            &[
                (0, true, b'A', 16),
                (8, true, b'B', 16),
                (24, false, b'C', 8),
            ],
            ["AABC", "ABBC", "AABC", "AABC", "AABC", "ABBC"],
            1,
            1,
        );
    }

    #[test]
    fn overlap_starting_before() {
        // Old [8,24) B; new [0,16) A starts before it and ends inside (right overlap).
        check_policies(
            &[
                (8, true, b'B', 16),
                (0, true, b'A', 16),
                (24, false, b'C', 8),
            ],
            ["ABBC", "AABC", "AABC", "AABC", "AABC", "ABBC"],
            1,
            1,
        );
    }

    #[test]
    fn overlap_same_start() {
        // Old [0,8) A; new [0,16) B: same start, longer.
        check_policies(
            &[
                (0, true, b'A', 8),
                (0, true, b'B', 16),
                (16, false, b'C', 8),
            ],
            ["ABC", "BBC", "BBC", "ABC", "ABC", "BBC"],
            1,
            1,
        );
        // Old [0,16) B; new [0,8) A: same start, shorter.
        check_policies(
            &[
                (0, true, b'B', 16),
                (0, true, b'A', 8),
                (16, false, b'C', 8),
            ],
            ["BBC", "ABC", "BBC", "BBC", "BBC", "BBC"],
            1,
            1,
        );
    }

    #[test]
    fn overlap_same_range() {
        // Same range with a hole before it: Solaris keeps the first copy.
        check_policies(
            &[
                (8, true, b'A', 8),
                (8, true, b'B', 8),
                (0, true, b'Z', 8),
                (16, false, b'C', 8),
            ],
            ["ZAC", "ZBC", "ZAC", "ZAC", "ZAC", "ZAC"],
            1,
            1,
        );
        // Same range, no hole before it: Solaris takes the new copy.
        check_policies(
            &[
                (0, true, b'Z', 8),
                (8, true, b'A', 8),
                (8, true, b'B', 8),
                (16, false, b'C', 8),
            ],
            ["ZAC", "ZBC", "ZAC", "ZAC", "ZAC", "ZBC"],
            1,
            1,
        );
    }

    #[test]
    fn overlap_several_pieces() {
        // Stored [8,16) a and [24,32) c; new [8,32) b has the same start as the
        // first (and is longer) and covers the second starting before it.
        check_policies(
            &[
                (8, true, b'a', 8),
                (24, true, b'c', 8),
                (8, true, b'b', 24),
                (0, true, b'z', 8),
                (32, false, b'e', 8),
            ],
            ["zabce", "zbbbe", "zbbbe", "zabbe", "zabbe", "zbbbe"],
            2,
            2,
        );
    }

    #[test]
    fn timeout() {
        let sec = 1_000_000_000;
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(16);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        d.expire(Timestamp(29 * sec));
        assert_eq!(d.in_progress(), 1);
        // A later fragment does not extend the deadline.
        assert_eq!(feed(&mut d, 29 * sec, key(2), 0, true, &p[..8]), None);
        d.expire(Timestamp(30 * sec));
        assert_eq!(d.in_progress(), 1);
        assert_eq!(d.stats().timed_out, 1);
        assert_eq!(d.bytes_held(), 8);
        // The completing fragment of the expired datagram starts a new one.
        assert_eq!(feed(&mut d, 30 * sec, key(1), 8, false, &p[8..]), None);
        assert_eq!(d.in_progress(), 2);
        check_invariants(&d);
        // Without expire(): process() notices the overdue datagram itself.
        assert_eq!(feed(&mut d, 60 * sec, key(2), 8, false, &p[8..]), None);
        assert_eq!(d.stats().timed_out, 2);
        assert_eq!(d.stats().fragments_dropped, 2);
        check_invariants(&d);
        d.expire(Timestamp(u64::MAX));
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        assert_eq!(d.stats().timed_out, 4);
        assert_eq!(d.stats().reassembled, 0);
        check_invariants(&d);
    }

    #[test]
    fn too_many_fragments() {
        let mut d = Defragmenter::new(DefragConfig {
            max_fragments_per_datagram: 2,
            ..DefragConfig::default()
        });
        let p = payload(32);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 0, key(1), 8, true, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(1), 16, true, &p[16..24]), None);
        assert_eq!(d.stats().too_many_fragments, 1);
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        // The dead datagram swallows the rest.
        assert_eq!(feed(&mut d, 0, key(1), 24, false, &p[24..]), None);
        assert_eq!(d.stats().fragments_dropped, 4);
        assert_eq!(d.in_progress(), 0);
        // Other datagrams are unaffected.
        assert_eq!(feed(&mut d, 0, key(2), 8, false, &p[8..16]), None);
        assert_eq!(
            feed(&mut d, 0, key(2), 0, true, &p[..8]),
            Some(p[..16].to_vec())
        );
        check_invariants(&d);
        // The dead entry goes away at its timeout, without counting as timed out.
        d.expire(Timestamp(u64::MAX));
        assert_eq!(d.table.len(), 0);
        assert_eq!(d.stats().timed_out, 0);
    }

    #[test]
    fn too_many_datagrams_evicts_oldest() {
        let mut d = Defragmenter::new(DefragConfig {
            max_datagrams: 2,
            ..DefragConfig::default()
        });
        let p = payload(16);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 1, key(2), 0, true, &p[..8]), None);
        assert_eq!(feed(&mut d, 2, key(3), 0, true, &p[..8]), None);
        assert_eq!(d.stats().too_many_datagrams, 1);
        assert_eq!(d.in_progress(), 2);
        // Key 1 was evicted: its last fragment starts over.
        assert_eq!(feed(&mut d, 3, key(1), 8, false, &p[8..]), None);
        assert_eq!(d.stats().too_many_datagrams, 2); // evicted key 2
        assert_eq!(feed(&mut d, 3, key(3), 8, false, &p[8..]), Some(p.clone()));
        check_invariants(&d);

        let mut z = Defragmenter::new(DefragConfig {
            max_datagrams: 0,
            ..DefragConfig::default()
        });
        assert_eq!(feed(&mut z, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(z.stats().too_many_datagrams, 1);
        assert_eq!(z.in_progress(), 0);
        check_invariants(&z);
    }

    #[test]
    fn too_large() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(64);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        // Ends at 65536 > 65535: the classic "ping of death".
        assert_eq!(feed(&mut d, 0, key(1), 65528, false, &p[..8]), None);
        assert_eq!(d.stats().too_large, 1);
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        // Ending exactly at the limit is fine.
        assert_eq!(feed(&mut d, 0, key(2), 65528, false, &p[..7]), None);
        assert_eq!(d.in_progress(), 1);
        check_invariants(&d);
    }

    #[test]
    fn memory_full() {
        let mut d = Defragmenter::new(DefragConfig {
            max_bytes: 24,
            ..DefragConfig::default()
        });
        let p = payload(32);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..16]), None);
        assert_eq!(feed(&mut d, 0, key(2), 0, true, &p[..16]), None);
        // Key 1 (oldest) was evicted to make room.
        assert_eq!(d.stats().memory_full, 1);
        assert_eq!(d.in_progress(), 1);
        assert_eq!(d.bytes_held(), 16);
        // Key 2 is the oldest; it cannot grow past the budget: killed.
        assert_eq!(feed(&mut d, 0, key(2), 16, true, &p[16..32]), None);
        assert_eq!(d.stats().memory_full, 2);
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        // A fragment bigger than the whole budget.
        assert_eq!(feed(&mut d, 0, key(3), 0, true, &p[..32]), None);
        assert_eq!(d.stats().memory_full, 3);
        assert_eq!(d.stats().fragments_dropped, 4);
        check_invariants(&d);
    }

    #[test]
    fn truncated_kills_datagram() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(24);
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        let r = d.process(
            Timestamp(0),
            key(1),
            Fragment {
                offset: 8,
                more: true,
                ip_len: 0,
            },
            &p[8..12],
            8,
        );
        assert_eq!(r, DefragOutcome::Pending);
        assert_eq!(d.stats().truncated, 1);
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..]), None);
        assert_eq!(d.stats().fragments_dropped, 3);
        // Truncated first fragment of a new datagram: a dead entry is made.
        let r = d.process(
            Timestamp(0),
            key(2),
            Fragment {
                offset: 0,
                more: true,
                ip_len: 0,
            },
            &p[..4],
            8,
        );
        assert_eq!(r, DefragOutcome::Pending);
        assert_eq!(feed(&mut d, 0, key(2), 8, false, &p[8..16]), None);
        assert_eq!(d.in_progress(), 0);
        // Extra bytes (link padding) are ignored.
        let r = d.process(
            Timestamp(0),
            key(3),
            Fragment {
                offset: 0,
                more: false,
                ip_len: 0,
            },
            &p,
            10,
        );
        assert!(matches!(r, DefragOutcome::Complete(b, _) if b == &p[..10]));
        check_invariants(&d);
    }

    #[test]
    fn one_byte_fragments() {
        let mut d = Defragmenter::new(DefragConfig::default());
        // A non-last 1-byte fragment is malformed and dropped on its own.
        assert_eq!(feed(&mut d, 0, key(1), 0, true, b"a"), None);
        assert_eq!(d.stats().bad, 1);
        // Offsets must be multiples of 8.
        assert_eq!(feed(&mut d, 0, key(1), 1, false, b"b"), None);
        assert_eq!(d.stats().bad, 2);
        // Zero length.
        assert_eq!(feed(&mut d, 0, key(1), 8, false, b""), None);
        assert_eq!(d.stats().bad, 3);
        assert_eq!(d.in_progress(), 0);
        // A 1-byte last fragment is fine.
        assert_eq!(feed(&mut d, 0, key(1), 8, false, b"z"), None);
        assert_eq!(
            feed(&mut d, 0, key(1), 0, true, b"01234567"),
            Some(b"01234567z".to_vec())
        );
        assert_eq!(d.stats().fragments_dropped, 3);
        check_invariants(&d);
    }

    #[test]
    fn offset_overflow() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let big = vec![0u8; 65535];
        // Highest IPv4 offset plus a big fragment: past the datagram limit.
        assert_eq!(feed(&mut d, 0, key(1), 65528, false, &big), None);
        assert_eq!(d.stats().too_large, 1);
        // offset + len overflowing u32.
        let r = d.process(
            Timestamp(0),
            key(2),
            Fragment {
                offset: u32::MAX - 7,
                more: true,
                ip_len: 0,
            },
            &big[..16],
            16,
        );
        assert_eq!(r, DefragOutcome::Pending);
        assert_eq!(d.stats().bad, 1);
        // wire_len near u32::MAX with little data: truncated, no overflow.
        let r = d.process(
            Timestamp(0),
            key(3),
            Fragment {
                offset: 8,
                more: true,
                ip_len: 0,
            },
            &big[..8],
            u32::MAX,
        );
        assert_eq!(r, DefragOutcome::Pending);
        assert_eq!(d.stats().truncated, 1);
        assert_eq!(d.bytes_held(), 0);
        check_invariants(&d);
    }

    #[test]
    fn conflicting_ends() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let p = payload(32);
        // Two last fragments with different totals.
        assert_eq!(feed(&mut d, 0, key(1), 8, false, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(1), 16, false, &p[16..24]), None);
        // The datagram is dead: its first fragment does not complete it.
        assert_eq!(feed(&mut d, 0, key(1), 0, true, &p[..8]), None);
        assert_eq!(d.stats().bad, 1);
        assert_eq!(d.in_progress(), 0);
        // Data past the known end.
        assert_eq!(feed(&mut d, 0, key(2), 8, false, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(2), 8, true, &p[8..24]), None);
        assert_eq!(d.stats().bad, 2);
        // Last fragment ending before data already held.
        assert_eq!(feed(&mut d, 0, key(3), 16, true, &p[16..32]), None);
        assert_eq!(feed(&mut d, 0, key(3), 8, false, &p[8..16]), None);
        assert_eq!(d.stats().bad, 3);
        // The same last fragment twice is fine.
        assert_eq!(feed(&mut d, 0, key(4), 8, false, &p[8..16]), None);
        assert_eq!(feed(&mut d, 0, key(4), 8, false, &p[8..16]), None);
        assert_eq!(
            feed(&mut d, 0, key(4), 0, true, &p[..8]),
            Some(p[..16].to_vec())
        );
        assert_eq!(d.stats().fragments_dropped, 7);
        check_invariants(&d);
    }

    #[test]
    fn ipv6_32bit_ids() {
        let mut d = Defragmenter::new(DefragConfig::default());
        let k = |id| FragKey {
            src: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            dst: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2)),
            id,
            proto: 6,
            vlan: 0,
        };
        let a = payload(16);
        let b: Vec<u8> = a.iter().map(|x| x ^ 0x55).collect();
        // Same low 16 bits, different high bits: distinct datagrams.
        assert_eq!(feed(&mut d, 0, k(0x0001_beef), 0, true, &a[..8]), None);
        assert_eq!(feed(&mut d, 0, k(0xffff_beef), 0, true, &b[..8]), None);
        assert_eq!(d.in_progress(), 2);
        assert_eq!(feed(&mut d, 0, k(0xffff_beef), 8, false, &b[8..]), Some(b));
        assert_eq!(feed(&mut d, 0, k(0x0001_beef), 8, false, &a[8..]), Some(a));
        assert_eq!(d.stats().overlaps, 0);
        check_invariants(&d);
    }

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn random_fragments_never_panic() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut total = DefragStats::default();
        for policy in OverlapPolicy::ALL {
            let cfg = DefragConfig {
                max_fragments_per_datagram: 8,
                max_datagrams: 4,
                max_bytes: 64 * 1024,
                timeout_ns: 300_000,
                policy,
                ..DefragConfig::default()
            };
            let mut d = Defragmenter::new(cfg);
            let buf = payload(70_000);
            let mut t = 0u64;
            for _ in 0..10_000 {
                t += rng.below(20_000);
                if rng.below(50) == 0 && t > 100_000 {
                    t -= 100_000; // packet time going backwards
                }
                let k = key(rng.below(6) as u32);
                let offset = match rng.below(10) {
                    0 => rng.next() as u32,
                    1 => 65528,
                    _ => (rng.below(32) * 8) as u32,
                };
                let len = match rng.below(10) {
                    0 => rng.below(70_000) as usize,
                    1 => rng.below(9) as usize,
                    _ => ((1 + rng.below(8)) * 8) as usize,
                };
                let more = rng.below(8) != 0;
                let wire_len = if rng.below(30) == 0 {
                    len as u32 + 1
                } else {
                    len as u32
                };
                let r = d.process(
                    Timestamp(t),
                    k,
                    Fragment {
                        offset,
                        more,
                        ip_len: 0,
                    },
                    &buf[..len],
                    wire_len,
                );
                if let DefragOutcome::Complete(b, _) = r {
                    assert!(b.len() <= 65535);
                }
                assert!(d.bytes_held() <= 64 * 1024);
                assert!(d.in_progress() <= 4);
                if rng.below(3) == 0 {
                    d.expire(Timestamp(t));
                }
                check_invariants(&d);
            }
            assert!(d.stats().reassembled > 0, "{policy}: {:?}", d.stats());
            assert!(d.stats().overlaps > 0);
            let st = d.stats();
            total.reassembled += st.reassembled;
            total.timed_out += st.timed_out;
            total.overlap_conflicts += st.overlap_conflicts;
            total.too_many_fragments += st.too_many_fragments;
            total.too_many_datagrams += st.too_many_datagrams;
            total.too_large += st.too_large;
            total.truncated += st.truncated;
            total.bad += st.bad;
            total.memory_full += st.memory_full;
        }
        // Every failure path was exercised.
        for (name, n) in [
            ("reassembled", total.reassembled),
            ("timed_out", total.timed_out),
            ("overlap_conflicts", total.overlap_conflicts),
            ("too_many_fragments", total.too_many_fragments),
            ("too_many_datagrams", total.too_many_datagrams),
            ("too_large", total.too_large),
            ("truncated", total.truncated),
            ("bad", total.bad),
            ("memory_full", total.memory_full),
        ] {
            assert!(n > 0, "{name} never happened");
        }
    }

    #[test]
    fn random_consistent_fragments_reassemble_exactly() {
        let mut rng = XorShift(12345);
        for round in 0..300 {
            let policy = OverlapPolicy::ALL[round % 6];
            let mut d = Defragmenter::new(DefragConfig {
                policy,
                ..DefragConfig::default()
            });
            let len = 1 + rng.below(3000) as usize;
            let p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let units = len.div_ceil(8);
            // A partition into fragments plus some overlapping extras, all
            // carrying the true bytes.
            let mut frags: Vec<(usize, usize)> = Vec::new();
            let mut at = 0;
            while at < units {
                let n = 1 + rng.below(60) as usize;
                frags.push((at * 8, ((at + n) * 8).min(len)));
                at += n;
            }
            for _ in 0..rng.below(8) {
                let s = rng.below(units as u64) as usize;
                let e = s + 1 + rng.below(40) as usize;
                frags.push((s * 8, (e * 8).min(len)));
            }
            for i in (1..frags.len()).rev() {
                frags.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut got = None;
            for &(s, e) in &frags {
                let r = feed(&mut d, 0, key(9), s as u32, e != len, &p[s..e]);
                if got.is_none() {
                    got = r;
                }
                if got.is_none() {
                    check_invariants(&d);
                }
            }
            assert_eq!(got.as_deref(), Some(&p[..]), "round {round}");
            assert_eq!(d.stats().overlap_conflicts, 0);
        }
    }
}
