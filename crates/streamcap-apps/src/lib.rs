//! # streamcap-apps
//!
//! Applications built on streamcap's reassembled streams (Scap §VII).
//!
//! - [`nids`]: signature matching with Suricata/Snort content rules over
//!   TCP streams and UDP datagrams, alerts as Suricata's EVE JSON or
//!   `fast.log`.
//! - [`classify`]: layer-7 traffic classification (Scap §VII-C): each
//!   connection's application protocol from the first bytes of each
//!   direction, which is then discarded.
//! - [`logs`]: Zeek's `dns.log` and `ssl.log`, as JSON or TSV.
//! - [`compose`]: several applications on one capture and one
//!   reassembly, each with its own cutoff.
//! - [`sink`]: where applications' records go.
//! - [`http`]: HTTP/1.x transactions found by content on any port,
//!   logged as Zeek's `http.log` (JSON or TSV).
//! - [`export`]: flow export to collectors: IPFIX (RFC 7011) messages of
//!   bidirectional flows (RFC 5103).
//! - [`conn_id`]: the connection names (Zeek `uid`, EVE `flow_id`) every
//!   application's records share.

#![warn(missing_docs)]

pub mod classify;
pub mod compose;
pub mod conn_id;
pub mod export;
pub mod http;
pub mod json;
pub mod logs;
pub mod nids;
pub mod sink;

/// Says why a unit test (or part of one) does not run, straight to the
/// process's stderr: the test harness captures `eprintln!`.
#[cfg(test)]
pub(crate) fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}
