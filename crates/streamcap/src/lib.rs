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
//! - [`dispatch`]: the [`Worker`] that runs the whole path for one shard of
//!   flows, and the split of the input between worker threads.
//! - [`handoff`]: channel hand-offs between threads that poll before they sleep.
//! - [`Capture`] ties a source, a [`Config`] and a [`deliver::Handler`] together.
//!
//! ## Example
//!
//! Print every stream of a capture with its size, statistics only (cutoff 0):
//!
//! ```
//! use streamcap::{deliver::Callbacks, Capture};
//!
//! let on_close = |s: &mut streamcap::Stream<'_, ()>| {
//!     let ((sip, sp), (dip, dp)) = (s.src(), s.dst());
//!     println!("{sip}:{sp} -> {dip}:{dp}: {} bytes", s.info().counters.stream_bytes);
//! };
//! let report = Capture::builder()
//!     .cutoff(0)
//!     .build()
//!     .run_file("../../samples/sample.pcap", Callbacks::<()>::new().on_close(on_close))?;
//! assert_eq!(report.stats.packets, 472);
//! assert!(report.stats.totals.invariant_holds());
//! # Ok::<(), streamcap::SourceError>(())
//! ```
//!
//! With a [`Handler`] and per-stream state, counting the bytes of each
//! direction as chunks arrive:
//!
//! ```
//! use streamcap::{Capture, Chunk, Handler, Stream};
//!
//! #[derive(Default)]
//! struct Bytes(u64);
//!
//! impl Handler for Bytes {
//!     type State = u64; // bytes seen by this stream
//!     fn on_data(&mut self, s: &mut Stream<'_, u64>, chunk: &Chunk<'_>) {
//!         *s.state() += chunk.new_data().len() as u64;
//!     }
//!     fn on_close(&mut self, s: &mut Stream<'_, u64>) {
//!         let seen = *s.state();
//!         assert_eq!(seen, s.info().counters.captured);
//!         self.0 += seen;
//!     }
//! }
//!
//! let report = Capture::builder().chunk_size(4096).build().run_file("../../samples/sample.pcap", Bytes::default())?;
//! assert_eq!(report.handler.0, report.stats.totals.captured);
//! # Ok::<(), streamcap::SourceError>(())
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod config;
pub mod decode;
pub mod deliver;
pub mod dispatch;
mod fast_path;
pub mod filter;
pub mod flow;
pub mod forward;
pub mod handoff;
pub mod huge_pages;
pub mod reassembly;
pub mod source;
pub mod stats;
pub mod subzero;
pub mod time;

pub use capture::{Capture, CaptureBuilder, Progress, Report, RunHooks, Verdict};
pub use config::{Config, ReassemblyMode};
pub use deliver::{Callbacks, Chunk, Handler, Stream};
pub use dispatch::Worker;
pub(crate) use fast_path::fast_path_enabled;
pub use reassembly::policy::OverlapPolicy;
pub use source::{FileSource, LinkType, PacketSource, RawPacket, SourceError};
pub use stats::GlobalStats;
pub use time::Timestamp;

/// Says why a unit test does not run. Written straight to the process's
/// stderr: the test harness captures `eprintln!` (shown only for failing
/// tests), so a skipped test would otherwise pass without a word.
#[cfg(test)]
pub(crate) fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}

/// The shared corpus's folder and every pcap and
/// pcapng file under it, sorted; no files when it is absent.
#[cfg(test)]
pub(crate) fn corpus_captures() -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng")
            {
                out.push(path);
            }
        }
    }
    // As the integration tests' `corpus_path`: `$STREAMCAP_CORPUS`, else
    // beside the repository.
    let root = match std::env::var_os("STREAMCAP_CORPUS") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    let root = root.canonicalize().unwrap_or(root);
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    (root, files)
}
