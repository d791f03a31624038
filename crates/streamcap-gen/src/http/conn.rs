//! One HTTP connection on the wire: the sends that carry its transactions
//! (pipelined or not, with `100 Continue` waits), segment cuts at awkward
//! places, and the resulting TCP conversation and truth.

use std::net::SocketAddr;

use crate::capture::{Direction, FlowGenerator, GeneratedFlow};
use crate::prng::SplitMix64;
use crate::tcp::{Close, TcpConversation};
use crate::truth::ByteRange;

use super::message::{body, head, Built};
use super::plan::{transactions, Tx};
use super::{Framing, Transaction};

const C: Direction = Direction::ToServer;
const S: Direction = Direction::ToClient;

/// Per-connection choices made by the caller.
pub(super) struct ConnParams {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub seed: u64,
    /// Client and server initial sequence numbers.
    pub isn: (u32, u32),
    /// Start and packet spacing, ns.
    pub timing: (u64, u64),
    pub mss: usize,
    /// Reordering window, if the connection is reordered.
    pub reorder: Option<usize>,
}

/// The sends of a connection and the stream offsets reached so far.
#[derive(Default)]
struct Script {
    sends: Vec<(Direction, Vec<u8>, Vec<usize>)>,
    off: [u64; 2],
}

impl Script {
    /// Appends a send; cuts it at some of its awkward offsets sometimes.
    /// Returns the stream offset where it starts.
    fn push(&mut self, dir: Direction, b: Built, rng: &mut SplitMix64) -> u64 {
        let d = usize::from(dir == S);
        let start = self.off[d];
        let mut cuts = Vec::new();
        if !b.awkward.is_empty() && rng.chance(2, 5) {
            for _ in 0..rng.range(1, 3) {
                cuts.push(*rng.pick(&b.awkward));
            }
        }
        if b.len() > 1 && rng.chance(1, 10) {
            cuts.push(rng.range(1, b.len() as u64 - 1) as usize);
        }
        self.off[d] += b.len() as u64;
        if !b.bytes.is_empty() {
            self.sends.push((dir, b.bytes, cuts));
        }
        start
    }
}

/// Builds a connection; returns the flow and its transactions (`flow`
/// still 0, `ts_ns` set).
pub(super) fn connection(
    p: &ConnParams,
    rng: &mut SplitMix64,
) -> (GeneratedFlow, Vec<Transaction>) {
    let (txs, version) = transactions(p.server.port(), rng);
    build(p, &txs, version, rng)
}

/// Encodes the request: its head and body.
fn request(t: &Tx, version: &str, rng: &mut SplitMix64) -> (Built, Built) {
    let h = head(
        &format!("{} {} HTTP/{version}", t.method, t.uri),
        &t.fields,
        rng,
    );
    let b = body(&t.entity, t.framing, &[], rng);
    (h, b)
}

/// Truth under construction: ranges and head spans.
struct Marks {
    req: ByteRange,
    line_end: u64,
    req_head: ByteRange,
    resp: Option<ByteRange>,
    resp_head: Option<ByteRange>,
}

