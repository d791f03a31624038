//! Streaming model of a university access link (the kind of trace Scap was
//! evaluated on): thousands of concurrent, interleaved flows with
//! heavy-tailed sizes, about 95 % of the packets TCP, realistic application
//! payloads, optional impairments, and ground truth per flow.
//!
//! Unlike [`Capture`](crate::Capture), nothing is kept in memory beyond the
//! open flows: each flow is a small state machine that produces its next
//! packet on demand, a [`BinaryHeap`] orders the flows by their next virtual
//! send time, and a flow that ends is replaced by a new one so that about
//! [`CampusConfig::concurrency`] flows stay open. Payload bytes are a pure
//! function of (flow, message, offset) — protocol headers are kept per
//! message, bulk bodies are cheap seeded filler (text or pseudo-random) — so
//! no flow ever holds its stream. The per-direction SHA-256 is computed
//! incrementally as the sender produces bytes.
//!
//! Frames are built by hand into one reused buffer (Ethernet II, optional
//! 802.1Q tag, IPv4 or IPv6, TCP or UDP). All checksums are correct (IPv4
//! header, TCP and UDP including the pseudo-header). Timestamps (ns pcap)
//! follow a saturated link of [`CampusConfig::link_gbps`]: each frame
//! occupies `(len + 24) * 8 / gbps` ns (FCS, preamble and inter-frame gap
//! included), so the trace is the link running at line rate.
//!
//! The truth is written as JSON lines ([`CampusFlowTruth`]), one line when a
//! flow ends; flows still open when the packet budget is reached get a line
//! with `end: "none"` at the end, in id order. Ids number flows in start
//! order. Every line also parses as a [`FlowTruth`](crate::FlowTruth)
//! (whose `stream` is then empty).
//!
//! Determinism: the same config always produces byte-identical pcap and
//! truth (on one platform: flow sizes use `f64::ln`/`exp`).

mod dist;
mod flow;
mod generator;
mod payload;
mod scripts;
mod wire;

pub(crate) use generator::http_date;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use self::generator::Generator;
use crate::pcap::{LinkType, PcapConfig, TsResolution};
use crate::truth::{ByteRange, ConflictTruth, EndReason, Protocol};

/// Default time origin of a campus trace: 2024-05-01T12:00:00Z, in ns.
pub const CAMPUS_START_NS: u64 = 1_714_564_800_000_000_000;

/// Options of the campus model. [`Default`] gives the benchmark trace.
#[derive(Clone, Debug, PartialEq)]
pub struct CampusConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of pcap records to write (each IP fragment counts once).
    pub packets: u64,
    /// Link rate that spaces the timestamps, in Gbit/s.
    pub link_gbps: f64,
    /// Target number of concurrently open flows.
    pub concurrency: usize,
    /// Packet-rate stress: TCP MSS 64 and small UDP datagrams.
    pub small_packets: bool,
    /// Number of elephant flows (100 MB – 1 GB, each sending about 2.5 % of
    /// all packets) kept open at any time.
    pub elephants: usize,
    /// Probability that a TCP data segment is held back and emitted after
    /// the next segment of its direction.
    pub reorder: f64,
    /// Probability that a data segment (or UDP datagram) is emitted twice.
    pub duplicate: f64,
    /// Probability that a data segment (or datagram) is missing from the
    /// capture (it reached the peer: ACKs cover it).
    pub loss: f64,
    /// Probability that a TCP data segment is followed by an overlapping
    /// retransmission of its second half carrying different bytes.
    pub conflict: f64,
    /// Probability that an IPv4 data packet is split into two fragments.
    pub fragment: f64,
    /// Fraction of flows over IPv6.
    pub ipv6: f64,
    /// Fraction of flows carrying an 802.1Q VLAN tag.
    pub vlan: f64,
    /// Byte patterns to plant into application payloads.
    pub signatures: Vec<Vec<u8>>,
    /// Fraction of flows that get one planted pattern (in a text or binary
    /// body, never inside protocol headers or TLS records).
    pub signature_rate: f64,
    /// Timestamp of the first packet, ns since the Unix epoch.
    pub start_ns: u64,
}

impl Default for CampusConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            packets: 2_000_000,
            link_gbps: 10.0,
            concurrency: 5000,
            small_packets: false,
            elephants: 4,
            reorder: 0.0,
            duplicate: 0.0,
            loss: 0.0,
            conflict: 0.0,
            fragment: 0.0,
            ipv6: 0.1,
            vlan: 0.05,
            signatures: default_signatures(),
            signature_rate: 0.02,
            start_ns: CAMPUS_START_NS,
        }
    }
}

