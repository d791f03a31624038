//! HTTP/1.x conversations with per-transaction truth, as Zeek's `http.log`
//! records them.
//!
//! [`generate`] builds, from an [`HttpConfig`], an [`HttpTrace`]: a
//! capture of HTTP/1.0 and HTTP/1.1 connections over TCP and one
//! [`Transaction`] per request.
//!
//! # What the connections hold
//!
//! * persistent connections with one to eight transactions; HTTP/1.0
//!   connections have one;
//! * **pipelining**: runs of two to four GET/HEAD requests sent before the
//!   first of their responses, in one send or several; their responses in
//!   order, sometimes all in one send;
//! * request bodies (POST, PUT, PATCH) with `Content-Length` or
//!   `Transfer-Encoding: chunked`, a third of them with
//!   `Expect: 100-continue`: the head is sent, the server answers
//!   `100 Continue`, then the body follows;
//! * response bodies with `Content-Length`, **chunked** (chunk sizes in
//!   either case, sometimes with leading zeros, chunk extensions, and
//!   trailers announced by `Trailer`), or **delimited by the connection's
//!   close** (the last response of some connections, the server closing
//!   first);
//! * `100 Continue`, `102 Processing` and `103 Early Hints` (with a `Link`
//!   field) before final responses;
//! * responses without a body: to HEAD (with the `Content-Length` of the
//!   representation, or `Transfer-Encoding: chunked`), 204, and 304 (some
//!   with a `Content-Length`);
//! * the last one or two requests of some connections left **without a
//!   response** (the capture ends with the connection open, or the client
//!   resets it);
//! * header names in lower case on some connections, absolute-form URIs
//!   sometimes, HTTP/1.0 requests without `Host` sometimes;
//! * server port 80, 8080, 8000 or a random port in 1025–32767 (client
//!   ports are 32768–60999);
//! * **segmentation**: sends are cut by the MSS (536 to 1460, or 100 for
//!   some connections) and, for about 40 % of them, also at one to three
//!   awkward offsets: inside the start line, between a CR and its LF,
//!   inside the `\r\n\r\n` ending a head, inside a chunk-size line, between
//!   chunk data and its CRLF, inside the last chunk or its trailers;
//! * [`HttpConfig::reorder`] of the connections have pairs of consecutive
//!   segments of one send swapped (every second to fourth pair): no
//!   packet of the other direction lies between them, so a response is
//!   never captured before the request it answers, nor a segment after
//!   the ACK that acknowledges it (which a reassembler trusting ACKs
//!   would take for capture loss): the streams are intact, but an
//!   analyser must reassemble them.
//!
//! No `Content-Encoding` is used (bodies are entities as sent) and URIs
//! hold no `%` escapes, so Zeek's `uri` (unescaped) is the URI as sent and
//! its body lengths are the entity lengths recorded here.
//!
//! # The truth
//!
//! [`HttpTrace::truth_jsonl`] writes one [`Transaction`] per line, in
//! flow order then by `trans_depth`. Its fields follow Zeek's `http.log`:
//! `version` is the *response's* version (null when unanswered, like
//! Zeek), `request_version` the request's; `host` is the Host field as
//! sent (with the port); `status_code`/`status_msg` are the final
//! response's, `info_code`/`info_msg` the last 1xx's; body lengths are
//! entity lengths after de-chunking. Beyond Zeek: `pipelined`, `chunked`
//! (response), `request_chunked`, the framings, whether the request was
//! answered, the stream ranges of request and response (offsets in the
//! direction's stream, the response range starting at its first 1xx) and
//! how many TCP segments each head spans.
//!
//! Everything is deterministic: the same config gives byte-identical pcap
//! and truth.

mod conn;
mod message;
mod plan;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::{Deserialize, Serialize};

use self::conn::{connection, ConnParams};
use crate::capture::Capture;
use crate::prng::SplitMix64;
use crate::truth::ByteRange;

/// Time origin of the trace: 2024-05-01T12:00:00Z, in ns.
pub const HTTP_START_NS: u64 = 1_714_564_800_000_000_000;

/// Options of [`generate`]. [`Default`] gives the acceptance trace.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of TCP connections.
    pub connections: usize,
    /// Fraction of connections whose data segments are reordered.
    pub reorder: f64,
    /// Fraction of connections over IPv6.
    pub ipv6: f64,
}

impl Default for HttpConfig {
    /// Seed 1, 200 connections, 10 % reordered, 10 % IPv6.
    fn default() -> Self {
        Self {
            seed: 1,
            connections: 200,
            reorder: 0.1,
            ipv6: 0.1,
        }
    }
}

