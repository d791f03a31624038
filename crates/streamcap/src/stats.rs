//! Global statistics of a worker.

use crate::decode::defrag::DefragStats;
use crate::decode::DecodeError;
use crate::deliver::{EndReason, OverloadStats, StreamCounters};
use crate::source::pace::PaceStats;

/// Flow classes counted separately.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProtoClass {
    /// TCP connections.
    Tcp = 0,
    /// UDP flows.
    Udp = 1,
    /// ICMP / ICMPv6 flows.
    Icmp = 2,
    /// Any other IP protocol.
    Other = 3,
}

impl ProtoClass {
    /// All classes.
    pub const ALL: [ProtoClass; 4] = [
        ProtoClass::Tcp,
        ProtoClass::Udp,
        ProtoClass::Icmp,
        ProtoClass::Other,
    ];
    /// Name for reports.
    pub fn name(self) -> &'static str {
        match self {
            ProtoClass::Tcp => "tcp",
            ProtoClass::Udp => "udp",
            ProtoClass::Icmp => "icmp",
            ProtoClass::Other => "other",
        }
    }
    /// The class of an IP protocol number.
    pub fn of(proto: u8) -> ProtoClass {
        match proto {
            6 => ProtoClass::Tcp,
            17 => ProtoClass::Udp,
            1 | 58 => ProtoClass::Icmp,
            _ => ProtoClass::Other,
        }
    }
}

/// Everything a worker counted. Stream totals (`streams`) include only
/// terminated streams; after [`crate::Worker::finish`] that is all of them,
/// and the invariant `stream_bytes == captured + discarded + dropped + missing`
/// holds for the totals as it does for each stream.
#[derive(Clone, Debug, Default)]
pub struct GlobalStats {
    /// Frames read from the source.
    pub packets: u64,
    /// Bytes of those frames on the wire.
    pub wire_bytes: u64,
    /// Frames that carried IP.
    pub ip_packets: u64,
    /// Frames cut by the snapshot length.
    pub truncated_packets: u64,
    /// Frames that produced no usable packet, and packets inside a tunnel
    /// that did not decode (the frame's outer packet was used), by reason
    /// ([`DecodeError::index`]).
    pub decode_errors: [u64; DecodeError::COUNT],
    /// IP fragments seen.
    pub fragments: u64,
    /// Packets per protocol class ([`ProtoClass`] index).
    pub proto_packets: [u64; 4],
    /// Flows created per protocol class.
    pub flows_created: [u64; 4],
    /// Flows ended per reason ([`EndReason`] order: fin, rst, timeout, eof, evicted).
    pub flows_ended: [u64; 5],
    /// Most flows tracked at once.
    pub max_flows: u64,
    /// Streams created (directions with at least one packet).
    pub streams: u64,
    /// Sum of the counters of terminated streams.
    pub totals: StreamCounters,
    /// RSTs ignored because they were outside the window.
    pub invalid_rsts: u64,
    /// TCP packets of connections that had already closed and ended (after
    /// the close linger): counted here, not in any flow
    /// ([`crate::Config::time_wait`]).
    pub late_packets: u64,
    /// Highest memory-budget usage, bytes.
    pub memory_peak: usize,
    /// Memory budget, bytes.
    pub memory_limit: usize,
    /// Times the budget refused a charge.
    pub memory_refusals: u64,
    /// Chunks delivered.
    pub chunks: u64,
    /// Prioritized packet loss and stream totals by priority.
    pub overload: OverloadStats,
    /// Fragment reassembly counters.
    pub defrag: DefragStats,
    /// Paced replay ([`crate::source::pace`]): packets of the input that
    /// fell due while the modelled ring was full. They never reached the
    /// engine, so they are in no other counter (not in `packets`); their
    /// streams see the hole as `missing` bytes.
    pub ring_drops: u64,
    /// On-the-wire bytes of the ring drops.
    pub ring_drop_bytes: u64,
    /// What pacing measured (the ring, the capture stage's idle time and
    /// lateness); `None` when the input was not paced.
    pub pace: Option<PaceStats>,
    /// Subzero copy: what the workers did with the flow-drop map.
    pub subzero: crate::subzero::SubzeroStats,
}

impl GlobalStats {
    /// Decode errors of one kind.
    pub fn decode_error(&self, e: DecodeError) -> u64 {
        self.decode_errors[e.index()]
    }
    /// Decode errors of all kinds except non-IP frames.
    pub fn malformed(&self) -> u64 {
        DecodeError::ALL
            .iter()
            .filter(|e| **e != DecodeError::NotIp)
            .map(|e| self.decode_errors[e.index()])
            .sum()
    }
    /// Flows ended for one reason.
    pub fn ended(&self, r: EndReason) -> u64 {
        self.flows_ended[end_index(r)]
    }
    /// Flows created of one class.
    pub fn created(&self, c: ProtoClass) -> u64 {
        self.flows_created[c as usize]
    }
}

/// How the defragmentation counters of several workers combine.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DefragMerge {
    /// Each worker reassembled its own fragments (kernel fan-out): add them.
    Sum,
    /// Every worker reassembled every fragment (in-process fan-out of a
    /// file, [`crate::dispatch::fanout`]): the counters are identical, keep one.
    Replicated,
}

impl GlobalStats {
    /// Adds the statistics of another worker of the same run. Counters add
    /// up; `max_flows` and `memory_peak` become the sum of the workers' peaks
    /// (an upper bound of the simultaneous total); `memory_limit` the sum of
    /// their budgets.
    pub fn merge(&mut self, o: &GlobalStats, defrag: DefragMerge) {
        fn add<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.packets += o.packets;
        self.wire_bytes += o.wire_bytes;
        self.ip_packets += o.ip_packets;
        self.truncated_packets += o.truncated_packets;
        add(&mut self.decode_errors, &o.decode_errors);
        self.fragments += o.fragments;
        add(&mut self.proto_packets, &o.proto_packets);
        add(&mut self.flows_created, &o.flows_created);
        add(&mut self.flows_ended, &o.flows_ended);
        self.max_flows += o.max_flows;
        self.streams += o.streams;
        self.totals.add(&o.totals);
        self.invalid_rsts += o.invalid_rsts;
        self.late_packets += o.late_packets;
        self.memory_peak += o.memory_peak;
        self.memory_limit += o.memory_limit;
        self.memory_refusals += o.memory_refusals;
        self.chunks += o.chunks;
        self.overload.add(&o.overload);
        self.ring_drops += o.ring_drops;
        self.ring_drop_bytes += o.ring_drop_bytes;
        self.subzero.add(&o.subzero);
        self.pace = match (self.pace, o.pace) {
            (Some(mut a), Some(b)) => {
                a.merge(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        match defrag {
            DefragMerge::Sum => self.defrag.add(&o.defrag),
            DefragMerge::Replicated => {
                if self.defrag == DefragStats::default() {
                    self.defrag = o.defrag.clone();
                }
            }
        }
    }
}

pub(crate) fn end_index(r: EndReason) -> usize {
    match r {
        EndReason::Fin => 0,
        EndReason::Rst => 1,
        EndReason::Timeout => 2,
        EndReason::Eof => 3,
        EndReason::Evicted => 4,
    }
}
