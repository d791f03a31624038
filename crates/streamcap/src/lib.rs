//! # streamcap
//!
//! Stream-oriented network traffic capture and analysis.
//!
//! streamcap turns captured packets into reassembled transport-layer streams
//! and hands them to the application in chunks through callbacks, following
//! the Scap design (Papadogiannakis et al.). The data path, one module per
//! stage:
//!
//! ```text
//! source ─► decode ─► (defrag) ─► flow table ─► reassembly ─► deliver ─► your callbacks
//! ```
//!
//! - [`source`]: pcap / pcapng files, zero-copy.
//! - [`decode`]: Ethernet, VLAN, IPv4/IPv6, TCP/UDP/ICMP headers; IP fragment reassembly.
//! - [`flow`]: the bidirectional connection table with inactivity expiry.
//! - [`reassembly`]: TCP sequence tracking, out-of-order buffering, overlap policies.
//! - [`deliver`]: stream descriptors, chunks, the memory budget and the callbacks.
//! - [`engine`]: the worker that runs the whole path for one shard of flows.
//! - [`Capture`] ties a source, a [`Config`] and a [`deliver::Handler`] together.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod config;
pub mod decode;
pub mod deliver;
pub mod engine;
pub mod filter;
pub mod flow;
pub mod reassembly;
pub mod source;
pub mod stats;
pub mod time;

pub use capture::{Capture, CaptureBuilder, Progress, Report, RunHooks, Verdict};
pub use config::{Config, ReassemblyMode};
pub use deliver::{Callbacks, Chunk, Handler, Stream};
pub use reassembly::policy::OverlapPolicy;
pub use source::{FileSource, LinkType, PacketSource, RawPacket, SourceError};
pub use stats::GlobalStats;
pub use time::Timestamp;
