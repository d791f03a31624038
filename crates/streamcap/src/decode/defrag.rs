//! IPv4 and IPv6 fragment reassembly, bounded and policy-driven.
//!
//! The decoder hands every fragment's IP payload to a [`Defragmenter`] with the
//! fragment's position ([`Fragment`]) and the datagram it belongs to
//! ([`FragKey`]). When a datagram can be passed on, [`Defragmenter::process`]
//! returns its IP payload (transport header and data) as one contiguous
//! slice ([`Reassembled`]).
//!
//! The work is split by concept: this file holds the rules (what a fragment
//! does to its datagram, the limits, the counters); `store` the datagrams
//! in progress (slots reused from one datagram to the next, their hash index
//! and their creation order, which eviction and expiry follow); `assembly`
//! one datagram's bytes (each fragment copied once, to its offset in a
//! buffer that the slot keeps, and the overlap policy).
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
//! # What a fragment can do to its datagram
//!
//! A fragment is dropped on its own, never taking its datagram with it: a
//! forged or corrupted fragment says nothing about the others, and a rule
//! that killed a datagram would let one garbage fragment make a connection's
//! packet vanish. Each dropped fragment counts once, under one reason of
//! [`DroppedFragments`].
//!
//! - A non-last fragment's length is rounded down to a multiple of 8 (the
//!   RFCs require one; Linux does the same). A fragment left empty, with an
//!   offset that is not a multiple of 8 or whose end overflows `u32` is
//!   *malformed*.
//! - A fragment ending past `max_datagram_size` is *too large*.
//! - The datagram's end is set by its last fragment (MF clear), and what
//!   happens to fragments that disagree on it depends on the target the
//!   overlap policy names, since hosts differ there and a monitor must
//!   reassemble what its target reassembles:
//!   - under [`OverlapPolicy::Linux`], as Linux's `ip_frag_queue`, they
//!     make the datagram corrupt (a second last fragment with another end,
//!     a last fragment ending before bytes already seen, a fragment reaching
//!     past a known end): it is discarded with all its fragments
//!     ([`DefragStats::inconsistent`]; the fragments count as
//!     *inconsistent*);
//!   - under the other policies, as a BSD stack completes a datagram at the
//!     first last fragment its fragments reach, the first end seen holds:
//!     bytes past it are not part of the datagram, whether they came before
//!     the last fragment (they are cut off when it comes) or after (a
//!     fragment reaching past the end keeps the part before it); a second
//!     last fragment with another end and a fragment starting at or past
//!     the end are *inconsistent* and dropped. So stray bytes past the end
//!     cannot hold a datagram back, nor can a stray last fragment once the
//!     real one is in; a forged last fragment that comes first sets the end,
//!     on such a host as in the monitor.
//! - A fragment beyond `max_fragments_per_datagram` is one *too many*.
//!
//! # Fragments cut by the snapshot length
//!
//! A datagram one of whose fragments the capture cut can never be had
//! whole. As soon as its first fragment (offset 0) is there, it is passed on
//! like an unfragmented packet cut by the snapshot length: the bytes captured
//! contiguously from offset 0 (up to the first byte missing or cut), with the
//! datagram's length on the wire if its last fragment was seen, else as far
//! as its fragments reach ([`DefragStats::cut`]). The slot then stays as a
//! *passed* entry, holding no bytes, until its timeout, and the datagram's
//! later fragments are dropped (*after cut*) instead of starting a
//! reassembly that could never complete. So a first fragment whose transport
//! header was captured gives its flow its packet even when the rest of the
//! datagram is lost.
//!
//! # Limits
//!
//! Nothing grows without bound: the datagrams in the table, the fragments
//! per datagram, the size of a datagram and the memory of the datagrams'
//! buffers are all capped ([`DefragConfig`]).
//!
//! - When the table is full, a fragment of a new datagram evicts the oldest
//!   entry (by creation order, live or passed); [`DefragStats::evicted`]
//!   counts the live ones, their fragments count as *evicted*.
//! - [`Defragmenter::bytes_held`] is the memory of every slot's buffers
//!   (those kept by free slots for reuse included) and never exceeds
//!   `max_bytes` after a call. When a fragment needs more, the buffers of
//!   free slots are freed first, then the oldest other datagrams are evicted
//!   ([`DefragStats::memory_full`]; their fragments count as *memory*); a
//!   fragment that does not fit even so is dropped (*memory*).
//!
//! # Timeouts
//!
//! A datagram must complete within `timeout_ns` of its *first* fragment's
//! packet time (later fragments do not extend it). [`Defragmenter::expire`]
//! drops overdue datagrams in O(1) amortized time; [`Defragmenter::process`]
//! also treats an overdue datagram as expired before using it, so a late
//! fragment starts a new reassembly even if `expire` was not called.

