//! Traffic with planted signatures and exact ground truth, for testing a
//! NIDS (content rules matched on reassembled TCP streams and per UDP
//! datagram).
//!
//! [`generate`] builds, from a [`NidsConfig`], a [`NidsTrace`]: a capture
//! of HTTP, SMTP, FTP, TLS, SSH and other TCP conversations and DNS and
//! other UDP flows, the **truth** (one [`Occurrence`] per planted
//! signature), and the **rules text** (one Suricata-style content rule per
//! signature of the fixed set, see [`signature`]).
//!
//! # What is planted, and how
//!
//! Each signature is meant for one [`Carrier`]: an HTTP request URI, header
//! value, request body or response body, an SMTP message body, an FTP `RETR`
//! argument, a DNS query-name label, a TLS ClientHello SNI, or the payload
//! of another TCP or UDP protocol. A flow carries up to three signatures
//! (some flows carry none); a signature is planted in many flows.
//!
//! TCP sends are segmented by the flow's MSS, except around a signature:
//! about half of the TCP occurrences straddle a segment boundary, the split
//! after the first byte, in the middle, before the last byte or anywhere
//! ([`Occurrence::split`]); the others lie within one segment. UDP
//! signatures lie within one datagram.
//!
//! Impairments (TCP only, chosen per flow):
//!
//! * **reordering**: the segment carrying a signature's first byte is
//!   emitted before the segment just before it (same send, so no
//!   acknowledgment covers the hole meanwhile), and other adjacent segments
//!   of long sends are swapped. The first segment of a direction is never
//!   moved, so an engine picking the flow up mid-stream starts its stream at
//!   the right byte. Reordering never changes what the stream holds.
//! * **conflicting overlaps**: on top of that reordering, a retransmission
//!   overlapping the signature's bytes in its first segment is emitted
//!   right before or right after that segment, while the segment before is
//!   still missing, so both are waiting in the out-of-order store when they
//!   meet and the overlap policy decides which bytes count. Either the
//!   original carries the signature and the retransmission other bytes, or
//!   the reverse. Under policy `first` the first-seen bytes win, under
//!   `last` the newest ones ([`Occurrence::present_first`],
//!   [`Occurrence::present_last`]); this is what streamcap's
//!   `OverlapPolicy::First` / `Last` do for bytes not yet delivered. Other
//!   policies are not recorded.
//! * **mid-stream**: the SYN, SYN-ACK and ACK are left out of the capture.
//!   Stream offsets still count from the first payload byte of each
//!   direction, which is the first payload byte the capture shows. An
//!   engine may take the first sender for the client; for SMTP and FTP the
//!   server speaks first, so compare 5-tuples without orientation.
//!
//! No segment is lost, duplicated or fragmented.
//!
//! # The truth
//!
//! [`NidsTrace::truth_jsonl`] writes one [`Occurrence`] per line (JSON, in
//! flow order, then by direction and offset). Its fields are documented on
//! the struct. A (flow, signature) pair is planted when at least one of its
//! occurrences is present under the policy in use; signatures are never
//! found anywhere else, by construction: every signature contains the
//! marker `scnids` and its number, and the generator writes the marker
//! nowhere but in planted signatures (random bytes never hold an `s`, and a
//! flow whose random protocol fields happen to form the marker is rebuilt).
//!
//! Flow ids are those of the [`Capture`] (and of [`FlowTruth`], whose
//! `stream` is the intended byte stream: for a conflict whose signature is
//! in the retransmission, it holds the other bytes).
//!
//! Everything is deterministic: the same config gives byte-identical pcap,
//! truth and rules.

mod apps;
mod dialogs;
mod plan;
pub mod signature;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::{Deserialize, Serialize};

use self::apps::App;
use self::plan::{tcp_flow, udp_flow, TcpParams};
pub use self::signature::{
    content_string, parse_content, rules_text, signatures, Carrier, Signature, FIRST_SID,
};
use crate::capture::{Capture, Direction};
use crate::prng::SplitMix64;
use crate::tcp::ConflictPlacement;
use crate::truth::{ByteRange, FlowTruth, Protocol};

