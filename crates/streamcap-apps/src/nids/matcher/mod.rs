//! Multi-pattern matchers with state carried across a stream's chunks.

pub mod hyperscan;
