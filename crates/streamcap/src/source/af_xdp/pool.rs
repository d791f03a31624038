//! WireCAP's ring-buffer pool over an AF_XDP UMEM: `R` chunks of `M`
//! frames, each chunk a contiguous run of frames.
//!
//! A chunk is *free* (here, ready to be given to the kernel), *attached*
//! (its frames are in the fill ring, waiting for packets), or *captured*
//! (its frames hold received packets, in the RX ring or in the
//! application's hands). The pool hands the fill ring whole free chunks;
//! a chunk is free again once every one of its frames has come back
//! (recycled). Frames come back one by one, in any order and from any
//! number of batches, so a chunk the application keeps for a long time
//! keeps only itself out of the pool.
//!
//! This is safe bookkeeping over frame addresses; the kernel side is in
//! the parent module.

use std::fmt;

/// The smallest frame the kernel accepts (`XDP_UMEM_MIN_CHUNK_SIZE`).
pub const MIN_FRAME_SIZE: u32 = 2048;
/// The largest frame in aligned mode: a page.
pub const MAX_FRAME_SIZE: u32 = 4096;
/// What the kernel reserves in front of each packet in a frame
/// (`XDP_PACKET_HEADROOM`).
pub const KERNEL_HEADROOM: u32 = 256;
/// The most frames one pool may have (the rings' indexes are 32-bit, and
/// a ring's size is a power of two no larger than this).
pub const MAX_FRAMES: u64 = 1 << 24;

/// The pool's shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// `R`: how many chunks.
    pub chunks: u32,
    /// `M`: frames per chunk.
    pub frames_per_chunk: u32,
    /// Bytes per frame: 2048 or 4096. A frame holds one packet of up to
    /// `frame_size - 256` bytes.
    pub frame_size: u32,
}

impl Default for PoolConfig {
    /// 256 chunks of 256 frames of 2 KiB: 65,536 packets, 128 MiB.
    fn default() -> PoolConfig {
        PoolConfig {
            chunks: 256,
            frames_per_chunk: 256,
            frame_size: MIN_FRAME_SIZE,
        }
    }
}

impl PoolConfig {
    /// Frames in the pool: `R * M`.
    pub fn frames(&self) -> u64 {
        u64::from(self.chunks) * u64::from(self.frames_per_chunk)
    }

    /// Bytes of the UMEM: `R * M * frame size`.
    pub fn bytes(&self) -> u64 {
        self.frames() * u64::from(self.frame_size)
    }

    /// The largest packet a frame holds.
    pub fn max_packet(&self) -> u32 {
        self.frame_size.saturating_sub(KERNEL_HEADROOM)
    }

    /// Checks the shape: at least one chunk of at least one frame, a frame
    /// size of 2048 or 4096, at most [`MAX_FRAMES`] frames.
    pub fn validate(&self) -> Result<(), String> {
        if self.chunks == 0 || self.frames_per_chunk == 0 {
            return Err("the pool needs at least one chunk of at least one frame".into());
        }
        if self.frame_size != MIN_FRAME_SIZE && self.frame_size != MAX_FRAME_SIZE {
            return Err(format!(
                "a frame is {MIN_FRAME_SIZE} or {MAX_FRAME_SIZE} bytes, not {}",
                self.frame_size
            ));
        }
        if self.frames() > MAX_FRAMES {
            return Err(format!(
                "{} chunks of {} frames are {} frames, more than {MAX_FRAMES}",
                self.chunks,
                self.frames_per_chunk,
                self.frames()
            ));
        }
        Ok(())
    }

    /// The size of the fill and RX rings: room for every frame of the
    /// pool (a power of two), so that the pool, not a ring, bounds how
    /// many packets can wait.
    pub fn ring_size(&self) -> u32 {
        let frames = self.frames().clamp(1, MAX_FRAMES);
        // At most 2^24: fits.
        frames.next_power_of_two() as u32
    }
}

/// A frame address that is not one the pool gave out, or came back twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadFrame {
    /// The address.
    pub addr: u64,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for BadFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame address {:#x}: {}", self.addr, self.reason)
    }
}

