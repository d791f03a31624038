//! Reassembly: turning segments into byte streams.
//!
//! - [`policy`]: target-based overlap policies.
//! - [`assembler`]: the ordered out-of-order store.
//! - [`tcp`]: per-direction sequence state.

pub mod assembler;
pub mod policy;
pub mod tcp;
