//! Which core does the work: splitting the input between worker threads.
//!
//! - [`fanout`]: which worker owns a packet when several workers read the
//!   same file (in-process fan-out: flow hash or port locality).
//! - [`live`]: live capture with one kernel fan-out socket per worker.
//! - [`workers`]: the settings of a multi-worker run ([`workers::Parallel`]),
//!   CPU pinning, and the per-worker and merged reports.
//!
//! Each worker owns its flow shard, its memory budget and its handler (Scap's
//! per-core pairing of capture and analysis); no connection state is shared
//! between threads.

pub mod fanout;
#[cfg(target_os = "linux")]
pub mod live;
pub mod workers;
