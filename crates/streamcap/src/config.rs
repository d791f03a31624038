//! Configuration (Scap Table II): memory, reassembly mode, cutoffs, chunking,
//! timeouts and limits.

use crate::decode::defrag::DefragConfig;
use crate::reassembly::policy::OverlapPolicy;
use std::fmt;
use std::str::FromStr;

/// How TCP streams are reassembled.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ReassemblyMode {
    /// Best effort: pick up connections mid-stream; a hole is given up (its
    /// bytes counted missing, the gap flagged) as soon as the receiver
    /// acknowledges data past it while later data is waiting, when the
    /// out-of-order limits are reached, or at termination.
    #[default]
    Fast,
    /// Evasion-safe: only connections whose handshake (SYN and SYN-ACK) was seen
    /// are reassembled (others are counted as discarded and flagged
    /// `no_handshake`); holes are held until the out-of-order limits are
    /// reached or the connection terminates; acknowledgments are not trusted.
    Strict,
}

impl fmt::Display for ReassemblyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReassemblyMode::Fast => "fast",
            ReassemblyMode::Strict => "strict",
        })
    }
}

impl FromStr for ReassemblyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "fast" => Ok(ReassemblyMode::Fast),
            "strict" => Ok(ReassemblyMode::Strict),
            _ => Err(format!(
                "unknown reassembly mode {s:?} (expected fast or strict)"
            )),
        }
    }
}

/// Everything that configures a worker. Build it with [`crate::Capture::builder`]
/// or start from `Config::default()` and set fields.
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of stream data (chunks, out-of-order segments, packet records) held at most.
    pub memory_size: usize,
    /// Cutoffs for the connections whose first packet matches a filter
    /// (Scap `scap_add_cutoff_class`); the first class that matches wins and
    /// replaces the cutoffs above for both directions.
    pub cutoff_classes: Vec<crate::filter::CutoffClass>,
    /// TCP reassembly mode.
    pub mode: ReassemblyMode,
    /// Default overlap policy.
    pub policy: OverlapPolicy,
    /// Record per-packet metadata for each chunk ([`crate::deliver::Chunk::packets`]).
    pub need_packets: bool,
    /// Default cutoff in bytes per stream (`None`: unlimited). 0 = statistics only.
    pub cutoff: Option<u64>,
    /// Cutoff for streams from the initiator, overriding `cutoff`.
    pub cutoff_orig: Option<u64>,
    /// Cutoff for streams from the responder, overriding `cutoff`.
    pub cutoff_resp: Option<u64>,
    /// Bytes per chunk (with segment delivery: most bytes per event).
    pub chunk_size: usize,
    /// How bytes reach the data callback: in chunks (Scap, the default) or
    /// segment by segment without a copy (libnids).
    pub delivery: crate::deliver::Delivery,
    /// Bytes of each chunk repeated at the start of the next.
    pub overlap: usize,
    /// Deliver a partial chunk this long (ns of packet time) after its first byte.
    pub flush_timeout: Option<u64>,
    /// Default stream priority for overload control (larger = more
    /// important; Scap `scap_set_stream_priority`).
    pub priority: u8,
    /// Priorities for the connections whose first packet matches a filter;
    /// the first class that matches wins and replaces `priority` for both
    /// directions.
    pub priority_classes: Vec<crate::filter::PriorityClass>,
    /// Fraction of `memory_size` below which prioritized packet loss drops
    /// nothing (Scap `base_threshold`, [`crate::deliver::overload`]); 0..=1.
    pub base_threshold: f64,
    /// Stream offset beyond which a packet is dropped while memory in use
    /// lies between the watermarks below and at its stream's level (Scap
    /// `overload_cutoff`); `None`: no such rule.
    pub overload_cutoff: Option<u64>,
    /// Inactivity timeout of TCP connections, ns.
    pub tcp_timeout: u64,
    /// Inactivity timeout of UDP flows, ns.
    pub udp_timeout: u64,
    /// Inactivity timeout of other flows, ns.
    pub other_timeout: u64,
    /// How long a closed (FIN/RST) TCP connection lingers to absorb late packets, ns.
    pub close_linger: u64,
    /// How long the end of a closed (FIN/RST) connection is remembered after
    /// its linger, ns, so that later packets of it (FIN retransmissions
    /// backed off for a minute or more) are counted as late
    /// ([`crate::GlobalStats::late_packets`]) instead of opening a second
    /// connection; each late packet extends it. 0 turns this off. The
    /// default is TCP's TIME-WAIT, two maximum segment lifetimes (RFC 9293).
    pub time_wait: u64,
    /// Active timeout, ns: a connection still open this long after its
    /// first packet, and every such interval after, is reported through
    /// [`crate::Handler::on_flow_update`] (flow exporters' periodic
    /// records of long-lived flows) when a packet of it came in that
    /// interval. `None`: never.
    pub active_timeout: Option<u64>,
    /// Most flows tracked at once; beyond it the least recently active is evicted.
    pub max_flows: usize,
    /// Out-of-order data bytes held per stream before the first hole is given up.
    pub max_ooo_bytes: usize,
    /// Out-of-order ranges held per stream before the first hole is given up.
    pub max_ooo_segments: usize,
    /// A segment starting further than this past the delivery point is ignored and flagged `bad_seq`.
    pub max_seq_jump: u64,
    /// Subzero copy: drop the packets of streams past their cutoff before
    /// they reach the capture socket ([`crate::subzero`]); `None`: off.
    pub subzero: Option<crate::subzero::SubzeroConfig>,
    /// IP fragment reassembly settings.
    pub defrag: DefragConfig,
    /// Measure the wall time spent in each stream's callbacks
    /// (`StreamInfo::processing_ns`). Costs two clock reads per callback;
    /// turn it off when nobody reads it.
    pub measure_processing_time: bool,
    /// UDP ports (either side) whose datagrams are VXLAN (default 4789).
    pub vxlan_ports: Vec<u16>,
    /// UDP ports (either side) whose datagrams are GENEVE (default 6081).
    pub geneve_ports: Vec<u16>,
    /// UDP ports (either side) whose datagrams are GTP-U (default 2152).
    pub gtp_ports: Vec<u16>,
    /// Tunnels opened at most inside one another (IP-in-IP, GRE, ERSPAN,
    /// VXLAN, GENEVE, GTP-U); a packet nested deeper is counted as
    /// [`crate::decode::DecodeError::EncapLimit`] and only its outer flows
    /// see it. 0 opens no tunnel.
    pub max_tunnel_depth: usize,
    /// Locality buffering: each worker gathers batches of its input and
    /// processes each grouped by the lower of its packets' two ports
    /// ([`crate::dispatch::locality`]); off by default (a batch of 0).
    pub locality: crate::dispatch::locality::LocalityConfig,
}