mod assembly;
mod store;
#[cfg(test)]
mod tests;

use std::net::IpAddr;

use crate::reassembly::policy::OverlapPolicy;
use crate::time::Timestamp;

use store::{State, Store};

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
    /// What else tells the datagram apart
    /// ([`NetPacket::fragment_context`](crate::decode::NetPacket::fragment_context)):
    /// the folded VLAN tags it was seen on, or inside a tunnel the tunnel's
    /// number with bit 31 set.
    pub vlan: u32,
}

impl std::hash::Hash for FragKey {
    /// Feeds the key to the (keyed) hasher in as few words as it fits in,
    /// consistent with the derived `Eq` (equal keys write equal words): an
    /// IPv4 key is one 128-bit word (addresses, identification, VLANs) and
    /// a short one (protocol and address families), where hashing each
    /// field as derived takes seven hasher calls; an IPv6 key, three 128-bit
    /// words.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                h.write_u128(
                    u128::from(s.to_bits()) << 96
                        | u128::from(d.to_bits()) << 64
                        | u128::from(self.vlan) << 32
                        | u128::from(self.id),
                );
                h.write_u16(u16::from(self.proto));
            }
            (src, dst) => {
                let bits = |ip: IpAddr| match ip {
                    IpAddr::V4(a) => (u128::from(a.to_bits()), 0u64),
                    IpAddr::V6(a) => (a.to_bits(), 1u64),
                };
                let (src, src_v6) = bits(src);
                let (dst, dst_v6) = bits(dst);
                h.write_u128(src);
                h.write_u128(dst);
                h.write_u128(
                    u128::from(self.id)
                        | u128::from(self.proto) << 32
                        | u128::from(src_v6 | dst_v6 << 1 | 4) << 40
                        | u128::from(self.vlan) << 64,
                );
            }
        }
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
}

/// A datagram passed on by [`Defragmenter::process`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reassembled<'a> {
    /// The datagram's IP payload (transport header and data) as captured:
    /// all of it, or, for a datagram cut by the snapshot length, the bytes
    /// captured contiguously from offset 0.
    pub data: &'a [u8],
    /// The payload's length on the wire (at least `data.len()`).
    pub wire_len: u32,
    /// Fragments accepted for it (duplicates included; 1 for a datagram
    /// that came whole).
    pub fragments: u32,
}

/// Limits and policy of a [`Defragmenter`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefragConfig {
    /// Most fragments accepted for one datagram (duplicates included); one
    /// more is dropped. Default 1024: a datagram of the largest size in
    /// fragments of 64 bytes, and every datagram of a link whose MTU is
    /// at least 576 bytes (about 120 fragments) many times over.
    pub max_fragments_per_datagram: usize,
    /// Most datagrams in the table (live and passed); a new one evicts the
    /// oldest. Default 4096.
    pub max_datagrams: usize,
    /// Largest reassembled IP payload, in bytes; a fragment ending past it
    /// is dropped. Default 65535.
    pub max_datagram_size: usize,
    /// How long a datagram may take to complete, from its first fragment, in
    /// nanoseconds of packet time. Default 30 s.
    pub timeout_ns: u64,
    /// How overlapping fragments are resolved. Default [`OverlapPolicy::Bsd`],
    /// as for TCP.
    pub policy: OverlapPolicy,
    /// Most memory held by the datagrams' buffers, bytes. Default 16 MiB.
    pub max_bytes: usize,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            max_fragments_per_datagram: 1024,
            max_datagrams: 4096,
            max_datagram_size: 65535,
            timeout_ns: 30_000_000_000,
            policy: OverlapPolicy::Bsd,
            max_bytes: 16 << 20,
        }
    }
}