/// Time origin of the NIDS trace: 2024-05-01T12:00:00Z, in ns.
pub const NIDS_START_NS: u64 = 1_714_564_800_000_000_000;

/// Options of [`generate`]. [`Default`] gives the acceptance trace.
#[derive(Clone, Debug, PartialEq)]
pub struct NidsConfig {
    /// Seed of every random choice (the signature set does not depend on
    /// it).
    pub seed: u64,
    /// Number of flows.
    pub flows: usize,
    /// Fraction of TCP flows whose segments are reordered.
    pub reorder: f64,
    /// Fraction of TCP flows with conflicting overlapping retransmissions
    /// over their signatures (these flows are reordered too).
    pub conflict: f64,
    /// Fraction of TCP flows whose handshake precedes the capture.
    pub midstream: f64,
    /// Fraction of flows over IPv6.
    pub ipv6: f64,
    /// Fraction of flows that carry no signature.
    pub clean: f64,
}

impl Default for NidsConfig {
    /// Seed 1, 400 flows, 25 % reordered, 20 % with conflicts, 15 %
    /// mid-stream, 20 % IPv6, 15 % without signature.
    fn default() -> Self {
        Self {
            seed: 1,
            flows: 400,
            reorder: 0.25,
            conflict: 0.2,
            midstream: 0.15,
            ipv6: 0.2,
            clean: 0.15,
        }
    }
}

/// Which packet carries the signature in a conflicting overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureIn {
    /// The original segment carries the signature, the retransmission other
    /// bytes.
    Original,
    /// The retransmission carries the signature, the original other bytes.
    Retransmission,
}

/// A conflicting overlapping retransmission touching an occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OverlapConflict {
    /// Whether the retransmission is emitted right before (`before`) or
    /// right after (`after`) the original segment it overlaps.
    pub placement: Placement,
    /// Which of the two carries the signature.
    pub signature_in: SignatureIn,
    /// Stream range of the retransmission: the signature's bytes in its
    /// first segment.
    pub range: ByteRange,
}

/// Serializable twin of [`ConflictPlacement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Before the original segment.
    Before,
    /// After the original segment.
    After,
}

impl From<Placement> for ConflictPlacement {
    fn from(p: Placement) -> Self {
        match p {
            Placement::Before => ConflictPlacement::Before,
            Placement::After => ConflictPlacement::After,
        }
    }
}

/// One planted occurrence of a signature: a line of the truth.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    /// Flow id (index in the capture's flows, as in [`FlowTruth::id`]).
    pub flow: usize,
    /// Transport protocol.
    pub proto: Protocol,
    /// Initiator endpoint (the TCP client / first UDP sender).
    pub client: SocketAddr,
    /// Responder endpoint.
    pub server: SocketAddr,
    /// Direction of the bytes (`to_server` / `to_client`).
    pub direction: Direction,
    /// Index of the signature in the set.
    pub signature: usize,
    /// Sid of the signature's rule.
    pub sid: u32,
    /// Where it is planted.
    pub carrier: Carrier,
    /// TCP: stream offset of the first byte in the direction's stream
    /// (offset 0 is the byte after the SYN, that is the first payload
    /// byte). UDP: offset within the datagram.
    pub offset: u64,
    /// Length of the signature in bytes.
    pub len: u64,
    /// UDP: index of the datagram among the direction's datagrams
    /// (0-based); `null` for TCP.
    pub datagram: Option<u64>,
    /// TCP: the signature's bytes are split between two consecutive
    /// segments. Always false for UDP.
    pub crosses_segment: bool,
    /// When it crosses: how many of its bytes the first segment holds
    /// (1 ..= len - 1).
    pub split: Option<u64>,
    /// The flow's handshake precedes the capture.
    pub midstream: bool,
    /// The segment holding the first byte is emitted before the segment
    /// preceding it in the stream.
    pub reordered: bool,
    /// The conflicting retransmission touching it, if any.
    pub conflict: Option<OverlapConflict>,
    /// Present in the reassembled stream under overlap policy `first`
    /// (always true without conflict).
    pub present_first: bool,
    /// Present under overlap policy `last` (always true without conflict).
    pub present_last: bool,
}

