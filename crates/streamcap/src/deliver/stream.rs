//! The stream descriptor (Scap Table I) and the handle callbacks use to read
//! and steer a stream.

use crate::config::ReassemblyMode;
use crate::flow::{Direction, FlowKey, Side};
use crate::reassembly::policy::OverlapPolicy;
use crate::time::Timestamp;
use std::net::IpAddr;

/// Byte and packet counters of one stream (one direction of a connection).
///
/// Invariant, at every moment:
/// `stream_bytes == captured + discarded + dropped + missing`.
/// `stream_bytes` grows as the reassembly point advances; when the stream has
/// terminated it is the whole length of the stream's sequence space (TCP
/// retransmissions are counted once).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Packets seen in this direction.
    pub pkts: u64,
    /// IP-layer bytes of those packets (per the IP headers).
    pub bytes: u64,
    /// Length of the reassembled byte stream accounted so far.
    pub stream_bytes: u64,
    /// Stream bytes delivered (or held for delivery) to the application.
    pub captured: u64,
    /// Stream bytes not delivered by decision: past the cutoff, after `discard()`,
    /// or (strict mode) of a connection without a handshake.
    pub discarded: u64,
    /// Stream bytes not delivered for lack of resources (memory budget).
    pub dropped: u64,
    /// Stream bytes never seen (holes that did not fill, bytes cut by the snapshot length).
    pub missing: u64,
    /// Payload-carrying packets whose bytes were captured.
    pub pkts_captured: u64,
    /// Payload-carrying packets whose bytes were (at least partly) discarded.
    pub pkts_discarded: u64,
    /// Payload-carrying packets whose bytes were (at least partly) dropped.
    pub pkts_dropped: u64,
    /// Payload bytes that repeated bytes already seen (TCP retransmissions, overlaps).
    pub retransmitted: u64,
    /// Overlapping segments whose bytes contradicted bytes already seen.
    pub overlap_conflicts: u64,
}

impl StreamCounters {
    /// Whether the accounting invariant holds.
    pub fn invariant_holds(&self) -> bool {
        self.stream_bytes == self.captured + self.discarded + self.dropped + self.missing
    }

    /// `self` less `o`, field by field (saturating at 0).
    pub fn minus(&self, o: &StreamCounters) -> StreamCounters {
        StreamCounters {
            pkts: self.pkts.saturating_sub(o.pkts),
            bytes: self.bytes.saturating_sub(o.bytes),
            stream_bytes: self.stream_bytes.saturating_sub(o.stream_bytes),
            captured: self.captured.saturating_sub(o.captured),
            discarded: self.discarded.saturating_sub(o.discarded),
            dropped: self.dropped.saturating_sub(o.dropped),
            missing: self.missing.saturating_sub(o.missing),
            pkts_captured: self.pkts_captured.saturating_sub(o.pkts_captured),
            pkts_discarded: self.pkts_discarded.saturating_sub(o.pkts_discarded),
            pkts_dropped: self.pkts_dropped.saturating_sub(o.pkts_dropped),
            retransmitted: self.retransmitted.saturating_sub(o.retransmitted),
            overlap_conflicts: self.overlap_conflicts.saturating_sub(o.overlap_conflicts),
        }
    }

    /// Adds `other` into `self` (for global totals).
    pub fn add(&mut self, o: &StreamCounters) {
        self.pkts += o.pkts;
        self.bytes += o.bytes;
        self.stream_bytes += o.stream_bytes;
        self.captured += o.captured;
        self.discarded += o.discarded;
        self.dropped += o.dropped;
        self.missing += o.missing;
        self.pkts_captured += o.pkts_captured;
        self.pkts_discarded += o.pkts_discarded;
        self.pkts_dropped += o.pkts_dropped;
        self.retransmitted += o.retransmitted;
        self.overlap_conflicts += o.overlap_conflicts;
    }
}

/// Why a stream ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// Both sides sent FIN.
    Fin,
    /// A valid RST.
    Rst,
    /// No packet within the inactivity timeout.
    Timeout,
    /// The input ended (or capture was stopped) with the stream open.
    Eof,
    /// Removed to make room (flow limit) or replaced by a new connection on the same 5-tuple.
    Evicted,
}

