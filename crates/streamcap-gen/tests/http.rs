//! The HTTP trace: determinism, coverage of the features, the truth
//! checked against an independent parse (httparse plus a hand-written
//! de-chunker) of the intended streams, pipelining and `ts` against the
//! packets, awkward splits in the pcap, and tshark's requests when tshark
//! is installed.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::parse_ip;
use streamcap_gen::http::{generate, Framing, HttpConfig, HttpTrace, Transaction};
use streamcap_gen::{ByteRange, Direction, GeneratedFlow};

fn trace() -> &'static HttpTrace {
    static T: OnceLock<HttpTrace> = OnceLock::new();
    T.get_or_init(|| generate(&HttpConfig::default()))
}

fn by_flow(t: &HttpTrace) -> BTreeMap<usize, Vec<&Transaction>> {
    let mut m: BTreeMap<usize, Vec<&Transaction>> = BTreeMap::new();
    for x in &t.transactions {
        m.entry(x.flow).or_default().push(x);
    }
    m
}

#[test]
fn deterministic() {
    let a = trace();
    let b = generate(&HttpConfig::default());
    assert_eq!(a.pcap_bytes(), b.pcap_bytes());
    assert_eq!(a.truth_jsonl(), b.truth_jsonl());
    let c = generate(&HttpConfig {
        seed: 7,
        ..HttpConfig::default()
    });
    assert_ne!(a.truth_jsonl(), c.truth_jsonl());
}

#[test]
fn truth_round_trips_and_covers_the_features() {
    let t = trace();
    assert_eq!(
        HttpTrace::parse_truth(&t.truth_jsonl()).unwrap(),
        t.transactions
    );
    let st = t.stats();
    eprintln!("{st:?}");
    assert_eq!(st.connections, 200);
    assert!(st.transactions >= 400, "{st:?}");
    for (name, n) in [
        ("pipelined", st.pipelined),
        ("chunked", st.chunked),
        ("request_chunked", st.request_chunked),
        ("close_delimited", st.close_delimited),
        ("informational", st.informational),
        ("unanswered", st.unanswered),
        ("head", st.head),
        ("no_content", st.no_content),
        ("request_bodies", st.request_bodies),
        ("split_request_heads", st.split_request_heads),
        ("split_response_heads", st.split_response_heads),
        ("reordered", st.reordered),
    ] {
        assert!(n >= 5, "{name}: {n}");
    }
    let x = &t.transactions;
    let codes: BTreeSet<u16> = x.iter().filter_map(|t| t.info_code).collect();
    assert_eq!(codes, BTreeSet::from([100, 102, 103]));
    let status: BTreeSet<u16> = x.iter().filter_map(|t| t.status_code).collect();
    for s in [200, 204, 304, 404] {
        assert!(status.contains(&s), "{s}");
    }
    let methods: BTreeSet<&str> = x.iter().map(|t| t.method.as_str()).collect();
    for m in ["GET", "HEAD", "POST", "PUT"] {
        assert!(methods.contains(m), "{m}");
    }
    assert!(x.iter().any(|t| t.server.port() == 80));
    assert!(x
        .iter()
        .any(|t| t.server.port() > 1024 && t.server.port() != 8080));
    assert!(x
        .iter()
        .any(|t| t.request_version == "1.0" && t.host.is_none()));
    assert!(x.iter().any(|t| t.uri.starts_with("http://")));
    // Per connection: depths 1.., unanswered only at the end.
    for txs in by_flow(t).values() {
        for (i, t) in txs.iter().enumerate() {
            assert_eq!(t.trans_depth as usize, i + 1);
            assert_eq!(t.responded, t.status_code.is_some());
            assert_eq!(t.responded, t.version.is_some());
            assert_eq!(t.chunked, t.response_framing == Some(Framing::Chunked));
            assert_eq!(t.request_chunked, t.request_framing == Framing::Chunked);
        }
        let first_unanswered = txs.iter().position(|t| !t.responded).unwrap_or(txs.len());
        assert!(txs[first_unanswered..].iter().all(|t| !t.responded));
        assert_eq!(txs[0].trans_depth, 1);
        assert!(!txs[0].pipelined);
    }
}

/// A parsed message: head fields, head length, entity length, chunked,
/// total length.
struct Msg {
    start: String,
    code: u16,
    reason: String,
    version: u8,
    fields: Vec<(String, String)>,
    entity: usize,
    chunked: bool,
    len: usize,
}

