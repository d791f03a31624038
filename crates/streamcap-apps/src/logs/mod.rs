//! Protocol logs with Zeek's field names, as JSON lines or Zeek TSV.
//!
//! - [`dns`]: `dns.log`, queries paired with their responses.
//! - [`tls`]: `ssl.log`, what the TLS hellos tell.
//! - [`zeek`]: the value formats and TSV header they share.

pub mod dns;
pub mod tls;
pub mod zeek;