impl EndReason {
    /// Every reason, in the order of [`crate::GlobalStats::flows_ended`].
    pub const ALL: [EndReason; 5] = [
        EndReason::Fin,
        EndReason::Rst,
        EndReason::Timeout,
        EndReason::Eof,
        EndReason::Evicted,
    ];
    /// "fin", "rst", "timeout", "eof" or "evicted".
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Fin => "fin",
            EndReason::Rst => "rst",
            EndReason::Timeout => "timeout",
            EndReason::Eof => "eof",
            EndReason::Evicted => "evicted",
        }
    }
}

/// A stream's status (Scap `sd->status`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StreamStatus {
    /// Open.
    Active,
    /// The connection is closed (FIN/RST) and lingers for late packets.
    Closing(EndReason),
    /// Terminated; no more events follow except the flow-end event.
    Closed(EndReason),
}

/// Error and anomaly flags of a stream (Scap `sd->error`).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct StreamErrors(pub u16);

impl StreamErrors {
    /// Bytes are missing from the delivered stream.
    pub const GAP: StreamErrors = StreamErrors(1);
    /// The three-way handshake was not seen.
    pub const NO_HANDSHAKE: StreamErrors = StreamErrors(2);
    /// A segment far outside the expected sequence space, or data after FIN.
    pub const BAD_SEQ: StreamErrors = StreamErrors(4);
    /// A retransmission contradicted bytes already seen.
    pub const OVERLAP_CONFLICT: StreamErrors = StreamErrors(8);
    /// Packets of this stream were cut by the snapshot length.
    pub const TRUNCATED: StreamErrors = StreamErrors(16);
    /// An RST outside the receive window was ignored.
    pub const INVALID_RST: StreamErrors = StreamErrors(32);
    /// Bytes were dropped for lack of memory.
    pub const DROPPED: StreamErrors = StreamErrors(64);
    /// Data arrived after this side's FIN.
    pub const DATA_AFTER_FIN: StreamErrors = StreamErrors(128);

    const NAMES: [(StreamErrors, &'static str); 8] = [
        (Self::GAP, "gap"),
        (Self::NO_HANDSHAKE, "no_handshake"),
        (Self::BAD_SEQ, "bad_seq"),
        (Self::OVERLAP_CONFLICT, "overlap_conflict"),
        (Self::TRUNCATED, "truncated"),
        (Self::INVALID_RST, "invalid_rst"),
        (Self::DROPPED, "dropped"),
        (Self::DATA_AFTER_FIN, "data_after_fin"),
    ];

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: StreamErrors) -> bool {
        self.0 & other.0 == other.0
    }
    /// Sets the flags of `other`.
    pub fn insert(&mut self, other: StreamErrors) {
        self.0 |= other.0;
    }
    /// No flag set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The names of the flags set, in a fixed order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(f, _)| self.contains(*f))
            .map(|(_, n)| n)
    }
    /// Union.
    pub fn union(self, o: StreamErrors) -> StreamErrors {
        StreamErrors(self.0 | o.0)
    }
}

impl std::fmt::Debug for StreamErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// How a stream's bytes reach the data callback.
///
/// Both give the same bytes, gaps and counters; they differ in how the bytes
/// are cut into data events and whether they are copied.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// Scap's model: bytes are copied into the stream's chunk buffer and
    /// handed over when it holds `chunk_size` bytes, when the flush timeout
    /// passes, at a gap, at the cutoff or at the stream's end. Few, large
    /// events; an application that parses across segment boundaries gets
    /// contiguous bytes without keeping any itself.
    #[default]
    Chunks,
    /// libnids' model: bytes are handed over as soon as they are in order,
    /// in place: an in-order segment's payload is passed straight from the
    /// packet, and a range that was out of order straight from the
    /// out-of-order store, without a copy ([`DataReason::Segment`], at most
    /// `chunk_size` bytes per event). Nothing is held between events, so
    /// in-order traffic charges nothing to the memory budget. Bytes are
    /// copied only when the application asks for them to be held: kept with
    /// [`Stream::keep_chunk`] (copied right after the callback, and held only
    /// if the budget has room) or repeated by an `overlap`. With packet
    /// records, each event carries the records of the packets whose payload
    /// begins in it (and of retransmissions that arrived since the last
    /// event). Events always have
    /// reason `Segment` (or `Packet` for a per-packet protocol); the end of
    /// the stream is told by the close event and the descriptor.
    ///
    /// What it gives up: a retransmission that contradicts bytes already
    /// delivered is flagged (`overlap_conflict`) only while those bytes are
    /// held, and chunk delivery holds the current chunk while segment
    /// delivery holds nothing; contradictions among bytes not yet delivered
    /// are flagged alike. With `-w`-style consumers that write each event,
    /// more, smaller writes.
    ///
    /// [`DataReason::Segment`]: super::DataReason::Segment
    Segments,
}

