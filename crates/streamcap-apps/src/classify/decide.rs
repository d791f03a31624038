//! Combining both directions' evidence into one label per connection.
//!
//! The label comes from content. Rules are tried in order and the first
//! that holds decides:
//!
//! 1. a TLS ClientHello or ServerHello (or SSLv2 ClientHello) either way: `tls`;
//! 2. an SSH version line: `ssh`;
//! 3. an HTTP request or status line: `http`; a SIP one: `sip`;
//! 4. the marks of SMB, RDP, BitTorrent, MQTT (CONNECT), Redis (a
//!    command), PostgreSQL, MySQL, DNS, QUIC, DHCP;
//! 5. NTP: a client request and the server reply echoing its transmit
//!    timestamp, or two symmetric-mode packets;
//! 6. mail and file transfer: an IMAP or POP3 greeting; a `220` greeting
//!    naming FTP or SMTP; else the client's command (`EHLO` is SMTP,
//!    `SYST` FTP…); else the well-known port; else a greeting whose first
//!    word is a host name is SMTP, otherwise FTP;
//! 7. TLS records picked up mid-stream: `tls`;
//! 8. weaker marks that decide only with the label's well-known port on
//!    either side: one NTP packet, a TPKT connection request without
//!    RDP's marks, a Redis reply, an MQTT CONNACK, a lone PostgreSQL
//!    SSL answer, `USER`/`PASS` alone (FTP or POP3);
//! 9. else `unknown`.
//!
//! [`Classification::by_port`] tells when a port decided (rules 6 and 8).

use super::app::{App, Transport};
use super::evidence::Evidence;
use super::probe::{Command, Hint, NtpInfo};
use super::tls::{cipher_name, version_name, Hello};
use serde::Serialize;

/// A test on one direction's hint, and the label it gives.
type Rule = (&'static dyn Fn(&Hint) -> bool, App);

/// What the TLS hellos of a connection told.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlsInfo {
    /// A ClientHello was parsed.
    pub client_hello: bool,
    /// A ServerHello was parsed.
    pub server_hello: bool,
    /// The ClientHello's version field (for SSLv2 hellos, theirs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<u16>,
    /// The negotiated version (ServerHello, its `supported_versions` first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u16>,
    /// The negotiated cipher suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher: Option<u16>,
    /// The SNI host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// The ALPN protocols offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alpn_offered: Vec<String>,
    /// The ALPN protocol the server chose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
    /// The handshake resumed an earlier TLS connection (an abbreviated
    /// handshake; known only with both hellos): TLS 1.3, a
    /// `pre_shared_key` in the ServerHello; before, the server echoed the
    /// client's non-empty `session_id` field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<bool>,
    /// Both directions went encrypted: each sent a ChangeCipherSpec or an
    /// application-data record. After an SSLv2-format ClientHello (whose
    /// direction has no record walk), the server's direction alone tells.
    pub established: bool,
    /// The client spoke SSLv2's record format.
    pub sslv2: bool,
}

impl TlsInfo {
    /// Zeek's name of the negotiated version (`TLSv12`…).
    pub fn version_name(&self) -> Option<String> {
        self.version.map(version_name)
    }
    /// The IANA name of the negotiated cipher suite.
    pub fn cipher_name(&self) -> Option<String> {
        self.cipher.map(cipher_name)
    }
}

/// A connection's label and what was learned on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// The application protocol.
    pub app: App,
    /// A well-known port broke a tie.
    pub by_port: bool,
    /// TLS details (for `tls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsInfo>,
    /// The client's SSH version line (`SSH-2.0-OpenSSH_9.6`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_client: Option<String>,
    /// The server's SSH version line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_server: Option<String>,
    /// The QUIC version (as Zeek's `quic.log` names it: `1`, `quicv2`,
    /// `draft-29`, `mvfst (faceb002)`; Google's `Q046`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_version: Option<String>,
    /// The MySQL server's version string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mysql_version: Option<String>,
}

impl Classification {
    /// The label's name.
    pub fn name(&self) -> &'static str {
        self.app.name()
    }
    /// Zeek's `conn.log` service name.
    pub fn zeek_service(&self) -> Option<&'static str> {
        self.app.zeek_service()
    }
    /// The SNI host name, for TLS.
    pub fn sni(&self) -> Option<&str> {
        self.tls.as_ref()?.server_name.as_deref()
    }
    /// The ALPN protocol chosen, for TLS.
    pub fn alpn(&self) -> Option<&str> {
        self.tls.as_ref()?.alpn.as_deref()
    }
}

