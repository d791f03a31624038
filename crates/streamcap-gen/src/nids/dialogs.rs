//! The messages of each application (HTTP, SMTP, FTP, TLS, SSH, DNS and
//! opaque TCP/UDP protocols), with the signatures they are given planted
//! where their carriers lie. Filler never contains the marker: text comes
//! from a word list, random bytes never hold an `s`.

use crate::capture::Direction;
use crate::prng::SplitMix64;
use crate::sample::{
    dns_query, dns_response, ssh_kexinit, ssh_packet, ssh_string, tls_app_data, tls_client_hello,
    tls_server_hello, WORDS,
};

use super::apps::{Mark, Msg};
use super::signature::{Carrier, Signature};

const TO_S: Direction = Direction::ToServer;
const TO_C: Direction = Direction::ToClient;

fn words(rng: &mut SplitMix64, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick::<&str>(WORDS));
    }
    s
}

/// `len` bytes of sentences, wrapped at about 72 columns with CRLF.
fn text(rng: &mut SplitMix64, len: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut col = 0;
    while s.len() < len {
        let n = rng.range(4, 12) as usize;
        let sentence = format!("{}. ", words(rng, n));
        col += sentence.len();
        s.push_str(&sentence);
        if col > 72 {
            s.push_str("\r\n");
            col = 0;
        }
    }
    s.truncate(len);
    s.into_bytes()
}

/// `len` random bytes without `s` (so never the marker).
fn binary(rng: &mut SplitMix64, len: usize) -> Vec<u8> {
    let mut b = rng.bytes(len);
    for x in &mut b {
        if *x == b's' {
            *x = b'S';
        }
    }
    b
}

fn of(sigs: &[&Signature], c: Carrier) -> Vec<Signature> {
    sigs.iter()
        .filter(|s| s.carrier == c)
        .map(|s| (*s).clone())
        .collect()
}

#[derive(Default)]
struct Request {
    uri: Option<Signature>,
    header: Option<Signature>,
    body: Option<Signature>,
    response: Option<Signature>,
}

