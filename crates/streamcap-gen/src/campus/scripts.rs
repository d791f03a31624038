//! The application models: the messages each application exchanges (HTTP,
//! TLS, SSH, SMTP, FTP, DNS and bulk transfers), with planted signatures.

use std::fmt::Write as _;

use super::flow::{App, Cx};
use super::generator::{http_date, DOMAINS, PATHS, UAS};
use super::payload::{tls_len, Body, Msg};
use crate::prng::SplitMix64;
use crate::sample::{
    dns_query, dns_response, ssh_kexinit, ssh_packet, ssh_string, tls_client_hello,
    tls_server_hello, WORDS,
};

/// Plants one signature in the largest text/binary body.
pub(super) fn plant(msgs: &mut [Msg], rng: &mut SplitMix64, cx: &Cx) {
    let p = rng.below(cx.signatures.len() as u64) as usize;
    let len = cx.signatures[p].len() as u64;
    if len == 0 {
        return;
    }
    let best = msgs
        .iter_mut()
        .filter(|m| m.body != Body::Tls && m.body_len >= len)
        .max_by_key(|m| m.body_len);
    if let Some(m) = best {
        let span = m.body_len - len;
        let at = if rng.chance(1, 2) {
            rng.below(span.min(4096) + 1)
        } else {
            rng.below(span + 1)
        };
        m.sig = Some((p as u32, at));
    }
}

/// Splits `total` into `k` positive parts (roughly).
pub(super) fn split(rng: &mut SplitMix64, total: u64, k: usize) -> Vec<u64> {
    let w: Vec<u64> = (0..k).map(|_| 1 + rng.below(100)).collect();
    let sum: u64 = w.iter().sum();
    w.iter().map(|x| (total * x / sum).max(1)).collect()
}

pub(super) fn words(rng: &mut SplitMix64, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let w: &str = rng.pick::<&str>(WORDS);
        s.push_str(w);
    }
    s
}

