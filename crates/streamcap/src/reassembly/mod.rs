//! Reassembly: turning segments into byte streams.

pub mod policy;