pub(super) fn http(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let mut reqs: Vec<Request> = (0..rng.range(1, 3)).map(|_| Request::default()).collect();
    for s in sigs {
        let start = rng.below(reqs.len() as u64) as usize;
        let n = reqs.len();
        let free = (0..n).map(|k| (start + k) % n).find(|&k| {
            let r = &reqs[k];
            match s.carrier {
                Carrier::HttpUri => r.uri.is_none(),
                Carrier::HttpHeader => r.header.is_none(),
                Carrier::HttpRequestBody => r.body.is_none(),
                _ => r.response.is_none(),
            }
        });
        let k = free.unwrap_or_else(|| {
            reqs.push(Request::default());
            reqs.len() - 1
        });
        let slot = match s.carrier {
            Carrier::HttpUri => &mut reqs[k].uri,
            Carrier::HttpHeader => &mut reqs[k].header,
            Carrier::HttpRequestBody => &mut reqs[k].body,
            _ => &mut reqs[k].response,
        };
        *slot = Some((*s).clone());
    }
    let host = format!("www.{}.example.com", words(rng, 1));
    let n = reqs.len();
    let mut msgs = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let conn = if i + 1 == n { "close" } else { "keep-alive" };
        let post = r.body.is_some() || rng.chance(1, 5);
        let method = if post { "POST" } else { "GET" };
        let mut req = format!("{method} /files/").into_bytes();
        let mut marks = Vec::new();
        match &r.uri {
            Some(s) => {
                marks.push(Mark {
                    sig: s.index,
                    at: req.len(),
                });
                req.extend_from_slice(&s.bytes);
            }
            None => req.extend_from_slice(
                format!("{}-{}.html", words(rng, 1), rng.below(1000)).as_bytes(),
            ),
        }
        req.extend_from_slice(
            format!(
                " HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; \
                 rv:125.0) Gecko/20100101 Firefox/125.0\r\nAccept: */*\r\n\
                 Accept-Language: en-US,en;q=0.5\r\nX-Client-Tag: "
            )
            .as_bytes(),
        );
        match &r.header {
            Some(s) => {
                marks.push(Mark {
                    sig: s.index,
                    at: req.len(),
                });
                req.extend_from_slice(&s.bytes);
            }
            None => req.extend_from_slice(format!("{:016x}", rng.next_u64()).as_bytes()),
        }
        req.extend_from_slice(b"\r\n");
        let mut req = if post {
            let len = rng.range(120, 2500) as usize;
            let filler = binary(rng, len);
            let body_sigs: Vec<&Signature> = r.body.iter().collect();
            let body_len = len + body_sigs.iter().map(|s| s.bytes.len()).sum::<usize>();
            req.extend_from_slice(
                format!(
                    "Content-Type: application/octet-stream\r\nContent-Length: {body_len}\r\n\
                     Connection: {conn}\r\n\r\n"
                )
                .as_bytes(),
            );
            Msg::with(TO_S, &req, filler, b"", &body_sigs, rng)
        } else {
            req.extend_from_slice(format!("Connection: {conn}\r\n\r\n").as_bytes());
            Msg::new(TO_S, req)
        };
        marks.extend(req.marks);
        marks.sort_by_key(|m| m.at);
        req.marks = marks;
        msgs.push(req);

        let binary_body = r
            .response
            .as_ref()
            .is_some_and(|s| s.bytes.iter().any(|b| !b.is_ascii_graphic() && *b != b' '))
            || rng.chance(1, 4);
        let len = rng.range(200, 12_000) as usize;
        let (filler, ctype) = if binary_body {
            (binary(rng, len), "application/octet-stream")
        } else {
            (text(rng, len), "text/html; charset=utf-8")
        };
        let body_sigs: Vec<&Signature> = r.response.iter().collect();
        let body_len = len + body_sigs.iter().map(|s| s.bytes.len()).sum::<usize>();
        let head = format!(
            "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nContent-Type: {ctype}\r\n\
             Content-Length: {body_len}\r\nConnection: {conn}\r\n\r\n"
        );
        msgs.push(Msg::with(
            TO_C,
            head.as_bytes(),
            filler,
            b"",
            &body_sigs,
            rng,
        ));
    }
    msgs
}

pub(super) fn smtp(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let body = of(sigs, Carrier::SmtpBody);
    let body: Vec<&Signature> = body.iter().collect();
    let host = format!("mail.{}.example.org", words(rng, 1));
    let qid = rng.next_u64() & 0xff_ffff_ffff;
    let head = format!(
        "From: Alice <alice@example.org>\r\nTo: Bob <bob@{host}>\r\nSubject: {}\r\n\
         Message-ID: <{qid:x}@example.org>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n",
        words(rng, 4)
    );
    let len = rng.range(300, 6000) as usize;
    let filler = text(rng, len);
    vec![
        Msg::new(TO_C, format!("220 {host} ESMTP Postfix (Ubuntu)\r\n")),
        Msg::new(TO_S, "EHLO client.example.org\r\n"),
        Msg::new(
            TO_C,
            format!("250-{host}\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250 8BITMIME\r\n"),
        ),
        Msg::new(TO_S, "MAIL FROM:<alice@example.org>\r\n"),
        Msg::new(TO_C, "250 2.1.0 Ok\r\n"),
        Msg::new(TO_S, format!("RCPT TO:<bob@{host}>\r\n")),
        Msg::new(TO_C, "250 2.1.5 Ok\r\n"),
        Msg::new(TO_S, "DATA\r\n"),
        Msg::new(TO_C, "354 End data with <CR><LF>.<CR><LF>\r\n"),
        Msg::with(TO_S, head.as_bytes(), filler, b"\r\n.\r\n", &body, rng),
        Msg::new(TO_C, format!("250 2.0.0 Ok: queued as {qid:010X}\r\n")),
        Msg::new(TO_S, "QUIT\r\n"),
        Msg::new(TO_C, "221 2.0.0 Bye\r\n"),
    ]
}