/// The patterns planted by default: an EICAR-like marker and two strings
/// that never occur in the generated filler.
pub fn default_signatures() -> Vec<Vec<u8>> {
    vec![
        b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$STREAMCAP-TEST-SIGNATURE".to_vec(),
        b"/etc/passwd%00".to_vec(),
        b"\x90\x90\x90\x90\x90\x90\x90\x90\xcc\xcc\xeb\xfe".to_vec(),
    ]
}

/// The strings campus payloads are made of, for rule sets with real hits
/// on a campus trace (`streamcap-bench nids-rules`).
#[derive(Clone, Copy, Debug)]
pub struct Vocabulary {
    /// Words of the text bodies (HTML, CSS, JavaScript, JSON, mail),
    /// joined by single spaces, sentences ending in `. ` or `.\n`.
    pub words: &'static [&'static str],
    /// Domains of the server names ([`host_name`]).
    pub domains: &'static [&'static str],
    /// First labels of the server names ([`host_name`]).
    pub host_prefixes: &'static [&'static str],
    /// HTTP `User-Agent` values.
    pub user_agents: &'static [&'static str],
    /// HTTP request paths.
    pub paths: &'static [&'static str],
    /// Number of servers: server indexes are below this, small ones far
    /// more frequent (the index is `u³ × servers` for a uniform `u`).
    pub servers: u64,
}

/// The campus model's [`Vocabulary`].
pub fn vocabulary() -> Vocabulary {
    Vocabulary {
        words: crate::sample::WORDS,
        domains: generator::DOMAINS,
        host_prefixes: generator::PREFIXES,
        user_agents: generator::UAS,
        paths: generator::PATHS,
        servers: generator::SERVERS,
    }
}

/// The name of server `idx` (HTTP `Host`, TLS SNI, SMTP banner, DNS query):
/// `PREFIX` `idx / 97` `.` `DOMAIN`, e.g. `www0.example.com`.
pub fn host_name(idx: u64) -> String {
    generator::host_name(idx)
}

/// One planted signature occurrence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureTruth {
    /// Index into [`CampusConfig::signatures`].
    pub pattern_index: usize,
    /// `"to_server"` or `"to_client"`.
    pub dir: String,
    /// Stream offset of the first pattern byte.
    pub offset: u64,
}

/// Truth of one direction of a campus flow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampusDirectionTruth {
    /// Pcap records in this direction (each IP fragment counts once).
    pub packets: u64,
    /// Sum of their IP total lengths (IPv6: 40 + payload length).
    pub ip_bytes: u64,
    /// IP datagrams sent in this direction: one sent in fragments counts
    /// once, with its IP length before fragmentation (what a capture engine
    /// that reassembles fragments counts).
    #[serde(default)]
    pub datagrams: u64,
    /// Sum of the IP total lengths of those datagrams.
    #[serde(default)]
    pub datagram_bytes: u64,
    /// Length of the intended stream produced by the sender so far.
    pub stream_len: u64,
    /// SHA-256 of that stream, lowercase hex.
    pub sha256: String,
    /// Stream ranges that never appeared on the wire, sorted and merged.
    pub lost: Vec<ByteRange>,
    /// Conflicting overlapping retransmissions (always emitted after the
    /// original segment).
    pub conflicts: Vec<ConflictTruth>,
}

/// Impairments applied to a flow (counts of events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImpairmentCounts {
    /// Data segments emitted after a later segment of their direction.
    pub reordered: u32,
    /// Duplicated data packets.
    pub duplicated: u32,
    /// Data packets missing from the capture.
    pub lost: u32,
    /// Conflicting overlapping retransmissions.
    pub conflicts: u32,
    /// Packets sent as two IPv4 fragments.
    pub fragmented: u32,
}

impl ImpairmentCounts {
    /// Whether nothing was applied.
    pub fn is_clean(&self) -> bool {
        *self == Self::default()
    }
}

/// Ground truth of one campus flow (one JSON line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampusFlowTruth {
    /// Flow number in start order.
    pub id: usize,
    /// Application: `http`, `tls`, `ssh`, `smtp`, `ftp`, `ftp-data`,
    /// `tcp-unknown`, `dns`, `udp-unknown`.
    pub label: String,
    /// Transport protocol.
    pub proto: Protocol,
    /// Initiator endpoint.
    pub client: SocketAddr,
    /// Responder endpoint.
    pub server: SocketAddr,
    /// VLAN ids (empty if untagged).
    pub vlan: Vec<u16>,
    /// `fin` once both FINs are in the capture, `rst` after the RST,
    /// `none` for UDP and for flows still open at the end of the trace.
    pub end: EndReason,
    /// Whether this is one of the elephant flows.
    pub elephant: bool,
    /// Client → server.
    pub to_server: CampusDirectionTruth,
    /// Server → client.
    pub to_client: CampusDirectionTruth,
    /// Impairments applied.
    pub impairments: ImpairmentCounts,
    /// Planted signature occurrences within the produced streams.
    pub signatures: Vec<SignatureTruth>,
}

