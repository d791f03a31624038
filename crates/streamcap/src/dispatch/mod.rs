//! Which core does the work: the per-shard worker and splitting the input
//! between worker threads.
//!
//! - [`worker`]: one flow shard's whole data path ([`Worker`]), with its
//!   grouped batch path.
//! - [`fanout`]: which worker owns a packet when several workers read the
//!   same file (in-process fan-out: flow hash or port locality).
//! - [`live`]: live capture with one kernel fan-out socket per worker.
//! - `buddies` (with the `xdp` feature): live capture from several AF_XDP
//!   queues as a buddy group: work moves from a busy worker to an idle one
//!   (whole chunks, or flow-hash buckets with their connections).
//! - [`locality`]: locality buffering in the worker: each batch of its
//!   input processed grouped by the lower of each packet's two ports.
//! - [`analysis`]: the decoupled analysis stage: the application's
//!   callbacks on threads of their own, fed by the worker.
//! - [`offload`]: flow-affine offloading: flow-hash buckets, the
//!   indirection table, and handing a bucket's connections to another
//!   worker.
//! - [`workers`]: the settings of a multi-worker run ([`workers::Parallel`]),
//!   CPU pinning, and the per-worker and merged reports.
//!
//! Each worker owns its flow shard, its memory budget and its handler (Scap's
//! per-core pairing of capture and analysis); no connection state is shared
//! between threads.

pub mod analysis;
mod batch;
#[cfg(all(target_os = "linux", feature = "xdp"))]
pub mod buddies;
pub mod fanout;
#[cfg(target_os = "linux")]
pub mod live;
pub mod locality;
pub mod offload;
pub mod worker;
pub mod workers;

pub use worker::Worker;