/// Why fragments were dropped, in fragments (each dropped fragment counts
/// under exactly one reason). See the module documentation for the rules.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct DroppedFragments {
    /// Held by datagrams that did not complete in time (at the end of the
    /// input, every datagram still incomplete).
    pub timed_out: u64,
    /// Held by datagrams evicted from a full table (or refused by a table
    /// that holds nothing).
    pub evicted: u64,
    /// Held by datagrams evicted for the memory limit, or refused because
    /// they did not fit in it.
    pub memory: u64,
    /// Malformed on their own: empty, an offset that is not a multiple of 8,
    /// an end that overflows.
    pub malformed: u64,
    /// Contradicting their datagram's end, or held by a datagram discarded
    /// for such a contradiction.
    pub inconsistent: u64,
    /// Ending past `max_datagram_size`.
    pub too_large: u64,
    /// Beyond `max_fragments_per_datagram` for their datagram.
    pub too_many: u64,
    /// Of a datagram already passed on cut by the snapshot length.
    pub after_cut: u64,
}

impl DroppedFragments {
    /// The sum over all reasons.
    pub fn total(&self) -> u64 {
        self.by_reason().iter().map(|(_, n)| n).sum()
    }

    /// Every reason with its count, for reports: (short description, fragments).
    pub fn by_reason(&self) -> [(&'static str, u64); 8] {
        [
            ("timed out", self.timed_out),
            ("evicted from a full table", self.evicted),
            ("over the memory limit", self.memory),
            ("malformed", self.malformed),
            ("inconsistent", self.inconsistent),
            ("past the size limit", self.too_large),
            ("beyond the fragments per datagram", self.too_many),
            ("after their datagram was passed on cut", self.after_cut),
        ]
    }

    /// Adds another count.
    pub fn add(&mut self, o: &DroppedFragments) {
        self.timed_out += o.timed_out;
        self.evicted += o.evicted;
        self.memory += o.memory;
        self.malformed += o.malformed;
        self.inconsistent += o.inconsistent;
        self.too_large += o.too_large;
        self.too_many += o.too_many;
        self.after_cut += o.after_cut;
    }
}

/// Counters kept by a [`Defragmenter`]; they only ever increase.
///
/// Every fragment fed is carried by a datagram passed on
/// (`fragments_reassembled`), still held, or dropped for one reason
/// (`dropped`, summed in `fragments_dropped`). Fragments are counted in
/// fragments and datagrams in datagrams, each field saying which.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct DefragStats {
    /// Fragments fed to [`Defragmenter::process`].
    pub fragments: u64,
    /// Datagrams completed and passed on whole.
    pub reassembled: u64,
    /// Datagrams cut by the snapshot length, passed on from their first
    /// fragment.
    pub cut: u64,
    /// Fragments carried by the datagrams passed on (whole or cut).
    pub fragments_reassembled: u64,
    /// Overlaps between a new fragment and a stored piece (one per pair).
    pub overlaps: u64,
    /// Overlaps whose overlapping bytes differ (exact duplicates are not
    /// conflicts).
    pub overlap_conflicts: u64,
    /// Datagrams dropped because they did not complete in time.
    pub timed_out: u64,
    /// Datagrams evicted because the table was full.
    pub evicted: u64,
    /// Datagrams evicted, or dropped, for the memory limit.
    pub memory_full: u64,
    /// Datagrams discarded because their fragments disagreed on where the
    /// datagram ends (as Linux discards them).
    pub inconsistent: u64,
    /// Fragments dropped, by reason.
    pub dropped: DroppedFragments,
    /// Every fragment dropped: the sum of `dropped`.
    pub fragments_dropped: u64,
}

impl DefragStats {
    /// Adds another defragmenter's counters (workers that each reassembled
    /// their own share of the fragments).
    pub fn add(&mut self, o: &DefragStats) {
        self.fragments += o.fragments;
        self.reassembled += o.reassembled;
        self.cut += o.cut;
        self.fragments_reassembled += o.fragments_reassembled;
        self.overlaps += o.overlaps;
        self.overlap_conflicts += o.overlap_conflicts;
        self.timed_out += o.timed_out;
        self.evicted += o.evicted;
        self.memory_full += o.memory_full;
        self.inconsistent += o.inconsistent;
        self.dropped.add(&o.dropped);
        self.fragments_dropped += o.fragments_dropped;
    }

    /// Datagrams passed on, whole or cut.
    pub fn datagrams(&self) -> u64 {
        self.reassembled + self.cut
    }
}

