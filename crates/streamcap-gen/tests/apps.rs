//! The labelled application trace: determinism, coverage of every label on
//! standard and non-standard ports, the first messages of each protocol
//! checked by independent parsers, random flows free of protocol-looking
//! bytes, the truth's details (SNI, ALPN, SSH banners, DNS query) read
//! back from the streams, and tshark's dissection of the standard-port
//! flows when tshark is installed.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::{attribute, read_pcap};
use streamcap_gen::apps::{generate, AppFlow, AppsConfig, AppsTrace, Label};
use streamcap_gen::{Direction, FlowTruth, Protocol};

fn trace() -> &'static AppsTrace {
    static T: OnceLock<AppsTrace> = OnceLock::new();
    T.get_or_init(|| generate(&AppsConfig::default()))
}

/// Per flow: the datagrams (UDP) or segments (TCP) of each direction, from
/// the pcap.
fn messages(t: &AppsTrace) -> &'static HashMap<usize, [Vec<Vec<u8>>; 2]> {
    static M: OnceLock<HashMap<usize, [Vec<Vec<u8>>; 2]>> = OnceLock::new();
    M.get_or_init(|| {
        let (_, _, recs) = read_pcap(&t.pcap_bytes());
        let truth = t.capture.truth();
        let mut m: HashMap<usize, [Vec<Vec<u8>>; 2]> = HashMap::new();
        for (id, dir, p) in attribute(&recs, &truth) {
            if !p.payload.is_empty() {
                m.entry(id).or_default()[usize::from(dir == Direction::ToClient)].push(p.payload);
            }
        }
        m
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn be16(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([b[at], b[at + 1]]))
}

#[test]
fn deterministic() {
    let a = trace();
    let b = generate(&AppsConfig::default());
    assert_eq!(a.pcap_bytes(), b.pcap_bytes());
    assert_eq!(a.truth_jsonl(), b.truth_jsonl());
    let c = generate(&AppsConfig {
        seed: 2,
        ..AppsConfig::default()
    });
    assert_ne!(a.pcap_bytes(), c.pcap_bytes());
}

#[test]
fn truth_round_trips_and_matches_the_capture() {
    let t = trace();
    assert_eq!(AppsTrace::parse_truth(&t.truth_jsonl()).unwrap(), t.flows);
    let flows: Vec<FlowTruth> = t.capture.truth();
    assert_eq!(flows.len(), 600);
    assert_eq!(t.flows.len(), 600);
    let mut tuples = std::collections::HashSet::new();
    for (a, f) in t.flows.iter().zip(&flows) {
        assert_eq!(a.flow, f.id);
        assert_eq!((a.proto, a.client, a.server), (f.proto, f.client, f.server));
        assert_eq!(f.label, a.label.name());
        assert!(
            tuples.insert((a.proto, a.client, a.server)),
            "5-tuples are unique"
        );
        assert_eq!(
            a.standard_port,
            a.label.standard_ports(a.proto).contains(&a.server.port())
        );
        assert_eq!(a.port_label, Label::by_port(a.proto, a.server.port()));
        if a.label == Label::Unknown {
            assert!(!a.standard_port);
        }
        assert!(
            f.to_server.stream_len > 0 && f.to_client.stream_len > 0,
            "{a:?}"
        );
    }
}

#[test]
fn every_label_on_standard_and_nonstandard_ports() {
    let t = trace();
    let st = t.stats();
    eprintln!("{st:?}");
    for l in Label::ALL {
        let all: Vec<&AppFlow> = t.flows.iter().filter(|f| f.label == l).collect();
        assert!(all.len() >= 5, "{l}: {} flows", all.len());
        if l == Label::Unknown {
            continue;
        }
        assert!(
            all.iter().any(|f| f.standard_port),
            "{l} on a standard port"
        );
        if l != Label::Dhcp {
            assert!(
                all.iter().any(|f| !f.standard_port),
                "{l} on a non-standard port"
            );
            assert!(
                all.iter()
                    .any(|f| !f.standard_port && f.port_label.is_some()),
                "{l} on another label's port"
            );
        }
    }
    let share = st.nonstandard as f64 / st.labelled as f64;
    assert!((0.29..=0.31).contains(&share), "non-standard share {share}");
    let variants: BTreeSet<&str> = t
        .flows
        .iter()
        .filter(|f| f.label == Label::Unknown)
        .map(|f| f.variant.as_str())
        .collect();
    for v in ["random-tcp", "random-udp"] {
        assert!(variants.contains(v), "{variants:?}");
    }
    assert!(variants
        .iter()
        .any(|v| v.starts_with("text-") && v.ends_with("-tcp")));
    assert!(variants
        .iter()
        .any(|v| v.starts_with("text-") && v.ends_with("-udp")));
    // Both transports where a label has both.
    for l in [Label::Dns, Label::Sip, Label::Bittorrent] {
        let protos: std::collections::HashSet<Protocol> = t
            .flows
            .iter()
            .filter(|f| f.label == l)
            .map(|f| f.proto)
            .collect();
        assert_eq!(protos.len(), 2, "{l}");
    }
    // No flows with zero nonstandard share config.
    let none = generate(&AppsConfig {
        nonstandard: 0.0,
        flows: 100,
        ..AppsConfig::default()
    });
    assert!(none
        .flows
        .iter()
        .all(|f| f.standard_port || f.label == Label::Unknown));
}

/// Markers that name a protocol wherever they appear.
const MARKERS: &[&[u8]] = &[
    b"HTTP/",
    b"SSH-",
    b"SIP/2.0",
    b"RTSP/",
    b"BitTorrent protocol",
    b"IMAP4",
    b"ESMTP",
    b"MQTT",
    b"mstshash",
    b"\xfeSMB",
    b"\xffSMB",
    b"\x63\x82\x53\x63",
    b"+OK",
    b"* OK",
    b"d1:ad2:id20:",
    b"d1:rd2:id20:",
];

const VERBS: &[&str] = &[
    "GET", "POST", "HEAD", "PUT", "OPTIONS", "USER", "PASS", "EHLO", "HELO", "CAPA", "QUIT",
    "AUTH", "REGISTER", "INVITE", "PING", "SET", "INFO", "LOGIN", "STAT", "LIST", "RETR",
];

#[test]
fn unknown_flows_look_like_nothing() {
    let t = trace();
    let truth = t.capture.truth();
    let msgs = messages(t);
    let mut checked = 0;
    for f in t.flows.iter().filter(|f| f.label == Label::Unknown) {
        let ft = &truth[f.flow];
        for s in [&ft.to_server.stream, &ft.to_client.stream] {
            for m in MARKERS {
                assert!(!contains(s, m), "{f:?} holds {m:?}");
            }
        }
        let firsts: Vec<&[u8]> = match f.proto {
            Protocol::Tcp => vec![&ft.to_server.stream, &ft.to_client.stream],
            Protocol::Udp => msgs[&f.flow].iter().flatten().map(Vec::as_slice).collect(),
        };
        for b in firsts.into_iter().filter(|b| !b.is_empty()) {
            assert!(b.len() >= 8);
            assert!(
                !((0x14..=0x17).contains(&b[0]) && b[1] == 3),
                "TLS record header: {f:?}"
            );
            assert!(!(b[0] == 3 && b[1] == 0), "TPKT: {f:?}");
            assert!(b[0] != 0x13, "BitTorrent handshake length: {f:?}");
            assert!(b[0] != 0x00, "NetBIOS session / length prefix: {f:?}");
            if f.variant.starts_with("random") {
                assert!(
                    !b[..4].iter().all(u8::is_ascii_alphanumeric),
                    "random first bytes look like text: {f:?}"
                );
                assert!(!b"*+-$:".contains(&b[0]), "RESP type byte: {f:?}");
            } else {
                assert!(b.is_ascii(), "text: {f:?}");
                let word = String::from_utf8_lossy(
                    b.split(|c| !c.is_ascii_alphanumeric())
                        .next()
                        .unwrap_or_default(),
                )
                .to_ascii_uppercase();
                assert!(!VERBS.contains(&word.as_str()), "starts with {word}: {f:?}");
                assert!(!b[0].is_ascii_digit(), "reply code: {f:?}");
            }
            if f.proto == Protocol::Udp {
                assert_ne!(b.len(), 48, "NTP-sized: {f:?}");
                assert!(!(b[4] == 0 && b[5] == 1), "DNS-like QDCOUNT 1: {f:?}");
                assert!(
                    !(b[0] & 0x80 != 0 && b[1..5] == [0, 0, 0, 1]),
                    "QUIC v1: {f:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// (SNI, ALPN list) of a ClientHello record at the start of `b`.
fn parse_client_hello(b: &[u8]) -> (Option<String>, Vec<String>) {
    assert_eq!((b[0], b[1]), (0x16, 3), "TLS handshake record");
    assert_eq!(b[5], 1, "ClientHello");
    let h = &b[9..5 + be16(b, 3)];
    let mut at = 2 + 32;
    at += 1 + usize::from(h[at]);
    at += 2 + be16(h, at);
    at += 1 + usize::from(h[at]);
    let end = at + 2 + be16(h, at);
    at += 2;
    let (mut sni, mut alpn) = (None, Vec::new());
    while at < end {
        let (ty, len) = (be16(h, at), be16(h, at + 2));
        let d = &h[at + 4..at + 4 + len];
        if ty == 0 {
            assert_eq!(d[2], 0, "host_name");
            sni = Some(String::from_utf8(d[5..5 + be16(d, 3)].to_vec()).unwrap());
        } else if ty == 16 {
            let mut p = 2;
            while p < d.len() {
                let n = usize::from(d[p]);
                alpn.push(String::from_utf8(d[p + 1..p + 1 + n].to_vec()).unwrap());
                p += 1 + n;
            }
        }
        at += 4 + len;
    }
    (sni, alpn)
}

/// The ALPN protocol a ServerHello at the start of `b` selects.
fn parse_server_hello_alpn(b: &[u8]) -> Option<String> {
    assert_eq!((b[0], b[5]), (0x16, 2), "ServerHello");
    let h = &b[9..];
    let mut at = 2 + 32;
    at += 1 + usize::from(h[at]) + 3;
    let end = at + 2 + be16(h, at);
    at += 2;
    while at < end {
        let (ty, len) = (be16(h, at), be16(h, at + 2));
        if ty == 16 {
            let n = usize::from(h[at + 6]);
            return Some(String::from_utf8(h[at + 7..at + 7 + n].to_vec()).unwrap());
        }
        at += 4 + len;
    }
    None
}

fn dns_qname(m: &[u8]) -> String {
    assert_eq!(be16(m, 4), 1, "one question");
    let mut at = 12;
    let mut labels = Vec::new();
    while m[at] != 0 {
        let n = usize::from(m[at]);
        labels.push(String::from_utf8(m[at + 1..at + 1 + n].to_vec()).unwrap());
        at += 1 + n;
    }
    labels.join(".")
}

fn first_line(s: &[u8]) -> &[u8] {
    let end = s
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a CRLF line");
    &s[..end]
}

/// Checks the first messages of a labelled flow with independent parsers
/// and the details of the truth.
fn check_flow(f: &AppFlow, cs: &[u8], sc: &[u8], cd: &[Vec<u8>], sd: &[Vec<u8>]) {
    let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    match f.label {
        Label::Http => {
            let line = text(first_line(cs));
            assert!(
                ["GET ", "POST ", "HEAD "]
                    .iter()
                    .any(|m| line.starts_with(m)),
                "{line}"
            );
            assert!(text(first_line(sc)).starts_with("HTTP/1.1 "));
            let host = text(cs)
                .lines()
                .find_map(|l| l.strip_prefix("Host: ").map(str::to_string));
            assert_eq!(host, f.details.http_host);
        }
        Label::Tls => {
            let (sni, alpn) = parse_client_hello(cs);
            assert_eq!(sni, f.details.sni, "{f:?}");
            assert_eq!(Some(alpn), f.details.alpn, "{f:?}");
            assert_eq!(parse_server_hello_alpn(sc), f.details.alpn_server, "{f:?}");
        }
        Label::Ssh => {
            assert_eq!(Some(text(first_line(cs))), f.details.ssh_client_banner);
            assert_eq!(Some(text(first_line(sc))), f.details.ssh_server_banner);
            assert!(cs.starts_with(b"SSH-2.0-") && sc.starts_with(b"SSH-"));
        }
        Label::Dns => {
            let (q, r) = match f.proto {
                Protocol::Udp => (cd[0].clone(), sd[0].clone()),
                Protocol::Tcp => {
                    assert_eq!(be16(cs, 0) + 2, cs.len(), "TCP length prefix");
                    (cs[2..].to_vec(), sc[2..].to_vec())
                }
            };
            assert_eq!(q[2] & 0x80, 0, "query");
            assert_eq!(r[2] & 0x80, 0x80, "response");
            assert_eq!(q[..2], r[..2], "same id");
            assert_eq!(Some(dns_qname(&q)), f.details.dns_query);
        }
        Label::Smtp => {
            assert!(sc.starts_with(b"220 ") && cs.starts_with(b"EHLO "));
        }
        Label::Ftp => {
            assert!(sc.starts_with(b"220"));
            assert!(cs.starts_with(b"USER ") || cs.starts_with(b"AUTH TLS\r\n"));
        }
        Label::Imap => {
            assert!(sc.starts_with(b"* OK "));
            let line = text(first_line(cs));
            assert!(line.ends_with(" CAPABILITY"), "{line}");
            assert!(contains(sc, b"IMAP4rev1"));
        }
        Label::Pop3 => {
            assert!(sc.starts_with(b"+OK "));
            assert!(cs.starts_with(b"USER ") || cs.starts_with(b"CAPA\r\n"));
            assert!(contains(cs, b"\r\nUSER ") || cs.starts_with(b"USER "));
        }
        Label::Quic => {
            let p = &cd[0];
            assert_eq!(p[0] & 0xf0, 0xc0, "long header, Initial");
            assert_eq!(p[1..5], [0, 0, 0, 1], "version 1");
            assert!(p.len() >= 1200, "padded Initial");
            let dcid = usize::from(p[5]);
            let scid = usize::from(p[6 + dcid]);
            let at = 7 + dcid + scid;
            assert_eq!(p[at], 0, "no token");
            let len = usize::from(u16::from_be_bytes([p[at + 1], p[at + 2]]) & 0x3fff);
            assert_eq!(at + 3 + len, p.len(), "length covers the datagram");
            assert_eq!(sd[0][1..5], [0, 0, 0, 1]);
        }
        Label::Smb => {
            let mut c = cs;
            let mut s = sc;
            if f.server.port() == 139 {
                assert_eq!(c[0], 0x81, "NetBIOS session request");
                c = &c[4 + be16(c, 2)..];
                assert_eq!(s[..4], [0x82, 0, 0, 0]);
                s = &s[4..];
            }
            assert_eq!(c[0], 0, "session message");
            let msg = &c[4..];
            if msg.starts_with(b"\xffSMB") {
                assert_eq!(msg[4], 0x72, "SMB1 NEGOTIATE");
            } else {
                assert_eq!(&msg[..4], b"\xfeSMB");
                assert_eq!(msg[12..14], [0, 0], "NEGOTIATE");
            }
            assert_eq!(&s[4..8], b"\xfeSMB");
        }
        Label::Rdp => {
            assert_eq!(cs[..2], [3, 0], "TPKT");
            assert_eq!(be16(cs, 2), 4 + 1 + usize::from(cs[4]));
            assert_eq!(cs[5], 0xe0, "X.224 CR");
            assert!(cs[11..].starts_with(b"Cookie: mstshash="));
            assert_eq!((sc[0], sc[5]), (3, 0xd0), "X.224 CC");
        }
        Label::Sip => {
            let (c, s) = match f.proto {
                Protocol::Udp => (cd[0].as_slice(), sd.last().unwrap().as_slice()),
                Protocol::Tcp => (cs, sc),
            };
            let line = text(first_line(c));
            assert!(line.ends_with(" SIP/2.0"), "{line}");
            assert!(["INVITE ", "REGISTER ", "OPTIONS "]
                .iter()
                .any(|m| line.starts_with(m)));
            assert!(contains(s, b"SIP/2.0 200 OK\r\n"));
            for m in cd.iter().chain(sd) {
                let t = text(m);
                let (head, body) = t.split_once("\r\n\r\n").unwrap();
                let cl: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(cl, body.len(), "Content-Length");
            }
        }
        Label::Ntp => {
            for (m, mode) in cd.iter().map(|m| (m, 3)).chain(sd.iter().map(|m| (m, 4))) {
                assert_eq!(m.len(), 48);
                assert_eq!(m[0] & 7, mode);
                assert!(matches!((m[0] >> 3) & 7, 3 | 4));
            }
        }
        Label::Dhcp => {
            let (q, r) = (&cd[0], &sd[0]);
            assert_eq!((q[0], r[0]), (1, 2), "BOOTREQUEST / BOOTREPLY");
            for m in [q, r] {
                assert_eq!(m[236..240], [0x63, 0x82, 0x53, 0x63]);
                assert_eq!(m[240], 53);
            }
            assert!(
                matches!((q[242], r[242]), (1, 2) | (3, 5)),
                "DISCOVER/OFFER or REQUEST/ACK"
            );
            assert_eq!(f.server.port(), 67);
            assert!(matches!(f.client.port(), 67 | 68));
        }
        Label::Bittorrent => match f.proto {
            Protocol::Tcp => {
                assert!(cs.starts_with(b"\x13BitTorrent protocol"));
                assert!(sc.starts_with(b"\x13BitTorrent protocol"));
                assert_eq!(cs[28..48], sc[28..48], "same info hash");
            }
            Protocol::Udp => {
                assert!(cd[0].starts_with(b"d1:ad2:id20:") && cd[0].ends_with(b"1:y1:qe"));
                assert!(sd[0].starts_with(b"d1:rd2:id20:") && sd[0].ends_with(b"1:y1:re"));
            }
        },
        Label::Mqtt => {
            assert_eq!(cs[0], 0x10, "CONNECT");
            assert!(cs[4..].starts_with(b"MQTT") || cs[4..].starts_with(b"MQIsdp"));
            assert_eq!(cs[1] as usize + 2, cs.len().min(cs[1] as usize + 2));
            assert_eq!(sc[0], 0x20, "CONNACK");
        }
        Label::Redis => {
            assert!(cs.starts_with(b"*"), "RESP array");
            assert!(b"+-:$".contains(&sc[0]), "RESP reply");
        }
        Label::Postgresql => {
            let mut c = cs;
            if c[..8] == [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f] {
                assert_eq!(sc[0], b'N');
                c = &c[8..];
            }
            assert_eq!(c[4..8], [0, 3, 0, 0], "protocol 3.0");
            let len = u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize;
            assert_eq!(c[len - 1], 0);
            assert!(
                contains(sc, &[b'R', 0, 0, 0, 8, 0, 0, 0, 0]),
                "AuthenticationOk"
            );
        }
        Label::Mysql => {
            let len = usize::from(sc[0]) | usize::from(sc[1]) << 8;
            assert_eq!((sc[3], sc[4]), (0, 10), "greeting, protocol 10");
            assert!(sc.len() >= len + 4);
            assert_eq!(cs[3], 1, "login packet sequence 1");
        }
        Label::Unknown => {}
    }
}

#[test]
fn labelled_flows_open_as_their_protocol_and_details_match() {
    let t = trace();
    let truth = t.capture.truth();
    let msgs = messages(t);
    let mut per: BTreeMap<Label, usize> = BTreeMap::new();
    for f in t.flows.iter().filter(|f| f.label != Label::Unknown) {
        let ft = &truth[f.flow];
        let m = &msgs[&f.flow];
        check_flow(f, &ft.to_server.stream, &ft.to_client.stream, &m[0], &m[1]);
        *per.entry(f.label).or_default() += 1;
        let has_details = f.details != Default::default();
        assert_eq!(
            has_details,
            matches!(f.label, Label::Tls | Label::Ssh | Label::Dns | Label::Http),
            "{f:?}"
        );
    }
    assert_eq!(per.len(), Label::ALL.len() - 1);
    assert!(t
        .flows
        .iter()
        .any(|f| f.label == Label::Tls && f.details.sni.is_none()));
    assert!(t
        .flows
        .iter()
        .any(|f| f.label == Label::Tls && f.details.alpn_server.is_some()));
}

fn tshark() -> Option<PathBuf> {
    Command::new("tshark")
        .arg("-v")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("tshark"))
}

/// tshark's protocol name for a label.
fn dissector(f: &AppFlow) -> &'static str {
    match f.label {
        Label::Pop3 => "pop",
        Label::Smb => "smb2",
        Label::Redis => "resp",
        Label::Postgresql => "pgsql",
        Label::Bittorrent if f.proto == Protocol::Udp => "bt-dht",
        l => l.name(),
    }
}

#[test]
fn tshark_dissects_standard_port_flows_as_their_label() {
    let Some(tshark) = tshark() else {
        common::skip("tshark not installed: no tshark cross-check of the apps trace");
        return;
    };
    let t = trace();
    let dir = std::env::temp_dir().join(format!("streamcap-gen-apps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("apps.pcap");
    t.write_files(&pcap, None).unwrap();
    let out = Command::new(&tshark)
        .args([
            "-r",
            pcap.to_str().unwrap(),
            "-T",
            "fields",
            "-E",
            "separator=|",
        ])
        .args([
            "-e",
            "ip.src",
            "-e",
            "ipv6.src",
            "-e",
            "tcp.srcport",
            "-e",
            "udp.srcport",
        ])
        .args([
            "-e",
            "ip.dst",
            "-e",
            "ipv6.dst",
            "-e",
            "tcp.dstport",
            "-e",
            "udp.dstport",
        ])
        .args(["-e", "frame.protocols"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_client: HashMap<SocketAddr, &AppFlow> = t.flows.iter().map(|f| (f.client, f)).collect();
    let mut seen: HashMap<usize, BTreeSet<String>> = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Vec<&str> = line.split('|').collect();
        let ep = |ip4: &str, ip6: &str, tp: &str, up: &str| -> Option<SocketAddr> {
            let ip = if ip4.is_empty() {
                format!("[{ip6}]")
            } else {
                ip4.to_string()
            };
            format!("{ip}:{}", if tp.is_empty() { up } else { tp })
                .parse()
                .ok()
        };
        let src = ep(v[0], v[1], v[2], v[3]);
        let dst = ep(v[4], v[5], v[6], v[7]);
        let f = [src, dst]
            .into_iter()
            .flatten()
            .find_map(|a| by_client.get(&a));
        if let Some(f) = f {
            seen.entry(f.flow)
                .or_default()
                .extend(v[8].split(':').map(str::to_string));
        }
    }
    let mut checked = 0;
    for f in t.flows.iter().filter(|f| f.standard_port) {
        let protos = &seen[&f.flow];
        assert!(
            protos.contains(dissector(f)),
            "{f:?}: tshark saw {protos:?}"
        );
        assert!(
            !protos.contains("_ws.malformed"),
            "{f:?}: malformed for tshark"
        );
        checked += 1;
    }
    assert!(checked > 300, "{checked}");
    let _ = std::fs::remove_dir_all(&dir);
}
