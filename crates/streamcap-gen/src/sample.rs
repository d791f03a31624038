//! The small realistic mixed capture shipped as `samples/sample.pcap`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::capture::{Capture, Direction};
use crate::packet::{FragmentOrder, Vlan};
use crate::prng::SplitMix64;
use crate::tcp::{Close, ConflictPlacement, Handshake, Reorder, TcpConversation};
use crate::udp::UdpFlow;

/// Seed used by the `streamcap-gen sample` command when `--seed` is absent.
pub const SAMPLE_DEFAULT_SEED: u64 = 1;

/// Timestamp of the sample's time origin: 2024-05-01T12:00:00Z, in ns.
pub const SAMPLE_START_NS: u64 = 1_714_564_800_000_000_000;

const TO_S: Direction = Direction::ToServer;
const TO_C: Direction = Direction::ToClient;

pub(crate) const WORDS: &[&str] = &[
    "stream",
    "packet",
    "capture",
    "network",
    "flow",
    "segment",
    "window",
    "latency",
    "campus",
    "router",
    "switch",
    "gateway",
    "protocol",
    "session",
    "buffer",
    "reassembly",
    "offset",
    "sequence",
    "payload",
    "header",
    "checksum",
    "traffic",
    "analysis",
    "monitor",
    "link",
    "frame",
    "address",
    "server",
    "client",
    "request",
    "response",
    "content",
    "archive",
    "report",
    "library",
    "student",
    "research",
    "lecture",
    "schedule",
    "project",
    "update",
    "release",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "for",
    "with",
    "on",
    "is",
    "by",
    "from",
    "that",
];

