//! `dns.log`: DNS queries paired with their responses, one record per
//! pair, with Zeek's field names and values.
//!
//! The caller feeds each connection's messages with their timestamps: UDP
//! payloads as they are, TCP streams through a [`TcpDnsFramer`] that cuts
//! them into messages. A [`DnsFlow`] per connection pairs them and gives
//! [`DnsRecord`]s, which serialize to Zeek's JSON and write Zeek's TSV
//! ([`tsv_header`], [`DnsRecord::tsv_line`]).
//!
//! ```
//! use streamcap::Timestamp;
//! use streamcap_apps::logs::dns::{DnsFlow, DnsProto};
//!
//! let mut flow = DnsFlow::new(
//!     "CAbc".into(),
//!     ("10.0.0.1".parse()?, 40000),
//!     ("10.0.0.53".parse()?, 53),
//!     DnsProto::Udp,
//! );
//! let mut records = Vec::new();
//! let query = [0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1];
//! flow.message(Timestamp::from_secs_nanos(1, 0), &query, &mut records);
//! flow.finish(&mut records); // the unanswered query
//! assert_eq!(records[0].query.as_deref(), Some("a"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Messages are read by this crate's own parser ([`wire`], [`message`]):
//! Zeek keeps what it read of a message before a malformed record, logs
//! TXT strings verbatim and the header's Z bits, and garbage must cost
//! little. The `simple-dns` crate parses a message all or nothing, rejects
//! classes it does not know and a set Z bit, does not expose TXT strings
//! as they are, and reserves room for as many records as a header claims
//! (megabytes for a 12-byte datagram); `hickory-proto` needs a newer Rust
//! than this workspace's and brings `url`, `idna`, `rand` and `tracing`.

pub mod app;
pub mod framing;
pub mod log;
pub mod message;
pub mod names;
pub mod wire;

pub use app::{DnsDir, DnsLog, DnsStats};
pub use framing::TcpDnsFramer;
pub use log::{tsv_header, DnsFlow, DnsProto, DnsRecord, FIELDS, TYPES};
pub use message::{Answer, Message};