fn build(
    p: &ConnParams,
    txs: &[Tx],
    version: &str,
    rng: &mut SplitMix64,
) -> (GeneratedFlow, Vec<Transaction>) {
    let mut sc = Script::default();
    let mut marks: Vec<Marks> = Vec::with_capacity(txs.len());
    let mut i = 0;
    while i < txs.len() {
        // A batch: this request and the pipelined ones after it.
        let mut j = i + 1;
        while j < txs.len() && txs[j].pipelined {
            j += 1;
        }
        let together = j - i > 1 && rng.chance(1, 2);
        let mut joined = Built::default();
        for t in &txs[i..j] {
            let (h, b) = request(t, version, rng);
            let line = (t.method.len() + t.uri.len() + 12) as u64;
            let (hl, bl) = (h.len() as u64, b.len() as u64);
            let start = if together {
                let s = sc.off[0] + joined.len() as u64;
                joined.append(h);
                joined.append(b);
                s
            } else if t.expect {
                let s = sc.push(C, h, rng);
                if t.respond {
                    let info = head(&format!("HTTP/{} 100 Continue", t.resp_version), &[], rng);
                    marks.push(Marks {
                        req: ByteRange {
                            start: s,
                            end: s + hl + bl,
                        },
                        line_end: s + line,
                        req_head: ByteRange {
                            start: s,
                            end: s + hl,
                        },
                        resp: Some(ByteRange {
                            start: sc.off[1],
                            end: 0,
                        }),
                        resp_head: None,
                    });
                    sc.push(S, info, rng);
                    sc.push(C, b, rng);
                    continue;
                }
                sc.push(C, b, rng);
                s
            } else if rng.chance(1, 2) {
                let s = sc.push(C, h, rng);
                sc.push(C, b, rng);
                s
            } else {
                let mut all = h;
                all.append(b);
                sc.push(C, all, rng)
            };
            marks.push(Marks {
                req: ByteRange {
                    start,
                    end: start + hl + bl,
                },
                line_end: start + line,
                req_head: ByteRange {
                    start,
                    end: start + hl,
                },
                resp: None,
                resp_head: None,
            });
        }
        if together {
            sc.push(C, joined, rng);
        }
        // The responses of the batch.
        let concat = j - i > 1 && rng.chance(1, 4);
        let mut joined = Built::default();
        for (k, t) in txs[i..j].iter().enumerate() {
            if !t.respond {
                continue;
            }
            let m = &mut marks[i + k];
            let mut pieces = Vec::new();
            for (code, msg, f) in &t.infos {
                if *code == 100 && t.expect {
                    continue; // already sent
                }
                pieces.push(head(
                    &format!("HTTP/{} {code} {msg}", t.resp_version),
                    f,
                    rng,
                ));
            }
            let h = head(
                &format!("HTTP/{} {} {}", t.resp_version, t.status, t.reason),
                &t.resp_fields,
                rng,
            );
            let b = body(&t.resp_entity, t.resp_framing, &t.trailers, rng);
            let base = sc.off[1] + joined.len() as u64;
            let before: u64 = pieces.iter().map(|x| x.len() as u64).sum();
            let hs = base + before;
            m.resp_head = Some(ByteRange {
                start: hs,
                end: hs + h.len() as u64,
            });
            let end = hs + (h.len() + b.len()) as u64;
            let start = m.resp.map_or(base, |r| r.start);
            m.resp = Some(ByteRange { start, end });
            if concat {
                for x in pieces {
                    joined.append(x);
                }
                joined.append(h);
                joined.append(b);
            } else {
                for x in pieces {
                    sc.push(S, x, rng);
                }
                if b.len() > 0 && rng.chance(1, 2) {
                    sc.push(S, h, rng);
                    sc.push(S, b, rng);
                } else {
                    let mut all = h;
                    all.append(b);
                    sc.push(S, all, rng);
                }
            }
        }
        if concat {
            sc.push(S, joined, rng);
        }
        i = j;
    }

    // The end of the connection.
    let Some(last) = txs.last() else {
        return (
            TcpConversation::new(p.client, p.server).generate(),
            Vec::new(),
        );
    };
    let close = if !last.respond {
        if rng.chance(1, 3) {
            Close::Rst { from: C }
        } else {
            Close::None
        }
    } else if last.resp_framing == Framing::Close || version == "1.0" || rng.chance(2, 5) {
        Close::Fin { first: S }
    } else {
        Close::Fin { first: C }
    };
    let mut conv = TcpConversation::new(p.client, p.server)
        .seed(p.seed)
        .isn(p.isn.0, p.isn.1)
        .timing(p.timing.0, p.timing.1)
        .mss(p.mss)
        .close(close)
        .label(if p.reorder.is_some() {
            "http+reorder"
        } else {
            "http"
        });
    // Where each send ends in its direction's stream: the receiver
    // acknowledges every send whole, right after it.
    let mut send_ends: [Vec<u64>; 2] = Default::default();
    let mut sent = [0u64; 2];
    for (dir, bytes, cuts) in sc.sends {
        let d = usize::from(dir == S);
        sent[d] += bytes.len() as u64;
        send_ends[d].push(sent[d]);
        conv = conv.send_cut(dir, bytes, cuts);
    }
    let send_of = |dir: Direction, r: ByteRange| {
        send_ends[usize::from(dir == S)].partition_point(|&e| e <= r.start)
    };
    let segs = conv.data_segments();
    if let Some(w) = p.reorder {
        // Two consecutive segments of one send trade places: nothing of
        // the other direction lies between them, not even the ACK of a
        // send (which acknowledges the whole send, so a segment moved past
        // it would be acknowledged before it is captured, and a
        // reassembler that trusts acknowledgments takes it for lost). What
        // a capture point can see: a response never comes before the
        // request it answers.
        let mut k = 0;
        while k + 1 < segs.len() {
            let (a, b) = (&segs[k], &segs[k + 1]);
            if a.dir == b.dir && send_of(a.dir, a.range) == send_of(b.dir, b.range) {
                conv = conv.swap_segments(segs[k].index, segs[k + 1].index);
                k += w;
            } else {
                k += 1;
            }
        }
    }
    let spans = |dir: Direction, r: ByteRange| {
        segs.iter()
            .filter(|s| s.dir == dir && s.range.start < r.end && s.range.end > r.start)
            .count() as u32
    };
    let flow = conv.generate();
    let ready = in_order_times(&flow, p.isn.0);
    let mut out = Vec::with_capacity(txs.len());
    for (k, (t, m)) in txs.iter().zip(&marks).enumerate() {
        let final_info = t.infos.last();
        let value = |name: &str| {
            t.fields
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        out.push(Transaction {
            flow: 0,
            client: p.client,
            server: p.server,
            ts_ns: ready
                .iter()
                .find(|(contig, _)| *contig >= m.line_end)
                .map_or(0, |&(_, ts)| ts),
            trans_depth: k as u32 + 1,
            method: t.method.to_string(),
            host: value("Host"),
            uri: t.uri.clone(),
            referrer: value("Referer"),
            version: t.respond.then(|| t.resp_version.to_string()),
            request_version: version.to_string(),
            user_agent: value("User-Agent"),
            request_body_len: t.entity.len() as u64,
            response_body_len: if t.respond {
                t.resp_entity.len() as u64
            } else {
                0
            },
            status_code: t.respond.then_some(t.status),
            status_msg: t.respond.then(|| t.reason.to_string()),
            info_code: final_info.filter(|_| t.respond).map(|i| i.0),
            info_msg: final_info.filter(|_| t.respond).map(|i| i.1.to_string()),
            pipelined: t.pipelined,
            chunked: t.respond && t.resp_framing == Framing::Chunked,
            request_chunked: t.framing == Framing::Chunked,
            request_framing: t.framing,
            response_framing: t.respond.then_some(t.resp_framing),
            responded: t.respond,
            request_range: m.req,
            response_range: m.resp.filter(|_| t.respond),
            request_head_segments: spans(C, m.req_head),
            response_head_segments: m.resp_head.filter(|_| t.respond).map_or(0, |r| spans(S, r)),
        });
    }
    (flow, out)
}

/// For the client's stream: after each packet that extends the in-order
/// prefix, the prefix length and the packet's timestamp.
fn in_order_times(flow: &GeneratedFlow, isn: u32) -> Vec<(u64, u64)> {
    use etherparse::{SlicedPacket, TransportSlice};
    let mut have: Vec<(u64, u64)> = Vec::new();
    let mut contig = 0u64;
    let mut out = Vec::new();
    for p in flow.packets.iter().filter(|p| p.dir == C) {
        let Ok(sp) = SlicedPacket::from_ip(&p.ip) else {
            continue;
        };
        let Some(TransportSlice::Tcp(t)) = sp.transport else {
            continue;
        };
        let len = t.payload().len() as u64;
        if len == 0 || t.syn() {
            continue;
        }
        let start = u64::from(t.sequence_number().wrapping_sub(isn.wrapping_add(1)));
        have.push((start, start + len));
        have.sort_unstable();
        let before = contig;
        for &(s, e) in &have {
            if s <= contig && e > contig {
                contig = e;
            }
        }
        if contig > before {
            out.push((contig, p.ts_ns));
        }
    }
    out
}