/// Builds the sample capture: about 40 flows (TCP and UDP, IPv4 and IPv6)
/// spread over 30 seconds starting at [`SAMPLE_START_NS`].
///
/// Contents: HTTP/1.1 keep-alive GETs, TLS 1.3 handshakes (ClientHello with
/// SNI, ServerHello), SSH banner and key exchange, SMTP dialogs, NTP and DNS
/// over UDP (real wire formats), an IPv6 HTTP flow, a VLAN-tagged and a
/// QinQ-tagged flow, and one flow each with reordering, a lost segment, a
/// conflicting overlapping retransmission, a fragmented UDP datagram, an
/// RST close, a connection left open and one picked up mid-stream (no
/// handshake). Flow labels in the truth name
/// these scenarios.
///
/// Guarantee: the same seed always yields byte-identical pcap and truth.
pub fn sample(seed: u64) -> Capture {
    let mut g = Gen::new(seed);
    let mut cap = Capture::new();

    // Plain HTTP/1.1 keep-alive conversations.
    let web = [
        ("203.0.113.10", "www.example.com"),
        ("203.0.113.20", "api.example.net"),
        ("198.51.100.7", "static.example.org"),
        ("203.0.113.10", "www.example.com"),
        ("198.51.100.80", "news.example.edu"),
        ("203.0.113.20", "api.example.net"),
        ("198.51.100.7", "static.example.org"),
        ("198.51.100.80", "news.example.edu"),
        ("203.0.113.10", "www.example.com"),
    ];
    for (ip, host) in web {
        let server = SocketAddr::new(ip.parse().unwrap(), 80);
        let n = g.rng.range(1, 3) as usize;
        let conv = g.http(server, host, n, 300, 6000).label("http");
        cap.add(&conv);
    }

    // A connection already open when the capture started (no handshake).
    let server = SocketAddr::new("203.0.113.10".parse().unwrap(), 80);
    let conv = g
        .http(server, "www.example.com", 2, 500, 3000)
        .handshake(Handshake::None)
        .label("http-midstream");
    cap.add(&conv);

    // TLS 1.3 handshakes with SNI.
    for (ip, sni) in [
        ("203.0.113.30", "mail.example.com"),
        ("198.51.100.44", "login.example.org"),
        ("203.0.113.31", "cdn.example.net"),
        ("198.51.100.45", "updates.example.edu"),
    ] {
        let conv = g.tls(SocketAddr::new(ip.parse().unwrap(), 443), sni);
        cap.add(&conv);
    }

    // SSH: one closed normally, one left open.
    let ssh_server = SocketAddr::new("198.51.100.22".parse().unwrap(), 22);
    let conv = g.ssh(ssh_server).label("ssh");
    cap.add(&conv);
    let conv = g.ssh(ssh_server).close(Close::None).label("ssh-open");
    cap.add(&conv);

    // SMTP.
    for _ in 0..2 {
        let conv = g.smtp(SocketAddr::new("203.0.113.25".parse().unwrap(), 25));
        cap.add(&conv);
    }

    // DNS over UDP.
    let names: [(&str, u16); 13] = [
        ("www.example.com", 1),
        ("www.example.com", 28),
        ("api.example.net", 1),
        ("static.example.org", 1),
        ("mail.example.com", 1),
        ("login.example.org", 28),
        ("cdn.example.net", 1),
        ("news.example.edu", 1),
        ("updates.example.edu", 1),
        ("time.example.com", 1),
        ("img.example.net", 28),
        ("smtp.example.com", 1),
        ("ssh.example.org", 1),
    ];
    for (name, qtype) in names {
        let flow = g.dns(name, qtype);
        cap.add(&flow);
    }

    // NTP.
    let flow = g.ntp();
    cap.add(&flow);

    // IPv6 HTTP.
    let server: SocketAddr = "[2001:db8:80::1]:80".parse().unwrap();
    let client = SocketAddr::new("2001:db8:1::10".parse().unwrap(), g.port());
    let conv = g
        .http_between(client, server, "www6.example.com", 2, 500, 4000)
        .mss(1440)
        .label("http-ipv6");
    cap.add(&conv);

    // VLAN and QinQ tagged HTTP.
    let server = SocketAddr::new("10.20.0.5".parse().unwrap(), 80);
    let conv = g
        .http(server, "intranet.example.edu", 1, 800, 3000)
        .vlan(Vlan::Single(100))
        .label("http-vlan");
    cap.add(&conv);
    let conv = g
        .http(server, "intranet.example.edu", 1, 800, 3000)
        .vlan(Vlan::Double {
            outer: 300,
            inner: 42,
        })
        .label("http-qinq");
    cap.add(&conv);

    // Reordering.
    let server = SocketAddr::new("198.51.100.7".parse().unwrap(), 80);
    let conv = g
        .http(server, "static.example.org", 1, 14000, 16000)
        .reorder(Reorder::Window(4))
        .label("http-reorder");
    cap.add(&conv);

    // A lost segment: the third server segment never reaches the capture.
    let conv = g
        .http(server, "static.example.org", 1, 9000, 11000)
        .label("http-loss");
    let lost = conv
        .data_segments()
        .into_iter()
        .filter(|s| s.dir == TO_C)
        .nth(2)
        .unwrap()
        .index;
    cap.add(&conv.drop_segment(lost));

    // A conflicting retransmission overlapping two server segments.
    let conv = g
        .http(server, "static.example.org", 1, 7000, 9000)
        .label("http-conflict");
    let seg = conv
        .data_segments()
        .into_iter()
        .filter(|s| s.dir == TO_C)
        .nth(2)
        .unwrap();
    let offset = seg.range.start + 700;
    let bytes = g.text(1000).into_bytes();
    cap.add(&conv.conflict(TO_C, offset, bytes, ConflictPlacement::After));

    // A fragmented UDP datagram (large DNS TXT answer with EDNS).
    let flow = g.dns_big();
    cap.add(&flow);

    // RST close.
    let conv = g
        .http(
            SocketAddr::new("203.0.113.20".parse().unwrap(), 80),
            "api.example.net",
            1,
            400,
            1200,
        )
        .close(Close::Rst { from: TO_S })
        .label("http-rst");
    cap.add(&conv);

    cap
}

struct Gen {
    rng: SplitMix64,
    next_port: u16,
    last_start: u64,
}