/// Counts describing a generated trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NidsStats {
    /// Flows in the capture.
    pub flows: usize,
    /// TCP flows.
    pub tcp_flows: usize,
    /// Flows with at least one occurrence.
    pub flows_with_signatures: usize,
    /// Mid-stream TCP flows.
    pub midstream_flows: usize,
    /// Planted occurrences.
    pub occurrences: usize,
    /// TCP occurrences.
    pub tcp_occurrences: usize,
    /// TCP occurrences straddling a segment boundary.
    pub crossing: usize,
    /// Occurrences whose segment is reordered.
    pub reordered: usize,
    /// Occurrences touched by a conflicting retransmission.
    pub conflicts: usize,
    /// Distinct (flow, signature) pairs.
    pub pairs: usize,
    /// Pcap records.
    pub packets: usize,
}

/// A generated NIDS test trace: capture, truth and rules.
#[derive(Clone, Debug)]
pub struct NidsTrace {
    /// The flows (packets and per-flow truth, ids in order).
    pub capture: Capture,
    /// Planted occurrences, in flow order, then by direction and offset
    /// (UDP: datagram, then offset).
    pub occurrences: Vec<Occurrence>,
    /// The signature set the rules detect.
    pub signatures: Vec<Signature>,
}

impl NidsTrace {
    /// The pcap file as bytes (Ethernet, µs timestamps).
    pub fn pcap_bytes(&self) -> Vec<u8> {
        self.capture.to_pcap_bytes()
    }

    /// The truth as JSON lines, one [`Occurrence`] per line.
    pub fn truth_jsonl(&self) -> String {
        let mut s = String::new();
        for o in &self.occurrences {
            // Plain data with string keys: serialization cannot fail.
            s.push_str(&serde_json::to_string(o).unwrap_or_default());
            s.push('\n');
        }
        s
    }

    /// Parses a document written by [`truth_jsonl`](Self::truth_jsonl).
    ///
    /// # Errors
    /// The first JSON error.
    pub fn parse_truth(text: &str) -> Result<Vec<Occurrence>, serde_json::Error> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }

    /// The rules text, one rule per signature ([`rules_text`]).
    pub fn rules(&self) -> String {
        rules_text(&self.signatures)
    }

    /// Per-flow truth (5-tuple, intended streams, conflicts), in id order.
    pub fn flows(&self) -> Vec<FlowTruth> {
        self.capture.truth()
    }

    /// Counts of the trace.
    pub fn stats(&self) -> NidsStats {
        let occ = &self.occurrences;
        let mut pairs: Vec<(usize, usize)> = occ.iter().map(|o| (o.flow, o.signature)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut with: Vec<usize> = occ.iter().map(|o| o.flow).collect();
        with.dedup();
        let flows = self.capture.flows();
        NidsStats {
            flows: flows.len(),
            tcp_flows: flows
                .iter()
                .filter(|f| f.truth.proto == Protocol::Tcp)
                .count(),
            flows_with_signatures: with.len(),
            midstream_flows: flows
                .iter()
                .filter(|f| f.truth.label.contains("+midstream"))
                .count(),
            occurrences: occ.len(),
            tcp_occurrences: occ.iter().filter(|o| o.proto == Protocol::Tcp).count(),
            crossing: occ.iter().filter(|o| o.crosses_segment).count(),
            reordered: occ.iter().filter(|o| o.reordered).count(),
            conflicts: occ.iter().filter(|o| o.conflict.is_some()).count(),
            pairs: pairs.len(),
            packets: flows.iter().map(|f| f.packets.len()).sum(),
        }
    }

    /// Writes the pcap to `pcap` and, when given, the truth (JSON lines) to
    /// `truth` and the rules to `rules`.
    ///
    /// # Errors
    /// I/O errors creating or writing the files.
    pub fn write_files(
        &self,
        pcap: &Path,
        truth: Option<&Path>,
        rules: Option<&Path>,
    ) -> io::Result<()> {
        let f = BufWriter::new(File::create(pcap)?);
        self.capture.write_pcap(f)?.flush()?;
        if let Some(t) = truth {
            std::fs::write(t, self.truth_jsonl())?;
        }
        if let Some(r) = rules {
            std::fs::write(r, self.rules())?;
        }
        Ok(())
    }
}

