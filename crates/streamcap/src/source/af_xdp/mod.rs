//! Live capture through an AF_XDP socket whose UMEM is WireCAP's
//! ring-buffer pool (Wu and DeMar, §3.2): `R` chunks of `M` frames per
//! receive queue.
//!
//! The path of a packet: streamcap's XDP program on the interface
//! ([`crate::subzero::xdp::XdpFlowDrop`]) drops what the subzero-copy stage
//! listed and redirects the rest to the AF_XDP socket bound to the
//! packet's receive queue; the kernel writes it into a frame the fill ring
//! offered and puts a descriptor in the RX ring. [`AfXdp::next_block`]
//! hands up to `M` received frames to a callback in place (capture, no
//! copy) and gives them back to the pool when it returns (recycle);
//! [`AfXdp::next_chunk`] hands them over as a [`Chunk`] the application
//! keeps as long as it likes, recycled when dropped, from any thread.
//!
//! The fill and RX rings have room for every frame of the pool, and the
//! fill ring is topped up with every free chunk after each batch, so
//! packets that wait for a slow stretch of analysis wait in the pool: the
//! kernel drops only when every frame is out (the pool is exhausted).
//! [`XskStats`] counts drops at each level separately.
//!
//! Packets are timestamped when user space takes them off the RX ring
//! (one clock reading per batch): AF_XDP carries no receive time.
//!
//! The UMEM is pinned memory, counted against `RLIMIT_MEMLOCK` for a
//! process without `CAP_IPC_LOCK`: [`AfXdp::open`] raises the limit when it
//! may and otherwise fails with a message that gives the size.

#[cfg(feature = "xdp")]
mod libxdp;
pub mod pool;
#[cfg(feature = "xdp")]
mod ring;
#[cfg(feature = "xdp")]
mod socket;
mod stats;

pub use self::pool::{ChunkPool, PoolConfig, PoolStats};
#[cfg(feature = "xdp")]
pub use self::socket::{AfXdp, AfXdpConfig, BindMode, Chunk, ForwardStats, FrameCensus, XskMode};
pub use self::stats::XskStats;
