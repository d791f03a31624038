//! One HTTP connection: its transactions, the sends that carry them
//! (pipelined or not, with `100 Continue` waits), segment cuts at awkward
//! places, and the resulting TCP conversation and truth.

use std::net::SocketAddr;

use crate::capture::{Direction, FlowGenerator, GeneratedFlow};
use crate::prng::SplitMix64;
use crate::tcp::{Close, Reorder, TcpConversation};
use crate::truth::ByteRange;

use super::message::{body, head, text_entity, Built};
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

const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "curl/8.5.0",
    "Wget/1.21.3",
    "python-requests/2.31.0",
    "Debian APT-HTTP/1.3 (2.7.14)",
];

const HOSTS: &[&str] = &[
    "www.example.com",
    "api.example.net",
    "cdn.example.org",
    "intranet.campus.example.edu",
    "files.example.org",
    "198.51.100.80",
];

const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/news/2024/05/campus-network.html",
    "/api/v2/items?page=3&limit=20",
    "/api/v1/session",
    "/static/js/app.4f3a2b.js",
    "/static/css/site.css",
    "/images/photo-123.jpg",
    "/search?q=network+capture&lang=en",
    "/download/file-12.bin",
    "/favicon.ico",
    "/robots.txt",
];

/// One planned transaction.
struct Tx {
    method: &'static str,
    uri: String,
    fields: Vec<(String, String)>,
    entity: Vec<u8>,
    framing: Framing,
    expect: bool,
    infos: Vec<(u16, &'static str, Vec<(String, String)>)>,
    status: u16,
    reason: &'static str,
    resp_version: &'static str,
    resp_fields: Vec<(String, String)>,
    resp_entity: Vec<u8>,
    resp_framing: Framing,
    trailers: Vec<(String, String)>,
    respond: bool,
    pipelined: bool,
}

fn field(name: &str, value: impl Into<String>, lower: bool) -> (String, String) {
    let n = if lower {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    };
    (n, value.into())
}

fn entity(rng: &mut SplitMix64, ctype: &str, n: usize) -> Vec<u8> {
    if ctype.starts_with("text") || ctype.contains("json") {
        text_entity(rng, n, ctype.contains("json"))
    } else {
        rng.bytes(n)
    }
}

fn body_size(rng: &mut SplitMix64) -> usize {
    match rng.below(100) {
        0..=2 => 0,
        3..=52 => rng.range(20, 2000) as usize,
        53..=87 => rng.range(2000, 30_000) as usize,
        _ => rng.range(30_000, 200_000) as usize,
    }
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
    let v10 = rng.chance(1, 10);
    let n = if v10 {
        1
    } else {
        1 + (rng.below(6) * rng.below(6) / 3) as usize
    };
    let port = p.server.port();
    let host_name = *rng.pick(HOSTS);
    let host = if port == 80 {
        host_name.to_string()
    } else {
        format!("{host_name}:{port}")
    };
    let send_host = !v10 || rng.chance(1, 2);
    let ua = (!rng.chance(1, 20)).then(|| *rng.pick(UAS));
    let lower = rng.chance(1, 10);
    let req_version = if v10 { "1.0" } else { "1.1" };
    // Pipelined batches: runs of GET/HEAD requests sent back to back.
    let pipeline = !v10 && n >= 2 && rng.chance(1, 3);
    let unanswered = if rng.chance(1, 8) {
        rng.range(1, 2) as usize
    } else {
        0
    }
    .min(n);
    let close_last = (v10 && rng.chance(1, 2)) || rng.chance(1, 8);
    let mut txs: Vec<Tx> = Vec::with_capacity(n);
    let mut batch_left = 0usize;
    for i in 0..n {
        let last = i + 1 == n;
        let respond = i + unanswered < n;
        let in_batch = batch_left > 0;
        let start_batch = pipeline && !in_batch && i + 1 < n && rng.chance(2, 3);
        let pipelined = in_batch;
        if start_batch {
            batch_left = rng.range(2, 4).min((n - i) as u64) as usize;
        }
        let batched = in_batch || start_batch;
        if batch_left > 0 {
            batch_left -= 1;
        }
        let method = if batched {
            *rng.pick(&["GET", "GET", "GET", "HEAD"])
        } else {
            match rng.below(100) {
                0..=59 => "GET",
                60..=67 => "HEAD",
                68..=83 => "POST",
                84..=89 => "PUT",
                90..=93 => "OPTIONS",
                94..=96 => "DELETE",
                _ => "PATCH",
            }
        };
        let mut uri = match method {
            "POST" | "PUT" | "PATCH" => format!("/api/v1/items/{}", rng.below(10_000)),
            "OPTIONS" if rng.chance(1, 3) => "*".to_string(),
            _ => rng.pick(PATHS).to_string(),
        };
        if rng.chance(1, 25) && uri.starts_with('/') {
            uri = format!("http://{host}{uri}");
        }
        let mut fields = Vec::new();
        if send_host {
            fields.push(field("Host", host.clone(), lower));
        }
        if let Some(u) = ua {
            fields.push(field("User-Agent", u, lower));
        }
        fields.push(field("Accept", "*/*", lower));
        if rng.chance(2, 5) {
            fields.push(field(
                "Referer",
                format!("http://{host}{}", rng.pick(PATHS)),
                lower,
            ));
        }
        let conditional = method == "GET" && rng.chance(1, 5);
        if conditional {
            fields.push(field(
                "If-None-Match",
                format!("\"{:012x}\"", rng.next_u64() >> 16),
                lower,
            ));
        }
        let has_body = matches!(method, "POST" | "PUT" | "PATCH");
        let (req_entity, framing, expect) = if has_body {
            let n = if rng.chance(1, 20) {
                0
            } else {
                rng.range(10, 40_000) as usize
            };
            let ctype = *rng.pick(&[
                "application/json",
                "application/x-www-form-urlencoded",
                "application/octet-stream",
            ]);
            let e = entity(rng, ctype, n);
            let framing = if !v10 && rng.chance(1, 4) {
                Framing::Chunked
            } else {
                Framing::Length
            };
            fields.push(field("Content-Type", ctype, lower));
            match framing {
                Framing::Chunked => fields.push(field("Transfer-Encoding", "chunked", lower)),
                _ => fields.push(field("Content-Length", e.len().to_string(), lower)),
            }
            let expect = !v10 && !e.is_empty() && rng.chance(1, 3);
            if expect {
                fields.push(field("Expect", "100-continue", lower));
            }
            (e, framing, expect)
        } else {
            (Vec::new(), Framing::None, false)
        };
        if last && close_last && !v10 {
            fields.push(field("Connection", "close", lower));
        } else if !v10 && rng.chance(1, 3) {
            fields.push(field("Connection", "keep-alive", lower));
        }

        // The response.
        let (status, reason) = match method {
            "GET" if conditional && rng.chance(3, 4) => (304, "Not Modified"),
            "GET" | "HEAD" => *rng.pick(&[
                (200, "OK"),
                (200, "OK"),
                (200, "OK"),
                (200, "OK"),
                (200, "OK"),
                (200, "OK"),
                (404, "Not Found"),
                (301, "Moved Permanently"),
                (302, "Found"),
                (204, "No Content"),
                (500, "Internal Server Error"),
            ]),
            "POST" => *rng.pick(&[
                (201, "Created"),
                (200, "OK"),
                (204, "No Content"),
                (303, "See Other"),
                (400, "Bad Request"),
            ]),
            "OPTIONS" => *rng.pick(&[(204, "No Content"), (200, "OK")]),
            _ => *rng.pick(&[(200, "OK"), (204, "No Content"), (201, "Created")]),
        };
        let resp_version = if v10 && rng.chance(1, 2) {
            "1.0"
        } else {
            "1.1"
        };
        let bodyless = method == "HEAD" || status == 204 || status == 304;
        let mut infos = Vec::new();
        if !v10 {
            if expect {
                infos.push((100, "Continue", Vec::new()));
            }
            if has_body && rng.chance(1, 12) {
                infos.push((102, "Processing", Vec::new()));
            }
            if method == "GET" && rng.chance(1, 15) {
                infos.push((
                    103,
                    "Early Hints",
                    vec![field(
                        "Link",
                        "</static/css/site.css>; rel=preload; as=style",
                        false,
                    )],
                ));
            }
        }
        let ctype = *rng.pick(&[
            "text/html; charset=utf-8",
            "application/json",
            "text/css",
            "application/octet-stream",
        ]);
        let size = if status == 301 || status == 302 || status == 303 {
            rng.range(0, 200) as usize
        } else {
            body_size(rng)
        };
        let rep = entity(rng, ctype, size);
        let mut rf = vec![
            (
                "Server".to_string(),
                rng.pick(&[
                    "nginx/1.24.0",
                    "Apache/2.4.58 (Ubuntu)",
                    "Microsoft-IIS/10.0",
                    "lighttpd/1.4.73",
                ])
                .to_string(),
            ),
            (
                "Date".to_string(),
                crate::campus::http_date(1_714_564_800 + rng.below(86_400)),
            ),
        ];
        if status != 204 && status != 304 {
            rf.push(("Content-Type".into(), ctype.into()));
        }
        if matches!(status, 301 | 302 | 303) {
            rf.push(("Location".into(), format!("http://{host}/")));
        }
        let mut trailers = Vec::new();
        let resp_framing = if bodyless {
            match (method, status) {
                ("HEAD", _) if resp_version == "1.1" && rng.chance(1, 5) => {
                    rf.push(("Transfer-Encoding".into(), "chunked".into()));
                }
                ("HEAD", _) => rf.push(("Content-Length".into(), rep.len().to_string())),
                (_, 304) if rng.chance(1, 3) => {
                    rf.push(("Content-Length".into(), rep.len().to_string()))
                }
                _ => {}
            }
            if status == 304 {
                rf.push(("ETag".into(), format!("\"{:012x}\"", rng.next_u64() >> 16)));
            }
            Framing::None
        } else if last && close_last && respond {
            rf.push(("Connection".into(), "close".into()));
            Framing::Close
        } else if resp_version == "1.1" && rng.chance(3, 10) {
            rf.push(("Transfer-Encoding".into(), "chunked".into()));
            if rng.chance(1, 4) {
                rf.push(("Trailer".into(), "X-Checksum".into()));
                trailers.push(("X-Checksum".to_string(), format!("{:016x}", rng.next_u64())));
            }
            Framing::Chunked
        } else {
            rf.push(("Content-Length".into(), rep.len().to_string()));
            if v10 {
                rf.push(("Connection".into(), "close".into()));
            }
            Framing::Length
        };
        if lower {
            for f in &mut rf {
                f.0 = f.0.to_ascii_lowercase();
            }
        }
        txs.push(Tx {
            method,
            uri,
            fields,
            entity: req_entity,
            framing,
            expect,
            infos,
            status,
            reason,
            resp_version,
            resp_fields: rf,
            resp_entity: if bodyless { Vec::new() } else { rep },
            resp_framing,
            trailers,
            respond,
            pipelined,
        });
    }
    build(p, &txs, req_version, rng)
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
    } else if last.resp_framing == Framing::Close || rng.chance(2, 5) {
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
    if let Some(w) = p.reorder {
        conv = conv.reorder(Reorder::Window(w));
    }
    for (dir, bytes, cuts) in sc.sends {
        conv = conv.send_cut(dir, bytes, cuts);
    }
    let segs = conv.data_segments();
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
