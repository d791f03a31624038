//! The fuzz targets' checks, one module per target, each a `run(&[u8])`
//! that panics on a violation. `fuzz_targets/*.rs` hand libFuzzer's inputs
//! to them; `crates/streamcap/tests/fuzz_regressions.rs` runs the stored
//! inputs of `fuzz/regressions/` through the same functions in the normal
//! test suite.
#![allow(dead_code)]

#[path = "../../crates/streamcap-cli/src/args.rs"]
pub mod args;
#[path = "bpf.rs"]
pub mod bpf;
#[path = "common.rs"]
pub mod common;
#[path = "decode.rs"]
pub mod decode;
#[path = "defrag.rs"]
pub mod defrag;
#[path = "encap.rs"]
pub mod encap;
#[path = "engine_frames.rs"]
pub mod engine_frames;
#[path = "filter.rs"]
pub mod filter;
#[path = "options.rs"]
pub mod options;
#[path = "pcap_reader.rs"]
pub mod pcap_reader;
#[path = "../../crates/streamcap-cli/src/rate.rs"]
pub mod rate;
#[path = "../../crates/streamcap-cli/src/size.rs"]
pub mod size;
#[path = "subzero.rs"]
pub mod subzero;
#[path = "tcp_segments.rs"]
pub mod tcp_segments;

/// A target's check: panics when the input breaks an invariant.
pub type Check = fn(&[u8]);

/// Every target's name and check, for the regression runner.
pub const TARGETS: [(&str, Check); 10] = [
    ("bpf", bpf::run),
    ("decode", decode::run),
    ("defrag", defrag::run),
    ("encap", encap::run),
    ("engine_frames", engine_frames::run),
    ("filter", filter::run),
    ("options", options::run),
    ("pcap_reader", pcap_reader::run),
    ("subzero", subzero::run),
    ("tcp_segments", tcp_segments::run),
];
