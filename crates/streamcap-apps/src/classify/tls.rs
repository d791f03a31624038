//! TLS on one direction of a stream: the record layer walked header by
//! header, the first handshake message (ClientHello or ServerHello)
//! reassembled from its records and parsed, and whether the direction
//! went encrypted (a ChangeCipherSpec or application-data record).
//!
//! Records are walked over up to [`TLS_WALK_LIMIT`] bytes of the stream
//! without keeping them: only their 5-byte headers are read, and the
//! handshake bytes before the first message is complete (at most
//! [`super::INSPECT_LIMIT`]).
//!
//! The hellos are parsed with the `tls-parser` crate (Rusticata): its
//! ClientHello and ServerHello readers and its per-extension readers, and
//! its table of IANA cipher-suite names. The record layer is walked here,
//! since a hello may be split over several records and segments, and each
//! extension is read alone so that one the crate cannot read does not
//! hide the others.

use super::INSPECT_LIMIT;
use tls_parser::{
    parse_tls_client_hello_extension, parse_tls_handshake_msg_client_hello,
    parse_tls_handshake_msg_server_hello, parse_tls_server_hello_extension, TlsCipherSuite,
    TlsExtension, TlsMessageHandshake,
};

/// Bytes of a direction whose record headers are read, to see the
/// ChangeCipherSpec or application data that follows the hellos (a
/// server's certificates may come first).
pub const TLS_WALK_LIMIT: u64 = 64 * 1024;

/// Largest record body allowed (2^14 plus the 2048 bytes of expansion
/// TLS 1.2 allows a ciphertext).
const MAX_RECORD: usize = 16384 + 2048;

/// What a ClientHello offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// The legacy version field.
    pub version: u16,
    /// The versions of the `supported_versions` extension (GREASE left out).
    pub supported_versions: Vec<u16>,
    /// The first `host_name` of the `server_name` extension.
    pub server_name: Option<String>,
    /// The ALPN protocols offered, in order.
    pub alpn: Vec<String>,
    /// The legacy session id.
    pub session_id: Vec<u8>,
    /// Cipher suites offered.
    pub ciphers: Vec<u16>,
}

/// What a ServerHello chose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHello {
    /// The negotiated version: `supported_versions` if present, else the
    /// legacy version field.
    pub version: u16,
    /// The cipher suite.
    pub cipher: u16,
    /// The ALPN protocol chosen.
    pub alpn: Option<String>,
    /// The legacy session id.
    pub session_id: Vec<u8>,
    /// A `pre_shared_key` extension was present (TLS 1.3 resumption).
    pub psk: bool,
}

/// The first handshake message of a direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hello {
    /// A ClientHello.
    Client(ClientHello),
    /// A ServerHello.
    Server(ServerHello),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum HelloState {
    /// Collecting the first handshake message.
    Pending,
    /// Parsed.
    Done(Box<Hello>),
    /// A handshake type other than a hello, or one that did not parse or
    /// did not fit in [`INSPECT_LIMIT`] bytes: `.0` is its type.
    Other(u8),
    /// The first record is not a handshake record.
    NotHandshake,
}

/// The record-layer walk of one direction.
#[derive(Clone, Debug)]
pub struct TlsWalk {
    pos: u64,
    hdr: [u8; 5],
    hdr_len: usize,
    body_left: usize,
    body_type: u8,
    records: u32,
    first_type: u8,
    hs: Vec<u8>,
    hello: HelloState,
    encrypted: bool,
    bad: bool,
}

impl Default for TlsWalk {
    fn default() -> Self {
        TlsWalk {
            pos: 0,
            hdr: [0; 5],
            hdr_len: 0,
            body_left: 0,
            body_type: 0,
            records: 0,
            first_type: 0,
            hs: Vec::new(),
            hello: HelloState::Pending,
            encrypted: false,
            bad: false,
        }
    }
}

/// Whether a byte may start a TLS record (ChangeCipherSpec, alert,
/// handshake, application data, heartbeat).
pub fn may_start_record(b: u8) -> bool {
    (20..=24).contains(&b)
}

fn valid_header(h: &[u8; 5]) -> bool {
    let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
    may_start_record(h[0]) && h[1] == 3 && h[2] <= 4 && len <= MAX_RECORD
}

impl TlsWalk {
    /// A walk at the start of a direction.
    pub fn new() -> TlsWalk {
        TlsWalk::default()
    }