impl Msg {
    fn field(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

/// De-chunks a chunked body at the start of `b`: (entity length, bytes
/// consumed including trailers).
fn dechunk(b: &[u8]) -> (usize, usize) {
    let line = |at: usize| -> (String, usize) {
        let end = at + b[at..].windows(2).position(|w| w == b"\r\n").expect("CRLF");
        (String::from_utf8(b[at..end].to_vec()).unwrap(), end + 2)
    };
    let (mut at, mut total) = (0, 0);
    loop {
        let (l, next) = line(at);
        let size =
            usize::from_str_radix(l.split(';').next().unwrap().trim(), 16).expect("chunk size");
        at = next;
        if size == 0 {
            loop {
                let (t, next) = line(at);
                at = next;
                if t.is_empty() {
                    return (total, at);
                }
                assert!(t.contains(": "), "trailer {t}");
            }
        }
        total += size;
        at += size;
        assert_eq!(&b[at..at + 2], b"\r\n", "chunk data ends with CRLF");
        at += 2;
    }
}

fn body(m: &mut Msg, rest: &[u8], bodyless: bool) {
    let te = m.field("Transfer-Encoding").unwrap_or_default();
    if bodyless {
        m.entity = 0;
    } else if te.contains("chunked") {
        let (e, n) = dechunk(rest);
        m.entity = e;
        m.chunked = true;
        m.len += n;
    } else if let Some(cl) = m.field("Content-Length") {
        m.entity = cl.parse().unwrap();
        m.len += m.entity;
    } else if m.code != 0 {
        // Response delimited by the close.
        m.entity = rest.len();
        m.len += rest.len();
    }
}

fn parse_request(b: &[u8]) -> Msg {
    let mut h = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Request::new(&mut h);
    let httparse::Status::Complete(n) = r.parse(b).expect("request head") else {
        panic!("partial request head");
    };
    let mut m = Msg {
        start: format!("{} {}", r.method.unwrap(), r.path.unwrap()),
        code: 0,
        reason: String::new(),
        version: r.version.unwrap(),
        fields: r
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8(h.value.to_vec()).unwrap(),
                )
            })
            .collect(),
        entity: 0,
        chunked: false,
        len: n,
    };
    body(&mut m, &b[n..], false);
    m
}

fn parse_response(b: &[u8], head_request: bool) -> Msg {
    let mut h = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut h);
    let httparse::Status::Complete(n) = r.parse(b).expect("response head") else {
        panic!("partial response head");
    };
    let code = r.code.unwrap();
    let mut m = Msg {
        start: String::new(),
        code,
        reason: r.reason.unwrap().to_string(),
        version: r.version.unwrap(),
        fields: r
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8(h.value.to_vec()).unwrap(),
                )
            })
            .collect(),
        entity: 0,
        chunked: false,
        len: n,
    };
    let bodyless = head_request || code < 200 || code == 204 || code == 304;
    body(&mut m, &b[n..], bodyless);
    m
}

#[test]
fn truth_matches_an_independent_parse_of_the_streams() {
    let t = trace();
    let flows = t.capture.truth();
    let mut checked = 0;
    for (flow, txs) in by_flow(t) {
        let cs = &flows[flow].to_server.stream;
        let sc = &flows[flow].to_client.stream;
        let (mut qa, mut ra) = (0usize, 0usize);
        for x in &txs {
            assert_eq!(
                (x.client, x.server),
                (flows[flow].client, flows[flow].server)
            );
            let q = parse_request(&cs[qa..]);
            assert_eq!(q.start, format!("{} {}", x.method, x.uri));
            assert_eq!(format!("1.{}", q.version), x.request_version);
            assert_eq!(q.field("Host"), x.host);
            assert_eq!(q.field("User-Agent"), x.user_agent);
            assert_eq!(q.field("Referer"), x.referrer);
            assert_eq!(q.entity as u64, x.request_body_len, "{x:?}");
            assert_eq!(q.chunked, x.request_chunked);
            assert_eq!(
                x.request_range,
                ByteRange {
                    start: qa as u64,
                    end: (qa + q.len) as u64
                }
            );
            qa += q.len;
            if !x.responded {
                assert!(x.response_range.is_none());
                continue;
            }
            let start = ra;
            let mut info = None;
            let r = loop {
                let r = parse_response(&sc[ra..], x.method == "HEAD");
                ra += r.len;
                if r.code < 200 {
                    info = Some((r.code, r.reason.clone()));
                    continue;
                }
                break r;
            };
            assert_eq!(Some(r.code), x.status_code, "{x:?}");
            assert_eq!(Some(r.reason.clone()), x.status_msg);
            assert_eq!(Some(format!("1.{}", r.version)), x.version);
            assert_eq!(info.as_ref().map(|i| i.0), x.info_code);
            assert_eq!(info.map(|i| i.1), x.info_msg);
            assert_eq!(r.entity as u64, x.response_body_len, "{x:?}");
            assert_eq!(r.chunked, x.chunked, "{x:?}");
            let close =
                r.field("Content-Length").is_none() && !r.chunked && x.response_body_len > 0;
            assert_eq!(close, x.response_framing == Some(Framing::Close), "{x:?}");
            assert_eq!(
                x.response_range,
                Some(ByteRange {
                    start: start as u64,
                    end: ra as u64
                })
            );
            checked += 1;
        }
        assert_eq!(qa, cs.len(), "flow {flow}: every request byte parsed");
        assert_eq!(ra, sc.len(), "flow {flow}: every response byte parsed");
    }
    assert!(checked > 400, "{checked}");
}

