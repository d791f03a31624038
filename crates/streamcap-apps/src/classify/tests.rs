//! Detection tests: every label from hand-built first bytes, on standard
//! and other ports, split at every byte; random payloads stay `unknown`.

use super::tls::tests::{client_hello_msg, record, server_hello_msg};
use super::*;
use crate::logs::dns::message::tests::{query, response};

/// Pseudo-random numbers (xorshift), for reproducible blobs.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn tls_client() -> Vec<u8> {
    let mut c = record(
        22,
        &client_hello_msg("www.example.com", &["h2", "http/1.1"], &[3; 32]),
    );
    c.extend(record(20, &[1]));
    c.extend(record(23, &[7; 60]));
    c
}

fn tls_server() -> Vec<u8> {
    let mut s = record(22, &server_hello_msg(false, 0xc02f, Some("h2"), &[4; 32]));
    s.extend(record(22, &super::tls::tests::handshake(11, &[0; 3000])));
    s.extend(record(20, &[1]));
    s.extend(record(23, &[7; 60]));
    s
}

fn rdp_request() -> Vec<u8> {
    let mut x224 = vec![0xe0, 0, 0, 0, 0, 0];
    x224.extend_from_slice(b"Cookie: mstshash=administrator\r\n");
    x224.extend_from_slice(&[1, 0, 8, 0, 3, 0, 0, 0]);
    let mut t = vec![3, 0];
    t.extend_from_slice(&((x224.len() + 5) as u16).to_be_bytes());
    t.push(x224.len() as u8);
    t.extend(x224);
    t
}

fn rdp_confirm() -> Vec<u8> {
    let mut t = vec![3, 0, 0, 19, 14, 0xd0, 0, 0, 0x12, 0x34, 0];
    t.extend_from_slice(&[2, 0x1f, 8, 0, 2, 0, 0, 0]);
    t
}

fn mysql_greeting() -> Vec<u8> {
    let mut p = vec![0x0a];
    p.extend_from_slice(b"8.0.36-0ubuntu0.22.04.1\0");
    p.extend_from_slice(&[8, 0, 0, 0]);
    p.extend_from_slice(b"abcdefgh\0");
    p.extend_from_slice(&[0xff, 0xff, 0xff, 2, 0, 0xff, 0xdf, 21]);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
    let mut m = (p.len() as u32).to_le_bytes()[..3].to_vec();
    m.push(0);
    m.extend(p);
    m
}