impl Gen {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let next_port = 49152 + rng.below(2000) as u16;
        Self {
            rng,
            next_port,
            last_start: SAMPLE_START_NS,
        }
    }

    fn port(&mut self) -> u16 {
        let p = self.next_port;
        self.next_port += 1 + self.rng.below(9) as u16;
        p
    }

    fn client(&mut self) -> SocketAddr {
        let host = self.rng.range(10, 60) as u8;
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 168, 1, host)), self.port())
    }

    /// Start time within 30 s of the origin and a per-flow packet spacing.
    fn timing(&mut self) -> (u64, u64) {
        let start = SAMPLE_START_NS + self.rng.below(30_000_000_000);
        let step = self.rng.range(200_000, 4_000_000);
        (start, step)
    }

    fn tcp(&mut self, client: SocketAddr, server: SocketAddr) -> TcpConversation {
        let (start, step) = self.timing();
        self.last_start = start;
        let seed = self.rng.next_u64();
        TcpConversation::new(client, server)
            .seed(seed)
            .timing(start, step)
    }

    fn udp(&mut self, client: SocketAddr, server: SocketAddr) -> UdpFlow {
        let (start, step) = self.timing();
        self.last_start = start;
        let seed = self.rng.next_u64();
        UdpFlow::new(client, server).seed(seed).timing(start, step)
    }

    fn date(&self, start_ns: u64) -> String {
        let s = (start_ns - SAMPLE_START_NS) / 1_000_000_000;
        format!("Wed, 01 May 2024 12:{:02}:{:02} GMT", s / 60, s % 60)
    }

    fn words(&mut self, n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            let w: &str = self.rng.pick::<&str>(WORDS);
            s.push_str(w);
        }
        s
    }

    fn text(&mut self, len: usize) -> String {
        let mut s = String::new();
        while s.len() < len {
            let n = self.rng.range(4, 12) as usize;
            s.push_str(&self.words(n));
            s.push_str(". ");
        }
        s.truncate(len);
        s
    }

    fn body(&mut self, kind: &str, target: usize) -> Vec<u8> {
        let mut s = String::new();
        match kind {
            "html" => {
                let title = self.words(3);
                s.push_str(&format!(
                    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
                     <title>{title}</title>\n<link rel=\"stylesheet\" href=\"/css/site.css\">\n\
                     </head>\n<body>\n<h1>{title}</h1>\n"
                ));
                while s.len() + 20 < target {
                    let n = self.rng.range(15, 60) as usize;
                    s.push_str(&format!("<p>{}.</p>\n", self.words(n)));
                }
                s.push_str("</body>\n</html>\n");
            }
            "json" => {
                s.push_str("{\"items\":[");
                let mut i = 0;
                while s.len() + 80 < target {
                    if i > 0 {
                        s.push(',');
                    }
                    let id = self.rng.range(1000, 99999);
                    let n = self.rng.range(2, 6) as usize;
                    s.push_str(&format!(
                        "{{\"id\":{id},\"name\":\"{}\",\"score\":{}}}",
                        self.words(n),
                        self.rng.below(100)
                    ));
                    i += 1;
                }
                s.push_str(&format!("],\"count\":{i}}}\n"));
            }
            _ => {
                while s.len() + 10 < target {
                    let sel = self.words(1);
                    let px = self.rng.range(0, 40);
                    s.push_str(&format!(
                        ".{sel}-{} {{ margin: {px}px; color: #{:06x}; }}\n",
                        self.rng.below(100),
                        self.rng.below(0x100_0000)
                    ));
                }
            }
        }
        s.into_bytes()
    }

    fn http(
        &mut self,
        server: SocketAddr,
        host: &str,
        requests: usize,
        min_body: usize,
        max_body: usize,
    ) -> TcpConversation {
        let client = self.client();
        self.http_between(client, server, host, requests, min_body, max_body)
    }

    fn http_between(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        host: &str,
        requests: usize,
        min_body: usize,
        max_body: usize,
    ) -> TcpConversation {
        let mut conv = self.tcp(client, server);
        let paths = [
            ("/", "html"),
            ("/index.html", "html"),
            ("/news/2024/05/campus-network.html", "html"),
            ("/api/v1/items?page=2", "json"),
            ("/api/v1/status", "json"),
            ("/css/site.css", "css"),
        ];
        let start = self.last_start;
        for i in 0..requests {
            let (path, kind) = *self.rng.pick(&paths);
            let last = i + 1 == requests;
            let conn = if last { "close" } else { "keep-alive" };
            let req = format!(
                "GET {path} HTTP/1.1\r\nHost: {host}\r\n\
                 User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0\r\n\
                 Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
                 Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: identity\r\n\
                 Connection: {conn}\r\n\r\n"
            );
            let size = self.rng.range(min_body as u64, max_body as u64) as usize;
            let body = self.body(kind, size);
            let ctype = match kind {
                "html" => "text/html; charset=utf-8",
                "json" => "application/json",
                _ => "text/css",
            };
            let etag = self.rng.next_u64();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: {}\r\n\
                 Content-Type: {ctype}\r\nContent-Length: {}\r\nConnection: {conn}\r\n\
                 Cache-Control: max-age=3600\r\nETag: \"{etag:016x}\"\r\n\r\n",
                self.date(start),
                body.len()
            );
            let mut resp = resp.into_bytes();
            resp.extend_from_slice(&body);
            conv = conv.send(TO_S, req).send(TO_C, resp);
        }
        conv
    }

    fn tls(&mut self, server: SocketAddr, sni: &str) -> TcpConversation {
        let client = self.client();
        let conv = self.tcp(client, server).label("tls");
        let session_id = self.rng.bytes(32);
        let ch = tls_client_hello(&mut self.rng, sni, &session_id);
        let mut sh = tls_server_hello(&mut self.rng, &session_id);
        sh.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
        let n = self.rng.range(2500, 4500) as usize;
        sh.extend(tls_app_data(&mut self.rng, n));
        let mut fin = vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01];
        fin.extend(tls_app_data(&mut self.rng, 53));
        let n = self.rng.range(200, 600) as usize;
        fin.extend(tls_app_data(&mut self.rng, n));
        let n = self.rng.range(1000, 6000) as usize;
        let resp = tls_app_data(&mut self.rng, n);
        conv.send(TO_S, ch)
            .send(TO_C, sh)
            .send(TO_S, fin)
            .send(TO_C, resp)
    }

    fn ssh(&mut self, server: SocketAddr) -> TcpConversation {
        let client = self.client();
        let conv = self.tcp(client, server);
        let c_kex = ssh_kexinit(&mut self.rng, true);
        let s_kex = ssh_kexinit(&mut self.rng, false);
        let mut ecdh = vec![30u8, 0, 0, 0, 32];
        ecdh.extend(self.rng.bytes(32));
        let ecdh = ssh_packet(&mut self.rng, &ecdh);
        // KEX_ECDH_REPLY: host key blob, server ephemeral key, signature.
        let mut host_key = Vec::new();
        ssh_string(&mut host_key, b"ssh-ed25519");
        ssh_string(&mut host_key, &self.rng.bytes(32));
        let mut sig = Vec::new();
        ssh_string(&mut sig, b"ssh-ed25519");
        ssh_string(&mut sig, &self.rng.bytes(64));
        let mut reply = vec![31u8];
        ssh_string(&mut reply, &host_key);
        ssh_string(&mut reply, &self.rng.bytes(32));
        ssh_string(&mut reply, &sig);
        let mut reply = ssh_packet(&mut self.rng, &reply);
        reply.extend(ssh_packet(&mut self.rng, &[21]));
        let mut c_newkeys = ssh_packet(&mut self.rng, &[21]);
        c_newkeys.extend(self.rng.bytes(68));
        let n = self.rng.range(300, 900) as usize;
        let s_enc = self.rng.bytes(n);
        conv.send(TO_S, b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n".to_vec())
            .send(TO_C, b"SSH-2.0-OpenSSH_8.9p1 Debian-3\r\n".to_vec())
            .send(TO_S, c_kex)
            .send(TO_C, s_kex)
            .send(TO_S, ecdh)
            .send(TO_C, reply)
            .send(TO_S, c_newkeys)
            .send(TO_C, s_enc)
    }

    fn smtp(&mut self, server: SocketAddr) -> TcpConversation {
        let client = self.client();
        let conv = self
            .tcp(client, server)
            .label("smtp")
            .close(Close::Fin { first: TO_C });
        let qid = self.rng.next_u64() & 0xff_ffff_ffff;
        let subject = self.words(4);
        let len = self.rng.range(300, 1500) as usize;
        let body = self.text(len);
        let msg = format!(
            "From: Alice <alice@example.org>\r\nTo: Bob <bob@example.com>\r\n\
             Subject: {subject}\r\nDate: Wed, 01 May 2024 12:00:10 +0000\r\n\
             Message-ID: <{qid:x}@example.org>\r\nMIME-Version: 1.0\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n.\r\n"
        );
        conv.send(TO_C, "220 mail.example.com ESMTP Postfix (Ubuntu)\r\n")
            .send(TO_S, "EHLO client.example.org\r\n")
            .send(
                TO_C,
                "250-mail.example.com\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-8BITMIME\r\n\
                 250-ENHANCEDSTATUSCODES\r\n250 SMTPUTF8\r\n",
            )
            .send(TO_S, "MAIL FROM:<alice@example.org>\r\n")
            .send(TO_C, "250 2.1.0 Ok\r\n")
            .send(TO_S, "RCPT TO:<bob@example.com>\r\n")
            .send(TO_C, "250 2.1.5 Ok\r\n")
            .send(TO_S, "DATA\r\n")
            .send(TO_C, "354 End data with <CR><LF>.<CR><LF>\r\n")
            .send(TO_S, msg)
            .send(TO_C, format!("250 2.0.0 Ok: queued as {qid:010X}\r\n"))
            .send(TO_S, "QUIT\r\n")
            .send(TO_C, "221 2.0.0 Bye\r\n")
    }

    fn dns(&mut self, name: &str, qtype: u16) -> UdpFlow {
        let client = self.client();
        let server = SocketAddr::new("192.168.1.1".parse().unwrap(), 53);
        let id = self.rng.next_u32() as u16;
        let q = dns_query(id, name, qtype, false);
        let mut answers = Vec::new();
        let count = self.rng.range(1, 3);
        for _ in 0..count {
            let rdata = if qtype == 28 {
                let mut a = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0];
                a.extend(self.rng.bytes(2));
                a
            } else {
                vec![203, 0, 113, self.rng.range(1, 254) as u8]
            };
            answers.push((qtype, 300 + self.rng.below(3300) as u32, rdata));
        }
        let r = dns_response(id, name, qtype, &answers, false);
        self.udp(client, server)
            .label("dns")
            .datagram(TO_S, q)
            .datagram(TO_C, r)
    }

    fn dns_big(&mut self) -> UdpFlow {
        let client = self.client();
        let server = SocketAddr::new("192.168.1.1".parse().unwrap(), 53);
        let id = self.rng.next_u32() as u16;
        let name = "keys.example.org";
        let q = dns_query(id, name, 16, true);
        let mut answers = Vec::new();
        for _ in 0..12 {
            let mut txt = b"v=key1; k=rsa; p=".to_vec();
            let n = 200 + self.rng.below(30) as usize;
            while txt.len() < n {
                let c = self.rng.below(62) as u8;
                txt.push(match c {
                    0..=25 => b'A' + c,
                    26..=51 => b'a' + c - 26,
                    _ => b'0' + c - 52,
                });
            }
            let mut rdata = vec![txt.len() as u8];
            rdata.extend(txt);
            answers.push((16, 3600, rdata));
        }
        let r = dns_response(id, name, 16, &answers, true);
        self.udp(client, server)
            .label("dns-fragmented")
            .datagram(TO_S, q)
            .datagram(TO_C, r)
            .fragment_datagram(1, 2, FragmentOrder::InOrder)
    }

    fn ntp(&mut self) -> UdpFlow {
        let client = SocketAddr::new("192.168.1.5".parse().unwrap(), 123);
        let server = SocketAddr::new("198.51.100.123".parse().unwrap(), 123);
        // NTP era-0 seconds for 2024-05-01T12:00:00Z.
        let secs: u32 = 3_923_640_000;
        let mut req = vec![0u8; 48];
        req[0] = 0x23; // LI 0, VN 4, mode 3 (client)
        req[2] = 6;
        req[3] = 0xe9;
        req[40..44].copy_from_slice(&(secs + 5).to_be_bytes());
        let frac = self.rng.next_u32();
        req[44..48].copy_from_slice(&frac.to_be_bytes());
        let mut resp = vec![0u8; 48];
        resp[0] = 0x24; // mode 4 (server)
        resp[1] = 2;
        resp[2] = 6;
        resp[3] = 0xe7;
        resp[12..16].copy_from_slice(&[198, 51, 100, 1]);
        resp[16..20].copy_from_slice(&(secs - 60).to_be_bytes());
        resp[24..32].copy_from_slice(&req[40..48]);
        resp[32..36].copy_from_slice(&(secs + 5).to_be_bytes());
        resp[36..40].copy_from_slice(&frac.wrapping_add(0x0100_0000).to_be_bytes());
        resp[40..44].copy_from_slice(&(secs + 5).to_be_bytes());
        resp[44..48].copy_from_slice(&frac.wrapping_add(0x0101_0000).to_be_bytes());
        self.udp(client, server)
            .label("ntp")
            .datagram(TO_S, req)
            .datagram(TO_C, resp)
    }
}