/// Per data packet of a flow in capture order: direction and stream range.
fn segments(f: &GeneratedFlow) -> Vec<(Direction, u64, u64, u64)> {
    let mut isn = [0u32; 2];
    let mut out = Vec::new();
    for p in &f.packets {
        let x = parse_ip(&p.ip);
        let (seq, _, syn, ..) = x.tcp.unwrap();
        let d = usize::from(p.dir == Direction::ToClient);
        if syn {
            isn[d] = seq;
            continue;
        }
        if !x.payload.is_empty() {
            let s = u64::from(seq.wrapping_sub(isn[d].wrapping_add(1)));
            out.push((p.dir, s, s + x.payload.len() as u64, p.ts_ns));
        }
    }
    out
}

#[test]
fn pipelining_and_timestamps_agree_with_the_packets() {
    let t = trace();
    let flows = t.capture.flows();
    let mut pipelined = 0;
    for (flow, txs) in by_flow(t) {
        let f = &flows[flow];
        let segs = segments(f);
        let holds = |dir: Direction, off: u64| {
            segs.iter()
                .position(|&(d, s, e, _)| d == dir && s <= off && off < e)
                .expect("byte on the wire")
        };
        let reordered = f.truth.label.contains("reorder");
        for (i, x) in txs.iter().enumerate() {
            // ts: the packet completing the request line, in order.
            let line = (x.method.len() + x.uri.len() + 12) as u64;
            let last = x.request_range.start + line - 1;
            let done = segs
                .iter()
                .enumerate()
                .filter(|(_, &(d, s, _, _))| d == Direction::ToServer && s <= last)
                .map(|(k, _)| k)
                .max()
                .unwrap();
            if !reordered {
                assert_eq!(x.ts_ns, segs[holds(Direction::ToServer, last)].3);
            }
            assert!(x.ts_ns >= segs[holds(Direction::ToServer, last)].3);
            assert!(x.ts_ns <= segs[done].3.max(x.ts_ns));
            if i == 0 || reordered {
                continue;
            }
            let prev = txs[i - 1];
            let sent = holds(Direction::ToServer, x.request_range.start);
            let expect = match prev.response_range {
                Some(r) => sent < holds(Direction::ToClient, r.end - 1),
                None => true,
            };
            assert_eq!(x.pipelined, expect, "{x:?}");
            pipelined += usize::from(expect);
        }
    }
    assert!(pipelined > 20, "{pipelined}");
}

/// Reordering never moves a segment past a packet that acknowledges it:
/// every acknowledgment covers only bytes (and the FIN) captured before
/// it, as at a single capture point. (Segments of different sends are
/// separated by the receiver's ACK of the first send: swapping them made
/// that ACK acknowledge a segment captured after it, which a reassembler
/// trusting acknowledgments, streamcap's fast mode or tshark's "ACKed
/// segment that wasn't captured", takes for capture loss.)
#[test]
fn no_segment_is_acknowledged_before_it_is_captured() {
    for seed in [1, 2, 3] {
        let t = generate(&HttpConfig {
            seed,
            reorder: 1.0,
            ..HttpConfig::default()
        });
        let mut reordered = 0;
        for (id, f) in t.capture.flows().iter().enumerate() {
            let mut isn = [0u32; 2];
            // Per direction: captured ranges (offsets from ISN + 1) and
            // the contiguous prefix they make.
            let mut have: [Vec<(u64, u64)>; 2] = Default::default();
            let mut contig = [0u64; 2];
            for (k, p) in f.packets.iter().enumerate() {
                let x = parse_ip(&p.ip);
                let (seq, ack, syn, fin, _, ackf) = x.tcp.unwrap();
                let d = usize::from(p.dir == Direction::ToClient);
                if syn {
                    isn[d] = seq;
                } else {
                    let s = u64::from(seq.wrapping_sub(isn[d].wrapping_add(1)));
                    let e = s + x.payload.len() as u64 + u64::from(fin);
                    if e > s {
                        reordered += usize::from(s > contig[d]);
                        have[d].push((s, e));
                        have[d].sort_unstable();
                        for &(a, b) in &have[d] {
                            if a <= contig[d] {
                                contig[d] = contig[d].max(b);
                            }
                        }
                    }
                }
                if ackf && !syn {
                    let o = 1 - d;
                    let acked = u64::from(ack.wrapping_sub(isn[o].wrapping_add(1)));
                    assert!(
                        acked <= contig[o],
                        "seed {seed}, flow {id}, packet {k}: acknowledges {acked} bytes \
                         of the other direction, {} captured",
                        contig[o]
                    );
                }
            }
        }
        assert!(
            reordered > 100,
            "seed {seed}: {reordered} segments out of order"
        );
    }
}

