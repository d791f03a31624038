//! What an AF_XDP socket counts.

use super::pool::PoolStats;

/// An AF_XDP socket's counters: the kernel's, and the pool's.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Packets handed to the application.
    pub received: u64,
    /// Dropped by the kernel for want of a frame in the fill ring while
    /// the pool had free chunks (user space did not top it up in time).
    pub fill_ring_empty: u64,
    /// Dropped by the kernel for want of a frame while the pool was
    /// exhausted: every frame waited in the RX ring or in the
    /// application's hands.
    pub pool_exhausted: u64,
    /// Dropped because the RX ring was full (cannot happen with the ring
    /// as large as the pool, which is how [`AfXdp`] sizes it).
    pub rx_ring_full: u64,
    /// Dropped by the socket for other reasons (a packet larger than a
    /// frame, chiefly).
    pub rx_dropped: u64,
    /// Descriptors in the fill ring the kernel refused.
    pub rx_invalid: u64,
    /// The pool: free chunks, the fewest free at once, chunks attached and
    /// recycled, exhaustion events.
    pub pool: PoolStats,
    /// Frames in chunks the application still holds.
    pub held_frames: u64,
}

impl XskStats {
    /// Every packet the kernel dropped on the way to the application.
    pub fn drops(&self) -> u64 {
        self.fill_ring_empty + self.pool_exhausted + self.rx_ring_full + self.rx_dropped
    }

    /// The counters of several sockets together: sums, and the fewest
    /// free chunks of any pool.
    pub fn merge(&mut self, o: &XskStats) {
        self.received += o.received;
        self.fill_ring_empty += o.fill_ring_empty;
        self.pool_exhausted += o.pool_exhausted;
        self.rx_ring_full += o.rx_ring_full;
        self.rx_dropped += o.rx_dropped;
        self.rx_invalid += o.rx_invalid;
        self.held_frames += o.held_frames;
        let p = &mut self.pool;
        p.min_free = if p.chunks == 0 {
            o.pool.min_free
        } else {
            p.min_free.min(o.pool.min_free)
        };
        p.chunks += o.pool.chunks;
        p.free += o.pool.free;
        p.attached += o.pool.attached;
        p.recycled += o.pool.recycled;
        p.exhausted += o.pool.exhausted;
    }
}