/// The counters in one line, as the command line's summary prints them:
/// `N = R in D reassembled datagrams + X dropped (n reason, …); O overlaps
/// (C conflicting)`, then the datagrams cut by the snapshot length if any.
/// N, R and X count fragments, and so does each reason, so the reasons add
/// up to X; D counts datagrams. Fragments still held (none at the end of a
/// run) are the difference N - R - X.
impl std::fmt::Display for DefragStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} = {} in {} reassembled datagrams + {} dropped",
            self.fragments,
            self.fragments_reassembled,
            self.datagrams(),
            self.fragments_dropped
        )?;
        let reasons: Vec<String> = self
            .dropped
            .by_reason()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        if !reasons.is_empty() {
            write!(f, " ({})", reasons.join(", "))?;
        }
        write!(
            f,
            "; {} overlaps ({} conflicting)",
            self.overlaps, self.overlap_conflicts
        )?;
        if self.cut > 0 {
            write!(
                f,
                "; {} of the datagrams cut by the snaplen, passed on as captured",
                self.cut
            )?;
        }
        Ok(())
    }
}

/// The result of feeding one fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragOutcome<'a> {
    /// The datagram is not complete yet, or the fragment was dropped (see
    /// [`DefragStats`]).
    Pending,
    /// The datagram can be passed on: complete, or cut by the snapshot
    /// length with its first fragment there. Its bytes are borrowed from the
    /// defragmenter (or from the fragment, for a datagram that came whole).
    Complete(Reassembled<'a>),
}

/// A reason to drop one fragment, for [`Defragmenter::drop_fragment`].
#[derive(Clone, Copy, Debug)]
enum Drop {
    Malformed,
    Inconsistent,
    TooLarge,
    TooMany,
    AfterCut,
    Evicted,
    Memory,
}

/// Reassembles IPv4 and IPv6 fragments into datagrams.
///
/// Guarantees: never panics on any input; memory is bounded by
/// [`DefragConfig`] (`bytes_held() <= max_bytes` after every call,
/// `in_progress() <= max_datagrams`); slots and their buffers are reused, so
/// once they have grown no allocation happens per fragment or datagram.
#[derive(Debug)]
pub struct Defragmenter {
    cfg: DefragConfig,
    store: Store,
    /// Fragments held by live datagrams.
    frags_held: u64,
    stats: DefragStats,
}

impl Defragmenter {
    /// Creates an empty defragmenter with the given limits and policy.
    pub fn new(cfg: DefragConfig) -> Self {
        Defragmenter {
            cfg,
            store: Store::new(),
            frags_held: 0,
            stats: DefragStats::default(),
        }
    }