    /// The next bytes of the direction (contiguous with the previous ones).
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() && !self.stopped() {
            // Never past the walk limit.
            let room = (TLS_WALK_LIMIT - self.pos) as usize;
            if self.body_left == 0 {
                let take = (5 - self.hdr_len).min(data.len()).min(room);
                self.hdr[self.hdr_len..self.hdr_len + take].copy_from_slice(&data[..take]);
                self.hdr_len += take;
                self.pos += take as u64;
                data = &data[take..];
                if self.hdr_len < 5 {
                    // Reject a bad first byte at once.
                    if self.hdr_len >= 1 && !may_start_record(self.hdr[0]) {
                        self.bad = true;
                    }
                    return;
                }
                self.hdr_len = 0;
                if !valid_header(&self.hdr) {
                    self.bad = true;
                    return;
                }
                self.body_type = self.hdr[0];
                self.body_left = usize::from(u16::from_be_bytes([self.hdr[3], self.hdr[4]]));
                if self.records == 0 {
                    self.first_type = self.body_type;
                    if self.body_type != 22 {
                        self.hello = HelloState::NotHandshake;
                    }
                }
                self.records += 1;
                if self.body_type == 20 || self.body_type == 23 {
                    self.encrypted = true;
                }
                continue;
            }
            let take = self.body_left.min(data.len()).min(room);
            if self.body_type == 22 && self.hello == HelloState::Pending {
                self.collect(&data[..take]);
            }
            self.body_left -= take;
            self.pos += take as u64;
            data = &data[take..];
        }
    }

    /// Handshake bytes toward the first message.
    fn collect(&mut self, bytes: &[u8]) {
        let room = INSPECT_LIMIT.saturating_sub(self.hs.len());
        self.hs.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if self.hs.len() < 4 {
            return;
        }
        let ty = self.hs[0];
        let len =
            usize::from(self.hs[1]) << 16 | usize::from(self.hs[2]) << 8 | usize::from(self.hs[3]);
        if self.hs.len() >= 4 + len {
            let body = &self.hs[4..4 + len];
            self.hello = match parse_hello(ty, body) {
                Some(h) => HelloState::Done(Box::new(h)),
                None => HelloState::Other(ty),
            };
            self.hs = Vec::new();
        } else if self.hs.len() >= INSPECT_LIMIT {
            self.hello = HelloState::Other(ty);
            self.hs = Vec::new();
        }
    }

    fn stopped(&self) -> bool {
        self.bad || self.pos >= TLS_WALK_LIMIT || self.enough()
    }

    /// Nothing more to learn: the hello is settled and the direction went
    /// encrypted, or the first record was not a handshake and a second
    /// valid record followed it.
    fn enough(&self) -> bool {
        match self.hello {
            HelloState::Pending => false,
            HelloState::NotHandshake => self.records >= 2,
            _ => self.encrypted,
        }
    }

    /// Whether more bytes could change what the walk tells.
    pub fn is_done(&self) -> bool {
        self.stopped()
    }

    /// The stream is TLS: its first record is a handshake record whose
    /// message is a ClientHello or ServerHello (known from its first byte).
    pub fn is_hello(&self) -> bool {
        if self.bad && self.records == 0 {
            return false;
        }
        match &self.hello {
            HelloState::Done(_) => true,
            HelloState::Other(t) => *t == 1 || *t == 2,
            HelloState::Pending => self.first_type == 22 && matches!(self.hs.first(), Some(1 | 2)),
            HelloState::NotHandshake => false,
        }
    }

    /// Picked up mid-stream: the first record is not a handshake but two
    /// valid records follow each other.
    pub fn is_midstream_tls(&self) -> bool {
        self.hello == HelloState::NotHandshake && self.records >= 2
    }

    /// The parsed hello, if any.
    pub fn hello(&self) -> Option<&Hello> {
        match &self.hello {
            HelloState::Done(h) => Some(h),
            _ => None,
        }
    }

    /// A ChangeCipherSpec or application-data record was seen.
    pub fn encrypted(&self) -> bool {
        self.encrypted
    }

    /// Bytes walked.
    pub fn walked(&self) -> u64 {
        self.pos
    }
}

fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && (v >> 8) == (v & 0xff)
}

/// The extensions of a hello, one by one: (type, the whole extension).
fn extensions(mut ext: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    while ext.len() >= 4 {
        let len = usize::from(u16::from_be_bytes([ext[2], ext[3]]));
        let Some(one) = ext.get(..4 + len) else {
            break;
        };
        v.push(one);
        ext = &ext[4 + len..];
    }
    v
}

fn text(b: &[u8]) -> String {
    crate::logs::zeek::text(b)
}