impl Delivery {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Chunks => "chunks",
            Delivery::Segments => "segments",
        }
    }
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Delivery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chunks" => Ok(Delivery::Chunks),
            "segments" => Ok(Delivery::Segments),
            _ => Err(format!(
                "unknown delivery {s:?} (expected chunks or segments)"
            )),
        }
    }
}

/// Per-stream parameters (Scap `scap_set_stream_parameter`), initialised from
/// the configuration and changeable from callbacks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamParams {
    /// Stream offset past which bytes are discarded (`u64::MAX`: no cutoff).
    pub cutoff: u64,
    /// Priority for overload control (higher survives longer).
    pub priority: u8,
    /// Bytes per chunk (with [`Delivery::Segments`]: most bytes per event).
    pub chunk_size: usize,
    /// How bytes reach the data callback: in chunks or segment by segment.
    pub delivery: Delivery,
    /// Bytes of the previous chunk repeated at the start of the next.
    pub overlap: usize,
    /// Deliver a partial chunk when its first byte is this old (ns of packet time).
    pub flush_timeout: Option<u64>,
    /// Overlap policy for this stream.
    pub policy: OverlapPolicy,
    /// Reassembly mode for this stream (TCP).
    pub mode: ReassemblyMode,
}

/// The descriptor of one stream: counters, status, errors, timestamps and
/// parameters (Scap Table I). Addresses and ports are read through [`Stream`].
#[derive(Clone, Debug)]
pub struct StreamInfo {
    /// Orig (from the initiator) or resp.
    pub direction: Direction,
    /// Serial number of the connection (unique within a worker).
    pub conn_id: u64,
    /// Time of the first packet.
    pub start: Timestamp,
    /// Time of the last packet.
    pub end: Timestamp,
    /// Byte and packet counters.
    pub counters: StreamCounters,
    /// Status.
    pub status: StreamStatus,
    /// The cutoff was reached: later bytes are discarded.
    pub cutoff_exceeded: bool,
    /// Error flags.
    pub errors: StreamErrors,
    /// Parameters.
    pub params: StreamParams,
    /// Chunks delivered so far.
    pub chunks: u64,
    /// Time spent in this stream's callbacks, in nanoseconds of wall time.
    pub processing_ns: u64,
    /// A packet has been seen in this direction (the stream was created).
    pub created: bool,
    pub(crate) discard: bool,
    pub(crate) keep: bool,
    /// A setter ran (the engine takes `params` back only then).
    pub(crate) params_set: bool,
}

impl StreamInfo {
    pub(crate) fn new(direction: Direction, conn_id: u64, params: StreamParams) -> StreamInfo {
        StreamInfo {
            direction,
            conn_id,
            start: Timestamp::ZERO,
            end: Timestamp::ZERO,
            counters: StreamCounters::default(),
            status: StreamStatus::Active,
            cutoff_exceeded: false,
            errors: StreamErrors::default(),
            params,
            chunks: 0,
            processing_ns: 0,
            created: false,
            discard: false,
            keep: false,
            params_set: false,
        }
    }

    /// Whether `discard()` was called.
    pub fn is_discarded(&self) -> bool {
        self.discard
    }
}

/// The handle a callback receives for one stream: read its descriptor, the
/// opposite direction's descriptor and its user state; steer it with
/// `discard`, `set_cutoff`, `keep_chunk` and the other setters. Changes take
/// effect for bytes not yet copied.
pub struct Stream<'a, S> {
    pub(crate) info: &'a mut StreamInfo,
    pub(crate) opposite: Opposite<'a>,
    pub(crate) key: &'a FlowKey,
    pub(crate) side: Side,
    pub(crate) state: &'a mut S,
    /// The connection's slot in the flow table.
    pub(crate) slot: u32,
}

/// The opposite direction's descriptor, built when a callback first asks
/// for it: most never do, and building it reads the other direction's
/// state, often a cache miss (with segment delivery, once per segment).
pub(crate) struct Opposite<'a> {
    pub(crate) built: std::cell::OnceCell<StreamInfo>,
    pub(crate) build: &'a dyn Fn() -> StreamInfo,
}