/// How a message body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// `Content-Length`.
    Length,
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// The body ends when the server closes the connection.
    Close,
    /// No body: a request without body fields, or a response to HEAD, a
    /// 204 or a 304.
    None,
}

/// One HTTP transaction: a line of the truth, after Zeek's `http.log`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    /// Flow id of the connection in the capture.
    pub flow: usize,
    /// Client endpoint (`id.orig_h`, `id.orig_p`).
    pub client: SocketAddr,
    /// Server endpoint (`id.resp_h`, `id.resp_p`).
    pub server: SocketAddr,
    /// Capture time (ns) of the packet that completes the request line in
    /// order: from then on the client's stream is contiguous through the
    /// request line's LF (Zeek's `ts` is taken when it parses that line).
    pub ts_ns: u64,
    /// 1-based position of the transaction in its connection.
    pub trans_depth: u32,
    /// Request method.
    pub method: String,
    /// Host field value as sent (port included), if any.
    pub host: Option<String>,
    /// Request target as sent.
    pub uri: String,
    /// Referer field value, if any.
    pub referrer: Option<String>,
    /// The final response's HTTP version (`1.1`, `1.0`); null when
    /// unanswered (Zeek takes it from the reply).
    pub version: Option<String>,
    /// The request's HTTP version.
    pub request_version: String,
    /// User-Agent field value, if any.
    pub user_agent: Option<String>,
    /// Request entity length (after de-chunking).
    pub request_body_len: u64,
    /// Response entity length (after de-chunking); 0 for bodiless
    /// responses and unanswered requests.
    pub response_body_len: u64,
    /// Final status code; null when unanswered.
    pub status_code: Option<u16>,
    /// Final reason phrase; null when unanswered.
    pub status_msg: Option<String>,
    /// Code of the last 1xx response before the final one, if any.
    pub info_code: Option<u16>,
    /// Reason phrase of that 1xx response.
    pub info_msg: Option<String>,
    /// The request was sent while an earlier request of the connection was
    /// still unanswered.
    pub pipelined: bool,
    /// The response body is chunked.
    pub chunked: bool,
    /// The request body is chunked.
    pub request_chunked: bool,
    /// How the request body is delimited.
    pub request_framing: Framing,
    /// How the response body is delimited; null when unanswered.
    pub response_framing: Option<Framing>,
    /// A final response was sent.
    pub responded: bool,
    /// Range of the request (head and body) in the client's stream.
    pub request_range: ByteRange,
    /// Range of the responses (1xx, final head and body) in the server's
    /// stream; null when unanswered.
    pub response_range: Option<ByteRange>,
    /// TCP data segments the request head spans.
    pub request_head_segments: u32,
    /// TCP data segments the final response head spans (0 when
    /// unanswered).
    pub response_head_segments: u32,
}

/// Counts describing a generated trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// Connections.
    pub connections: usize,
    /// Reordered connections.
    pub reordered: usize,
    /// Transactions.
    pub transactions: usize,
    /// Pipelined requests.
    pub pipelined: usize,
    /// Chunked responses.
    pub chunked: usize,
    /// Chunked requests.
    pub request_chunked: usize,
    /// Responses delimited by the connection's close.
    pub close_delimited: usize,
    /// Transactions with a 1xx response.
    pub informational: usize,
    /// Unanswered requests.
    pub unanswered: usize,
    /// HEAD requests.
    pub head: usize,
    /// Answered with 204 or 304.
    pub no_content: usize,
    /// Requests with a body.
    pub request_bodies: usize,
    /// Request heads spanning several segments.
    pub split_request_heads: usize,
    /// Response heads spanning several segments.
    pub split_response_heads: usize,
    /// Pcap records.
    pub packets: usize,
}

/// A generated HTTP test trace.
#[derive(Clone, Debug)]
pub struct HttpTrace {
    /// The connections (packets and per-flow truth with intended streams).
    pub capture: Capture,
    /// Transactions in flow order, then by `trans_depth`.
    pub transactions: Vec<Transaction>,
}

impl HttpTrace {
    /// The pcap file as bytes (Ethernet, µs timestamps).
    pub fn pcap_bytes(&self) -> Vec<u8> {
        self.capture.to_pcap_bytes()
    }

    /// The truth as JSON lines, one [`Transaction`] per line.
    pub fn truth_jsonl(&self) -> String {
        let mut s = String::new();
        for t in &self.transactions {
            // Plain data with string keys: serialization cannot fail.
            s.push_str(&serde_json::to_string(t).unwrap_or_default());
            s.push('\n');
        }
        s
    }

