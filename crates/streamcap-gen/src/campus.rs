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

use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Instant;
use std::{cmp::Reverse, fmt::Write as _};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::packet::mac_for;
use crate::pcap::{LinkType, PcapConfig, PcapWriter, TsResolution};
use crate::prng::SplitMix64;
use crate::sample::{
    dns_query, dns_response, ssh_kexinit, ssh_packet, ssh_string, tls_client_hello,
    tls_server_hello, WORDS,
};
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

fn unit(rng: &mut SplitMix64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

fn normal(rng: &mut SplitMix64) -> f64 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    median * (sigma * normal(rng)).exp()
}

fn pareto(rng: &mut SplitMix64, xm: f64, alpha: f64) -> f64 {
    xm / unit(rng).powf(1.0 / alpha)
}

/// Probability as a threshold on 32 random bits.
fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64
}

fn hit(rng: &mut SplitMix64, th: u64) -> bool {
    th != 0 && (rng.next_u64() >> 32) < th
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Heavy-tailed application size (bytes of the main transfer).
fn flow_size(rng: &mut SplitMix64) -> u64 {
    let u = unit(rng);
    let s = if u < 0.60 {
        lognormal(rng, 1_200.0, 1.0)
    } else if u < 0.92 {
        lognormal(rng, 15_000.0, 1.2)
    } else {
        pareto(rng, 60_000.0, 1.05)
    };
    (s as u64).clamp(1, 100_000_000)
}

// ---------------------------------------------------------------------------
// Messages and payload filler.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    /// Words from the shared text block.
    Text,
    /// Pseudo-random bytes (compressed / encrypted content).
    Random,
    /// TLS application-data records (5-byte header + up to 16384 bytes).
    Tls,
}

/// One application send: protocol bytes (`head`) then a lazily generated
/// body of `body_len` bytes. For UDP each message is one datagram.
#[derive(Clone, Debug)]
struct Msg {
    dir: u8,
    head: Vec<u8>,
    body_len: u64,
    body: Body,
    key: u64,
    /// Planted signature: (pattern index, offset within the body).
    sig: Option<(u32, u64)>,
}

impl Msg {
    fn new(dir: u8, head: impl Into<Vec<u8>>) -> Self {
        Msg {
            dir,
            head: head.into(),
            body_len: 0,
            body: Body::Random,
            key: 0,
            sig: None,
        }
    }

    fn body(mut self, body: Body, len: u64, key: u64) -> Self {
        self.body = body;
        self.body_len = len;
        self.key = key;
        self
    }

    fn len(&self) -> u64 {
        self.head.len() as u64 + self.body_len
    }
}

const TLS_REC: u64 = 16_384 + 5;

/// Body length of TLS records carrying `data` bytes.
fn tls_len(data: u64) -> u64 {
    data.max(1) + 5 * data.max(1).div_ceil(16_384)
}

const TEXT_LEN: usize = 1 << 16;

fn text_block(seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed ^ 0x7e57_7e57);
    let mut s = Vec::with_capacity(TEXT_LEN + 64);
    while s.len() < TEXT_LEN {
        let n = rng.range(6, 16);
        for i in 0..n {
            if i > 0 {
                s.push(b' ');
            }
            s.extend_from_slice(rng.pick(WORDS).as_bytes());
        }
        s.extend_from_slice(if rng.chance(1, 6) { b".\n" } else { b". " });
    }
    s.truncate(TEXT_LEN);
    s
}