pub(crate) fn u16be(v: usize) -> [u8; 2] {
    (v as u16).to_be_bytes()
}

pub(crate) fn tls_ext(out: &mut Vec<u8>, ty: u16, data: &[u8]) {
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&u16be(data.len()));
    out.extend_from_slice(data);
}

pub(crate) fn tls_record(ty: u8, legacy: [u8; 2], handshake_type: u8, body: &[u8]) -> Vec<u8> {
    let mut hs = vec![handshake_type];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(body);
    let mut rec = vec![ty, legacy[0], legacy[1]];
    rec.extend_from_slice(&u16be(hs.len()));
    rec.extend(hs);
    rec
}

/// A TLS 1.3 ClientHello record with an SNI extension.
pub(crate) fn tls_client_hello(rng: &mut SplitMix64, sni: &str, session_id: &[u8]) -> Vec<u8> {
    let mut b = vec![0x03, 0x03];
    b.extend(rng.bytes(32));
    b.push(session_id.len() as u8);
    b.extend_from_slice(session_id);
    let suites: [u16; 9] = [
        0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030,
    ];
    b.extend_from_slice(&u16be(suites.len() * 2));
    for s in suites {
        b.extend_from_slice(&s.to_be_bytes());
    }
    b.extend_from_slice(&[1, 0]);
    let mut ext = Vec::new();
    let mut sn = Vec::new();
    sn.extend_from_slice(&u16be(sni.len() + 3));
    sn.push(0);
    sn.extend_from_slice(&u16be(sni.len()));
    sn.extend_from_slice(sni.as_bytes());
    tls_ext(&mut ext, 0x0000, &sn);
    tls_ext(&mut ext, 0x0017, &[]);
    tls_ext(&mut ext, 0xff01, &[0]);
    tls_ext(
        &mut ext,
        0x000a,
        &[0, 8, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18, 0x00, 0x19],
    );
    tls_ext(&mut ext, 0x000b, &[1, 0]);
    tls_ext(
        &mut ext,
        0x0010,
        &[
            0, 12, 2, b'h', b'2', 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1',
        ],
    );
    tls_ext(
        &mut ext,
        0x000d,
        &[
            0, 16, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04,
            0x01, 0x05, 0x01,
        ],
    );
    let mut ks = vec![0, 36, 0x00, 0x1d, 0, 32];
    ks.extend(rng.bytes(32));
    tls_ext(&mut ext, 0x0033, &ks);
    tls_ext(&mut ext, 0x002b, &[4, 0x03, 0x04, 0x03, 0x03]);
    tls_ext(&mut ext, 0x002d, &[1, 1]);
    b.extend_from_slice(&u16be(ext.len()));
    b.extend(ext);
    tls_record(0x16, [0x03, 0x01], 1, &b)
}