const SEC: u64 = 1_000_000_000;

impl Default for Config {
    fn default() -> Self {
        Config {
            memory_size: 512 << 20,
            cutoff_classes: Vec::new(),
            mode: ReassemblyMode::Fast,
            policy: OverlapPolicy::default(),
            need_packets: false,
            cutoff: None,
            cutoff_orig: None,
            cutoff_resp: None,
            chunk_size: 16 << 10,
            delivery: crate::deliver::Delivery::Chunks,
            overlap: 0,
            flush_timeout: None,
            priority: 0,
            priority_classes: Vec::new(),
            base_threshold: 0.5,
            overload_cutoff: None,
            tcp_timeout: 300 * SEC,
            udp_timeout: 60 * SEC,
            other_timeout: 60 * SEC,
            close_linger: 5 * SEC,
            time_wait: 240 * SEC,
            active_timeout: None,
            subzero: None,
            max_flows: 1 << 20,
            max_ooo_bytes: 1 << 20,
            max_ooo_segments: 2048,
            max_seq_jump: 1 << 30,
            defrag: DefragConfig::default(),
            measure_processing_time: true,
            vxlan_ports: vec![4789],
            geneve_ports: vec![6081],
            gtp_ports: vec![2152],
            max_tunnel_depth: 4,
            locality: Default::default(),
        }
    }
}

impl Config {
    /// The cutoff for a stream in `dir` (u64::MAX = none).
    pub fn cutoff_for(&self, dir: crate::flow::Direction) -> u64 {
        let c = match dir {
            crate::flow::Direction::Orig => self.cutoff_orig.or(self.cutoff),
            crate::flow::Direction::Resp => self.cutoff_resp.or(self.cutoff),
        };
        c.unwrap_or(u64::MAX)
    }
}