/// Parses a hello's body (`ty` 1 or 2); `None` for other types or
/// malformed bodies.
pub fn parse_hello(ty: u8, body: &[u8]) -> Option<Hello> {
    match ty {
        1 => {
            let (_, TlsMessageHandshake::ClientHello(ch)) =
                parse_tls_handshake_msg_client_hello(body).ok()?
            else {
                return None;
            };
            let mut out = ClientHello {
                version: ch.version.0,
                session_id: ch.session_id.unwrap_or_default().to_vec(),
                ciphers: ch.ciphers.iter().map(|c| c.0).collect(),
                ..ClientHello::default()
            };
            for e in extensions(ch.ext.unwrap_or_default()) {
                match parse_tls_client_hello_extension(e) {
                    Ok((_, TlsExtension::SNI(names))) if out.server_name.is_none() => {
                        out.server_name =
                            names.iter().find(|(t, _)| t.0 == 0).map(|(_, n)| text(n));
                    }
                    Ok((_, TlsExtension::ALPN(protos))) => {
                        out.alpn = protos.iter().map(|p| text(p)).collect();
                    }
                    Ok((_, TlsExtension::SupportedVersions(vs))) => {
                        out.supported_versions =
                            vs.iter().map(|v| v.0).filter(|v| !is_grease(*v)).collect();
                    }
                    _ => {}
                }
            }
            Some(Hello::Client(out))
        }
        2 => {
            let (_, msg) = parse_tls_handshake_msg_server_hello(body).ok()?;
            let (version, cipher, sid, ext) = match msg {
                TlsMessageHandshake::ServerHello(sh) => (
                    sh.version.0,
                    sh.cipher.0,
                    sh.session_id.unwrap_or_default().to_vec(),
                    sh.ext,
                ),
                TlsMessageHandshake::ServerHelloV13Draft18(sh) => {
                    (sh.version.0, sh.cipher.0, Vec::new(), sh.ext)
                }
                _ => return None,
            };
            let mut out = ServerHello {
                version,
                cipher,
                session_id: sid,
                ..ServerHello::default()
            };
            for e in extensions(ext.unwrap_or_default()) {
                if u16::from_be_bytes([e[0], e[1]]) == 41 {
                    out.psk = true;
                    continue;
                }
                match parse_tls_server_hello_extension(e) {
                    Ok((_, TlsExtension::ALPN(protos))) => {
                        out.alpn = protos.first().map(|p| text(p));
                    }
                    Ok((_, TlsExtension::SupportedVersions(vs))) => {
                        if let Some(v) = vs.first() {
                            out.version = v.0;
                        }
                    }
                    _ => {}
                }
            }
            Some(Hello::Server(out))
        }
        _ => None,
    }
}

/// Zeek's name of a TLS version (`SSL::version_strings`): `TLSv12`,
/// `TLSv13`, `SSLv3`, `TLSv13-draft23`…, else `unknown-N`.
pub fn version_name(v: u16) -> String {
    match v {
        0x0002 => "SSLv2".into(),
        0x0300 => "SSLv3".into(),
        0x0301 => "TLSv10".into(),
        0x0302 => "TLSv11".into(),
        0x0303 => "TLSv12".into(),
        0x0304 => "TLSv13".into(),
        0xfeff => "DTLSv10".into(),
        0xfefd => "DTLSv12".into(),
        0xfefc => "DTLSv13".into(),
        0x7f00..=0x7fff => format!("TLSv13-draft{}", v & 0xff),
        _ => format!("unknown-{v}"),
    }
}