/// A TLS 1.3 ServerHello record (TLS_AES_128_GCM_SHA256, x25519).
pub(crate) fn tls_server_hello(rng: &mut SplitMix64, session_id: &[u8]) -> Vec<u8> {
    let mut b = vec![0x03, 0x03];
    b.extend(rng.bytes(32));
    b.push(session_id.len() as u8);
    b.extend_from_slice(session_id);
    b.extend_from_slice(&[0x13, 0x01, 0]);
    let mut ext = Vec::new();
    tls_ext(&mut ext, 0x002b, &[0x03, 0x04]);
    let mut ks = vec![0x00, 0x1d, 0, 32];
    ks.extend(rng.bytes(32));
    tls_ext(&mut ext, 0x0033, &ks);
    b.extend_from_slice(&u16be(ext.len()));
    b.extend(ext);
    tls_record(0x16, [0x03, 0x03], 2, &b)
}

/// TLS application-data records carrying `n` opaque bytes in total.
pub(crate) fn tls_app_data(rng: &mut SplitMix64, mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while n > 0 {
        let len = n.min(16384);
        out.extend_from_slice(&[0x17, 0x03, 0x03]);
        out.extend_from_slice(&u16be(len));
        out.extend(rng.bytes(len));
        n -= len;
    }
    out
}

