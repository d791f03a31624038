//! decode

pub mod defrag;