/// The IANA name of a cipher suite (as Zeek's `cipher` field), else
/// `unknown-N`.
pub fn cipher_name(c: u16) -> String {
    TlsCipherSuite::from_id(c).map_or_else(|| format!("unknown-{c}"), |s| s.name.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn ext(out: &mut Vec<u8>, ty: u16, data: &[u8]) {
        out.extend_from_slice(&ty.to_be_bytes());
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(data);
    }

    pub(crate) fn record(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![ty, 3, 1];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    pub(crate) fn handshake(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut h = vec![ty];
        h.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        h.extend_from_slice(body);
        h
    }

    /// A ClientHello handshake message (TLS 1.3 style) with SNI and ALPN.
    pub(crate) fn client_hello_msg(sni: &str, alpn: &[&str], sid: &[u8]) -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend((0..32u8).map(|i| i.wrapping_mul(7)));
        b.push(sid.len() as u8);
        b.extend_from_slice(sid);
        let suites = [0x1301u16, 0x1302, 0xc02f, 0x0a0a];
        b.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
        for s in suites {
            b.extend_from_slice(&s.to_be_bytes());
        }
        b.extend_from_slice(&[1, 0]);
        let mut e = Vec::new();
        ext(&mut e, 0x0a0a, &[]);
        let mut sn = Vec::new();
        sn.extend_from_slice(&((sni.len() + 3) as u16).to_be_bytes());
        sn.push(0);
        sn.extend_from_slice(&(sni.len() as u16).to_be_bytes());
        sn.extend_from_slice(sni.as_bytes());
        ext(&mut e, 0, &sn);
        if !alpn.is_empty() {
            let mut list = Vec::new();
            for p in alpn {
                list.push(p.len() as u8);
                list.extend_from_slice(p.as_bytes());
            }
            let mut a = (list.len() as u16).to_be_bytes().to_vec();
            a.extend(list);
            ext(&mut e, 16, &a);
        }
        // An extension tls-parser cannot read must not hide the others.
        ext(&mut e, 5, &[9]);
        ext(&mut e, 43, &[6, 0x1a, 0x1a, 3, 4, 3, 3]);
        b.extend_from_slice(&(e.len() as u16).to_be_bytes());
        b.extend(e);
        handshake(1, &b)
    }

    /// A ServerHello message: TLS 1.3 (supported_versions) or 1.2.
    pub(crate) fn server_hello_msg(
        tls13: bool,
        cipher: u16,
        alpn: Option<&str>,
        sid: &[u8],
    ) -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend([0x55u8; 32]);
        b.push(sid.len() as u8);
        b.extend_from_slice(sid);
        b.extend_from_slice(&cipher.to_be_bytes());
        b.push(0);
        let mut e = Vec::new();
        if tls13 {
            ext(&mut e, 43, &[3, 4]);
        }
        if let Some(p) = alpn {
            let mut a = ((p.len() + 1) as u16).to_be_bytes().to_vec();
            a.push(p.len() as u8);
            a.extend_from_slice(p.as_bytes());
            ext(&mut e, 16, &a);
        }
        b.extend_from_slice(&(e.len() as u16).to_be_bytes());
        b.extend(e);
        handshake(2, &b)
    }

    #[test]
    fn hellos_parse() {
        let Some(Hello::Client(c)) = parse_hello(
            1,
            &client_hello_msg("Example.org", &["h2", "http/1.1"], &[7; 32])[4..],
        ) else {
            panic!("no client hello")
        };
        assert_eq!(c.server_name.as_deref(), Some("Example.org"));
        assert_eq!(c.alpn, ["h2", "http/1.1"]);
        assert_eq!(c.supported_versions, [0x0304, 0x0303]);
        assert_eq!(c.session_id.len(), 32);
        let Some(Hello::Server(s)) =
            parse_hello(2, &server_hello_msg(true, 0x1301, Some("h2"), &[])[4..])
        else {
            panic!("no server hello")
        };
        assert_eq!(
            (s.version, s.cipher, s.alpn.as_deref()),
            (0x0304, 0x1301, Some("h2"))
        );
        assert_eq!(version_name(s.version), "TLSv13");
        assert_eq!(cipher_name(s.cipher), "TLS_AES_128_GCM_SHA256");
        assert_eq!(cipher_name(0xc02f), "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assert_eq!(cipher_name(0xffff), "unknown-65535");
        assert_eq!(version_name(0x7f17), "TLSv13-draft23");
        assert!(parse_hello(1, &[3, 3, 0]).is_none());
        assert!(parse_hello(11, &[]).is_none());
    }

    #[test]
    fn a_hello_split_over_records_and_bytes() {
        let msg = client_hello_msg("split.example", &["h2"], &[]);
        // Three records, then a ChangeCipherSpec and application data.
        let mut stream = Vec::new();
        for part in msg.chunks(msg.len() / 3 + 1) {
            stream.extend(record(22, part));
        }
        stream.extend(record(20, &[1]));
        stream.extend(record(23, &[0xaa; 40]));
        for piece in [1, 2, 3, 5, 7, 64, stream.len()] {
            let mut w = TlsWalk::new();
            for c in stream.chunks(piece) {
                w.feed(c);
            }
            assert!(
                w.is_hello() && w.encrypted() && w.is_done(),
                "piece {piece}"
            );
            let Some(Hello::Client(c)) = w.hello() else {
                panic!("piece {piece}")
            };
            assert_eq!(c.server_name.as_deref(), Some("split.example"));
        }
    }

    #[test]
    fn walks_stop_on_garbage_and_midstream_records_are_told() {
        let mut w = TlsWalk::new();
        w.feed(b"GET / HTTP/1.1\r\n");
        assert!(w.is_done() && !w.is_hello() && !w.is_midstream_tls());
        let mut w = TlsWalk::new();
        let mut s = record(23, &[1; 100]);
        s.extend(record(23, &[2; 10]));
        w.feed(&s);
        assert!(w.is_midstream_tls() && w.is_done() && !w.is_hello());
        let mut w = TlsWalk::new();
        w.feed(&[22, 3, 3, 0xff, 0xff]);
        assert!(w.is_done() && !w.is_hello());
    }
}