pub(crate) fn ssh_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}

/// An SSH binary packet (unencrypted) with random padding.
pub(crate) fn ssh_packet(rng: &mut SplitMix64, payload: &[u8]) -> Vec<u8> {
    let mut pad = 8 - (5 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
    out.push(pad as u8);
    out.extend_from_slice(payload);
    out.extend(rng.bytes(pad));
    out
}

pub(crate) fn ssh_kexinit(rng: &mut SplitMix64, client: bool) -> Vec<u8> {
    let mut p = vec![20u8];
    p.extend(rng.bytes(16));
    let kex = if client {
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,diffie-hellman-group14-sha256,ext-info-c"
    } else {
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,kex-strict-s-v00@openssh.com"
    };
    let lists = [
        kex,
        "ssh-ed25519,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256",
        "none,zlib@openssh.com",
        "none,zlib@openssh.com",
        "",
        "",
    ];
    for l in lists {
        p.extend_from_slice(&(l.len() as u32).to_be_bytes());
        p.extend_from_slice(l.as_bytes());
    }
    p.extend_from_slice(&[0, 0, 0, 0, 0]);
    ssh_packet(rng, &p)
}

pub(crate) fn dns_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

/// A DNS query in wire format (RD set), optionally with an EDNS0 OPT record.
pub(crate) fn dns_query(id: u16, name: &str, qtype: u16, edns: bool) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    dns_name(&mut m, name);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    if edns {
        m.extend_from_slice(&[0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0]);
    }
    m
}

/// A DNS response: the question, then answers using a name pointer to it.
pub(crate) fn dns_response(
    id: u16,
    name: &str,
    qtype: u16,
    answers: &[(u16, u32, Vec<u8>)],
    edns: bool,
) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x81, 0x80, 0, 1]);
    m.extend_from_slice(&(answers.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, u8::from(edns)]);
    dns_name(&mut m, name);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    for (ty, ttl, rdata) in answers {
        m.extend_from_slice(&[0xc0, 0x0c]);
        m.extend_from_slice(&ty.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&u16be(rdata.len()));
        m.extend_from_slice(rdata);
    }
    if edns {
        m.extend_from_slice(&[0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0]);
    }
    m
}