#[test]
fn heads_are_cut_at_awkward_places() {
    let t = trace();
    let flows = t.capture.truth();
    let mut kinds = BTreeSet::new();
    for (f, gf) in t.capture.flows().iter().enumerate() {
        for (dir, s, e, _) in segments(gf) {
            let stream = match dir {
                Direction::ToServer => &flows[f].to_server.stream,
                Direction::ToClient => &flows[f].to_client.stream,
            };
            let e = e as usize;
            let _ = s;
            for k in 1..=3 {
                if e >= k && stream[e - k..].starts_with(b"\r\n\r\n") {
                    kinds.insert(k);
                }
            }
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from([1, 2, 3]),
        "cuts after CR, CRLF and CRLFCR"
    );
}

#[test]
fn tshark_sees_the_same_requests() {
    let Ok(out) = Command::new("tshark").arg("-v").output() else {
        common::skip("tshark not installed: no tshark cross-check of the HTTP trace");
        return;
    };
    assert!(out.status.success());
    let t = trace();
    let dir = std::env::temp_dir().join(format!("streamcap-gen-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap: PathBuf = dir.join("http.pcap");
    t.write_files(&pcap, None).unwrap();
    let ports: BTreeSet<u16> = t.transactions.iter().map(|x| x.server.port()).collect();
    let mut cmd = Command::new("tshark");
    cmd.args([
        "-r",
        pcap.to_str().unwrap(),
        "-o",
        "tcp.reassemble_out_of_order:TRUE",
    ]);
    for p in ports {
        cmd.args(["-d", &format!("tcp.port=={p},http")]);
    }
    cmd.args([
        "-Y",
        "http.request",
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "aggregator=/s",
    ])
    .args(["-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport"])
    .args([
        "-e",
        "http.request.method",
        "-e",
        "http.host",
        "-e",
        "http.request.uri",
    ]);
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen: HashMap<SocketAddr, Vec<(String, String, String)>> = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Vec<&str> = line.split('|').collect();
        let ip = if v[0].is_empty() {
            format!("[{}]", v[1])
        } else {
            v[0].to_string()
        };
        let client: SocketAddr = format!("{ip}:{}", v[2]).parse().unwrap();
        let methods: Vec<&str> = v[3].split(' ').collect();
        let hosts: Vec<&str> = v[4].split(' ').collect();
        let uris: Vec<&str> = v[5].split(' ').collect();
        assert_eq!(methods.len(), uris.len(), "{line}");
        for (k, (m, u)) in methods.iter().zip(&uris).enumerate() {
            let h = if hosts.len() == methods.len() {
                hosts[k]
            } else {
                v[4]
            };
            seen.entry(client)
                .or_default()
                .push((m.to_string(), h.to_string(), u.to_string()));
        }
    }
    // tshark 4.0 throws on a chunked message whose last line ending is
    // split between its CR and LF (the final segment starting with LF),
    // and then reports no request: such requests may be missing.
    let flows = t.capture.flows();
    let split_end = |x: &Transaction| {
        let end = x.request_range.end;
        x.request_chunked
            && segments(&flows[x.flow])
                .iter()
                .any(|&(d, s, _, _)| d == Direction::ToServer && (s == end - 1 || s == end - 3))
    };
    let mut want: HashMap<SocketAddr, Vec<(String, String, String)>> = HashMap::new();
    let mut excused = 0;
    for x in &t.transactions {
        let v = want.entry(x.client).or_default();
        let r = (
            x.method.clone(),
            x.host.clone().unwrap_or_default(),
            x.uri.clone(),
        );
        if split_end(x) && !seen.get(&x.client).is_some_and(|s| s.contains(&r)) {
            excused += 1;
            continue;
        }
        v.push(r);
    }
    want.retain(|_, v| !v.is_empty());
    for (client, w) in &want {
        assert_eq!(seen.get(client), Some(w), "{client}");
    }
    assert_eq!(seen.len(), want.len(), "connections with requests");
    assert!(excused <= 3, "{excused} requests missed by tshark");
    if excused > 0 {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "note: {excused} chunked request(s) whose final CRLF is split not reported by tshark \
             (its limitation)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