    /// Parses a document written by [`truth_jsonl`](Self::truth_jsonl).
    ///
    /// # Errors
    /// The first JSON error.
    pub fn parse_truth(text: &str) -> Result<Vec<Transaction>, serde_json::Error> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }

    /// Counts of the trace.
    pub fn stats(&self) -> HttpStats {
        let t = &self.transactions;
        let count = |f: &dyn Fn(&Transaction) -> bool| t.iter().filter(|x| f(x)).count();
        let flows = self.capture.flows();
        HttpStats {
            connections: flows.len(),
            reordered: flows
                .iter()
                .filter(|f| f.truth.label.contains("reorder"))
                .count(),
            transactions: t.len(),
            pipelined: count(&|x| x.pipelined),
            chunked: count(&|x| x.chunked),
            request_chunked: count(&|x| x.request_chunked),
            close_delimited: count(&|x| x.response_framing == Some(Framing::Close)),
            informational: count(&|x| x.info_code.is_some()),
            unanswered: count(&|x| !x.responded),
            head: count(&|x| x.method == "HEAD"),
            no_content: count(&|x| matches!(x.status_code, Some(204 | 304))),
            request_bodies: count(&|x| x.request_framing != Framing::None),
            split_request_heads: count(&|x| x.request_head_segments > 1),
            split_response_heads: count(&|x| x.response_head_segments > 1),
            packets: flows.iter().map(|f| f.packets.len()).sum(),
        }
    }

    /// Writes the pcap to `pcap` and, when given, the truth to `truth`.
    ///
    /// # Errors
    /// I/O errors creating or writing the files.
    pub fn write_files(&self, pcap: &Path, truth: Option<&Path>) -> io::Result<()> {
        let f = BufWriter::new(File::create(pcap)?);
        self.capture.write_pcap(f)?.flush()?;
        if let Some(t) = truth {
            std::fs::write(t, self.truth_jsonl())?;
        }
        Ok(())
    }
}

/// `true` with probability `p` (never for 0 or NaN, always for 1).
fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    let x = (rng.next_u64() >> 11) as f64;
    p > 0.0 && x < p * (1u64 << 53) as f64
}

fn client_ip(i: usize, v6: bool) -> IpAddr {
    let h = i as u32 + 1;
    if v6 {
        IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xb,
            0,
            0,
            0,
            (h >> 16) as u16,
            h as u16,
        ))
    } else {
        IpAddr::V4(Ipv4Addr::new(
            10,
            80 + (h >> 16) as u8,
            (h >> 8) as u8,
            h as u8,
        ))
    }
}

fn server_ip(rng: &mut SplitMix64, v6: bool) -> IpAddr {
    let k = rng.range(1, 20);
    if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x80, 0, 0, 0, 0, k as u16))
    } else {
        IpAddr::V4(Ipv4Addr::new(198, 51, 100, 80 + k as u8))
    }
}

/// Generates the trace described by `config`. Connections start spread
/// over `connections × 50 ms` from [`HTTP_START_NS`] and interleave.
pub fn generate(config: &HttpConfig) -> HttpTrace {
    let mut rng = SplitMix64::new(config.seed);
    let span_ns = (config.connections as u64).max(1) * 50_000_000;
    let mut capture = Capture::new();
    let mut transactions = Vec::new();
    for i in 0..config.connections {
        let mut r = rng.fork();
        let v6 = chance(&mut r, config.ipv6);
        let port = match r.below(20) {
            0..=10 => 80,
            11..=13 => 8080,
            14 => 8000,
            _ => r.range(1025, 32767) as u16,
        };
        let reorder = chance(&mut r, config.reorder).then(|| r.range(2, 4) as usize);
        let params = ConnParams {
            client: SocketAddr::new(client_ip(i, v6), r.range(32768, 60999) as u16),
            server: SocketAddr::new(server_ip(&mut r, v6), port),
            seed: r.next_u64(),
            isn: (r.next_u32(), r.next_u32()),
            timing: (HTTP_START_NS + r.below(span_ns), r.range(50_000, 2_000_000)),
            mss: if r.chance(1, 10) {
                100
            } else {
                *r.pick(&[536, 1200, 1380, 1460])
            },
            reorder,
        };
        let (flow, mut txs) = connection(&params, &mut r);
        let id = capture.add_generated(flow);
        for t in &mut txs {
            t.flow = id;
        }
        transactions.extend(txs);
    }
    HttpTrace {
        capture,
        transactions,
    }
}
