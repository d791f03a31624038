//! The ring model of a paced replay: which packets a kernel `TPACKET_V3`
//! ring of a given size would drop, given when each packet arrives (falls
//! due) and when the capture stage takes it out.
//!
//! A packet occupies the ring from the moment it falls due until the
//! capture stage takes it. When packet `j` falls due at `t_j`, the ring
//! holds every accepted packet before it whose take time is after `t_j`;
//! if its bytes plus packet `j`'s exceed the ring's size, packet `j` is
//! dropped (it never enters the ring, so it takes no room later). Each
//! packet costs its captured bytes plus [`FRAME_HEADER`], as in the kernel's
//! ring. The model frees room packet by packet; the kernel's `TPACKET_V3`
//! ring frees it a whole block (1 MiB by default) at a time, when the
//! reader has finished every packet of the block, and puts each frame's
//! network header on a 16-byte boundary (up to 16 more bytes per packet);
//! neither is modelled.

use std::collections::VecDeque;

/// `sizeof(struct tpacket3_hdr)`.
const TPACKET3_HDR_SIZE: u64 = 48;
/// `sizeof(struct sockaddr_ll)`, which the kernel stores after the header.
const SOCKADDR_LL_SIZE: u64 = 20;
/// `TPACKET_ALIGNMENT`.
const TPACKET_ALIGNMENT: u64 = 16;

/// Bytes a `TPACKET_V3` ring spends on each packet besides its captured
/// bytes: the packet header (`struct tpacket3_hdr`) and the `sockaddr_ll`
/// the kernel writes after it, together aligned to 16 bytes
/// (`TPACKET_ALIGN(TPACKET3_HDRLEN)`): 80.
pub const FRAME_HEADER: u64 =
    (TPACKET3_HDR_SIZE + SOCKADDR_LL_SIZE).div_ceil(TPACKET_ALIGNMENT) * TPACKET_ALIGNMENT;

/// The ring size of a paced replay when none is given: the size of a live
/// capture's ring by default (`RingConfig::default`, 32 MiB).
pub const DEFAULT_RING_SIZE: u64 = 32 << 20;

/// Bytes of the ring a packet of `captured` bytes takes.
pub fn frame_cost(captured: usize) -> u64 {
    FRAME_HEADER.saturating_add(captured as u64)
}

/// A ring of a fixed number of bytes, offered packets in order.
///
/// It remembers the take time and cost of each accepted packet still in
/// the ring; packets are taken in order, so these are a queue whose front
/// leaves first. The queue holds at most `size / FRAME_HEADER` packets.
#[derive(Clone, Debug)]
pub struct RingModel {
    size: u64,
    /// (take time, cost) of the accepted packets not yet known to be taken.
    held: VecDeque<(u64, u64)>,
    /// Their total cost.
    bytes: u64,
    peak: u64,
    /// The latest take time offered (take times never decrease).
    last_take: u64,
}

impl RingModel {
    /// An empty ring of `size` bytes.
    pub fn new(size: u64) -> RingModel {
        RingModel {
            size,
            held: VecDeque::new(),
            bytes: 0,
            peak: 0,
            last_take: 0,
        }
    }

    /// The ring's size, bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Most bytes held at once, counting each accepted packet as it arrived.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Offers a packet of `cost` bytes that falls due at `due`, to be taken
    /// at `take` if it is accepted. Packets taken at or before `due` have
    /// left the ring; the packet is accepted if the ring then has room for
    /// it. Times are nanoseconds of one clock; `due` must not decrease from
    /// one offer to the next, and a `take` before `due` or before an
    /// earlier packet's take is moved up to the later of the two (one
    /// capture stage takes packets in order, none before it arrives).
    pub fn offer(&mut self, due: u64, take: u64, cost: u64) -> bool {
        while let Some(&(t, c)) = self.held.front() {
            if t > due {
                break;
            }
            self.held.pop_front();
            self.bytes -= c;
        }
        let after = self.bytes.saturating_add(cost);
        if after > self.size {
            return false;
        }
        let take = take.max(due).max(self.last_take);
        self.last_take = take;
        // A packet taken the moment it arrives never holds room for another.
        if take > due {
            self.held.push_back((take, cost));
            self.bytes = after;
        }
        self.peak = self.peak.max(after);
        true
    }
}
