//! Deterministic traffic generator with known answers for streamcap.
//!
//! `streamcap-gen` builds classic pcap captures from a seeded description of
//! TCP conversations and UDP flows, and records the *ground truth* for every
//! flow next to it: the 5-tuple, VLAN tags, per-direction packet and IP byte
//! counts, the byte stream the application intended to send (with its
//! SHA-256), the ranges that never reached the wire and the overlapping
//! retransmissions that carried conflicting bytes.
//!
//! The layers, bottom-up:
//!
//! * [`PcapWriter`] writes classic pcap files (µs or ns timestamps,
//!   Ethernet / raw IP / Linux SLL2 link types, optional snap length).
//! * [`packet`] builds IP packets with etherparse's `PacketBuilder`, wraps
//!   them in link-layer framing (Ethernet II with zero, one or two VLAN tags,
//!   or SLL2) and fragments IPv4 packets.
//! * [`TcpConversation`] and [`UdpFlow`] are seeded builders that turn a
//!   script of application sends into wire packets plus a [`FlowTruth`];
//!   impairments (reordering, duplicates, capture loss, conflicting
//!   retransmissions, IPv4 fragmentation) are applied on request.
//! * [`Capture`] mixes any number of flows by timestamp and writes the pcap
//!   bytes and the truth as JSON lines.
//! * [`sample()`] builds the small realistic mixed capture shipped as
//!   `samples/sample.pcap`.
//!
//! Everything is deterministic: the same builders and seeds always produce
//! byte-identical output. Randomness comes from the crate's own
//! [`SplitMix64`] generator.
//!
//! [`Campus`] is a streaming model of a university access link (heavy-tailed
//! flow sizes, thousands of concurrent flows, realistic payloads, ground
//! truth per flow) that writes traces of any length in constant memory.
//!
//! [`attack`] writes adversarial captures (SYN floods, hash-colliding
//! flows, out-of-order and overlap floods, fragment floods, sequence abuse,
//! endless streams) and a `normal` baseline of the same size.
//!
//! [`nids`] writes traffic with planted signatures (HTTP, SMTP, FTP, DNS,
//! TLS SNI, other TCP and UDP payloads; half of the TCP ones across segment
//! boundaries; reordering, conflicting overlaps, mid-stream flows), the
//! exact truth of where they are, and one content rule per signature.
//!
//! [`apps`] writes labelled application traffic for an L7 classifier
//! (19 protocols with their first messages both ways, random and text
//! flows of no protocol, about 30 % of flows on non-standard ports) and
//! one truth line per flow (label, port, SNI/ALPN, SSH banners, DNS query).
//!
//! [`http`] writes HTTP/1.x connections (persistent, pipelined, chunked,
//! close-delimited, 1xx, bodiless responses, unanswered requests, heads cut
//! at awkward places) and one truth line per transaction, after Zeek's
//! `http.log`.
//!
//! Other traffic models plug in by implementing [`FlowGenerator`] or by feeding
//! [`GeneratedFlow`]s straight into [`Capture::add_generated`].

#![warn(missing_docs)]

pub mod apps;
pub mod attack;
pub mod campus;
pub mod capture;
pub mod fuzz_seeds;
pub mod http;
pub mod nids;
pub mod packet;
pub mod pcap;
pub mod prng;
pub mod sample;
pub mod tcp;
pub mod truth;
pub mod tunnel;
pub mod udp;

pub use apps::{AppFlow, AppsConfig, AppsTrace, Label};
pub use attack::{AttackStats, Profile};
pub use campus::{Campus, CampusConfig, CampusFlowTruth, CampusStats};
pub use capture::{Capture, Direction, FlowGenerator, GeneratedFlow, WirePacket};
pub use http::{HttpConfig, HttpTrace, Transaction};
pub use nids::{NidsConfig, NidsTrace, Occurrence};
pub use packet::{FragmentOrder, LinkSpec, Vlan};
pub use pcap::{LinkType, PcapConfig, PcapWriter, TsResolution};
pub use prng::SplitMix64;
pub use sample::{sample, SAMPLE_DEFAULT_SEED};
pub use tcp::{Close, ConflictPlacement, Handshake, Reorder, SegmentInfo, TcpConversation};
pub use truth::{ByteRange, ConflictTruth, DirectionTruth, EndReason, FlowTruth, Protocol};
pub use udp::UdpFlow;

/// Re-export of the etherparse version used for packet building, so callers
/// can name its types (for example a hand-made `TcpHeader`).
pub use etherparse;