/// Zeek's name of a QUIC version.
pub fn quic_version_name(v: u32) -> String {
    match v {
        1 => "1".into(),
        0x6b33_43cf => "quicv2".into(),
        0 => "negotiation".into(),
        0xff00_0001..=0xff00_00ff => format!("draft-{}", v & 0xff),
        0xface_b001..=0xface_b00f => format!("mvfst ({v:08x})"),
        _ if v >> 24 == u32::from(b'Q') => String::from_utf8_lossy(&v.to_be_bytes()).into_owned(),
        _ => format!("unknown-{v:x}"),
    }
}

/// Labels a connection from both directions' evidence. `orig_port` and
/// `resp_port` break ties only.
pub fn decide(
    transport: Transport,
    orig_port: u16,
    resp_port: u16,
    orig: &Evidence,
    resp: &Evidence,
) -> Classification {
    let o = orig.hint();
    let r = resp.hint();
    let any = |f: &dyn Fn(&Hint) -> bool| o.as_ref().is_some_and(f) || r.as_ref().is_some_and(f);
    let port = |a: App| a.port_matches(transport, orig_port, resp_port);
    let mut c = Classification::default();

    // 1. TLS hellos.
    let hello =
        orig.tls().is_some_and(|w| w.is_hello()) || resp.tls().is_some_and(|w| w.is_hello());
    let sslv2 = [&o, &r].into_iter().find_map(|h| match h {
        Some(Hint::Sslv2Hello(v)) => Some(*v),
        _ => None,
    });
    if hello || sslv2.is_some() {
        set(&mut c, App::Tls);
        c.tls = Some(tls_info(orig, resp, sslv2));
        return c;
    }
    // 2. SSH.
    if any(&|h| matches!(h, Hint::Ssh(_))) {
        set(&mut c, App::Ssh);
        let line = |h: &Option<Hint>| match h {
            Some(Hint::Ssh(s)) => Some(s.clone()),
            _ => None,
        };
        c.ssh_client = line(&o);
        c.ssh_server = line(&r);
        return c;
    }
    // 3, 4. Marks that decide alone.
    let strong: [Rule; 12] = [
        (
            &|h| matches!(h, Hint::HttpRequest | Hint::HttpResponse),
            App::Http,
        ),
        (
            &|h| matches!(h, Hint::SipRequest | Hint::SipResponse),
            App::Sip,
        ),
        (&|h| matches!(h, Hint::Smb | Hint::NbssRequest), App::Smb),
        (
            &|h| matches!(h, Hint::RdpRequest | Hint::RdpConfirm),
            App::Rdp,
        ),
        (
            &|h| matches!(h, Hint::BitTorrent | Hint::BtDht),
            App::Bittorrent,
        ),
        (&|h| matches!(h, Hint::MqttConnect), App::Mqtt),
        (&|h| matches!(h, Hint::RedisCommand), App::Redis),
        (
            &|h| matches!(h, Hint::PgStartup | Hint::PgAuth),
            App::Postgresql,
        ),
        (&|h| matches!(h, Hint::MysqlGreeting(_)), App::Mysql),
        (&|h| matches!(h, Hint::Dns { .. }), App::Dns),
        (&|h| matches!(h, Hint::Quic(_) | Hint::GQuic(_)), App::Quic),
        (&|h| matches!(h, Hint::Dhcp), App::Dhcp),
    ];
    for (f, app) in strong {
        if any(f) {
            set(&mut c, app);
            c.quic_version = [&o, &r].into_iter().find_map(|h| match h {
                Some(Hint::Quic(v)) => Some(quic_version_name(*v)),
                Some(Hint::GQuic(v)) => Some(String::from_utf8_lossy(v).into_owned()),
                _ => None,
            });
            c.mysql_version = [&o, &r].into_iter().find_map(|h| match h {
                Some(Hint::MysqlGreeting(v)) => Some(v.clone()),
                _ => None,
            });
            return c;
        }
    }
    // 5. NTP exchanges.
    let ntp = |h: &Option<Hint>| match h {
        Some(Hint::Ntp(n)) => Some(*n),
        _ => None,
    };
    if let (Some(a), Some(b)) = (ntp(&o), ntp(&r)) {
        if ntp_pair(a, b) {
            set(&mut c, App::Ntp);
            return c;
        }
    }
    // 6. Mail and file transfer.
    if let Some((app, by_port)) = mail(&o, &r, &port) {
        set(&mut c, app);
        c.by_port = by_port;
        return c;
    }
    // 7. TLS picked up mid-stream.
    if orig.tls().is_some_and(|w| w.is_midstream_tls())
        || resp.tls().is_some_and(|w| w.is_midstream_tls())
    {
        set(&mut c, App::Tls);
        c.tls = Some(tls_info(orig, resp, None));
        return c;
    }
    // 8. Weak marks and the port.
    let weak: [Rule; 5] = [
        (&|h| matches!(h, Hint::Ntp(_)), App::Ntp),
        (&|h| matches!(h, Hint::TpktRequest), App::Rdp),
        (&|h| matches!(h, Hint::RedisReply), App::Redis),
        (&|h| matches!(h, Hint::MqttConnack), App::Mqtt),
        (&|h| matches!(h, Hint::PgSslReply), App::Postgresql),
    ];
    for (f, app) in weak {
        if any(f) && port(app) {
            set(&mut c, app);
            c.by_port = true;
            return c;
        }
    }
    c
}