fn fill_random(key: u64, off: u64, out: &mut [u8]) {
    let mut i = 0;
    let mut pos = off;
    // Unaligned head.
    let within = (pos % 8) as usize;
    if within != 0 {
        let v = mix64(key ^ (pos / 8).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
        let n = (8 - within).min(out.len());
        out[..n].copy_from_slice(&v[within..within + n]);
        i = n;
        pos += n as u64;
    }
    let mut blk = pos / 8;
    let mut chunks = out[i..].chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&mix64(key ^ blk.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes());
        blk += 1;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let v = mix64(key ^ blk.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

fn fill_text(text: &[u8], key: u64, off: u64, out: &mut [u8]) {
    let mut p = ((key % TEXT_LEN as u64 + off) % TEXT_LEN as u64) as usize;
    let mut i = 0;
    while i < out.len() {
        let n = (TEXT_LEN - p).min(out.len() - i);
        out[i..i + n].copy_from_slice(&text[p..p + n]);
        i += n;
        p = 0;
    }
}

fn fill_tls(key: u64, body_len: u64, off: u64, out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        let pos = off + i as u64;
        let rec = pos / TLS_REC;
        let within = pos % TLS_REC;
        if within < 5 {
            let rec_len = (body_len - rec * TLS_REC - 5).min(16_384) as u16;
            let h = [0x17, 0x03, 0x03, (rec_len >> 8) as u8, rec_len as u8];
            let n = ((5 - within) as usize).min(out.len() - i);
            out[i..i + n].copy_from_slice(&h[within as usize..within as usize + n]);
            i += n;
        } else {
            let n = ((TLS_REC - within) as usize).min(out.len() - i);
            fill_random(key, pos, &mut out[i..i + n]);
            i += n;
        }
    }
}

/// Writes bytes `[pos, pos + out.len())` of message `m` into `out`.
fn fill_msg(m: &Msg, cx: &Cx, pos: u64, out: &mut [u8]) {
    let hl = m.head.len() as u64;
    let mut i = 0;
    if pos < hl {
        let n = ((hl - pos) as usize).min(out.len());
        out[..n].copy_from_slice(&m.head[pos as usize..pos as usize + n]);
        i = n;
    }
    if i < out.len() {
        let boff = pos + i as u64 - hl;
        let dst = &mut out[i..];
        match m.body {
            Body::Text => fill_text(&cx.text, m.key, boff, dst),
            Body::Random => fill_random(m.key, boff, dst),
            Body::Tls => fill_tls(m.key, m.body_len, boff, dst),
        }
    }
    if let Some((p, at)) = m.sig {
        let pat = &cx.signatures[p as usize];
        let (s, e) = (hl + at, hl + at + pat.len() as u64);
        let (a, b) = (s.max(pos), e.min(pos + out.len() as u64));
        if a < b {
            out[(a - pos) as usize..(b - pos) as usize]
                .copy_from_slice(&pat[(a - s) as usize..(b - s) as usize]);
        }
    }
}

// ---------------------------------------------------------------------------
// Checksums and frame building.

fn sum_words(mut sum: u64, data: &[u8]) -> u64 {
    let mut c = data.chunks_exact(8);
    for w in &mut c {
        let v = u64::from_be_bytes(w.try_into().unwrap());
        sum += (v >> 32) + (v & 0xffff_ffff);
    }
    let r = c.remainder();
    let mut t = [0u8; 8];
    t[..r.len()].copy_from_slice(r);
    let v = u64::from_be_bytes(t);
    sum + (v >> 32) + (v & 0xffff_ffff)
}

fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// SYN options: MSS, NOP NOP SACK-permitted, NOP window scale 7.
const SYN_OPTS_LEN: usize = 12;

#[derive(Clone, Copy, Debug)]
enum L4 {
    Tcp { seq: u32, ack: u32, flags: u8 },
    Udp,
}

/// Addressing of a flow.
#[derive(Clone, Debug)]
struct Ends {
    v6: bool,
    /// Indexed by sender: 0 = client, 1 = server.
    ip: [[u8; 16]; 2],
    port: [u16; 2],
    mac: [[u8; 6]; 2],
    vlan: u16,
    ttl: [u8; 2],
    tcp: bool,
    mss: u16,
    window: u16,
}

impl Ends {
    fn l2(&self) -> usize {
        if self.vlan != 0 {
            18
        } else {
            14
        }
    }

    fn l3(&self) -> usize {
        if self.v6 {
            40
        } else {
            20
        }
    }

    fn l4(&self, l4: &L4) -> usize {
        match l4 {
            L4::Tcp { flags, .. } if flags & TCP_SYN != 0 => 20 + SYN_OPTS_LEN,
            L4::Tcp { .. } => 20,
            L4::Udp => 8,
        }
    }

    fn hdr_len(&self, l4: &L4) -> usize {
        self.l2() + self.l3() + self.l4(l4)
    }

    fn addr(&self, i: usize) -> SocketAddr {
        let ip = if self.v6 {
            IpAddr::V6(Ipv6Addr::from(self.ip[i]))
        } else {
            IpAddr::V4(Ipv4Addr::new(
                self.ip[i][0],
                self.ip[i][1],
                self.ip[i][2],
                self.ip[i][3],
            ))
        };
        SocketAddr::new(ip, self.port[i])
    }

    /// Writes all headers of a packet from sender `s` whose payload already
    /// sits at `buf[hdr_len..]`; returns the IP length.
    fn write_headers(&self, buf: &mut [u8], s: usize, l4: &L4, ip_id: u16) -> u64 {
        let r = 1 - s;
        let l2 = self.l2();
        let l3 = self.l3();
        let l4len = buf.len() - l2 - l3;
        buf[0..6].copy_from_slice(&self.mac[r]);
        buf[6..12].copy_from_slice(&self.mac[s]);
        let ethertype: u16 = if self.v6 { 0x86dd } else { 0x0800 };
        if self.vlan != 0 {
            buf[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            buf[14..16].copy_from_slice(&(self.vlan & 0x0fff).to_be_bytes());
            buf[16..18].copy_from_slice(&ethertype.to_be_bytes());
        } else {
            buf[12..14].copy_from_slice(&ethertype.to_be_bytes());
        }
        let proto: u8 = if matches!(l4, L4::Tcp { .. }) { 6 } else { 17 };
        // Pseudo-header sum.
        let mut sum: u64;
        let ip = &mut buf[l2..l2 + l3];
        if self.v6 {
            ip[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            ip[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
            ip[6] = proto;
            ip[7] = self.ttl[s];
            ip[8..24].copy_from_slice(&self.ip[s]);
            ip[24..40].copy_from_slice(&self.ip[r]);
            sum = sum_words(0, &ip[8..40]);
        } else {
            ip[0] = 0x45;
            ip[1] = 0;
            ip[2..4].copy_from_slice(&((20 + l4len) as u16).to_be_bytes());
            ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
            ip[6..8].copy_from_slice(&[0x40, 0]);
            ip[8] = self.ttl[s];
            ip[9] = proto;
            ip[10..12].copy_from_slice(&[0, 0]);
            ip[12..16].copy_from_slice(&self.ip[s][..4]);
            ip[16..20].copy_from_slice(&self.ip[r][..4]);
            let c = fold(sum_words(0, ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            sum = sum_words(0, &ip[12..20]);
        }
        sum += u64::from(proto) + l4len as u64;
        let t = &mut buf[l2 + l3..];
        t[0..2].copy_from_slice(&self.port[s].to_be_bytes());
        t[2..4].copy_from_slice(&self.port[r].to_be_bytes());
        match *l4 {
            L4::Tcp { seq, ack, flags } => {
                let hl = self.l4(l4);
                t[4..8].copy_from_slice(&seq.to_be_bytes());
                t[8..12].copy_from_slice(&ack.to_be_bytes());
                t[12] = ((hl / 4) as u8) << 4;
                t[13] = flags;
                t[14..16].copy_from_slice(&self.window.to_be_bytes());
                t[16..20].copy_from_slice(&[0, 0, 0, 0]);
                if hl > 20 {
                    let m = self.mss.to_be_bytes();
                    t[20..32].copy_from_slice(&[2, 4, m[0], m[1], 1, 1, 4, 2, 1, 3, 3, 7]);
                }
                let c = fold(sum_words(sum, t));
                t[16..18].copy_from_slice(&c.to_be_bytes());
            }
            L4::Udp => {
                t[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
                t[6..8].copy_from_slice(&[0, 0]);
                let c = fold(sum_words(sum, t));
                let c = if c == 0 { 0xffff } else { c };
                t[6..8].copy_from_slice(&c.to_be_bytes());
            }
        }
        (l3 + l4len) as u64
    }
}

// ---------------------------------------------------------------------------
// Output.

struct Wire<W: Write> {
    pcap: PcapWriter<W>,
    buf: Vec<u8>,
    frag: Vec<u8>,
    start_ns: u64,
    clock_fs: u128,
    fs_per_byte: u128,
    stats: CampusStats,
    budget: u64,
}

impl<W: Write> Wire<W> {
    fn prepare(&mut self, len: usize) {
        self.buf.clear();
        self.buf.resize(len, 0);
    }

    fn remaining(&self) -> u64 {
        self.budget - self.stats.packets
    }

    fn write(&mut self, frag: bool) -> io::Result<()> {
        let f = if frag { &self.frag } else { &self.buf };
        let ts = self.start_ns + (self.clock_fs / 1_000_000) as u64;
        self.clock_fs += (f.len() as u128 + 24) * self.fs_per_byte;
        self.pcap.write_packet(ts, f)?;
        self.stats.packets += 1;
        self.stats.pcap_bytes += 16 + f.len() as u64;
        Ok(())
    }

    /// Emits the built IPv4 packet in `buf` as two fragments.
    fn write_fragments(&mut self, l2: usize) -> io::Result<[u64; 2]> {
        let l4 = self.buf.len() - l2 - 20;
        let k = (l4 / 2) & !7;
        let mut lens = [0; 2];
        for (i, (from, to)) in [(0, k), (k, l4)].into_iter().enumerate() {
            self.frag.clear();
            self.frag.extend_from_slice(&self.buf[..l2 + 20]);
            self.frag
                .extend_from_slice(&self.buf[l2 + 20 + from..l2 + 20 + to]);
            let ip = &mut self.frag[l2..l2 + 20];
            ip[2..4].copy_from_slice(&((20 + to - from) as u16).to_be_bytes());
            let mut fo = (from / 8) as u16;
            if i == 0 {
                fo |= 0x2000;
            }
            ip[6..8].copy_from_slice(&fo.to_be_bytes());
            ip[10..12].copy_from_slice(&[0, 0]);
            let c = fold(sum_words(0, ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            lens[i] = (20 + to - from) as u64;
            self.write(true)?;
        }
        Ok(lens)
    }
}

/// Shared, read-only context.
struct Cx {
    text: Vec<u8>,
    signatures: Vec<Vec<u8>>,
    sig_th: u64,
    reorder: u64,
    dup: u64,
    loss: u64,
    conflict: u64,
    fragment: u64,
    ipv6: u64,
    vlan: u64,
    small: bool,
    gap: u64,
}

// ---------------------------------------------------------------------------
// Flows.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Syn,
    SynAck,
    HsAck,
    Data,
    Fin1,
    Fin2,
    LastAck,
    Rst,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    Http,
    Tls,
    Ssh,
    Smtp,
    Ftp,
    FtpData,
    TcpUnknown,
    Dns,
    UdpUnknown,
}

impl App {
    fn label(self) -> &'static str {
        match self {
            App::Http => "http",
            App::Tls => "tls",
            App::Ssh => "ssh",
            App::Smtp => "smtp",
            App::Ftp => "ftp",
            App::FtpData => "ftp-data",
            App::TcpUnknown => "tcp-unknown",
            App::Dns => "dns",
            App::UdpUnknown => "udp-unknown",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extra {
    Held,
    Dup,
    Conflict,
}

/// A data packet whose payload is kept (rare: impairments only).
#[derive(Clone, Debug)]
struct Owned {
    s: usize,
    l4: L4,
    off: u64,
    payload: Vec<u8>,
    kind: Extra,
    /// For conflicts: the intended bytes.
    original: Vec<u8>,
}

struct Flow {
    id: usize,
    app: App,
    elephant: bool,
    ends: Ends,
    rng: SplitMix64,
    isn: [u32; 2],
    ip_id: [u16; 2],
    phase: Phase,
    msgs: Vec<Msg>,
    mi: usize,
    mpos: u64,
    sent: [u64; 2],
    hash: [Sha256; 2],
    unacked: u32,
    ack_every: u32,
    ack_due: Option<usize>,
    held: Option<Owned>,
    extra: VecDeque<Owned>,
    closer: usize,
    rst: bool,
    end: EndReason,
    gap: u64,
    packets: [u64; 2],
    ip_bytes: [u64; 2],
    datagrams: [u64; 2],
    datagram_bytes: [u64; 2],
    lost: [Vec<ByteRange>; 2],
    conflicts: [Vec<ConflictTruth>; 2],
    imp: ImpairmentCounts,
    sigs: Vec<SignatureTruth>,
}

fn push_range(v: &mut Vec<ByteRange>, start: u64, end: u64) {
    if let Some(last) = v.last_mut() {
        if last.end == start {
            last.end = end;
            return;
        }
    }
    v.push(ByteRange { start, end });
}

impl Flow {
    fn seq(&self, s: usize, extra: u32) -> u32 {
        self.isn[s]
            .wrapping_add(1)
            .wrapping_add(self.sent[s] as u32)
            .wrapping_add(extra)
    }

    /// Sends the packet whose payload is at `w.buf[hdr..]`.
    fn send<W: Write>(&mut self, w: &mut Wire<W>, s: usize, l4: L4, frag: bool) -> io::Result<()> {
        let id = self.ip_id[s];
        self.ip_id[s] = id.wrapping_add(1);
        let iplen = self.ends.write_headers(&mut w.buf, s, &l4, id);
        let is_tcp = self.ends.tcp;
        let n = if frag && !self.ends.v6 && w.remaining() >= 2 && iplen >= 20 + 24 {
            self.imp.fragmented += 1;
            let lens = w.write_fragments(self.ends.l2())?;
            self.ip_bytes[s] += lens[0] + lens[1];
            w.stats.ip_bytes += lens[0] + lens[1];
            2
        } else {
            w.write(false)?;
            self.ip_bytes[s] += iplen;
            w.stats.ip_bytes += iplen;
            1
        };
        self.packets[s] += n;
        self.datagrams[s] += 1;
        self.datagram_bytes[s] += iplen;
        if is_tcp {
            w.stats.tcp_packets += n;
        }
        if self.elephant {
            w.stats.elephant_packets += n;
        }
        Ok(())
    }

    fn control<W: Write>(&mut self, w: &mut Wire<W>, s: usize, l4: L4) -> io::Result<()> {
        let h = self.ends.hdr_len(&l4);
        w.prepare(h);
        self.send(w, s, l4, false)
    }

    fn send_owned<W: Write>(&mut self, w: &mut Wire<W>, o: Owned, cx: &Cx) -> io::Result<()> {
        let h = self.ends.hdr_len(&o.l4);
        w.prepare(h + o.payload.len());
        w.buf[h..].copy_from_slice(&o.payload);
        let frag = hit(&mut self.rng, cx.fragment);
        self.send(w, o.s, o.l4, frag)?;
        let end = o.off + o.payload.len() as u64;
        match o.kind {
            Extra::Held => self.imp.reordered += 1,
            Extra::Dup => self.imp.duplicated += 1,
            Extra::Conflict => {
                self.imp.conflicts += 1;
                self.conflicts[o.s].push(ConflictTruth {
                    range: ByteRange { start: o.off, end },
                    original: o.original,
                    conflicting: o.payload,
                    conflict_first: false,
                });
            }
        }
        Ok(())
    }

    /// Produces the next packet(s). Returns the virtual gap to the next
    /// call, or `None` when the flow is over.
    fn step<W: Write>(&mut self, w: &mut Wire<W>, cx: &Cx) -> io::Result<Option<u64>> {
        if let Some(o) = self.extra.pop_front() {
            self.send_owned(w, o, cx)?;
            return Ok(Some(self.gap / 2 + 1));
        }
        if !self.ends.tcp {
            return self.step_udp(w, cx);
        }
        loop {
            match self.phase {
                Phase::Syn => {
                    let l4 = L4::Tcp {
                        seq: self.isn[0],
                        ack: 0,
                        flags: TCP_SYN,
                    };
                    self.control(w, 0, l4)?;
                    self.phase = Phase::SynAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::SynAck => {
                    let l4 = L4::Tcp {
                        seq: self.isn[1],
                        ack: self.seq(0, 0),
                        flags: TCP_SYN | TCP_ACK,
                    };
                    self.control(w, 1, l4)?;
                    self.phase = Phase::HsAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::HsAck => {
                    let l4 = L4::Tcp {
                        seq: self.seq(0, 0),
                        ack: self.seq(1, 0),
                        flags: TCP_ACK,
                    };
                    self.control(w, 0, l4)?;
                    self.phase = Phase::Data;
                    return Ok(Some(self.next_gap()));
                }
                Phase::Data => {
                    if let Some(r) = self.ack_due.take() {
                        let l4 = L4::Tcp {
                            seq: self.seq(r, 0),
                            ack: self.seq(1 - r, 0),
                            flags: TCP_ACK,
                        };
                        self.control(w, r, l4)?;
                        return Ok(Some(self.next_gap()));
                    }
                    if self.mi >= self.msgs.len() {
                        if let Some(h) = self.held.take() {
                            self.extra.push_back(h);
                            return self.step(w, cx);
                        }
                        self.phase = if self.rst { Phase::Rst } else { Phase::Fin1 };
                        continue;
                    }
                    if let Some(g) = self.data_segment(w, cx)? {
                        return Ok(Some(g));
                    }
                }
                Phase::Fin1 => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 0),
                        ack: self.seq(b, 0),
                        flags: TCP_FIN | TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.phase = Phase::Fin2;
                    return Ok(Some(self.rtt()));
                }
                Phase::Fin2 => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(b, 0),
                        ack: self.seq(a, 1),
                        flags: TCP_FIN | TCP_ACK,
                    };
                    self.control(w, b, l4)?;
                    self.end = EndReason::Fin;
                    self.phase = Phase::LastAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::LastAck => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 1),
                        ack: self.seq(b, 1),
                        flags: TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.phase = Phase::Done;
                    return Ok(None);
                }
                Phase::Rst => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 0),
                        ack: self.seq(b, 0),
                        flags: TCP_RST | TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.end = EndReason::Rst;
                    self.phase = Phase::Done;
                    return Ok(None);
                }
                Phase::Done => return Ok(None),
            }
        }
    }

    fn rtt(&mut self) -> u64 {
        self.gap * 3 + self.rng.below(self.gap * 2 + 1)
    }

    fn next_gap(&mut self) -> u64 {
        self.gap / 2 + self.rng.below(self.gap + 1)
    }

    /// Called when message `mi` starts: records its planted signature.
    fn start_msg(&mut self) {
        let m = &self.msgs[self.mi];
        if let Some((p, at)) = m.sig {
            let s = m.dir as usize;
            let off = self.sent[s] + m.head.len() as u64 + at;
            // Kept only if fully produced (checked in `truth`).
            self.sigs.push(SignatureTruth {
                pattern_index: p as usize,
                dir: if s == 0 { "to_server" } else { "to_client" }.into(),
                offset: off,
            });
        }
    }

    /// Produces one TCP data segment. Returns `None` when nothing was
    /// emitted (the segment was lost or held back).
    fn data_segment<W: Write>(&mut self, w: &mut Wire<W>, cx: &Cx) -> io::Result<Option<u64>> {
        if self.mpos == 0 {
            self.start_msg();
        }
        let m = &self.msgs[self.mi];
        let s = m.dir as usize;
        let r = 1 - s;
        let total = m.len();
        let n = (total - self.mpos).min(u64::from(self.ends.mss)) as usize;
        let last = self.mpos + n as u64 == total;
        let flags = TCP_ACK | if last { TCP_PSH } else { 0 };
        let l4 = L4::Tcp {
            seq: self.seq(s, 0),
            ack: self.seq(r, 0),
            flags,
        };
        let h = self.ends.hdr_len(&l4);
        w.prepare(h + n);
        fill_msg(m, cx, self.mpos, &mut w.buf[h..]);
        self.hash[s].update(&w.buf[h..]);
        let off = self.sent[s];
        self.sent[s] += n as u64;
        self.mpos += n as u64;
        let next_dir = if last {
            self.mi += 1;
            self.mpos = 0;
            self.msgs.get(self.mi).map(|m| m.dir as usize)
        } else {
            Some(s)
        };
        // ACK policy: every `ack_every` segments, and at the end of a
        // message unless the receiver answers right away (piggyback).
        self.unacked += 1;
        if last && next_dir == Some(r) {
            self.unacked = 0;
        } else if last || self.unacked >= self.ack_every {
            self.ack_due = Some(r);
            self.unacked = 0;
        }
        let turn = next_dir != Some(s);

        let emitted = if hit(&mut self.rng, cx.loss) {
            self.imp.lost += 1;
            push_range(&mut self.lost[s], off, off + n as u64);
            false
        } else if !last && self.held.is_none() && hit(&mut self.rng, cx.reorder) {
            self.held = Some(Owned {
                s,
                l4,
                off,
                payload: w.buf[h..].to_vec(),
                kind: Extra::Held,
                original: Vec::new(),
            });
            false
        } else {
            let dup = hit(&mut self.rng, cx.dup);
            let conflict = n >= 8 && hit(&mut self.rng, cx.conflict);
            let frag = hit(&mut self.rng, cx.fragment);
            let copy = (dup || conflict).then(|| w.buf[h..].to_vec());
            self.send(w, s, l4, frag)?;
            if let Some(h) = self.held.take() {
                self.extra.push_back(h);
            }
            if let Some(p) = copy {
                if dup {
                    self.extra.push_back(Owned {
                        s,
                        l4,
                        off,
                        payload: p.clone(),
                        kind: Extra::Dup,
                        original: Vec::new(),
                    });
                }
                if conflict {
                    let half = n / 2;
                    let original = p[half..].to_vec();
                    let payload: Vec<u8> = original
                        .iter()
                        .map(|b| b ^ (self.rng.next_u32() as u8 | 1))
                        .collect();
                    let seq = self.isn[s]
                        .wrapping_add(1)
                        .wrapping_add((off + half as u64) as u32);
                    self.extra.push_back(Owned {
                        s,
                        l4: L4::Tcp {
                            seq,
                            ack: self.seq(r, 0),
                            flags: TCP_ACK | TCP_PSH,
                        },
                        off: off + half as u64,
                        payload,
                        kind: Extra::Conflict,
                        original,
                    });
                }
            }
            true
        };
        if turn {
            if let Some(h) = self.held.take() {
                self.extra.push_back(h);
            }
        }
        if !emitted {
            return Ok(None);
        }
        Ok(Some(if turn && next_dir.is_some() {
            self.rtt()
        } else {
            self.next_gap()
        }))
    }

    fn step_udp<W: Write>(&mut self, w: &mut Wire<W>, cx: &Cx) -> io::Result<Option<u64>> {
        loop {
            if self.mi >= self.msgs.len() {
                return Ok(None);
            }
            self.start_msg();
            let m = &self.msgs[self.mi];
            let s = m.dir as usize;
            let n = m.len() as usize;
            let h = self.ends.hdr_len(&L4::Udp);
            w.prepare(h + n);
            fill_msg(m, cx, 0, &mut w.buf[h..]);
            self.hash[s].update(&w.buf[h..]);
            let off = self.sent[s];
            self.sent[s] += n as u64;
            self.mi += 1;
            let next_dir = self.msgs.get(self.mi).map(|m| m.dir as usize);
            if hit(&mut self.rng, cx.loss) {
                self.imp.lost += 1;
                push_range(&mut self.lost[s], off, off + n as u64);
                continue;
            }
            let frag = hit(&mut self.rng, cx.fragment);
            if hit(&mut self.rng, cx.dup) {
                self.extra.push_back(Owned {
                    s,
                    l4: L4::Udp,
                    off,
                    payload: w.buf[h..].to_vec(),
                    kind: Extra::Dup,
                    original: Vec::new(),
                });
            }
            self.send(w, s, L4::Udp, frag)?;
            let more = next_dir.is_some() || !self.extra.is_empty();
            return Ok(more.then(|| {
                if next_dir.is_some_and(|d| d != s) {
                    self.rtt()
                } else {
                    self.next_gap()
                }
            }));
        }
    }

    /// The truth line (consumes the hashes).
    fn truth(&mut self, cx: &Cx) -> CampusFlowTruth {
        // Held back or queued data never emitted is lost for the capture.
        let mut pend: Vec<Owned> = self.held.take().into_iter().collect();
        pend.extend(self.extra.drain(..));
        for o in pend {
            if o.kind == Extra::Held {
                self.imp.lost += 1;
                let v = &mut self.lost[o.s];
                v.push(ByteRange {
                    start: o.off,
                    end: o.off + o.payload.len() as u64,
                });
                *v = crate::truth::merge(std::mem::take(v));
            }
        }
        let sent = self.sent;
        let sigs = self
            .sigs
            .drain(..)
            .filter(|t| {
                let s = usize::from(t.dir != "to_server");
                t.offset + cx.signatures[t.pattern_index].len() as u64 <= sent[s]
            })
            .collect::<Vec<_>>();
        let mut dir = |s: usize| {
            let h = std::mem::take(&mut self.hash[s]);
            CampusDirectionTruth {
                packets: self.packets[s],
                ip_bytes: self.ip_bytes[s],
                datagrams: self.datagrams[s],
                datagram_bytes: self.datagram_bytes[s],
                stream_len: self.sent[s],
                sha256: hex::encode(h.finalize()),
                lost: std::mem::take(&mut self.lost[s]),
                conflicts: std::mem::take(&mut self.conflicts[s]),
            }
        };
        let to_server = dir(0);
        let to_client = dir(1);
        CampusFlowTruth {
            id: self.id,
            label: self.app.label().into(),
            proto: if self.ends.tcp {
                Protocol::Tcp
            } else {
                Protocol::Udp
            },
            client: self.ends.addr(0),
            server: self.ends.addr(1),
            vlan: if self.ends.vlan != 0 {
                vec![self.ends.vlan]
            } else {
                vec![]
            },
            end: self.end,
            elephant: self.elephant,
            to_server,
            to_client,
            impairments: self.imp,
            signatures: sigs,
        }
    }
}

// ---------------------------------------------------------------------------
// The generator.

const HOSTS: usize = 8192;
const SERVERS: u64 = 4096;

struct Generator<W: Write> {
    cx: Cx,
    wire: Wire<W>,
    rng: SplitMix64,
    next_id: usize,
    ports: Vec<u16>,
    concurrency: usize,
    elephants: usize,
    target: u64,
}

const DOMAINS: &[&str] = &[
    "example.com",
    "example.org",
    "example.net",
    "example.edu",
    "campus.example.edu",
    "cdn.example.net",
    "video.example.com",
    "mail.example.org",
];
const PREFIXES: &[&str] = &[
    "www", "api", "static", "cdn", "img", "login", "news", "updates", "files", "media",
];
const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "curl/8.5.0",
    "Debian APT-HTTP/1.3 (2.7.14)",
];
const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/news/2024/05/campus-network.html",
    "/api/v1/items",
    "/api/v1/status",
    "/css/site.css",
    "/js/app.js",
    "/img/logo.png",
    "/media/lecture-12.mp4",
    "/pub/dataset.tar.gz",
    "/debian/pool/main/l/linux/linux-image.deb",
];

fn host_name(idx: u64) -> String {
    format!(
        "{}{}.{}",
        PREFIXES[(idx % PREFIXES.len() as u64) as usize],
        idx / 97,
        DOMAINS[((idx / 7) % DOMAINS.len() as u64) as usize]
    )
}

/// HTTP date of a Unix timestamp (seconds).
fn http_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} GMT",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

impl<W: Write> Generator<W> {
    fn new(c: &CampusConfig, pcap: W) -> io::Result<Self> {
        let mut rng = SplitMix64::new(c.seed);
        let text = text_block(c.seed);
        let gbps = if c.link_gbps > 0.0 { c.link_gbps } else { 10.0 };
        let fs_per_byte = (8_000_000.0 / gbps).round().max(1.0) as u128;
        let mut ports = vec![0u16; HOSTS];
        for p in &mut ports {
            *p = 32_768 + rng.below(28_000) as u16;
        }
        Ok(Self {
            cx: Cx {
                text,
                signatures: c.signatures.clone(),
                sig_th: if c.signatures.iter().any(|s| !s.is_empty()) {
                    threshold(c.signature_rate)
                } else {
                    0
                },
                reorder: threshold(c.reorder),
                dup: threshold(c.duplicate),
                loss: threshold(c.loss),
                conflict: threshold(c.conflict),
                fragment: threshold(c.fragment),
                ipv6: threshold(c.ipv6),
                vlan: threshold(c.vlan),
                small: c.small_packets,
                gap: 1_000_000,
            },
            wire: Wire {
                pcap: PcapWriter::with_config(pcap, Campus::pcap_config())?,
                buf: Vec::with_capacity(2048),
                frag: Vec::with_capacity(2048),
                start_ns: c.start_ns,
                clock_fs: 0,
                fs_per_byte,
                stats: CampusStats {
                    pcap_bytes: 24,
                    ..Default::default()
                },
                budget: c.packets,
            },
            rng,
            next_id: 0,
            ports,
            concurrency: c.concurrency.max(1),
            elephants: c.elephants,
            target: c.packets,
        })
    }

    fn run(mut self, mut truth: Option<&mut dyn Write>) -> io::Result<(W, CampusStats)> {
        let mut slots: Vec<Option<Flow>> = Vec::new();
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
        let g = self.cx.gap;
        let total = self.concurrency + self.elephants;
        for i in 0..total {
            let t = self.rng.below(g * 4);
            let f = self.new_flow(i < self.elephants);
            slots.push(Some(f));
            heap.push(Reverse((t, i as u32)));
        }
        let mut line = Vec::with_capacity(1024);
        while self.wire.stats.packets < self.target {
            let Some(Reverse((t, slot))) = heap.pop() else {
                break;
            };
            let flow = slots[slot as usize].as_mut().expect("scheduled slot");
            match flow.step(&mut self.wire, &self.cx)? {
                Some(gap) => heap.push(Reverse((t + gap.max(1), slot))),
                None => {
                    let mut f = slots[slot as usize].take().expect("slot");
                    self.wire.stats.flows_finished += 1;
                    self.emit_truth(&mut f, &mut truth, &mut line)?;
                    let nf = self.new_flow(f.elephant);
                    slots[slot as usize] = Some(nf);
                    let start = t + 1 + self.rng.below(g);
                    heap.push(Reverse((start, slot)));
                }
            }
        }
        // Open flows, in id order. Flows that never sent a packet are
        // dropped (they would not be in the capture).
        let mut open: Vec<Flow> = slots
            .into_iter()
            .flatten()
            .filter(|f| f.packets[0] + f.packets[1] > 0)
            .collect();
        open.sort_by_key(|f| f.id);
        // Renumber is not needed: ids stay in start order with gaps for
        // flows that never started; record count for the stats.
        for f in &mut open {
            self.wire.stats.flows_open += 1;
            self.emit_truth(f, &mut truth, &mut line)?;
        }
        self.wire.stats.duration_ns = (self.wire.clock_fs / 1_000_000) as u64;
        self.wire.pcap.flush()?;
        let stats = self.wire.stats;
        Ok((self.wire.pcap.into_inner(), stats))
    }

    fn emit_truth(
        &mut self,
        f: &mut Flow,
        out: &mut Option<&mut dyn Write>,
        line: &mut Vec<u8>,
    ) -> io::Result<()> {
        let stats = &mut self.wire.stats;
        stats.flows += 1;
        let bytes = f.sent[0] + f.sent[1];
        let mut d = 0;
        let mut v = bytes;
        while v >= 10 && d < 9 {
            v /= 10;
            d += 1;
        }
        stats.size_decades[d] += 1;
        if let Some(w) = out.as_mut() {
            let t = f.truth(&self.cx);
            line.clear();
            serde_json::to_writer(&mut *line, &t).map_err(io::Error::other)?;
            line.push(b'\n');
            w.write_all(line)?;
        }
        Ok(())
    }

    fn pick_app(&mut self) -> App {
        let u = self.rng.below(1000);
        match u {
            0..=219 => App::Http,
            220..=599 => App::Tls,
            600..=619 => App::Ssh,
            620..=639 => App::Smtp,
            640..=649 => App::Ftp,
            650..=659 => App::FtpData,
            660..=719 => App::TcpUnknown,
            720..=959 => App::Dns,
            _ => App::UdpUnknown,
        }
    }

    fn new_flow(&mut self, elephant: bool) -> Flow {
        let id = self.next_id;
        self.next_id += 1;
        let mut rng = SplitMix64::new(self.rng.next_u64());
        let app = if elephant {
            *rng.pick(&[App::Tls, App::Ssh, App::FtpData, App::Http])
        } else {
            self.pick_app()
        };
        let tcp = !matches!(app, App::Dns | App::UdpUnknown);
        let v6 = hit(&mut rng, self.cx.ipv6);
        let vlan = if hit(&mut rng, self.cx.vlan) {
            *rng.pick(&[10u16, 20, 100, 200, 301, 302, 1000])
        } else {
            0
        };
        let host = rng.below(HOSTS as u64) as usize;
        let cport = self.ports[host];
        self.ports[host] = if cport >= 60_999 { 32_768 } else { cport + 1 };
        // Skewed server popularity.
        let u = unit(&mut rng);
        let sidx = (u * u * u * SERVERS as f64) as u64;
        let mut ip = [[0u8; 16]; 2];
        let dns_server = app == App::Dns;
        if v6 {
            ip[0] = Ipv6Addr::new(
                0x2001,
                0xdb8,
                0xca,
                0,
                0,
                0,
                (host >> 8) as u16,
                host as u16,
            )
            .octets();
            ip[1] = if dns_server {
                Ipv6Addr::new(0x2001, 0xdb8, 0xca, 0x53, 0, 0, 0, 0x53 + (sidx % 2) as u16)
            } else {
                Ipv6Addr::new(
                    0x2001,
                    0xdb8,
                    0x5e,
                    0,
                    0,
                    0,
                    (sidx >> 8) as u16,
                    sidx as u16 + 1,
                )
            }
            .octets();
        } else {
            ip[0][..4].copy_from_slice(&[10, 20, (host / 250) as u8, 2 + (host % 250) as u8]);
            ip[1][..4].copy_from_slice(&if dns_server {
                [10, 0, (sidx % 2) as u8, 53]
            } else {
                [
                    198,
                    18 + (sidx >> 14) as u8,
                    (sidx >> 6) as u8,
                    1 + (sidx & 63) as u8,
                ]
            });
        }
        let sport = match app {
            App::Http => {
                if sidx % 10 == 9 {
                    8080
                } else {
                    80
                }
            }
            App::Tls => 443,
            App::Ssh => 22,
            App::Smtp => {
                if sidx % 4 == 0 {
                    587
                } else {
                    25
                }
            }
            App::Ftp => 21,
            App::FtpData => 50_000 + rng.below(1000) as u16,
            App::Dns => 53,
            App::TcpUnknown | App::UdpUnknown => {
                let p = 1024 + rng.below(64_000) as u16;
                if matches!(p, 8080 | 587) {
                    p + 1
                } else {
                    p
                }
            }
        };
        let mss: u16 = if self.cx.small {
            64
        } else if v6 {
            1440
        } else if rng.chance(1, 10) {
            1380
        } else {
            1460
        };
        let ends = Ends {
            v6,
            ip,
            port: [cport, sport],
            mac: [
                mac_for(IpAddr::V4(Ipv4Addr::new(
                    10,
                    20,
                    (host / 250) as u8,
                    host as u8,
                ))),
                [0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x01],
            ],
            vlan,
            ttl: [*rng.pick(&[64, 128]), 64 - rng.below(20) as u8],
            tcp,
            mss,
            window: *rng.pick(&[64_240, 65_535, 29_200, 502]),
        };
        let size = if elephant {
            100_000_000 + rng.below(900_000_000)
        } else {
            flow_size(&mut rng)
        };
        let start_secs =
            (self.wire.start_ns + (self.wire.clock_fs / 1_000_000) as u64) / 1_000_000_000;
        let mut msgs = script(app, &mut rng, size, &host_name(sidx), start_secs, &self.cx);
        if hit(&mut rng, self.cx.sig_th) {
            plant(&mut msgs, &mut rng, &self.cx);
        }
        // Bulk transfers run faster than interactive ones (bigger windows):
        // the per-flow packet rate grows with the square root of the size,
        // up to 40 times.
        let gap = if elephant {
            // About 2.5 % of the packets each, whatever the concurrency.
            self.cx.gap * 40 / self.concurrency as u64
        } else {
            let speed = (size as f64 / 30_000.0).sqrt().clamp(1.0, 40.0);
            ((self.cx.gap / 2 + rng.below(self.cx.gap)) as f64 / speed) as u64
        };
        let closer = usize::from(app == App::Http && rng.chance(1, 3));
        let rst = rng.chance(1, 25);
        let ack_every = *rng.pick(&[1, 2, 2, 2, 2, 2, 2, 3]);
        let isn = [rng.next_u32(), rng.next_u32()];
        let ip_id = [rng.next_u32() as u16, rng.next_u32() as u16];
        Flow {
            id,
            app,
            elephant,
            ends,
            rng,
            isn,
            ip_id,
            phase: Phase::Syn,
            msgs,
            mi: 0,
            mpos: 0,
            sent: [0; 2],
            hash: [Sha256::new(), Sha256::new()],
            unacked: 0,
            ack_every,
            ack_due: None,
            held: None,
            extra: VecDeque::new(),
            closer,
            rst,
            end: EndReason::None,
            gap: gap.max(1),
            packets: [0; 2],
            ip_bytes: [0; 2],
            datagrams: [0; 2],
            datagram_bytes: [0; 2],
            lost: [Vec::new(), Vec::new()],
            conflicts: [Vec::new(), Vec::new()],
            imp: ImpairmentCounts::default(),
            sigs: Vec::new(),
        }
    }
}

/// Plants one signature in the largest text/binary body.
fn plant(msgs: &mut [Msg], rng: &mut SplitMix64, cx: &Cx) {
    let p = rng.below(cx.signatures.len() as u64) as usize;
    let len = cx.signatures[p].len() as u64;
    if len == 0 {
        return;
    }
    let best = msgs
        .iter_mut()
        .filter(|m| m.body != Body::Tls && m.body_len >= len)
        .max_by_key(|m| m.body_len);
    if let Some(m) = best {
        let span = m.body_len - len;
        let at = if rng.chance(1, 2) {
            rng.below(span.min(4096) + 1)
        } else {
            rng.below(span + 1)
        };
        m.sig = Some((p as u32, at));
    }
}

/// Splits `total` into `k` positive parts (roughly).
fn split(rng: &mut SplitMix64, total: u64, k: usize) -> Vec<u64> {
    let w: Vec<u64> = (0..k).map(|_| 1 + rng.below(100)).collect();
    let sum: u64 = w.iter().sum();
    w.iter().map(|x| (total * x / sum).max(1)).collect()
}

fn words(rng: &mut SplitMix64, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let w: &str = rng.pick::<&str>(WORDS);
        s.push_str(w);
    }
    s
}

/// The application script of a flow.
fn script(app: App, rng: &mut SplitMix64, size: u64, host: &str, secs: u64, cx: &Cx) -> Vec<Msg> {
    let mut v = Vec::new();
    match app {
        App::Http => http_script(&mut v, rng, size, host, secs),
        App::Tls => {
            let sid = rng.bytes(32);
            v.push(Msg::new(0, tls_client_hello(rng, host, &sid)));
            let mut sh = tls_server_hello(rng, &sid);
            sh.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
            let cert = rng.range(2500, 4500);
            v.push(Msg::new(1, sh).body(Body::Tls, tls_len(cert), rng.next_u64()));
            let fin = rng.range(200, 600) + 53;
            v.push(Msg::new(0, vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01]).body(
                Body::Tls,
                tls_len(fin),
                rng.next_u64(),
            ));
            let k = 1 + (rng.below(8) * rng.below(8) / 8) as usize;
            for part in split(rng, size, k) {
                if v.len() > 3 {
                    let req = rng.range(80, 700);
                    v.push(Msg::new(0, vec![]).body(Body::Tls, tls_len(req), rng.next_u64()));
                }
                v.push(Msg::new(1, vec![]).body(Body::Tls, tls_len(part), rng.next_u64()));
            }
        }
        App::Ssh => {
            v.push(Msg::new(
                0,
                *rng.pick(&[
                    &b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"[..],
                    b"SSH-2.0-PuTTY_Release_0.80\r\n",
                    b"SSH-2.0-OpenSSH_9.7\r\n",
                ]),
            ));
            v.push(Msg::new(1, &b"SSH-2.0-OpenSSH_8.9p1 Debian-3\r\n"[..]));
            v.push(Msg::new(0, ssh_kexinit(rng, true)));
            v.push(Msg::new(1, ssh_kexinit(rng, false)));
            let mut ecdh = vec![30u8, 0, 0, 0, 32];
            ecdh.extend(rng.bytes(32));
            v.push(Msg::new(0, ssh_packet(rng, &ecdh)));
            let mut host_key = Vec::new();
            ssh_string(&mut host_key, b"ssh-ed25519");
            ssh_string(&mut host_key, &rng.bytes(32));
            let mut sig = Vec::new();
            ssh_string(&mut sig, b"ssh-ed25519");
            ssh_string(&mut sig, &rng.bytes(64));
            let mut reply = vec![31u8];
            ssh_string(&mut reply, &host_key);
            ssh_string(&mut reply, &rng.bytes(32));
            ssh_string(&mut reply, &sig);
            let mut reply = ssh_packet(rng, &reply);
            reply.extend(ssh_packet(rng, &[21]));
            v.push(Msg::new(1, reply));
            v.push(Msg::new(0, ssh_packet(rng, &[21])).body(Body::Random, 68, rng.next_u64()));
            let upload = rng.chance(1, 3);
            let k = 1 + rng.below(6) as usize;
            for part in split(rng, size, k) {
                let small = rng.range(36, 200);
                let (a, b) = if upload { (part, small) } else { (small, part) };
                v.push(Msg::new(0, vec![]).body(Body::Random, a, rng.next_u64()));
                v.push(Msg::new(1, vec![]).body(Body::Random, b, rng.next_u64()));
            }
        }
        App::Smtp => {
            let qid = rng.next_u64() & 0xff_ffff_ffff;
            let subject = words(rng, 4);
            let user = *rng.pick(&["alice", "bob", "carol", "dave", "erin"]);
            v.push(Msg::new(
                1,
                format!("220 {host} ESMTP Postfix (Ubuntu)\r\n"),
            ));
            v.push(Msg::new(0, "EHLO client.campus.example.edu\r\n"));
            v.push(Msg::new(
                1,
                format!(
                    "250-{host}\r\n250-PIPELINING\r\n250-SIZE 52428800\r\n250-8BITMIME\r\n\
                     250-ENHANCEDSTATUSCODES\r\n250 SMTPUTF8\r\n"
                ),
            ));
            v.push(Msg::new(
                0,
                format!("MAIL FROM:<{user}@campus.example.edu>\r\n"),
            ));
            v.push(Msg::new(1, "250 2.1.0 Ok\r\n"));
            v.push(Msg::new(0, format!("RCPT TO:<info@{host}>\r\n")));
            v.push(Msg::new(1, "250 2.1.5 Ok\r\n"));
            v.push(Msg::new(0, "DATA\r\n"));
            v.push(Msg::new(1, "354 End data with <CR><LF>.<CR><LF>\r\n"));
            let head = format!(
                "From: {user} <{user}@campus.example.edu>\r\nTo: <info@{host}>\r\n\
                 Subject: {subject}\r\nDate: {}\r\nMessage-ID: <{qid:x}@campus.example.edu>\r\n\
                 MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
                http_date(secs)
            );
            // The body must not contain "\r\n.\r\n": the text block has no CR.
            v.push(Msg::new(0, head).body(Body::Text, size.min(20_000_000), rng.next_u64()));
            v.push(Msg::new(0, "\r\n.\r\n"));
            v.push(Msg::new(
                1,
                format!("250 2.0.0 Ok: queued as {qid:010X}\r\n"),
            ));
            v.push(Msg::new(0, "QUIT\r\n"));
            v.push(Msg::new(1, "221 2.0.0 Bye\r\n"));
        }
        App::Ftp => {
            let file = format!("/pub/{}-{}.tar.gz", words(rng, 1), rng.below(1000));
            let p = 50_000 + rng.below(1000);
            v.push(Msg::new(1, "220 ProFTPD Server (Campus FTP) ready.\r\n"));
            v.push(Msg::new(0, "USER anonymous\r\n"));
            v.push(Msg::new(
                1,
                "331 Anonymous login ok, send your complete email address as your password\r\n",
            ));
            v.push(Msg::new(0, "PASS guest@campus.example.edu\r\n"));
            v.push(Msg::new(
                1,
                "230 Anonymous access granted, restrictions apply\r\n",
            ));
            v.push(Msg::new(0, "SYST\r\n"));
            v.push(Msg::new(1, "215 UNIX Type: L8\r\n"));
            v.push(Msg::new(0, "TYPE I\r\n"));
            v.push(Msg::new(1, "200 Type set to I\r\n"));
            v.push(Msg::new(0, "PASV\r\n"));
            v.push(Msg::new(
                1,
                format!(
                    "227 Entering Passive Mode (198,18,0,1,{},{}).\r\n",
                    p >> 8,
                    p & 255
                ),
            ));
            v.push(Msg::new(0, format!("RETR {file}\r\n")));
            v.push(Msg::new(
                1,
                format!("150 Opening BINARY mode data connection for {file} ({size} bytes)\r\n"),
            ));
            v.push(Msg::new(1, "226 Transfer complete\r\n"));
            v.push(Msg::new(0, "QUIT\r\n"));
            v.push(Msg::new(1, "221 Goodbye.\r\n"));
        }
        App::FtpData => {
            v.push(Msg::new(1, vec![]).body(Body::Random, size, rng.next_u64()));
        }
        App::TcpUnknown => {
            let k = 1 + rng.below(5) as usize;
            for part in split(rng, size, k) {
                let req = rng.range(20, 400);
                v.push(Msg::new(0, vec![]).body(Body::Random, req, rng.next_u64()));
                v.push(Msg::new(1, vec![]).body(Body::Random, part, rng.next_u64()));
            }
        }
        App::Dns => {
            let name = if rng.chance(1, 2) {
                host.to_string()
            } else {
                format!("{}.{}", words(rng, 1), rng.pick(DOMAINS))
            };
            let qtype = if rng.chance(1, 4) { 28 } else { 1 };
            let id = rng.next_u32() as u16;
            v.push(Msg::new(0, dns_query(id, &name, qtype, false)));
            let mut answers = Vec::new();
            for _ in 0..rng.range(1, 4) {
                let rdata = if qtype == 28 {
                    let mut a = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0x5e, 0, 0, 0, 0, 0, 0];
                    a.extend(rng.bytes(4));
                    a
                } else {
                    vec![198, 18, rng.below(256) as u8, rng.range(1, 254) as u8]
                };
                answers.push((qtype, 60 + rng.below(3600) as u32, rdata));
            }
            v.push(Msg::new(1, dns_response(id, &name, qtype, &answers, false)));
        }
        App::UdpUnknown => {
            let max = if cx.small { 64 } else { 1350 };
            let count = (size / 500).clamp(2, 4000);
            let mut dir = 0u8;
            for _ in 0..count {
                let len = if rng.chance(1, 2) {
                    rng.range(20, 200)
                } else {
                    rng.range(900, 1350)
                }
                .min(max);
                v.push(Msg::new(dir, vec![]).body(Body::Random, len, rng.next_u64()));
                if rng.chance(1, 3) {
                    dir ^= 1;
                }
            }
        }
    }
    v
}

