//! # streamcap-apps
//!
//! Applications built on streamcap's reassembled streams (Scap §VII).
//!
//! - [`nids`]: signature matching with Suricata/Snort content rules over
//!   TCP streams and UDP datagrams, alerts as Suricata's EVE JSON or
//!   `fast.log`.

#![warn(missing_docs)]

pub mod nids;
