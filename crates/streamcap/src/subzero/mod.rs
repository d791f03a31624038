//! Subzero copy (Scap §V-E, in XDP form): packets of a stream past its
//! cutoff are dropped before the kernel allocates anything for them, and
//! counted per flow so that records stay exact.
//!
//! When a stream direction is past its cutoff (or discarded by the
//! application) with nothing buffered or waiting out of order, the worker
//! lists its key ([`DropKey`]) in a [`FlowDropMap`]. The map's owner (the
//! XDP program of [`xdp`], built with the `xdp` feature) then drops that
//! direction's packets that carry neither SYN, FIN nor RST, and counts
//! them ([`DropCounts`]). The worker takes the entry back (read, closed
//! and removed as one step against the program: a packet dropped at that
//! moment is either in the counts or passed to the worker) and adds its
//! counts to the stream's:
//!
//! - when a SYN, FIN or RST of the direction reaches it (they always pass),
//!   before the packet is processed, so the stream's sequence progress is
//!   where the dropped packets left it;
//! - when the connection terminates (FIN/RST, inactivity, eviction, the end
//!   of the capture);
//! - when the entry's own timeout falls due. As in Scap, the stream may
//!   still be active: its next packet then reaches the worker and the entry
//!   is listed again with twice the timeout, so a long stream is taken back
//!   a logarithmic number of times;
//! - when the connection's inactivity timeout falls due: if the entry shows
//!   packets since, the connection is not idle, and the entry is listed
//!   again;
//! - at an active-timeout report (`--active-timeout`), so interim records
//!   count the dropped packets too (listed again at once).
//!
//! The counts are added as if the worker had seen the packets: `pkts` and
//! `bytes` (IP length), the sequence-space advance as `stream_bytes` and
//! `discarded` (so `stream_bytes = captured + discarded + dropped +
//! missing` still holds), payload bytes below the highest end as
//! `retransmitted`, payload-carrying packets as `pkts_discarded`, and the
//! last one's time as the stream's end.
//!
//! What the map cannot tell apart: a hole in the dropped stretch (a packet
//! the network lost past the cutoff) counts as `discarded`, not `missing`;
//! and a segment retransmitted within the dropped stretch counts in
//! `pkts_discarded` as well as `retransmitted`. Packets and bytes are exact.
//!
//! A full map is counted ([`SubzeroStats::map_full`]) and the stream falls
//! back to discarding in user space; it is tried again after the entry
//! timeout.

mod memory;
mod worker;

pub use memory::MemoryMap;

pub(crate) use worker::{Entry, SUBZERO_A};
#[cfg(feature = "xdp")]
pub mod xdp;

use crate::flow::{FlowKey, Side};
use crate::time::Timestamp;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

/// One direction of a flow as its packets carry it: the key of a
/// [`FlowDropMap`] entry. The layout is the XDP program's `struct drop_key`
/// (`bpf/flow_drop.bpf.c`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DropKey {
    /// Source address (IPv4 in the first 4 bytes, the rest zero).
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// VLAN tags as [`FlowKey::vlan_key`] gives them.
    pub vlan: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// `6` (TCP) or `17` (UDP).
    pub proto: u8,
    /// 1 for IPv6, 0 for IPv4.
    pub v6: u8,
    /// Zero.
    pub pad: [u8; 2],
}

impl DropKey {
    /// The key of the packets that side `from` of flow `key` sends; `None`
    /// for flows the XDP program cannot match (tunnelled, or neither TCP
    /// nor UDP).
    pub fn of(key: &FlowKey, from: Side) -> Option<DropKey> {
        if key.tunnel_id() != 0 || !matches!(key.proto(), 6 | 17) {
            return None;
        }
        let (s, sport) = key.endpoint(from);
        let (d, dport) = key.endpoint(from.other());
        let mut k = DropKey {
            vlan: key.vlan_key(),
            sport,
            dport,
            proto: key.proto(),
            ..DropKey::default()
        };
        match (s, d) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                k.src[..4].copy_from_slice(&s.octets());
                k.dst[..4].copy_from_slice(&d.octets());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                k.src = s.octets();
                k.dst = d.octets();
                k.v6 = 1;
            }
            _ => return None,
        }
        Some(k)
    }

    /// The key's bytes, as the kernel map stores them.
    pub fn as_bytes(&self) -> [u8; 44] {
        let mut b = [0u8; 44];
        b[..16].copy_from_slice(&self.src);
        b[16..32].copy_from_slice(&self.dst);
        b[32..36].copy_from_slice(&self.vlan.to_ne_bytes());
        b[36..38].copy_from_slice(&self.sport.to_ne_bytes());
        b[38..40].copy_from_slice(&self.dport.to_ne_bytes());
        b[40] = self.proto;
        b[41] = self.v6;
        b
    }
}

