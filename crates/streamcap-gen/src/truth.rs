//! Ground truth records, serialized as JSON lines next to the pcap.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Transport protocol of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// How a flow ended on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// Both sides sent FIN.
    Fin,
    /// One side sent RST.
    Rst,
    /// The flow was left open (and always for UDP).
    None,
}

/// A half-open range `[start, end)` of stream offsets. Offset 0 is the first
/// payload byte of the direction (for TCP, sequence number ISN + 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ByteRange {
    /// First offset in the range.
    pub start: u64,
    /// One past the last offset.
    pub end: u64,
}

impl ByteRange {
    /// Number of bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// A retransmission that overlapped already-sent stream bytes with
/// different content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictTruth {
    /// Stream range covered by the conflicting segment.
    pub range: ByteRange,
    /// What the application sent there (the intended bytes).
    #[serde(with = "hex_bytes")]
    pub original: Vec<u8>,
    /// What the conflicting segment carried.
    #[serde(with = "hex_bytes")]
    pub conflicting: Vec<u8>,
    /// `true` when the conflicting segment is emitted *before* the original
    /// segments that cover the range, `false` when after.
    pub conflict_first: bool,
}

/// Truth for one direction of a flow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionTruth {
    /// Pcap records sent in this direction (each IP fragment counts once).
    pub packets: u64,
    /// Sum of the IP total length (IPv6: 40 + payload length) of those
    /// records.
    pub ip_bytes: u64,
    /// IP datagrams sent in this direction: one sent in fragments counts
    /// once, with its IP length before fragmentation (what a capture engine
    /// that reassembles fragments counts).
    #[serde(default)]
    pub datagrams: u64,
    /// Sum of the IP total lengths of those datagrams.
    #[serde(default)]
    pub datagram_bytes: u64,
    /// Length of the intended stream.
    pub stream_len: u64,
    /// SHA-256 of the intended stream, lowercase hex.
    pub sha256: String,
    /// The intended stream: for TCP the bytes the application wrote, for UDP
    /// the datagram payloads concatenated. Absent (and parsed as empty) in
    /// the truth of the streaming campus model, which does not keep streams.
    #[serde(with = "hex_bytes", default)]
    pub stream: Vec<u8>,
    /// Stream ranges that never appeared on the wire (capture loss), sorted
    /// and merged.
    pub lost: Vec<ByteRange>,
    /// Conflicting overlapping retransmissions, in script order.
    pub conflicts: Vec<ConflictTruth>,
}

impl DirectionTruth {
    /// Sets `stream`, `stream_len` and `sha256` from the intended bytes.
    pub fn set_stream(&mut self, stream: Vec<u8>) {
        self.stream_len = stream.len() as u64;
        self.sha256 = sha256_hex(&stream);
        self.stream = stream;
    }
}

/// Ground truth of one flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowTruth {
    /// Index of the flow in its [`Capture`](crate::Capture) (order of
    /// addition).
    pub id: usize,
    /// Free-form label of the scenario (for example `"http"`, `"dns"`).
    pub label: String,
    /// Transport protocol.
    pub proto: Protocol,
    /// Initiator endpoint (the TCP client / first UDP sender).
    pub client: SocketAddr,
    /// Responder endpoint.
    pub server: SocketAddr,
    /// VLAN ids on the wire, outermost first (empty if untagged or if the
    /// capture's link type cannot carry tags).
    pub vlan: Vec<u16>,
    /// How the flow ended.
    pub end: EndReason,
    /// Client → server direction.
    pub to_server: DirectionTruth,
    /// Server → client direction.
    pub to_client: DirectionTruth,
}

impl FlowTruth {
    /// One JSON object on a single line (no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("truth serializes")
    }

    /// Parses a JSON lines document produced by
    /// [`Capture::truth_jsonl`](crate::Capture::truth_jsonl).
    ///
    /// # Errors
    /// The first JSON error encountered.
    pub fn parse_jsonl(text: &str) -> Result<Vec<FlowTruth>, serde_json::Error> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }
}

/// SHA-256 of `data` as lowercase hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Subtracts the covered ranges from `ranges`; returns sorted, merged
/// leftovers.
pub(crate) fn subtract(ranges: &[ByteRange], covered: &[ByteRange]) -> Vec<ByteRange> {
    let covered = merge(covered.to_vec());
    let mut out = Vec::new();
    for r in merge(ranges.to_vec()) {
        let mut start = r.start;
        for c in &covered {
            if c.end <= start || c.start >= r.end {
                continue;
            }
            if c.start > start {
                out.push(ByteRange {
                    start,
                    end: c.start,
                });
            }
            start = start.max(c.end);
        }
        if start < r.end {
            out.push(ByteRange { start, end: r.end });
        }
    }
    merge(out)
}

/// Sorts and merges touching/overlapping ranges, dropping empty ones.
pub(crate) fn merge(mut ranges: Vec<ByteRange>) -> Vec<ByteRange> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort();
    let mut out: Vec<ByteRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        hex::decode(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    #[test]
    fn range_arithmetic() {
        assert_eq!(
            merge(vec![r(5, 7), r(0, 2), r(2, 3), r(6, 9)]),
            vec![r(0, 3), r(5, 9)]
        );
        assert_eq!(
            subtract(&[r(0, 10)], &[r(2, 4), r(8, 12)]),
            vec![r(0, 2), r(4, 8)]
        );
        assert_eq!(subtract(&[r(0, 10)], &[r(0, 10)]), vec![]);
    }
}