impl CampusFlowTruth {
    /// Parses a campus truth JSON-lines document.
    ///
    /// # Errors
    /// The first JSON error.
    pub fn parse_jsonl(text: &str) -> Result<Vec<Self>, serde_json::Error> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }
}

/// Summary of a generated trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CampusStats {
    /// Pcap records written.
    pub packets: u64,
    /// Size of the pcap file in bytes.
    pub pcap_bytes: u64,
    /// Sum of the IP lengths of all records.
    pub ip_bytes: u64,
    /// Records carrying TCP.
    pub tcp_packets: u64,
    /// Records of elephant flows.
    pub elephant_packets: u64,
    /// Flows started (= truth lines).
    pub flows: u64,
    /// Flows that ended (FIN, RST, or UDP flows that completed) before the
    /// end of the trace.
    pub flows_finished: u64,
    /// Flows still open at the end.
    pub flows_open: u64,
    /// Flows by total stream bytes (both directions): bucket `i` counts
    /// flows with `10^i <= bytes < 10^(i+1)` (bucket 0 also holds 0).
    pub size_decades: [u64; 10],
    /// Duration covered by the timestamps, ns.
    pub duration_ns: u64,
}

impl CampusStats {
    /// Mean IP packet size in bytes.
    pub fn mean_ip_packet(&self) -> f64 {
        self.ip_bytes as f64 / self.packets.max(1) as f64
    }
}

/// The streaming campus traffic model.
#[derive(Clone, Debug, Default)]
pub struct Campus {
    config: CampusConfig,
}

impl Campus {
    /// A model with the given configuration.
    pub fn new(config: CampusConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub fn config(&self) -> &CampusConfig {
        &self.config
    }

    /// The pcap options of campus traces (Ethernet, ns timestamps).
    pub fn pcap_config() -> PcapConfig {
        PcapConfig {
            link_type: LinkType::Ethernet,
            resolution: TsResolution::Nano,
            snaplen: PcapConfig::DEFAULT_SNAPLEN,
        }
    }

    /// Generates the trace into `pcap` and, if given, the JSON-lines truth
    /// into `truth`. Neither writer is buffered here: pass `BufWriter`s.
    ///
    /// # Errors
    /// I/O errors of the writers.
    pub fn run<W: Write>(
        &self,
        pcap: W,
        truth: Option<&mut dyn Write>,
    ) -> io::Result<(W, CampusStats)> {
        Generator::new(&self.config, pcap)?.run(truth)
    }

    /// The pcap and truth as in-memory bytes (for tests and small traces).
    pub fn to_bytes(&self) -> (Vec<u8>, String, CampusStats) {
        let mut truth = Vec::new();
        let (pcap, stats) = self
            .run(Vec::new(), Some(&mut truth))
            .expect("writing to memory cannot fail");
        (
            pcap,
            String::from_utf8(truth).expect("truth is UTF-8"),
            stats,
        )
    }

    /// Writes the pcap file and, optionally, the truth file (both through
    /// `BufWriter`s).
    ///
    /// # Errors
    /// I/O errors creating or writing the files.
    pub fn write_files(&self, pcap: &Path, truth: Option<&Path>) -> io::Result<CampusStats> {
        let out = BufWriter::with_capacity(1 << 20, File::create(pcap)?);
        let mut tw = match truth {
            Some(p) => Some(BufWriter::with_capacity(1 << 18, File::create(p)?)),
            None => None,
        };
        let (mut out, stats) = self.run(out, tw.as_mut().map(|w| w as &mut dyn Write))?;
        out.flush()?;
        if let Some(mut t) = tw {
            t.flush()?;
        }
        Ok(stats)
    }
}

/// Measures a run: returns the stats and the wall time in seconds.
pub fn timed<F: FnOnce() -> io::Result<CampusStats>>(f: F) -> io::Result<(CampusStats, f64)> {
    let t = Instant::now();
    let s = f()?;
    Ok((s, t.elapsed().as_secs_f64()))
}

// ---------------------------------------------------------------------------
// Randomness helpers.