    /// Feeds one fragment.
    ///
    /// `data` is the fragment's IP payload as present in the capture and
    /// `wire_len` its length per the IP header. Bytes past `wire_len` (link
    /// padding) are ignored; if `data` is shorter, the capture cut the
    /// fragment (see the module documentation).
    ///
    /// Returns [`DefragOutcome::Complete`] when this fragment lets the
    /// datagram be passed on (a fragment with offset 0 and no more fragments
    /// is a whole datagram at once), else [`DefragOutcome::Pending`]. See the
    /// module documentation for the overlap, limit and failure rules.
    pub fn process<'a>(
        &'a mut self,
        now: Timestamp,
        key: FragKey,
        frag: Fragment,
        data: &'a [u8],
        wire_len: u32,
    ) -> DefragOutcome<'a> {
        self.stats.fragments += 1;
        let offset = frag.offset;
        let mut wire = if frag.more { wire_len & !7 } else { wire_len };
        if wire == 0 || offset % 8 != 0 {
            return self.drop_fragment(Drop::Malformed);
        }
        let Some(mut end) = offset.checked_add(wire) else {
            return self.drop_fragment(Drop::Malformed);
        };
        if end as usize > self.cfg.max_datagram_size {
            return self.drop_fragment(Drop::TooLarge);
        }

        let policy = self.cfg.policy;
        let hash = self.store.hash(&key);
        let mut found = self.store.find(hash, &key);
        if let Some(i) = found {
            if self.store.slot(i).deadline <= now.as_nanos() {
                self.drop_slot(i, Lost::TimedOut);
                found = None;
            }
        }
        let idx = match found {
            Some(i) => {
                let s = self.store.slot(i);
                if s.state == State::Passed {
                    return self.drop_fragment(Drop::AfterCut);
                }
                if s.frags as usize >= self.cfg.max_fragments_per_datagram {
                    return self.drop_fragment(Drop::TooMany);
                }
                if policy == OverlapPolicy::Linux {
                    // As Linux's `ip_frag_queue`: fragments that disagree
                    // on where the datagram ends make it corrupt, and the
                    // whole datagram goes.
                    let corrupt = match s.total {
                        // Bytes beyond the known end.
                        Some(t) if frag.more => end > t,
                        // Another end.
                        Some(t) => end != t,
                        // An end before bytes already seen.
                        None => !frag.more && end < s.wire_end,
                    };
                    if corrupt {
                        self.drop_slot(i, Lost::Inconsistent);
                        return self.drop_fragment(Drop::Inconsistent);
                    }
                } else {
                    // The first end seen holds (as a BSD stack completes a
                    // datagram at the first last fragment its fragments
                    // reach): bytes past it are cut off, a fragment that
                    // contradicts it is dropped.
                    match s.total {
                        Some(t) if frag.more => {
                            if offset >= t {
                                return self.drop_fragment(Drop::Inconsistent);
                            }
                            if end > t {
                                end = t;
                                wire = t - offset;
                            }
                        }
                        Some(t) if end != t => return self.drop_fragment(Drop::Inconsistent),
                        _ => {}
                    }
                }
                i
            }
            None => {
                let captured = data.len().min(wire as usize);
                if offset == 0 && !frag.more {
                    // A whole datagram in one fragment: nothing to hold.
                    self.stats.fragments_reassembled += 1;
                    if captured < wire as usize {
                        self.stats.cut += 1;
                    } else {
                        self.stats.reassembled += 1;
                    }
                    return DefragOutcome::Complete(Reassembled {
                        data: data.get(..captured).unwrap_or_default(),
                        wire_len: wire,
                        fragments: 1,
                    });
                }
                if self.cfg.max_fragments_per_datagram == 0 {
                    return self.drop_fragment(Drop::TooMany);
                }
                if self.cfg.max_datagrams == 0 {
                    return self.drop_fragment(Drop::Evicted);
                }
                while self.store.len() >= self.cfg.max_datagrams {
                    match self.store.oldest() {
                        Some(o) => self.drop_slot(o, Lost::Evicted),
                        None => break,
                    }
                }
                let deadline = now.add_nanos(self.cfg.timeout_ns).as_nanos();
                self.store.insert(hash, key, deadline)
            }
        };

        // Store what was captured of it.
        let stored = data
            .get(..(wire as usize).min(data.len()))
            .unwrap_or_default();
        let captured = stored.len() as u32;
        let max_len = self.cfg.max_datagram_size;
        if captured > 0 {
            let plan = self.store.slot(idx).asm.plan(offset, captured, max_len);
            let grow = self.store.slot(idx).asm.growth(&plan);
            if grow > 0 && !self.make_room(grow, idx) {
                if self.store.slot(idx).frags == 0 {
                    self.store.remove(idx);
                }
                return self.drop_fragment(Drop::Memory);
            }
            let asm = &mut self.store.slot_mut(idx).asm;
            let grown = asm.reserve(&plan);
            let ins = asm.insert(&plan, policy, offset, stored);
            self.store.add_memory(grown);
            self.stats.overlaps += ins.overlaps;
            self.stats.overlap_conflicts += ins.conflicts;
        }
        let s = self.store.slot_mut(idx);
        s.frags += 1;
        s.wire_end = s.wire_end.max(end);
        s.has_first |= offset == 0;
        if captured < wire {
            s.cut = s.cut.min(offset + captured);
        }
        if !frag.more && s.total.is_none() {
            // The end is known: what lies past it is not the datagram's
            // (nothing, under the Linux policy, which discarded such a
            // datagram above).
            s.total = Some(end);
            s.asm.truncate(end);
            s.wire_end = end;
            if s.cut >= end {
                s.cut = u32::MAX;
            }
        }
        self.frags_held += 1;
        if self.store.memory() > self.cfg.max_bytes && !self.make_room(0, idx) {
            // Grew past what was foreseen and cannot be made to fit.
            self.drop_slot(idx, Lost::Memory);
            self.store.release(idx);
            return DefragOutcome::Pending;
        }

        let s = self.store.slot(idx);
        let frags = s.frags;
        if s.cut != u32::MAX {
            if !s.has_first {
                return DefragOutcome::Pending;
            }
            // Passed on cut: what was captured from offset 0 on.
            let n = s.asm.prefix().min(s.cut);
            let wire_len = s.total.unwrap_or(s.wire_end);
            self.stats.cut += 1;
            self.stats.fragments_reassembled += u64::from(frags);
            self.frags_held -= u64::from(frags);
            self.store.mark_passed(idx);
            return DefragOutcome::Complete(Reassembled {
                data: self.store.slot(idx).asm.bytes(n),
                wire_len,
                fragments: frags,
            });
        }
        match s.total {
            Some(total) if s.asm.covered() == total => {
                self.stats.reassembled += 1;
                self.stats.fragments_reassembled += u64::from(frags);
                self.frags_held -= u64::from(frags);
                // The bytes stay in the slot until it is reused.
                self.store.remove(idx);
                DefragOutcome::Complete(Reassembled {
                    data: self.store.slot(idx).asm.bytes(total),
                    wire_len: total,
                    fragments: frags,
                })
            }
            _ => DefragOutcome::Pending,
        }
    }

    /// Drops datagrams not completed within the timeout of their first
    /// fragment, as of packet time `now` (not the wall clock).
    ///
    /// O(1) amortized per call: datagrams are kept in creation order, which
    /// is deadline order as long as packet time does not go backwards (if it
    /// does, some datagrams merely expire a little late).
    pub fn expire(&mut self, now: Timestamp) {
        while self.store.oldest_deadline() <= now.as_nanos() {
            let Some(o) = self.store.oldest() else {
                break;
            };
            self.drop_slot(o, Lost::TimedOut);
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> &DefragStats {
        &self.stats
    }

    /// Datagrams being reassembled (passed entries excluded).
    pub fn in_progress(&self) -> usize {
        self.store.live()
    }

    /// Memory held by the datagrams' buffers (those kept for reuse
    /// included), bytes; never more than `max_bytes` after a call.
    pub fn bytes_held(&self) -> usize {
        self.store.memory()
    }

    /// Counts one fragment dropped for `why`.
    fn drop_fragment(&mut self, why: Drop) -> DefragOutcome<'static> {
        let d = &mut self.stats.dropped;
        match why {
            Drop::Malformed => d.malformed += 1,
            Drop::Inconsistent => d.inconsistent += 1,
            Drop::TooLarge => d.too_large += 1,
            Drop::TooMany => d.too_many += 1,
            Drop::AfterCut => d.after_cut += 1,
            Drop::Evicted => d.evicted += 1,
            Drop::Memory => d.memory += 1,
        }
        self.stats.fragments_dropped += 1;
        DefragOutcome::Pending
    }

    /// Takes slot `idx` out of the table for `why`, counting its datagram
    /// and the fragments it held if it was live (a passed entry held none).
    fn drop_slot(&mut self, idx: u32, why: Lost) {
        let s = self.store.slot(idx);
        if s.state == State::Live {
            let frags = u64::from(s.frags);
            let (datagrams, fragments) = match why {
                Lost::TimedOut => (&mut self.stats.timed_out, &mut self.stats.dropped.timed_out),
                Lost::Evicted => (&mut self.stats.evicted, &mut self.stats.dropped.evicted),
                Lost::Memory => (&mut self.stats.memory_full, &mut self.stats.dropped.memory),
                Lost::Inconsistent => (
                    &mut self.stats.inconsistent,
                    &mut self.stats.dropped.inconsistent,
                ),
            };
            *datagrams += 1;
            *fragments += frags;
            self.stats.fragments_dropped += frags;
            self.frags_held -= frags;
        }
        self.store.remove(idx);
    }

    /// Makes room for `need` more bytes of memory for datagram `keep`: frees
    /// the buffers of free slots, then evicts the oldest other datagrams.
    /// False if that cannot be done.
    fn make_room(&mut self, need: usize, keep: u32) -> bool {
        let limit = self.cfg.max_bytes;
        if need.saturating_add(self.store.slot(keep).asm.footprint()) > limit {
            return false;
        }
        while !self.store.release_spare(need, limit) {
            let victim = match self.store.oldest() {
                Some(o) if o == keep => self.store.newer(o),
                o => o,
            };
            let Some(v) = victim else {
                return false;
            };
            self.drop_slot(v, Lost::Memory);
        }
        true
    }
}

/// Why a datagram left the table without being passed on.
#[derive(Clone, Copy, Debug)]
enum Lost {
    TimedOut,
    Evicted,
    Memory,
    Inconsistent,
}