/// `true` with probability `p` (0 or less, or NaN: never; 1 or more:
/// always). Draws one number either way.
fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    let x = (rng.next_u64() >> 11) as f64;
    p > 0.0 && x < p * (1u64 << 53) as f64
}

/// Client address of flow `i`: a distinct host per flow.
fn client_addr(i: usize, v6: bool, port: u16) -> SocketAddr {
    let h = i as u32 + 1;
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xc,
            0,
            0,
            0,
            (h >> 16) as u16,
            h as u16,
        ))
    } else {
        IpAddr::V4(Ipv4Addr::new(10, (h >> 16) as u8, (h >> 8) as u8, h as u8))
    };
    SocketAddr::new(ip, port)
}

fn server_addr(rng: &mut SplitMix64, v6: bool, port: u16) -> SocketAddr {
    let k = rng.range(1, 250);
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x5, 0, 0, 0, 0, k as u16))
    } else if rng.chance(1, 2) {
        IpAddr::V4(Ipv4Addr::new(198, 51, 100, k as u8))
    } else {
        IpAddr::V4(Ipv4Addr::new(203, 0, 113, k as u8))
    };
    SocketAddr::new(ip, port)
}

fn pick_app(rng: &mut SplitMix64) -> App {
    let total: u64 = App::WEIGHTED.iter().map(|(_, w)| w).sum();
    let mut x = rng.below(total);
    for (app, w) in App::WEIGHTED {
        if x < w {
            return app;
        }
        x -= w;
    }
    App::Http
}

/// Generates the trace described by `config`. Flows start spread over
/// `flows × 25 ms` from [`NIDS_START_NS`] and interleave in the capture.
pub fn generate(config: &NidsConfig) -> NidsTrace {
    let set = signatures();
    let mut rng = SplitMix64::new(config.seed);
    let mut capture = Capture::new();
    let mut occurrences = Vec::new();
    let span_ns = (config.flows as u64).max(1) * 25_000_000;
    let mut balance = 0i64;
    for i in 0..config.flows {
        let mut r = rng.fork();
        let app = pick_app(&mut r);
        let mut sigs = Vec::new();
        if !chance(&mut r, config.clean) && app.max_signatures() > 0 {
            let n = match r.below(20) {
                0..=9 => 1,
                10..=16 => 2,
                _ => 3,
            }
            .min(app.max_signatures());
            for _ in 0..n {
                let carrier = *r.pick(app.carriers());
                let range = carrier.signatures();
                sigs.push(r.range(range.start as u64, range.end as u64 - 1) as usize);
            }
        }
        let Some(script) = apps::script(app, &sigs, &set, &mut r) else {
            continue;
        };
        let v6 = chance(&mut r, config.ipv6);
        let client = client_addr(i, v6, r.range(1024, 65535) as u16);
        let server = server_addr(&mut r, v6, script.server_port);
        let start_ns = NIDS_START_NS + r.below(span_ns);
        let step_ns = r.range(20_000, 1_000_000);
        let seed = r.next_u64();
        let (flow, mut occ) = if app.is_udp() {
            udp_flow(&script, client, server, seed, (start_ns, step_ns), &set)
        } else {
            let params = TcpParams {
                client,
                server,
                seed,
                timing: (start_ns, step_ns),
                mss: *r.pick(&[536, 1200, 1380, 1440, 1460]),
                midstream: chance(&mut r, config.midstream),
                reorder: chance(&mut r, config.reorder),
                conflict: chance(&mut r, config.conflict),
            };
            tcp_flow(&script, &params, &set, &mut balance, &mut r)
        };
        let id = capture.add_generated(flow);
        for o in &mut occ {
            o.flow = id;
        }
        occurrences.extend(occ);
    }
    NidsTrace {
        capture,
        occurrences,
        signatures: set,
    }
}