pub(super) fn ftp(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let mut files: Vec<Option<&Signature>> = sigs.iter().map(|s| Some(*s)).collect();
    if files.is_empty() || rng.chance(1, 3) {
        files.insert(rng.below(files.len() as u64 + 1) as usize, None);
    }
    let mut msgs = vec![
        Msg::new(TO_C, "220 ProFTPD Server ready.\r\n"),
        Msg::new(TO_S, "USER anonymous\r\n"),
        Msg::new(
            TO_C,
            "331 Anonymous login ok, send your email as password\r\n",
        ),
        Msg::new(TO_S, "PASS guest@example.org\r\n"),
        Msg::new(TO_C, "230 Anonymous access granted\r\n"),
        Msg::new(TO_S, "TYPE I\r\n"),
        Msg::new(TO_C, "200 Type set to I\r\n"),
    ];
    for f in files {
        let p = 50_000 + rng.below(1000);
        msgs.push(Msg::new(TO_S, "PASV\r\n"));
        msgs.push(Msg::new(
            TO_C,
            format!(
                "227 Entering Passive Mode (198,18,0,1,{},{}).\r\n",
                p >> 8,
                p & 255
            ),
        ));
        let mut cmd = b"RETR ".to_vec();
        match f {
            Some(s) => cmd.extend_from_slice(&s.bytes),
            None => cmd.extend_from_slice(
                format!("/pub/{}-{}.tar.gz", words(rng, 1), rng.below(1000)).as_bytes(),
            ),
        }
        cmd.extend_from_slice(b"\r\n");
        msgs.push(Msg::new(TO_S, cmd).mark_found(f));
        let size = rng.range(1000, 9_000_000);
        msgs.push(Msg::new(
            TO_C,
            format!("150 Opening BINARY mode data connection ({size} bytes)\r\n"),
        ));
        msgs.push(Msg::new(TO_C, "226 Transfer complete\r\n"));
    }
    msgs.push(Msg::new(TO_S, "QUIT\r\n"));
    msgs.push(Msg::new(TO_C, "221 Goodbye.\r\n"));
    msgs
}

pub(super) fn tls(sig: Option<&Signature>, rng: &mut SplitMix64) -> Vec<Msg> {
    let sni = match sig {
        Some(s) => String::from_utf8_lossy(&s.bytes).into_owned(),
        None => format!("{}.example.net", words(rng, 1)),
    };
    let sid = rng.bytes(32);
    let ch = tls_client_hello(rng, &sni, &sid);
    let mut sh = tls_server_hello(rng, &sid);
    sh.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
    let n = rng.range(2500, 4500) as usize;
    sh.extend(tls_app_data(rng, n));
    let mut fin = vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01];
    fin.extend(tls_app_data(rng, 53));
    let n = rng.range(1000, 8000) as usize;
    vec![
        Msg::new(TO_S, ch).mark_found(sig),
        Msg::new(TO_C, sh),
        Msg::new(TO_S, fin),
        Msg::new(TO_C, tls_app_data(rng, n)),
    ]
}