fn http_script(v: &mut Vec<Msg>, rng: &mut SplitMix64, size: u64, host: &str, secs: u64) {
    let k = 1 + (rng.below(6) * rng.below(6) / 4) as usize;
    let pipeline = k > 1 && rng.chance(1, 5);
    let post = rng.chance(1, 20);
    let ua = *rng.pick(UAS);
    let parts = split(rng, size, k);
    let mut reqs = Vec::with_capacity(k);
    let mut resps = Vec::with_capacity(k);
    for (i, &part) in parts.iter().enumerate() {
        let last = i + 1 == k;
        let conn = if last { "close" } else { "keep-alive" };
        let path = *rng.pick(PATHS);
        let req = if post && i == 0 {
            Msg::new(
                0,
                format!(
                    "POST /upload HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\n\
                     Content-Type: application/octet-stream\r\nContent-Length: {part}\r\n\
                     Connection: {conn}\r\n\r\n"
                ),
            )
            .body(Body::Random, part, rng.next_u64())
        } else {
            Msg::new(
                0,
                format!(
                    "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\n\
                     Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
                     Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate\r\n\
                     Connection: {conn}\r\n\r\n"
                ),
            )
        };
        let (body_len, status) = if post && i == 0 {
            (rng.range(20, 200), "201 Created")
        } else if rng.chance(1, 30) {
            (rng.range(150, 400), "404 Not Found")
        } else {
            (part, "200 OK")
        };
        let (ctype, kind, prologue): (&str, Body, Vec<u8>) = if body_len > 60_000
            || path.ends_with(".mp4")
            || path.ends_with(".gz")
            || path.ends_with(".deb")
        {
            match rng.below(3) {
                0 => (
                    "video/mp4",
                    Body::Random,
                    b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41".to_vec(),
                ),
                1 => (
                    "image/jpeg",
                    Body::Random,
                    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00".to_vec(),
                ),
                _ => (
                    "application/octet-stream",
                    Body::Random,
                    b"\x1f\x8b\x08\x00".to_vec(),
                ),
            }
        } else if path.ends_with(".png") {
            ("image/png", Body::Random, b"\x89PNG\r\n\x1a\n".to_vec())
        } else if path.starts_with("/api") {
            ("application/json", Body::Text, b"{\"items\":\"".to_vec())
        } else if path.ends_with(".css") {
            ("text/css", Body::Text, b"/* site */\n".to_vec())
        } else if path.ends_with(".js") {
            ("application/javascript", Body::Text, b"// app\n".to_vec())
        } else {
            let mut p = String::new();
            let _ = write!(
                p,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
                 <title>{}</title>\n</head>\n<body>\n<p>",
                words(rng, 3)
            );
            ("text/html; charset=utf-8", Body::Text, p.into_bytes())
        };
        let filler = body_len.saturating_sub(prologue.len() as u64);
        let mut head = format!(
            "HTTP/1.1 {status}\r\nServer: {}\r\nDate: {}\r\nContent-Type: {ctype}\r\n\
             Content-Length: {}\r\nConnection: {conn}\r\nCache-Control: max-age=3600\r\n\
             ETag: \"{:016x}\"\r\n\r\n",
            rng.pick(&[
                "nginx/1.24.0",
                "Apache/2.4.58 (Ubuntu)",
                "cloudflare",
                "Microsoft-IIS/10.0"
            ]),
            http_date(secs),
            prologue.len() as u64 + filler,
            rng.next_u64()
        )
        .into_bytes();
        head.extend_from_slice(&prologue);
        reqs.push(req);
        resps.push(Msg::new(1, head).body(kind, filler, rng.next_u64()));
    }
    if pipeline {
        // All GETs back-to-back in one send, then the responses.
        let mut all = Vec::new();
        let mut rest = Vec::new();
        for r in reqs {
            if r.body_len == 0 {
                all.extend_from_slice(&r.head);
            } else {
                rest.push(r);
            }
        }
        v.extend(rest);
        v.push(Msg::new(0, all));
        v.extend(resps);
    } else {
        for (q, r) in reqs.into_iter().zip(resps) {
            v.push(q);
            v.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_and_dates() {
        // RFC 1071 example.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(0, &d)), !0xddf2);
        assert_eq!(http_date(1_714_564_800), "Wed, 01 May 2024 12:00:00 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn filler_is_a_function_of_offset() {
        let cx_text = text_block(3);
        let cx = Cx {
            text: cx_text,
            signatures: vec![b"SIG".to_vec()],
            sig_th: 0,
            reorder: 0,
            dup: 0,
            loss: 0,
            conflict: 0,
            fragment: 0,
            ipv6: 0,
            vlan: 0,
            small: false,
            gap: 1,
        };
        for body in [Body::Text, Body::Random, Body::Tls] {
            let mut m = Msg::new(0, &b"HEAD"[..]).body(body, tls_len(40_000), 77);
            m.sig = Some((0, 100));
            let n = m.len() as usize;
            let mut all = vec![0; n];
            fill_msg(&m, &cx, 0, &mut all);
            let mut pieces = vec![0; n];
            let mut at = 0;
            let mut step = 1;
            while at < n {
                let e = (at + step).min(n);
                fill_msg(&m, &cx, at as u64, &mut pieces[at..e]);
                at = e;
                step = step * 3 % 1501 + 1;
            }
            assert_eq!(all, pieces);
            assert_eq!(&all[104..107], b"SIG");
            if body == Body::Tls {
                assert_eq!(&all[4..9], &[0x17, 3, 3, 0x40, 0]);
            }
        }
    }
}
