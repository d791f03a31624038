//! IPFIX (RFC 7011) encoding of bidirectional flows (RFC 5103), and a small
//! decoder to read them back.
//!
//! - [`ie`]: the Information Elements and the two templates (IPv4, IPv6).
//! - [`encode`]: [`MessageBuilder`] writes messages of template and data
//!   sets, each within a size limit (a UDP datagram, a TCP or file message).
//! - [`decode`]: [`Decoder`] reads any IPFIX message back (templates, data
//!   records of any template), for tests, the fuzz target and tools.
//!
//! The transport (UDP with pacing, TCP, a file: RFC 5655's file format is
//! the messages back to back), the template timers and the sequence
//! numbers' stream are the exporter's: `streamcap flows --ipfix` in the CLI.
//! docs/export.md describes the template, the elements and the timers.
//!
//! No crate of crates.io fitted: `ipfixrw` (0.1, one release) builds on
//! `binrw` with run-time formatters and reference-counted templates,
//! `netgauze-flow-pkt` brings a large dependency tree, and `ipfix-parser`
//! only reads. Two fixed templates need only a few hundred lines.

pub mod decode;
pub mod encode;
pub mod ie;

pub use decode::{DecodeError, Decoder, Message, Record};
pub use encode::MessageBuilder;

use std::net::IpAddr;

/// The IPFIX version number in every message header.
pub const VERSION: u16 = 10;
/// The bytes of a message header.
pub const HEADER_LEN: usize = 16;
/// The bytes of a set header.
pub const SET_HEADER_LEN: usize = 4;
/// The set id of template sets.
pub const TEMPLATE_SET: u16 = 2;
/// The set id of options template sets.
pub const OPTIONS_TEMPLATE_SET: u16 = 3;
/// The largest message (its length is a 16-bit field).
pub const MAX_MESSAGE: usize = 65_535;

/// flowEndReason values (IANA "flowEndReason" registry).
pub mod end_reason {
    /// No packet within the inactivity timeout.
    pub const IDLE_TIMEOUT: u8 = 1;
    /// Still open at the active timeout: an interim report.
    pub const ACTIVE_TIMEOUT: u8 = 2;
    /// The end of the flow was seen (FIN, RST).
    pub const END_OF_FLOW: u8 = 3;
    /// Forced end: the end of the input, or a stop.
    pub const FORCED_END: u8 = 4;
    /// Lack of resources: evicted from a full flow table (or by a new
    /// connection on the same 5-tuple).
    pub const LACK_OF_RESOURCES: u8 = 5;
}

/// tcpControlBits (RFC 7125): the bits of the TCP header's flags.
pub mod tcp_flags {
    /// FIN.
    pub const FIN: u16 = 0x01;
    /// SYN.
    pub const SYN: u16 = 0x02;
    /// RST.
    pub const RST: u16 = 0x04;
    /// PSH.
    pub const PSH: u16 = 0x08;
    /// ACK.
    pub const ACK: u16 = 0x10;
}

/// One direction of an exported flow.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DirCounts {
    /// packetDeltaCount.
    pub packets: u64,
    /// octetDeltaCount: IP-layer bytes (IP total length).
    pub octets: u64,
    /// tcpControlBits: the union of the flags this direction sent.
    pub tcp_flags: u16,
    /// streamcap's capturedOctets.
    pub captured: u64,
    /// streamcap's discardedOctets.
    pub discarded: u64,
    /// streamcap's droppedOctets.
    pub dropped: u64,
    /// streamcap's missingOctets.
    pub missing: u64,
}

/// A flow as one IPFIX data record: a biflow (RFC 5103) whose forward
/// direction is the initiator's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IpfixFlow {
    /// The initiator's address (sourceIPv4Address or sourceIPv6Address).
    pub src: IpAddr,
    /// The responder's address. When the two addresses are of different
    /// families, both are exported as IPv6 (an IPv4 one mapped,
    /// `::ffff:a.b.c.d`).
    pub dst: IpAddr,
    /// sourceTransportPort.
    pub src_port: u16,
    /// destinationTransportPort.
    pub dst_port: u16,
    /// protocolIdentifier.
    pub proto: u8,
    /// vlanId: 0 when untagged.
    pub vlan: u16,
    /// flowStartMilliseconds: the first packet, ms since the Unix epoch.
    pub start_ms: u64,
    /// flowEndMilliseconds: the last packet.
    pub end_ms: u64,
    /// flowEndReason ([`end_reason`]).
    pub end_reason: u8,
    /// The initiator's direction (forward).
    pub fwd: DirCounts,
    /// The responder's direction (reverse, RFC 5103).
    pub rev: DirCounts,
}

impl IpfixFlow {
    /// Whether the flow goes into the IPv6 template.
    pub fn is_v6(&self) -> bool {
        self.src.is_ipv6() || self.dst.is_ipv6()
    }
}