pub(super) fn ssh(rng: &mut SplitMix64) -> Vec<Msg> {
    let mut ecdh = vec![30u8, 0, 0, 0, 32];
    ecdh.extend(rng.bytes(32));
    // KEX_ECDH_REPLY: host key blob, server ephemeral key, signature.
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
    let mut msgs = vec![
        Msg::new(TO_S, &b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"[..]),
        Msg::new(TO_C, &b"SSH-2.0-OpenSSH_8.9p1 Debian-3\r\n"[..]),
        Msg::new(TO_S, ssh_kexinit(rng, true)),
        Msg::new(TO_C, ssh_kexinit(rng, false)),
        Msg::new(TO_S, ssh_packet(rng, &ecdh)),
        Msg::new(TO_C, reply),
        Msg::new(TO_S, ssh_packet(rng, &[21])),
    ];
    for _ in 0..rng.range(1, 4) {
        let (a, b) = (rng.range(36, 300) as usize, rng.range(36, 3000) as usize);
        msgs.push(Msg::new(TO_S, rng.bytes(a)));
        msgs.push(Msg::new(TO_C, rng.bytes(b)));
    }
    msgs
}

/// A binary request/response protocol; each signature lands in a random
/// message (one per message).
pub(super) fn tcp_other(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let exchanges = (rng.range(1, 4) as usize).max(sigs.len().div_ceil(2));
    let mut slots: Vec<Option<&Signature>> = vec![None; exchanges * 2];
    for s in sigs {
        let n = slots.len() as u64;
        let start = rng.below(n) as usize;
        if let Some(k) = (0..slots.len())
            .map(|k| (start + k) % slots.len())
            .find(|&k| slots[k].is_none())
        {
            slots[k] = Some(*s);
        }
    }
    let mut msgs = Vec::new();
    for (k, slot) in slots.iter().enumerate() {
        let (dir, len) = if k % 2 == 0 {
            (TO_S, rng.range(20, 400) as usize)
        } else {
            (TO_C, rng.range(100, 16_000) as usize)
        };
        let head = [0x5c, 0x01, (k & 0xff) as u8, 0x00];
        let filler = binary(rng, len.max(40));
        let planted: Vec<&Signature> = slot.iter().copied().collect();
        msgs.push(Msg::with(dir, &head, filler, b"", &planted, rng));
    }
    msgs
}

pub(super) fn dns(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let mut names: Vec<Option<&Signature>> = sigs.iter().map(|s| Some(*s)).collect();
    if names.is_empty() {
        names.push(None);
    }
    let mut msgs = Vec::new();
    for s in names {
        let domain = *rng.pick(&["example.com", "example.net", "example.org"]);
        let name = match s {
            Some(s) if rng.chance(1, 2) => {
                format!("{}.{domain}", String::from_utf8_lossy(&s.bytes))
            }
            Some(s) => format!("cdn.{}.{domain}", String::from_utf8_lossy(&s.bytes)),
            None => format!("{}.{domain}", words(rng, 1)),
        };
        let qtype = if rng.chance(1, 4) { 28 } else { 1 };
        let id = rng.next_u32() as u16;
        let mut answers = Vec::new();
        for _ in 0..rng.range(1, 3) {
            let rdata = if qtype == 28 {
                let mut a = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0x5e, 0, 0, 0, 0, 0, 0, 0, 0];
                a.extend(rng.bytes(2));
                a
            } else {
                vec![198, 18, rng.below(256) as u8, rng.range(1, 254) as u8]
            };
            answers.push((qtype, 60 + rng.below(3600) as u32, rdata));
        }
        let q = dns_query(id, &name, qtype, false);
        let r = dns_response(id, &name, qtype, &answers, false);
        msgs.push(Msg::new(TO_S, q).mark_found(s));
        msgs.push(Msg::new(TO_C, r).mark_found(s));
    }
    msgs
}

/// Datagrams in both directions; each signature lands in a random one.
pub(super) fn udp_other(sigs: &[&Signature], rng: &mut SplitMix64) -> Vec<Msg> {
    let n = (rng.range(2, 8) as usize).max(sigs.len());
    let mut slots: Vec<Option<&Signature>> = vec![None; n];
    for s in sigs {
        let start = rng.below(n as u64) as usize;
        if let Some(k) = (0..n)
            .map(|k| (start + k) % n)
            .find(|&k| slots[k].is_none())
        {
            slots[k] = Some(*s);
        }
    }
    let mut msgs = Vec::new();
    for (k, slot) in slots.iter().enumerate() {
        let dir = if k == 0 || rng.chance(1, 2) {
            TO_S
        } else {
            TO_C
        };
        let len = rng.range(40, 1200) as usize;
        let head = [0x80, 0x60, (k >> 8) as u8, k as u8];
        let planted: Vec<&Signature> = slot.iter().copied().collect();
        msgs.push(Msg::with(dir, &head, binary(rng, len), b"", &planted, rng));
    }
    msgs
}