impl<S> Stream<'_, S> {
    /// The descriptor: counters, status, errors, parameters.
    pub fn info(&self) -> &StreamInfo {
        self.info
    }
    /// The opposite direction's descriptor (Scap `sd->opposite`); check
    /// `created` to know whether it has seen a packet.
    pub fn opposite(&self) -> &StreamInfo {
        self.opposite.built.get_or_init(self.opposite.build)
    }
    /// The connection's key.
    pub fn key(&self) -> &FlowKey {
        self.key
    }
    /// Sender address and port of this stream.
    pub fn src(&self) -> (IpAddr, u16) {
        self.key.endpoint(self.side)
    }
    /// Receiver address and port of this stream.
    pub fn dst(&self) -> (IpAddr, u16) {
        self.key.endpoint(self.side.other())
    }
    /// The transport protocol number.
    pub fn proto(&self) -> u8 {
        self.key.proto()
    }
    /// Orig or resp.
    pub fn direction(&self) -> Direction {
        self.info.direction
    }
    /// Which stream this is, for a decision taken about it elsewhere.
    pub(crate) fn stream_ref(&self) -> super::StreamRef {
        super::StreamRef {
            slot: self.slot,
            conn_id: self.info.conn_id,
            side: self.side,
        }
    }
    /// The application's per-stream state (Scap `user_state`).
    pub fn state(&mut self) -> &mut S {
        self.state
    }
    /// Stops copying this stream's payload (Scap `scap_discard_stream`);
    /// statistics continue and the termination event still fires.
    pub fn discard(&mut self) {
        self.info.discard = true;
    }
    /// Sets the stream's cutoff in bytes from the start of the stream
    /// (`None` = unlimited). A cutoff below what was already delivered acts as `discard`.
    pub fn set_cutoff(&mut self, cutoff: Option<u64>) {
        self.info.params.cutoff = cutoff.unwrap_or(u64::MAX);
        self.info.params_set = true;
    }
    /// Sets the priority used by overload control.
    pub fn set_priority(&mut self, priority: u8) {
        self.info.params.priority = priority;
        self.info.params_set = true;
    }
    /// Sets the chunk size (at least 1 byte).
    pub fn set_chunk_size(&mut self, bytes: usize) {
        self.info.params.chunk_size = bytes.max(1);
        self.info.params_set = true;
    }
    /// Sets how the stream's next bytes are delivered: in chunks, or segment
    /// by segment without a copy. Bytes already in the chunk buffer are
    /// delivered with the next event.
    pub fn set_delivery(&mut self, delivery: Delivery) {
        self.info.params.delivery = delivery;
        self.info.params_set = true;
    }
    /// Sets how many bytes of each chunk are repeated at the start of the next
    /// (at most half the chunk size).
    pub fn set_overlap(&mut self, bytes: usize) {
        self.info.params.overlap = bytes;
        self.info.params_set = true;
    }
    /// Sets the flush timeout in nanoseconds of packet time (`None`: only full chunks).
    pub fn set_flush_timeout(&mut self, nanos: Option<u64>) {
        self.info.params.flush_timeout = nanos;
        self.info.params_set = true;
    }
    /// Sets the overlap policy for bytes not yet delivered.
    pub fn set_policy(&mut self, policy: OverlapPolicy) {
        self.info.params.policy = policy;
        self.info.params_set = true;
    }
    /// Sets the reassembly mode for the rest of this stream (TCP): `Strict`
    /// discards data of a connection whose handshake was not seen and holds
    /// holes until the limits; `Fast` gives holes up when the peer
    /// acknowledges past them.
    pub fn set_mode(&mut self, mode: ReassemblyMode) {
        self.info.params.mode = mode;
        self.info.params_set = true;
    }
    /// Keeps the current chunk: the next data event receives these bytes
    /// followed by the new ones in one contiguous slice (Scap
    /// `scap_keep_stream_chunk`). Kept bytes stay charged to the memory budget.
    /// A gap in the stream releases them. With [`Delivery::Segments`] the
    /// bytes are copied when the callback returns; if the budget has no room
    /// for them they are not kept (a refusal the budget counts), and the next
    /// event starts at the new bytes (`new_from` 0, `offset` after them).
    pub fn keep_chunk(&mut self) {
        self.info.keep = true;
    }
}