fn set(c: &mut Classification, app: App) {
    c.app = app;
}

/// A request and its reply, or a symmetric exchange.
fn ntp_pair(a: NtpInfo, b: NtpInfo) -> bool {
    let echo = |req: NtpInfo, rep: NtpInfo| req.transmit != 0 && rep.origin == req.transmit;
    match (a.mode, b.mode) {
        (3, 4) => echo(a, b),
        (4, 3) => echo(b, a),
        (1 | 2, 1 | 2) => echo(a, b) || echo(b, a),
        _ => false,
    }
}

/// Rule 6: (label, decided by a port).
fn mail(o: &Option<Hint>, r: &Option<Hint>, port: &dyn Fn(App) -> bool) -> Option<(App, bool)> {
    let hints = [o, r];
    let has = |f: &dyn Fn(&Hint) -> bool| hints.iter().any(|h| h.as_ref().is_some_and(f));
    if has(&|h| matches!(h, Hint::ImapOk)) {
        return Some((App::Imap, false));
    }
    if has(&|h| matches!(h, Hint::PopOk)) {
        return Some((App::Pop3, false));
    }
    let command = hints.iter().find_map(|h| match h {
        Some(Hint::Command(c)) => Some(*c),
        _ => None,
    });
    let greeting = hints.iter().find_map(|h| match h {
        Some(Hint::Reply220 {
            ftp,
            smtp,
            host_first,
        }) => Some((*ftp, *smtp, *host_first)),
        _ => None,
    });
    if let Some((ftp, smtp, host_first)) = greeting {
        if ftp && !smtp {
            return Some((App::Ftp, false));
        }
        if smtp && !ftp {
            return Some((App::Smtp, false));
        }
        match command {
            Some(Command::Smtp) => return Some((App::Smtp, false)),
            Some(Command::Ftp | Command::UserPass) => return Some((App::Ftp, false)),
            _ => {}
        }
        if port(App::Ftp) {
            return Some((App::Ftp, true));
        }
        if port(App::Smtp) {
            return Some((App::Smtp, true));
        }
        return Some((if host_first { App::Smtp } else { App::Ftp }, false));
    }
    match command? {
        Command::Smtp => Some((App::Smtp, false)),
        Command::Ftp => Some((App::Ftp, false)),
        Command::Pop3 => Some((App::Pop3, false)),
        Command::Imap => Some((App::Imap, false)),
        Command::UserPass if port(App::Ftp) => Some((App::Ftp, true)),
        Command::UserPass if port(App::Pop3) => Some((App::Pop3, true)),
        Command::UserPass => None,
    }
}

fn tls_info(orig: &Evidence, resp: &Evidence, sslv2: Option<u16>) -> TlsInfo {
    let mut t = TlsInfo {
        sslv2: sslv2.is_some(),
        client_version: sslv2,
        ..TlsInfo::default()
    };
    let hellos = [orig.tls(), resp.tls()];
    let client = hellos.iter().flatten().find_map(|w| match w.hello() {
        Some(Hello::Client(c)) => Some(c),
        _ => None,
    });
    let server = hellos.iter().flatten().find_map(|w| match w.hello() {
        Some(Hello::Server(s)) => Some(s),
        _ => None,
    });
    if let Some(c) = client {
        t.client_hello = true;
        t.client_version = Some(c.version);
        t.server_name = c.server_name.clone();
        t.alpn_offered = c.alpn.clone();
    }
    if let Some(s) = server {
        t.server_hello = true;
        t.version = Some(s.version);
        t.cipher = Some(s.cipher);
        t.alpn = s.alpn.clone();
    }
    if let (Some(c), Some(s)) = (client, server) {
        t.resumed = Some(if s.version == 0x0304 {
            s.psk
        } else {
            !c.session_id.is_empty() && c.session_id == s.session_id
        });
    }
    // After an SSLv2 ClientHello the client has no walk: the server tells.
    let enc = |e: &Evidence| e.tls().is_some_and(|w| w.encrypted());
    t.established = if sslv2.is_some() {
        enc(orig) || enc(resp)
    } else {
        enc(orig) && enc(resp)
    };
    t
}