/// How full the pool is and what it did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// `R`.
    pub chunks: u32,
    /// Chunks free now.
    pub free: u32,
    /// The fewest chunks that were free at once.
    pub min_free: u32,
    /// Chunks given to the fill ring.
    pub attached: u64,
    /// Chunks that came back whole (every frame recycled).
    pub recycled: u64,
    /// How often the pool ran dry: the fill ring was empty and the pool
    /// had no free chunk to give it (every frame was in the RX ring or in
    /// the application's hands), so the next packet would be dropped.
    pub exhausted: u64,
}

/// The pool's bookkeeping.
#[derive(Debug)]
pub struct ChunkPool {
    cfg: PoolConfig,
    /// Free chunks, most recently recycled last (handed out first: its
    /// frames are the likeliest to be in the cache).
    free: Vec<u32>,
    /// Per chunk: frames given out and not back yet.
    out: Vec<u32>,
    /// Per frame: given out and not back yet (one bit each), so that a
    /// frame returned twice cannot free its chunk early.
    frame_out: Vec<u64>,
    stats: PoolStats,
}

impl ChunkPool {
    /// A pool with every chunk free. `cfg` must be valid
    /// ([`PoolConfig::validate`]).
    pub fn new(cfg: PoolConfig) -> ChunkPool {
        let chunks = cfg.chunks;
        ChunkPool {
            cfg,
            free: (0..chunks).rev().collect(),
            out: vec![0; chunks as usize],
            frame_out: vec![0; cfg.frames().div_ceil(64) as usize],
            stats: PoolStats {
                chunks,
                free: chunks,
                min_free: chunks,
                ..PoolStats::default()
            },
        }
    }

    /// The shape.
    pub fn config(&self) -> PoolConfig {
        self.cfg
    }

    /// Takes a free chunk to attach to the fill ring; its frames'
    /// addresses are [`ChunkPool::frame_addrs`]. `None` when every chunk
    /// is out.
    pub fn attach(&mut self) -> Option<u32> {
        let chunk = self.free.pop()?;
        self.out[chunk as usize] = self.cfg.frames_per_chunk;
        let first = u64::from(chunk) * u64::from(self.cfg.frames_per_chunk);
        for f in first..first + u64::from(self.cfg.frames_per_chunk) {
            self.frame_out[(f / 64) as usize] |= 1 << (f % 64);
        }
        self.stats.attached += 1;
        self.stats.min_free = self.stats.min_free.min(self.free_chunks());
        Some(chunk)
    }

    /// The UMEM addresses of chunk `chunk`'s frames, in order.
    pub fn frame_addrs(&self, chunk: u32) -> impl Iterator<Item = u64> {
        let m = u64::from(self.cfg.frames_per_chunk);
        let size = u64::from(self.cfg.frame_size);
        let first = u64::from(chunk) * m;
        (first..first + m).map(move |frame| frame * size)
    }

    /// The chunk that holds UMEM address `addr` (anywhere in a frame: the
    /// kernel's descriptors point past the headroom).
    pub fn chunk_of(&self, addr: u64) -> Option<u32> {
        let frame = addr / u64::from(self.cfg.frame_size);
        (frame < self.cfg.frames()).then(|| (frame / u64::from(self.cfg.frames_per_chunk)) as u32)
    }

    /// A frame came back (its packet was processed): the chunk is free
    /// again once all of its frames are back. Returns whether that
    /// happened.
    pub fn recycle(&mut self, addr: u64) -> Result<bool, BadFrame> {
        let Some(chunk) = self.chunk_of(addr) else {
            return Err(BadFrame {
                addr,
                reason: "outside the pool",
            });
        };
        let frame = addr / u64::from(self.cfg.frame_size);
        let (word, bit) = ((frame / 64) as usize, 1u64 << (frame % 64));
        if self.frame_out[word] & bit == 0 {
            return Err(BadFrame {
                addr,
                reason: "the frame is not out (recycled twice?)",
            });
        }
        self.frame_out[word] &= !bit;
        let out = &mut self.out[chunk as usize];
        *out -= 1;
        if *out > 0 {
            return Ok(false);
        }
        self.free.push(chunk);
        self.stats.recycled += 1;
        Ok(true)
    }

