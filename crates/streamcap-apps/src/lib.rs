//! # streamcap-apps
//!
//! Applications built on streamcap's reassembled streams (Scap §VII).
//!
//! - [`nids`]: signature matching with Suricata/Snort content rules over
//!   TCP streams and UDP datagrams, alerts as Suricata's EVE JSON or
//!   `fast.log`.
//! - [`conn_id`]: the connection names (Zeek `uid`, EVE `flow_id`) every
//!   application's records share.

#![warn(missing_docs)]

pub mod conn_id;
pub mod nids;