fn pg_startup() -> Vec<u8> {
    let body = b"user\0alice\0database\0shop\0\0";
    let mut m = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    m.extend_from_slice(&196_608u32.to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn ntp(mode: u8, origin: u64, transmit: u64) -> Vec<u8> {
    let mut p = vec![(4 << 3) | mode, if mode == 4 { 2 } else { 0 }, 6, 0xe9];
    p.resize(48, 0);
    p[24..32].copy_from_slice(&origin.to_be_bytes());
    p[40..48].copy_from_slice(&transmit.to_be_bytes());
    p
}

fn dhcp_discover() -> Vec<u8> {
    let mut p = vec![1, 1, 6, 0];
    p.extend_from_slice(&0x3903_f326u32.to_be_bytes());
    p.resize(28, 0);
    p.extend_from_slice(&[0x00, 0x0c, 0x29, 0x12, 0x34, 0x56]);
    p.resize(236, 0);
    p.extend_from_slice(&[0x63, 0x82, 0x53, 0x63, 53, 1, 1, 255]);
    p
}

fn quic_initial(version: u32) -> Vec<u8> {
    let ty = if version == 0x6b33_43cf { 0x10 } else { 0 };
    let mut p = vec![0xc3 | ty];
    p.extend_from_slice(&version.to_be_bytes());
    p.push(8);
    p.extend_from_slice(&[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]);
    p.push(0);
    p.push(0);
    p.extend_from_slice(&[0x44, 0x9e]);
    p.resize(1200, 0xab);
    p
}

fn gquic() -> Vec<u8> {
    let mut p = vec![0x0d];
    p.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    p.extend_from_slice(b"Q043");
    p.resize(1350, 0);
    p
}

fn tcp_dns(m: &[u8]) -> Vec<u8> {
    let mut v = (m.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(m);
    v
}

fn mqtt_connect() -> Vec<u8> {
    let mut v = vec![0x10, 16, 0, 4];
    v.extend_from_slice(b"MQTT");
    v.extend_from_slice(&[4, 2, 0, 60, 0, 4]);
    v.extend_from_slice(b"test");
    v
}

fn bt_handshake() -> Vec<u8> {
    let mut v = b"\x13BitTorrent protocol".to_vec();
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0x10, 0, 5]);
    v.extend_from_slice(&[0xaa; 20]);
    v.extend_from_slice(b"-qB4250-abcdefghijkl");
    v
}

struct Case {
    name: &'static str,
    t: Transport,
    orig: Vec<Vec<u8>>,
    resp: Vec<Vec<u8>>,
    port: u16,
    want: App,
}

fn case(
    name: &'static str,
    t: Transport,
    orig: &[&[u8]],
    resp: &[&[u8]],
    port: u16,
    want: App,
) -> Case {
    Case {
        name,
        t,
        orig: orig.iter().map(|b| b.to_vec()).collect(),
        resp: resp.iter().map(|b| b.to_vec()).collect(),
        port,
        want,
    }
}

fn cases() -> Vec<Case> {
    use Transport::{Tcp, Udp};
    let q = query(0xbeef, "www.example.com", 1);
    // An LLMNR query (type ANY) for a UTF-8 host name.
    let llmnr = query(0x5374, "小佛專機", 255);
    let r = response(
        0xbeef,
        "www.example.com",
        1,
        0,
        &[(1, 300, vec![93, 184, 216, 34])],
    );
    vec![
        case(
            "http",
            Tcp,
            &[b"GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n"],
            &[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"],
            80,
            App::Http,
        ),
        case("http-response-only", Tcp, &[], &[b"HTTP/1.0 404 Not Found\r\n\r\n"], 80, App::Http),
        case(
            "http2-preface",
            Tcp,
            &[b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04"],
            &[],
            80,
            App::Http,
        ),
        case("http-0.9", Tcp, &[b"GET /bad.html\r\n"], &[b"<html>\n"], 80, App::Http),
        case(
            "http-spaced-path",
            Tcp,
            &[b"GET /cgi-bin/handler/netsonar;cat /etc/passwd|?data=Download HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
            &[],
            8080,
            App::Http,
        ),
        case("tls", Tcp, &[&tls_client()], &[&tls_server()], 443, App::Tls),
        case("tls-server-only", Tcp, &[], &[&tls_server()], 443, App::Tls),
        case(
            "sslv2-hello",
            Tcp,
            &[b"\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10\x00\x00\x04\x00\xff\x00\x00\x35\x00\x00\x2f\x00\x00\x0a\x00\x00\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"],
            &[],
            443,
            App::Tls,
        ),
        case(
            "ssh",
            Tcp,
            &[b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n\x00\x00\x05\xdc\x07\x14"],
            &[b"SSH-2.0-OpenSSH_8.9\r\n"],
            22,
            App::Ssh,
        ),
        case("dns-udp", Udp, &[&q], &[&r], 53, App::Dns),
        case("dns-udp-query-only", Udp, &[&q], &[], 53, App::Dns),
        case("llmnr-utf8", Udp, &[&llmnr], &[], 5355, App::Dns),
        case("dns-tcp", Tcp, &[&tcp_dns(&q)], &[&tcp_dns(&r)], 53, App::Dns),
        case(
            "smtp",
            Tcp,
            &[b"EHLO client.example.org\r\n"],
            &[b"220 mail.example.com ESMTP Postfix (Ubuntu)\r\n"],
            25,
            App::Smtp,
        ),
        case(
            "ftp",
            Tcp,
            &[b"USER anonymous\r\n"],
            &[b"220 (vsFTPd 3.0.3)\r\n"],
            21,
            App::Ftp,
        ),
        case(
            "ftp-named",
            Tcp,
            &[],
            &[b"220 ProFTPD 1.3.5 Server (Debian) [::ffff:10.0.0.1]\r\n"],
            21,
            App::Ftp,
        ),
        case(
            "imap",
            Tcp,
            &[b"a001 CAPABILITY\r\n"],
            &[b"* OK [CAPABILITY IMAP4rev1 STARTTLS] Dovecot ready.\r\n"],
            143,
            App::Imap,
        ),
        case("pop3", Tcp, &[b"CAPA\r\n"], &[b"+OK Dovecot ready.\r\n"], 110, App::Pop3),
        case("quic-v1", Udp, &[&quic_initial(1)], &[], 443, App::Quic),
        case("quic-v2", Udp, &[&quic_initial(0x6b33_43cf)], &[], 443, App::Quic),
        case("gquic", Udp, &[&gquic()], &[], 443, App::Quic),
        case(
            "smb1",
            Tcp,
            &[b"\x00\x00\x00\x54\xffSMBr\x00\x00\x00\x00\x18\x53\xc8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xfe\x00\x00\x00\x00"],
            &[],
            445,
            App::Smb,
        ),
        case(
            "smb2",
            Tcp,
            &[],
            &[b"\x00\x00\x00\xf8\xfeSMB\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"],
            445,
            App::Smb,
        ),
        case(
            "smb-netbios",
            Tcp,
            &[b"\x81\x00\x00\x44\x20CKFDENECFDEFFCFGEFFCCACACACACACA\x00\x20EMEPEDEBEMEIEPFDFECACACACACACAAA\x00"],
            &[b"\x82\x00\x00\x00"],
            139,
            App::Smb,
        ),
        case("rdp", Tcp, &[&rdp_request()], &[&rdp_confirm()], 3389, App::Rdp),
        case(
            "sip-udp",
            Udp,
            &[b"INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33.example.com\r\n\r\n"],
            &[b"SIP/2.0 180 Ringing\r\n\r\n"],
            5060,
            App::Sip,
        ),
        case(
            "sip-tcp",
            Tcp,
            &[b"REGISTER sip:registrar.example.com SIP/2.0\r\nVia: SIP/2.0/TCP x\r\n\r\n"],
            &[],
            5060,
            App::Sip,
        ),
        case(
            "ntp",
            Udp,
            &[&ntp(3, 0, 0xe9a1_b2c3_0000_1234)],
            &[&ntp(4, 0xe9a1_b2c3_0000_1234, 0xe9a1_b2c3_0001_0000)],
            123,
            App::Ntp,
        ),
        case("dhcp", Udp, &[&dhcp_discover()], &[], 67, App::Dhcp),
        case("bittorrent", Tcp, &[&bt_handshake()], &[&bt_handshake()], 6881, App::Bittorrent),
        case(
            "bittorrent-dht",
            Udp,
            &[b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe"],
            &[b"d1:rd2:id20:mnopqrstuvwxyz123456e1:t2:aa1:y1:re"],
            6881,
            App::Bittorrent,
        ),
        case("mqtt", Tcp, &[&mqtt_connect()], &[b"\x20\x02\x00\x00"], 1883, App::Mqtt),
        case(
            "mqtt-3.1",
            Tcp,
            &[b"\x10\x12\x00\x06MQIsdp\x03\x02\x00\x3c\x00\x04test"],
            &[],
            1883,
            App::Mqtt,
        ),
        case("redis", Tcp, &[b"*1\r\n$4\r\nPING\r\n"], &[b"+PONG\r\n"], 6379, App::Redis),
        case(
            "postgresql-ssl",
            Tcp,
            &[b"\x00\x00\x00\x08\x04\xd2\x16\x2f"],
            &[b"N"],
            5432,
            App::Postgresql,
        ),
        case("postgresql-startup", Tcp, &[&pg_startup()], &[b"R\x00\x00\x00\x08\x00\x00\x00\x00"], 5432, App::Postgresql),
        case("mysql", Tcp, &[], &[&mysql_greeting()], 3306, App::Mysql),
        case("unknown-text", Tcp, &[b"hello there\n"], &[b"general kenobi\n"], 4000, App::Unknown),
        case("unknown-empty", Tcp, &[], &[], 4000, App::Unknown),
        case("unknown-udp", Udp, &[b"\x00\x01\x02\x03"], &[b"\xff\xfe"], 4000, App::Unknown),
    ]
}

fn run(c: &Case, orig_port: u16, resp_port: u16) -> Classification {
    let o: Vec<&[u8]> = c.orig.iter().map(Vec::as_slice).collect();
    let r: Vec<&[u8]> = c.resp.iter().map(Vec::as_slice).collect();
    classify_flow(c.t, &o, &r, orig_port, resp_port)
}

#[test]
fn every_label_is_detected_on_its_port_and_on_others() {
    for c in cases() {
        let got = run(&c, 40_000, c.port);
        assert_eq!(got.app, c.want, "{} on its port: {got:?}", c.name);
        assert!(!got.by_port, "{}: decided by port", c.name);
        for port in [40_001, 8080, 12_345, 2] {
            let got = run(&c, 40_000, port);
            assert_eq!(got.app, c.want, "{} on port {port}", c.name);
        }
    }
}

#[test]
fn every_label_of_app_has_a_case() {
    let cases = cases();
    for a in App::ALL {
        assert!(cases.iter().any(|c| c.want == a), "no case for {a}");
    }
}

#[test]
fn details_come_with_the_label() {
    let all = cases();
    let get = |n: &str| {
        let c = all.iter().find(|c| c.name == n).unwrap();
        run(c, 40_000, c.port)
    };
    let t = get("tls");
    assert_eq!(t.sni(), Some("www.example.com"));
    assert_eq!(t.alpn(), Some("h2"));
    let info = t.tls.as_ref().unwrap();
    assert_eq!(info.alpn_offered, ["h2", "http/1.1"]);
    assert_eq!(info.version_name().as_deref(), Some("TLSv12"));
    assert_eq!(
        info.cipher_name().as_deref(),
        Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    );
    assert!(info.established && info.client_hello && info.server_hello);
    assert_eq!(info.resumed, Some(false));
    assert_eq!(t.zeek_service(), Some("ssl"));
    let s = get("ssh");
    assert_eq!(
        s.ssh_client.as_deref(),
        Some("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13")
    );
    assert_eq!(s.ssh_server.as_deref(), Some("SSH-2.0-OpenSSH_8.9"));
    assert_eq!(get("quic-v1").quic_version.as_deref(), Some("1"));
    assert_eq!(get("quic-v2").quic_version.as_deref(), Some("quicv2"));
    assert_eq!(get("gquic").quic_version.as_deref(), Some("Q043"));
    assert_eq!(
        get("mysql").mysql_version.as_deref(),
        Some("8.0.36-0ubuntu0.22.04.1")
    );
    assert!(get("sslv2-hello").tls.unwrap().sslv2);
    let j = serde_json::to_value(&t).unwrap();
    assert_eq!(j["app"], "tls");
    assert_eq!(j["tls"]["server_name"], "www.example.com");
}

/// The classification of a stream cut into `pieces`.
fn cut(c: &Case, orig: &[&[u8]], resp: &[&[u8]]) -> Classification {
    classify_flow(c.t, orig, resp, 40_000, c.port)
}

#[test]
fn the_label_does_not_depend_on_how_streams_are_cut() {
    for c in cases().into_iter().filter(|c| c.t == Transport::Tcp) {
        let whole_o: Vec<u8> = c.orig.concat();
        let whole_r: Vec<u8> = c.resp.concat();
        let want = cut(&c, &[&whole_o], &[&whole_r]);
        assert_eq!(want.app, c.want, "{}", c.name);
        // Cut once at every byte, each direction.
        for i in 0..=whole_o.len() {
            let got = cut(&c, &[&whole_o[..i], &whole_o[i..]], &[&whole_r]);
            assert_eq!(got, want, "{}: orig cut at {i}", c.name);
        }
        for i in 0..=whole_r.len() {
            let got = cut(&c, &[&whole_o], &[&whole_r[..i], &whole_r[i..]]);
            assert_eq!(got, want, "{}: resp cut at {i}", c.name);
        }
        // Byte by byte.
        let o1: Vec<&[u8]> = whole_o.chunks(1).collect();
        let r1: Vec<&[u8]> = whole_r.chunks(1).collect();
        assert_eq!(cut(&c, &o1, &r1), want, "{}: byte by byte", c.name);
    }
}

#[test]
fn tls_http_and_ssh_streams_split_everywhere() {
    // Longer streams: a hello spread over records, behind every split.
    let mut client = Vec::new();
    let msg = client_hello_msg("split.example.net", &["h2"], &[]);
    for part in msg.chunks(40) {
        client.extend(record(22, part));
    }
    client.extend(record(20, &[1]));
    let server = tls_server();
    let http =
        b"POST /api/v1/items?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc".to_vec();
    let ssh = b"SSH-2.0-PuTTY_Release_0.80\r\n\x00\x00\x01\x0c\x0a\x14".to_vec();
    for (name, o, r, want) in [
        ("tls", &client, &server, App::Tls),
        (
            "http",
            &http,
            &b"HTTP/1.1 201 Created\r\n\r\n".to_vec(),
            App::Http,
        ),
        ("ssh", &ssh, &b"SSH-1.99-Cisco-1.25\r\n".to_vec(), App::Ssh),
    ] {
        let base = classify_flow(Transport::Tcp, &[o], &[r], 1, 2);
        assert_eq!(base.app, want);
        for step in 1..=17 {
            let oc: Vec<&[u8]> = o.chunks(step).collect();
            let rc: Vec<&[u8]> = r.chunks(step).collect();
            assert_eq!(
                classify_flow(Transport::Tcp, &oc, &rc, 1, 2),
                base,
                "{name} step {step}"
            );
        }
    }
    let t = classify_flow(Transport::Tcp, &[&client], &[&server], 1, 2);
    assert_eq!(t.sni(), Some("split.example.net"));
}

#[test]
fn ports_break_ties_only() {
    let greet: &[&[u8]] = &[b"220 Service ready\r\n"];
    let c = |o: &[&[u8]], r: &[&[u8]], t, p| classify_flow(t, o, r, 50_000, p);
    let ftp = c(&[], greet, Transport::Tcp, 21);
    assert_eq!((ftp.app, ftp.by_port), (App::Ftp, true));
    let smtp = c(&[], greet, Transport::Tcp, 587);
    assert_eq!((smtp.app, smtp.by_port), (App::Smtp, true));
    assert_eq!(c(&[], greet, Transport::Tcp, 9999).app, App::Ftp);
    assert_eq!(
        c(&[], &[b"220 mx.example.net\r\n"], Transport::Tcp, 9999).app,
        App::Smtp
    );
    let user: &[&[u8]] = &[b"USER bob\r\n"];
    assert_eq!(c(user, &[], Transport::Tcp, 110).app, App::Pop3);
    assert_eq!(c(user, &[], Transport::Tcp, 21).app, App::Ftp);
    assert_eq!(c(user, &[], Transport::Tcp, 9999).app, App::Unknown);
    let one_ntp = ntp(3, 0, 5);
    assert_eq!(c(&[&one_ntp], &[], Transport::Udp, 123).app, App::Ntp);
    assert!(c(&[&one_ntp], &[], Transport::Udp, 123).by_port);
    assert_eq!(c(&[&one_ntp], &[], Transport::Udp, 9999).app, App::Unknown);
    assert_eq!(
        c(&[], &[b"+PONG\r\n"], Transport::Tcp, 6379).app,
        App::Redis
    );
    assert_eq!(
        c(&[], &[b"+PONG\r\n"], Transport::Tcp, 6380).app,
        App::Unknown
    );
    // A port never labels content that says nothing.
    assert_eq!(
        c(&[b"\x01\x02"], &[], Transport::Tcp, 443).app,
        App::Unknown
    );
    assert_eq!(c(&[b"zzzz\r\n"], &[], Transport::Tcp, 80).app, App::Unknown);
    // An HTTP request line longer than the limit (a WebDAV overflow).
    let mut long = b"SEARCH /".to_vec();
    long.extend(vec![b'A'; 70_000]);
    assert_eq!(c(&[&long], &[], Transport::Tcp, 80).app, App::Http);
    long[0] = b'Z';
    assert_eq!(c(&[&long], &[], Transport::Tcp, 80).app, App::Unknown);
    // Content beats the port: SSH on 443, HTTP on 22.
    assert_eq!(
        c(&[b"SSH-2.0-x\r\n"], &[], Transport::Tcp, 443).app,
        App::Ssh
    );
    assert_eq!(
        c(&[b"GET / HTTP/1.1\r\n"], &[], Transport::Tcp, 22).app,
        App::Http
    );
}

#[test]
fn random_payloads_are_unknown() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut labelled = Vec::new();
    for i in 0..6000 {
        let t = if i % 2 == 0 {
            Transport::Tcp
        } else {
            Transport::Udp
        };
        let n = (rng.next() % 1500) as usize;
        let o = rng.bytes(n);
        let m = (rng.next() % 1500) as usize;
        let r = rng.bytes(m);
        let (po, pr) = (rng.next() as u16, rng.next() as u16);
        let c = classify_flow(t, &[&o], &[&r], po, pr);
        if c.app != App::Unknown {
            labelled.push((i, c.app, o.get(..16).map(<[u8]>::to_vec)));
        }
    }
    assert!(labelled.is_empty(), "random blobs labelled: {labelled:?}");
    // Random printable lines, too.
    // Not "220", "+OK" or "* OK": a line starting so is a greeting.
    let words = [
        "the", "GET", "OK", "USER", "SSH", "HTTP", "+", "a1", "x.y", "SIP/2.0",
    ];
    for _ in 0..3000 {
        let mut line = Vec::new();
        for _ in 0..(rng.next() % 5) {
            line.extend_from_slice(words[(rng.next() % words.len() as u64) as usize].as_bytes());
            line.push(if rng.next() % 3 == 0 { b'/' } else { b' ' });
        }
        line.extend_from_slice(b"\r\n");
        let c = classify_flow(Transport::Tcp, &[&line], &[], 50_000, 60_000);
        assert!(
            matches!(c.app, App::Unknown),
            "{:?} labelled {}",
            String::from_utf8_lossy(&line),
            c.app
        );
    }
}

#[test]
fn evidence_is_one_pointer_and_reads_a_bounded_prefix() {
    assert_eq!(
        std::mem::size_of::<Evidence>(),
        std::mem::size_of::<usize>()
    );
    // Unrecognised bytes: done as soon as no probe can match.
    let mut e = Evidence::new();
    let blob = vec![b'x'; 100_000];
    let mut p = Progress::More;
    for (i, c) in blob.chunks(1000).enumerate() {
        p = e.feed_stream(i as u64 * 1000, c);
    }
    assert_eq!(p, Progress::Done);
    assert!(e.inspected() <= INSPECT_LIMIT as u64);
    // A DNS message longer than the limit: read up to the limit.
    let answers: Vec<(u16, u32, Vec<u8>)> =
        (0..400).map(|i| (1, 60, vec![10, 0, 1, i as u8])).collect();
    let big = tcp_dns(&response(5, "big.example", 1, 0, &answers));
    let mut e = Evidence::new();
    for (i, c) in big.chunks(1000).enumerate() {
        p = e.feed_stream(i as u64 * 1000, c);
    }
    assert_eq!(p, Progress::Done);
    assert_eq!(e.inspected(), INSPECT_LIMIT as u64);
    assert_eq!(e.hint(), Some(probe::Hint::Dns { response: true }));
    // An HTTP request is done at the end of its first line.
    let mut e = Evidence::new();
    assert_eq!(e.feed_stream(0, b"GET / HTTP/1.1"), Progress::More);
    assert_eq!(e.feed_stream(14, b"\r\nHost"), Progress::Done);
    // TLS goes on until the direction is encrypted, within the walk limit.
    let mut e = Evidence::new();
    let mut s = record(22, &client_hello_msg("a.b", &[], &[]));
    assert_eq!(e.feed_stream(0, &s), Progress::More);
    let at = s.len() as u64;
    s = record(20, &[1]);
    assert_eq!(e.feed_stream(at, &s), Progress::Done);
    let mut e = Evidence::new();
    let mut off = 0;
    let mut p = Progress::More;
    let big = record(22, &super::tls::tests::handshake(11, &[0; 16000]));
    while off < 200_000 && p == Progress::More {
        p = e.feed_stream(off, &big);
        off += big.len() as u64;
    }
    assert_eq!(p, Progress::Done);
    assert!(e.inspected() <= TLS_WALK_LIMIT + big.len() as u64);
    // A gap ends the inspection: the label comes from what came before.
    let mut e = Evidence::new();
    e.feed_stream(0, b"SSH-2.0-Open");
    assert_eq!(e.feed_stream(100, b"SSH"), Progress::Done);
    assert_eq!(e.hint(), None);
    // Datagrams: done at the first recognised one, or after a few.
    let mut e = Evidence::new();
    assert_eq!(e.feed_datagram(&query(1, "a.b", 1)), Progress::Done);
    let mut e = Evidence::new();
    for i in 1..=MAX_DATAGRAMS {
        let want = if i == MAX_DATAGRAMS {
            Progress::Done
        } else {
            Progress::More
        };
        assert_eq!(e.feed_datagram(b"\x00junk"), want);
    }
    // Bytes already seen are skipped; the offset of the first byte counts.
    let mut e = Evidence::new();
    e.feed_stream(1000, b"GET / HT");
    e.feed_stream(1004, b"/ HTTP/1.0\r\n");
    assert!(e.is_done());
    assert_eq!(e.hint(), Some(probe::Hint::HttpRequest));
}

#[test]
fn request_lines_with_spaces_and_utf8_names() {
    let http = |line: &[u8]| classify_flow(Transport::Tcp, &[line], &[], 50_000, 9999).app;
    // A path with spaces (an attack's command) before the version: HTTP.
    assert_eq!(http(b"GET /a;cat /etc/passwd| HTTP/1.1\r\n"), App::Http);
    assert_eq!(http(b"POST /x y z HTTP/1.0\r\n\r\n"), App::Http);
    // Not without a version, a known method, a path, or with control bytes.
    assert_eq!(http(b"GET /a b\r\n"), App::Unknown);
    assert_eq!(http(b"GET /a b HTTP/1.1 \r\n"), App::Unknown);
    assert_eq!(http(b"FETCH /a b HTTP/1.1\r\n"), App::Unknown);
    assert_eq!(http(b"GET a b HTTP/1.1\r\n"), App::Unknown);
    assert_eq!(http(b"GET /a\tb HTTP/1.1\r\n"), App::Unknown);
    // Split anywhere, the same answer.
    let line = b"GET /a;cat /etc/passwd| HTTP/1.1\r\n";
    for i in 1..line.len() {
        let c = classify_flow(Transport::Tcp, &[&line[..i], &line[i..]], &[], 50_000, 9999);
        assert_eq!(c.app, App::Http, "cut at {i}");
    }
    // DNS names: UTF-8 (mDNS, LLMNR) yes; control characters or bytes
    // that are not UTF-8, no.
    let dns = |m: &[u8]| classify_flow(Transport::Udp, &[m], &[], 50_000, 9999).app;
    assert_eq!(dns(&query(1, "小佛專機.local", 255)), App::Dns);
    assert_eq!(dns(&query(1, "b\u{7}ell", 1)), App::Unknown);
    assert_eq!(dns(&query(1, "a\u{a0}b", 1)), App::Unknown);
    let mut bad = query(1, "abcd", 1);
    bad[13] = 0xff;
    assert_eq!(dns(&bad), App::Unknown);
}

#[test]
fn netbios_name_service_refreshes_are_dns() {
    // A broadcast "refresh NB WORKGROUP<00>" (opcode 8), as macOS sends it.
    let mut refresh = b"\x45\x97\x40\x10\x00\x01\x00\x00\x00\x00\x00\x01\x20".to_vec();
    refresh.extend_from_slice(b"FHEPFCELEHFCEPFFFACACACACACACAAA\x00\x00\x20\x00\x01");
    refresh.extend_from_slice(
        b"\xc0\x0c\x00\x20\x00\x01\x00\x00\x03\x84\x00\x06\xe0\x00\xc0\xa8\x01\x75",
    );
    let dns = |m: &[u8], p| classify_flow(Transport::Udp, &[m], &[], p, p).app;
    assert_eq!(dns(&refresh, 137), App::Dns);
    assert_eq!(dns(&refresh, 40_000), App::Dns);
    // Release (6), WACK (7) and the other refresh code (9) too.
    for op in [6u8, 7, 9] {
        let mut m = refresh.clone();
        m[2] = (m[2] & 0x87) | (op << 3);
        assert_eq!(dns(&m, 137), App::Dns, "opcode {op}");
    }
    // Those opcodes are NetBIOS's only: not before a DNS name.
    let mut q = query(1, "www.example.com", 1);
    q[2] = (q[2] & 0x87) | (8 << 3);
    assert_eq!(dns(&q, 53), App::Unknown);
    // Nor opcodes beyond.
    let mut m = refresh.clone();
    m[2] = (m[2] & 0x87) | (10 << 3);
    assert_eq!(dns(&m, 137), App::Unknown);
}