/// What the map dropped for one key while it was listed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Packets dropped.
    pub pkts: u64,
    /// Their IP length (headers and payload).
    pub bytes: u64,
    /// Their transport payload bytes.
    pub payload: u64,
    /// Of them, packets that carried payload.
    pub data_pkts: u64,
    /// TCP: how far the sequence space advanced past the sequence number
    /// given when the key was listed (the highest end of a segment with
    /// payload; a pure ACK's sequence number is not stream data), in 64
    /// bits, so a stream that wraps around 2^32 while listed is counted
    /// whole. A segment ending more than 2^30 past the highest end so far
    /// does not move it (the engine's `max_seq_jump`).
    pub advance: u64,
    /// The time of the last one, on the packets' clock.
    pub last: Option<Timestamp>,
}

/// Why a key could not be listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The map holds as many entries as it can.
    Full,
    /// Anything else (the message of the failed call).
    Failed(String),
}

/// A table of flow directions to drop before they reach the capture
/// socket, with per-entry counts of what was dropped: the XDP program's
/// map (`xdp::XdpFlowDrop`, with the `xdp` feature), or [`MemoryMap`]. Shared by every
/// worker of a run; each lists and takes back only its own flows.
pub trait FlowDropMap: Send + Sync {
    /// Lists `key`: its packets without SYN, FIN or RST are dropped and
    /// counted from now on; for TCP, `seq` is the sequence number of the
    /// stream's delivery point, from which [`DropCounts::advance`] counts.
    /// Listing a key already listed keeps its counts.
    fn insert(&self, key: &DropKey, seq: Option<u32>) -> Result<(), InsertError>;
    /// Removes `key` and returns what was dropped for it (`None` if it was
    /// not listed), in one step: nothing dropped in between is lost.
    fn take(&self, key: &DropKey) -> Option<DropCounts>;
}

/// Subzero copy for a run: the map and the first timeout of its entries.
#[derive(Clone)]
pub struct SubzeroConfig {
    /// Where the keys go.
    pub map: Arc<dyn FlowDropMap>,
    /// An entry's first timeout, ns; each time a stream is listed again
    /// after its entry timed out, the timeout doubles.
    pub timeout: u64,
}

impl fmt::Debug for SubzeroConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubzeroConfig")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The default first timeout of an entry: 10 s.
pub const DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;

/// What the workers did with the map.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SubzeroStats {
    /// Keys listed for the first time for their stream.
    pub installed: u64,
    /// Keys listed again after their entry timed out (with a doubled timeout).
    pub reinstalled: u64,
    /// Entries taken back because their timeout fell due.
    pub timed_out: u64,
    /// Keys not listed because the map was full.
    pub map_full: u64,
    /// Keys not listed for another reason.
    pub failed: u64,
    /// Packets the map dropped, as the workers took them back.
    pub pkts: u64,
    /// IP bytes of those packets.
    pub bytes: u64,
}

impl SubzeroStats {
    /// Adds another worker's counters.
    pub fn add(&mut self, o: &SubzeroStats) {
        self.installed += o.installed;
        self.reinstalled += o.reinstalled;
        self.timed_out += o.timed_out;
        self.map_full += o.map_full;
        self.failed += o.failed;
        self.pkts += o.pkts;
        self.bytes += o.bytes;
    }
}

#[cfg(test)]
mod tests;
