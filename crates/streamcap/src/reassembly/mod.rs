//! Reassembly: turning segments into byte streams.
//!
//! - [`policy`]: target-based overlap policies.
//! - [`assembler`]: the ordered out-of-order store.
//! - [`tcp`]: per-direction sequence state.
//! - `segment`: how a TCP segment's payload extends its stream.
//! - `datagram`: UDP streams and per-packet delivery for other protocols.

pub mod assembler;
mod datagram;
pub mod policy;
mod segment;
pub mod tcp;
