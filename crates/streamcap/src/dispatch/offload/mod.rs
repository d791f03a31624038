//! Flow-affine offloading (WireCAP §3.2c, for stream consumers): moving
//! whole flow-hash buckets, with their connections' state, from a busy
//! worker to a buddy, so that every connection is still reassembled by
//! exactly one worker and the records are those of a run without moves.
//!
//! - [`bucket`]: the bucket function ([`Buckets`]) that maps every packet
//!   of a connection, both directions, to one of [`BUCKETS`] buckets, and
//!   sets of buckets ([`BucketSet`]).
//! - [`table`]: the indirection table ([`IndirectionTable`]): which worker
//!   owns each bucket, changed between packets.
//! - [`handover`]: taking a set of buckets' connections out of one
//!   [`crate::Worker`] ([`crate::Worker::export_buckets`]) and into another
//!   ([`crate::Worker::import_handover`]) as a [`FlowHandover`].
//!
//! The caller (a router that sends each packet to `table[bucket]`) keeps
//! one ordering rule: every packet of a moved bucket routed before the
//! change is processed by the old owner before its export, and none routed
//! after it reaches the new owner before the import. `docs/engine.md`
//! ("Moving flows between workers") states what is handed over and why the
//! records do not change.

pub mod bucket;
pub mod handover;
pub mod table;

pub use bucket::{BucketSet, Buckets, Route, BUCKETS};
pub use handover::FlowHandover;
pub use table::IndirectionTable;