/// The application script of a flow.
pub(super) fn script(
    app: App,
    rng: &mut SplitMix64,
    size: u64,
    host: &str,
    secs: u64,
    cx: &Cx,
) -> Vec<Msg> {
    let mut v = Vec::new();
    match app {
        App::Http => http_script(&mut v, rng, size, host, secs),
        App::Tls => {
            let sid = rng.bytes(32);
            v.push(Msg::new(0, tls_client_hello(rng, host, &sid)));
            let mut sh = tls_server_hello(rng, &sid);
            sh.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
            let cert = rng.range(2500, 4500);
            v.push(Msg::new(1, sh).body(Body::Tls, tls_len(cert), rng.next_u64()));
            let fin = rng.range(200, 600) + 53;
            v.push(Msg::new(0, vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01]).body(
                Body::Tls,
                tls_len(fin),
                rng.next_u64(),
            ));
            let k = 1 + (rng.below(8) * rng.below(8) / 8) as usize;
            for part in split(rng, size, k) {
                if v.len() > 3 {
                    let req = rng.range(80, 700);
                    v.push(Msg::new(0, vec![]).body(Body::Tls, tls_len(req), rng.next_u64()));
                }
                v.push(Msg::new(1, vec![]).body(Body::Tls, tls_len(part), rng.next_u64()));
            }
        }
        App::Ssh => {
            v.push(Msg::new(
                0,
                *rng.pick(&[
                    &b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"[..],
                    b"SSH-2.0-PuTTY_Release_0.80\r\n",
                    b"SSH-2.0-OpenSSH_9.7\r\n",
                ]),
            ));
            v.push(Msg::new(1, &b"SSH-2.0-OpenSSH_8.9p1 Debian-3\r\n"[..]));
            v.push(Msg::new(0, ssh_kexinit(rng, true)));
            v.push(Msg::new(1, ssh_kexinit(rng, false)));
            let mut ecdh = vec![30u8, 0, 0, 0, 32];
            ecdh.extend(rng.bytes(32));
            v.push(Msg::new(0, ssh_packet(rng, &ecdh)));
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
            v.push(Msg::new(1, reply));
            v.push(Msg::new(0, ssh_packet(rng, &[21])).body(Body::Random, 68, rng.next_u64()));
            let upload = rng.chance(1, 3);
            let k = 1 + rng.below(6) as usize;
            for part in split(rng, size, k) {
                let small = rng.range(36, 200);
                let (a, b) = if upload { (part, small) } else { (small, part) };
                v.push(Msg::new(0, vec![]).body(Body::Random, a, rng.next_u64()));
                v.push(Msg::new(1, vec![]).body(Body::Random, b, rng.next_u64()));
            }
        }
        App::Smtp => {
            let qid = rng.next_u64() & 0xff_ffff_ffff;
            let subject = words(rng, 4);
            let user = *rng.pick(&["alice", "bob", "carol", "dave", "erin"]);
            v.push(Msg::new(
                1,
                format!("220 {host} ESMTP Postfix (Ubuntu)\r\n"),
            ));
            v.push(Msg::new(0, "EHLO client.campus.example.edu\r\n"));
            v.push(Msg::new(
                1,
                format!(
                    "250-{host}\r\n250-PIPELINING\r\n250-SIZE 52428800\r\n250-8BITMIME\r\n\
                     250-ENHANCEDSTATUSCODES\r\n250 SMTPUTF8\r\n"
                ),
            ));
            v.push(Msg::new(
                0,
                format!("MAIL FROM:<{user}@campus.example.edu>\r\n"),
            ));
            v.push(Msg::new(1, "250 2.1.0 Ok\r\n"));
            v.push(Msg::new(0, format!("RCPT TO:<info@{host}>\r\n")));
            v.push(Msg::new(1, "250 2.1.5 Ok\r\n"));
            v.push(Msg::new(0, "DATA\r\n"));
            v.push(Msg::new(1, "354 End data with <CR><LF>.<CR><LF>\r\n"));
            let head = format!(
                "From: {user} <{user}@campus.example.edu>\r\nTo: <info@{host}>\r\n\
                 Subject: {subject}\r\nDate: {}\r\nMessage-ID: <{qid:x}@campus.example.edu>\r\n\
                 MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
                http_date(secs)
            );
            // The body must not contain "\r\n.\r\n": the text block has no CR.
            v.push(Msg::new(0, head).body(Body::Text, size.min(20_000_000), rng.next_u64()));
            v.push(Msg::new(0, "\r\n.\r\n"));
            v.push(Msg::new(
                1,
                format!("250 2.0.0 Ok: queued as {qid:010X}\r\n"),
            ));
            v.push(Msg::new(0, "QUIT\r\n"));
            v.push(Msg::new(1, "221 2.0.0 Bye\r\n"));
        }
        App::Ftp => {
            let file = format!("/pub/{}-{}.tar.gz", words(rng, 1), rng.below(1000));
            let p = 50_000 + rng.below(1000);
            v.push(Msg::new(1, "220 ProFTPD Server (Campus FTP) ready.\r\n"));
            v.push(Msg::new(0, "USER anonymous\r\n"));
            v.push(Msg::new(
                1,
                "331 Anonymous login ok, send your complete email address as your password\r\n",
            ));
            v.push(Msg::new(0, "PASS guest@campus.example.edu\r\n"));
            v.push(Msg::new(
                1,
                "230 Anonymous access granted, restrictions apply\r\n",
            ));
            v.push(Msg::new(0, "SYST\r\n"));
            v.push(Msg::new(1, "215 UNIX Type: L8\r\n"));
            v.push(Msg::new(0, "TYPE I\r\n"));
            v.push(Msg::new(1, "200 Type set to I\r\n"));
            v.push(Msg::new(0, "PASV\r\n"));
            v.push(Msg::new(
                1,
                format!(
                    "227 Entering Passive Mode (198,18,0,1,{},{}).\r\n",
                    p >> 8,
                    p & 255
                ),
            ));
            v.push(Msg::new(0, format!("RETR {file}\r\n")));
            v.push(Msg::new(
                1,
                format!("150 Opening BINARY mode data connection for {file} ({size} bytes)\r\n"),
            ));
            v.push(Msg::new(1, "226 Transfer complete\r\n"));
            v.push(Msg::new(0, "QUIT\r\n"));
            v.push(Msg::new(1, "221 Goodbye.\r\n"));
        }
        App::FtpData => {
            v.push(Msg::new(1, vec![]).body(Body::Random, size, rng.next_u64()));
        }
        App::TcpUnknown => {
            let k = 1 + rng.below(5) as usize;
            for part in split(rng, size, k) {
                let req = rng.range(20, 400);
                v.push(Msg::new(0, vec![]).body(Body::Random, req, rng.next_u64()));
                v.push(Msg::new(1, vec![]).body(Body::Random, part, rng.next_u64()));
            }
        }
        App::Dns => {
            let name = if rng.chance(1, 2) {
                host.to_string()
            } else {
                format!("{}.{}", words(rng, 1), rng.pick(DOMAINS))
            };
            let qtype = if rng.chance(1, 4) { 28 } else { 1 };
            let id = rng.next_u32() as u16;
            v.push(Msg::new(0, dns_query(id, &name, qtype, false)));
            let mut answers = Vec::new();
            for _ in 0..rng.range(1, 4) {
                let rdata = if qtype == 28 {
                    let mut a = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0x5e, 0, 0, 0, 0, 0, 0];
                    a.extend(rng.bytes(4));
                    a
                } else {
                    vec![198, 18, rng.below(256) as u8, rng.range(1, 254) as u8]
                };
                answers.push((qtype, 60 + rng.below(3600) as u32, rdata));
            }
            v.push(Msg::new(1, dns_response(id, &name, qtype, &answers, false)));
        }
        App::UdpUnknown => {
            let max = if cx.small { 64 } else { 1350 };
            let count = (size / 500).clamp(2, 4000);
            let mut dir = 0u8;
            for _ in 0..count {
                let len = if rng.chance(1, 2) {
                    rng.range(20, 200)
                } else {
                    rng.range(900, 1350)
                }
                .min(max);
                v.push(Msg::new(dir, vec![]).body(Body::Random, len, rng.next_u64()));
                if rng.chance(1, 3) {
                    dir ^= 1;
                }
            }
        }
    }
    v
}