    /// Puts back a chunk [`ChunkPool::attach`] gave that could not be
    /// attached after all.
    pub fn unattach(&mut self, chunk: u32) {
        if let Some(out) = self.out.get_mut(chunk as usize) {
            *out = 0;
            let first = u64::from(chunk) * u64::from(self.cfg.frames_per_chunk);
            for f in first..first + u64::from(self.cfg.frames_per_chunk) {
                self.frame_out[(f / 64) as usize] &= !(1 << (f % 64));
            }
            self.free.push(chunk);
            self.stats.attached = self.stats.attached.saturating_sub(1);
        }
    }

    /// Counts one time the pool ran dry (see [`PoolStats::exhausted`]).
    pub fn note_exhausted(&mut self) {
        self.stats.exhausted += 1;
    }

    /// Chunks free now.
    pub fn free_chunks(&self) -> u32 {
        self.free.len() as u32
    }

    /// Frames given out and not back yet (attached or captured).
    pub fn frames_out(&self) -> u64 {
        self.out.iter().map(|&n| u64::from(n)).sum()
    }

    /// The counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            free: self.free_chunks(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> PoolConfig {
        PoolConfig {
            chunks: 3,
            frames_per_chunk: 4,
            frame_size: 2048,
        }
    }

    #[test]
    fn a_chunk_is_free_again_once_every_frame_is_back_in_any_order() {
        let mut pool = ChunkPool::new(small());
        let c = pool.attach().expect("a free chunk");
        let addrs: Vec<u64> = pool.frame_addrs(c).collect();
        assert_eq!(addrs.len(), 4);
        assert_eq!(pool.free_chunks(), 2);
        // The kernel's descriptors point inside the frame, past headroom.
        for (i, &a) in addrs.iter().rev().enumerate() {
            let freed = pool.recycle(a + 256).expect("a frame of the pool");
            assert_eq!(freed, i == 3);
        }
        assert_eq!(pool.free_chunks(), 3);
        assert_eq!(pool.frames_out(), 0);
        assert_eq!(pool.stats().recycled, 1);
    }

    #[test]
    fn exhaustion_is_counted_and_ends_when_a_chunk_comes_back() {
        let mut pool = ChunkPool::new(small());
        let chunks: Vec<u32> = std::iter::from_fn(|| pool.attach()).collect();
        assert_eq!(chunks.len(), 3);
        assert_eq!(pool.stats().min_free, 0);
        // A kept chunk stays out; the others come back.
        for &c in &chunks[1..] {
            let addrs: Vec<u64> = pool.frame_addrs(c).collect();
            for a in addrs {
                pool.recycle(a).expect("a frame of the pool");
            }
        }
        assert_eq!(pool.free_chunks(), 2);
        assert_eq!(pool.frames_out(), 4);
        assert!(pool.attach().is_some());
    }

    #[test]
    fn foreign_and_doubly_returned_frames_are_refused() {
        let mut pool = ChunkPool::new(small());
        assert!(pool.recycle(12 * 2048).is_err());
        let c = pool.attach().expect("a free chunk");
        let first = pool.frame_addrs(c).next().expect("a frame");
        for a in pool.frame_addrs(c).collect::<Vec<_>>() {
            pool.recycle(a).expect("once");
        }
        assert!(pool.recycle(first).is_err());
    }

    #[test]
    fn a_frame_returned_twice_does_not_free_its_chunk_early() {
        let mut pool = ChunkPool::new(small());
        let c = pool.attach().expect("a free chunk");
        let addrs: Vec<u64> = pool.frame_addrs(c).collect();
        pool.recycle(addrs[0]).expect("once");
        assert!(
            pool.recycle(addrs[0] + 100).is_err(),
            "the same frame again"
        );
        for &a in &addrs[1..3] {
            assert_eq!(pool.recycle(a), Ok(false));
        }
        // Only the last frame frees the chunk.
        assert_eq!(pool.recycle(addrs[3]), Ok(true));
    }

    #[test]
    fn shapes_are_checked_and_rings_hold_the_whole_pool() {
        assert!(PoolConfig::default().validate().is_ok());
        assert_eq!(PoolConfig::default().ring_size(), 65_536);
        assert_eq!(small().ring_size(), 16);
        let bad = PoolConfig {
            frame_size: 3000,
            ..small()
        };
        assert!(bad.validate().is_err());
        let huge = PoolConfig {
            chunks: 1 << 16,
            frames_per_chunk: 1 << 16,
            frame_size: 2048,
        };
        assert!(huge.validate().is_err());
    }
}
