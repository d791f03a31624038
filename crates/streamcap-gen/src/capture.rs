//! Mixing flows into one capture.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::packet::{frame, LinkSpec};
use crate::pcap::{PcapConfig, PcapWriter};
use crate::truth::FlowTruth;

/// Direction of a packet within a flow. Serialized as `"to_server"` /
/// `"to_client"`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client (initiator) to the server.
    ToServer,
    /// From the server (responder) to the client.
    ToClient,
}

impl Direction {
    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }
}

/// One packet of a generated flow, before link-layer framing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WirePacket {
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Direction within the flow.
    pub dir: Direction,
    /// Link-layer addressing and VLAN tags.
    pub link: LinkSpec,
    /// The complete IP packet (or IPv4 fragment).
    pub ip: Vec<u8>,
}

/// A generated flow: its packets, in non-decreasing timestamp order, and its
/// ground truth (whose counters match exactly these packets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFlow {
    /// Packets in emission order; timestamps are non-decreasing.
    pub packets: Vec<WirePacket>,
    /// Ground truth of the flow (`id` is assigned by [`Capture`]).
    pub truth: FlowTruth,
}

/// Anything that can produce one flow deterministically.
///
/// Implemented by [`TcpConversation`](crate::TcpConversation) and
/// [`UdpFlow`](crate::UdpFlow); future traffic models implement it too.
pub trait FlowGenerator {
    /// Generates the flow. Calling it twice yields identical results.
    fn generate(&self) -> GeneratedFlow;
}

/// A set of flows mixed into one pcap by timestamp.
///
/// Guarantees: packets are written in non-decreasing timestamp order; ties
/// keep flow-addition order, then each flow's own order, so the output is
/// byte-identical for identical inputs.
#[derive(Clone, Debug, Default)]
pub struct Capture {
    config: PcapConfig,
    flows: Vec<GeneratedFlow>,
}

impl Capture {
    /// An empty capture with the default pcap options (Ethernet, µs).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty capture with the given pcap options.
    pub fn with_config(config: PcapConfig) -> Self {
        Self {
            config,
            flows: Vec::new(),
        }
    }

    /// The pcap options used by the writers.
    pub fn config(&self) -> &PcapConfig {
        &self.config
    }

    /// Generates `flow` and adds it; returns its id (index).
    pub fn add<F: FlowGenerator + ?Sized>(&mut self, flow: &F) -> usize {
        self.add_generated(flow.generate())
    }

    /// Adds an already generated flow; returns its id (index). The truth's
    /// `id` is overwritten with it.
    pub fn add_generated(&mut self, mut flow: GeneratedFlow) -> usize {
        let id = self.flows.len();
        flow.truth.id = id;
        self.flows.push(flow);
        id
    }

    /// The flows added so far.
    pub fn flows(&self) -> &[GeneratedFlow] {
        &self.flows
    }

    /// All packets in output order, each with its flow id.
    pub fn packets(&self) -> Vec<(usize, &WirePacket)> {
        let mut all: Vec<(u64, usize, usize, &WirePacket)> = self
            .flows
            .iter()
            .enumerate()
            .flat_map(|(f, flow)| {
                flow.packets
                    .iter()
                    .enumerate()
                    .map(move |(i, p)| (p.ts_ns, f, i, p))
            })
            .collect();
        all.sort_by_key(|&(ts, f, i, _)| (ts, f, i));
        all.into_iter().map(|(_, f, _, p)| (f, p)).collect()
    }

    /// Writes the pcap to `out`; returns the writer.
    ///
    /// # Errors
    /// I/O errors of `out`.
    pub fn write_pcap<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = PcapWriter::with_config(out, self.config)?;
        for (_, p) in self.packets() {
            w.write_packet(p.ts_ns, &frame(self.config.link_type, &p.link, &p.ip))?;
        }
        w.flush()?;
        Ok(w.into_inner())
    }

    /// The whole pcap file as bytes.
    pub fn to_pcap_bytes(&self) -> Vec<u8> {
        self.write_pcap(Vec::new())
            .expect("writing to a Vec cannot fail")
    }

    /// Ground truth of every flow, in id order. VLAN ids are cleared when
    /// the link type cannot carry them (raw IP).
    pub fn truth(&self) -> Vec<FlowTruth> {
        self.flows
            .iter()
            .map(|f| {
                let mut t = f.truth.clone();
                if !self.config.link_type.carries_vlan() {
                    t.vlan.clear();
                }
                t
            })
            .collect()
    }

    /// The truth as JSON lines: one [`FlowTruth`] object per line, in id
    /// order, each line terminated by `\n`.
    pub fn truth_jsonl(&self) -> String {
        let mut s = String::new();
        for t in self.truth() {
            s.push_str(&t.to_json_line());
            s.push('\n');
        }
        s
    }

    /// Writes the pcap to `pcap` and, if given, the JSON-lines truth to
    /// `truth`.
    ///
    /// # Errors
    /// I/O errors creating or writing the files.
    pub fn write_files(&self, pcap: &Path, truth: Option<&Path>) -> io::Result<()> {
        let f = BufWriter::new(File::create(pcap)?);
        self.write_pcap(f)?.flush()?;
        if let Some(t) = truth {
            std::fs::write(t, self.truth_jsonl())?;
        }
        Ok(())
    }
}