pub(super) fn http_script(
    v: &mut Vec<Msg>,
    rng: &mut SplitMix64,
    size: u64,
    host: &str,
    secs: u64,
) {
    let k = 1 + (rng.below(6) * rng.below(6) / 4) as usize;
    let pipeline = k > 1 && rng.chance(1, 5);
    let post = rng.chance(1, 20);
    let ua = *rng.pick(UAS);
    let parts = split(rng, size, k);
    let mut reqs = Vec::with_capacity(k);
    let mut resps = Vec::with_capacity(k);
    for (i, &part) in parts.iter().enumerate() {
        let last = i + 1 == k;
        let conn = if last { "close" } else { "keep-alive" };
        let path = *rng.pick(PATHS);
        let req = if post && i == 0 {
            Msg::new(
                0,
                format!(
                    "POST /upload HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\n\
                     Content-Type: application/octet-stream\r\nContent-Length: {part}\r\n\
                     Connection: {conn}\r\n\r\n"
                ),
            )
            .body(Body::Random, part, rng.next_u64())
        } else {
            Msg::new(
                0,
                format!(
                    "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\n\
                     Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
                     Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate\r\n\
                     Connection: {conn}\r\n\r\n"
                ),
            )
        };
        let (body_len, status) = if post && i == 0 {
            (rng.range(20, 200), "201 Created")
        } else if rng.chance(1, 30) {
            (rng.range(150, 400), "404 Not Found")
        } else {
            (part, "200 OK")
        };
        let (ctype, kind, prologue): (&str, Body, Vec<u8>) = if body_len > 60_000
            || path.ends_with(".mp4")
            || path.ends_with(".gz")
            || path.ends_with(".deb")
        {
            match rng.below(3) {
                0 => (
                    "video/mp4",
                    Body::Random,
                    b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41".to_vec(),
                ),
                1 => (
                    "image/jpeg",
                    Body::Random,
                    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00".to_vec(),
                ),
                _ => (
                    "application/octet-stream",
                    Body::Random,
                    b"\x1f\x8b\x08\x00".to_vec(),
                ),
            }
        } else if path.ends_with(".png") {
            ("image/png", Body::Random, b"\x89PNG\r\n\x1a\n".to_vec())
        } else if path.starts_with("/api") {
            ("application/json", Body::Text, b"{\"items\":\"".to_vec())
        } else if path.ends_with(".css") {
            ("text/css", Body::Text, b"/* site */\n".to_vec())
        } else if path.ends_with(".js") {
            ("application/javascript", Body::Text, b"// app\n".to_vec())
        } else {
            let mut p = String::new();
            let _ = write!(
                p,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
                 <title>{}</title>\n</head>\n<body>\n<p>",
                words(rng, 3)
            );
            ("text/html; charset=utf-8", Body::Text, p.into_bytes())
        };
        let filler = body_len.saturating_sub(prologue.len() as u64);
        let mut head = format!(
            "HTTP/1.1 {status}\r\nServer: {}\r\nDate: {}\r\nContent-Type: {ctype}\r\n\
             Content-Length: {}\r\nConnection: {conn}\r\nCache-Control: max-age=3600\r\n\
             ETag: \"{:016x}\"\r\n\r\n",
            rng.pick(&[
                "nginx/1.24.0",
                "Apache/2.4.58 (Ubuntu)",
                "cloudflare",
                "Microsoft-IIS/10.0"
            ]),
            http_date(secs),
            prologue.len() as u64 + filler,
            rng.next_u64()
        )
        .into_bytes();
        head.extend_from_slice(&prologue);
        reqs.push(req);
        resps.push(Msg::new(1, head).body(kind, filler, rng.next_u64()));
    }
    if pipeline {
        // All GETs back-to-back in one send, then the responses.
        let mut all = Vec::new();
        let mut rest = Vec::new();
        for r in reqs {
            if r.body_len == 0 {
                all.extend_from_slice(&r.head);
            } else {
                rest.push(r);
            }
        }
        v.extend(rest);
        v.push(Msg::new(0, all));
        v.extend(resps);
    } else {
        for (q, r) in reqs.into_iter().zip(resps) {
            v.push(q);
            v.push(r);
        }
    }
}
