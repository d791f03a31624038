//! Content probes: what the first bytes of one direction look like.
//!
//! Each probe reads the start of a direction (a stream's first bytes, or
//! one datagram) and answers [`Verdict::Yes`] with a [`Hint`],
//! [`Verdict::No`], or [`Verdict::More`] when it cannot tell yet. A probe
//! reads a fixed structure (a first line, a header, a first message) and
//! answers `Yes` or `No` only once all of it is there, so that more bytes
//! never change an answer: a stream split anyhow gets the same hints.
//!
//! - [`text`]: line-based protocols (HTTP, SIP, SSH, SMTP, FTP, POP3, IMAP).
//! - [`binary`]: binary TCP protocols (SMB, RDP, BitTorrent, MQTT, Redis,
//!   PostgreSQL, MySQL, DNS over TCP, the SSLv2 ClientHello).
//! - [`datagram`](mod@datagram): UDP protocols (DNS, QUIC, NTP, DHCP, SIP, BitTorrent DHT).

pub mod binary;
pub mod datagram;
pub mod text;

/// What one direction's first bytes showed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// An HTTP request line (or the HTTP/2 connection preface).
    HttpRequest,
    /// An HTTP status line.
    HttpResponse,
    /// A SIP request line.
    SipRequest,
    /// A SIP status line.
    SipResponse,
    /// An SSH version line (without its line end).
    Ssh(String),
    /// A `220` greeting: whether its text names FTP or SMTP, and whether
    /// its first word looks like a host name.
    Reply220 {
        /// The text contains `FTP`.
        ftp: bool,
        /// The text contains `SMTP`.
        smtp: bool,
        /// The first word contains a dot.
        host_first: bool,
    },
    /// A POP3 `+OK` greeting.
    PopOk,
    /// An IMAP `* OK` or `* PREAUTH` greeting.
    ImapOk,
    /// A client's first mail or file-transfer command.
    Command(Command),
    /// An SMB header in a NetBIOS session message.
    Smb,
    /// A NetBIOS session request (port 139 before SMB).
    NbssRequest,
    /// A TPKT/X.224 connection request with an RDP cookie or negotiation request.
    RdpRequest,
    /// A TPKT/X.224 connection confirm with an RDP negotiation response.
    RdpConfirm,
    /// A TPKT/X.224 connection request without RDP's marks (ISO transport).
    TpktRequest,
    /// The BitTorrent handshake.
    BitTorrent,
    /// A BitTorrent DHT message (bencoded KRPC).
    BtDht,
    /// An MQTT CONNECT.
    MqttConnect,
    /// An MQTT CONNACK.
    MqttConnack,
    /// A Redis command (RESP array of bulk strings).
    RedisCommand,
    /// A Redis reply (`+PONG`, `-ERR`, `:n`, `$n`).
    RedisReply,
    /// A PostgreSQL StartupMessage, SSLRequest, GSSENCRequest or CancelRequest.
    PgStartup,
    /// A PostgreSQL authentication request.
    PgAuth,
    /// A single `S` or `N` (a PostgreSQL server answering SSLRequest).
    PgSslReply,
    /// A MySQL server greeting with its version string.
    MysqlGreeting(String),
    /// A DNS message (UDP payload, or TCP with its length).
    Dns {
        /// A response (QR set).
        response: bool,
    },
    /// A QUIC long-header packet.
    Quic(u32),
    /// A Google QUIC packet with a public header and a version.
    GQuic([u8; 4]),
    /// An NTP packet.
    Ntp(NtpInfo),
    /// A BOOTP/DHCP message.
    Dhcp,
    /// An SSLv2-format ClientHello (its version field).
    Sslv2Hello(u16),
}

/// A client's first command, by the protocols it belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `EHLO`, `HELO`, `MAIL FROM:`.
    Smtp,
    /// `SYST`, `FEAT`, `PWD`, `PASV`, `EPSV`, `TYPE`, `AUTH TLS`, `AUTH SSL`.
    Ftp,
    /// `CAPA`, `STLS`, `APOP`, `UIDL`, `STAT`.
    Pop3,
    /// `USER` or `PASS` (FTP or POP3).
    UserPass,
    /// A tagged IMAP command (`a1 CAPABILITY`, `a1 LOGIN`…).
    Imap,
}

/// The fields of an NTP packet that tie a request to its reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NtpInfo {
    /// Mode (1 symmetric active, 2 passive, 3 client, 4 server, 5 broadcast).
    pub mode: u8,
    /// Version.
    pub version: u8,
    /// Origin timestamp.
    pub origin: u64,
    /// Transmit timestamp.
    pub transmit: u64,
}

/// A probe's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It is this.
    Yes(Hint),
    /// It is not what the probe looks for.
    No,
    /// More bytes are needed to tell.
    More,
}

type Probe = fn(&[u8]) -> Verdict;

/// The stream probes, in order of precedence.
const STREAM_PROBES: [Probe; 15] = [
    text::request_line,
    text::status_line,
    text::ssh,
    text::mail_greeting,
    text::mail_command,
    binary::sslv2_hello,
    binary::smb,
    binary::rdp,
    binary::bittorrent,
    binary::mqtt,
    binary::redis,
    binary::postgresql,
    binary::pg_ssl_reply,
    binary::mysql,
    binary::dns_tcp,
];

/// Runs the stream probes on a direction's first bytes. `last`: no more
/// bytes will come (the stream ended, a gap, or the inspection limit), so
/// probes still waiting count as `No`. Returns `None` while the answer may
/// still change, else the answer (`Some(None)`: nothing recognised). A
/// probe's `Yes` counts only once every probe before it has answered.
pub fn stream(buf: &[u8], last: bool) -> Option<Option<Hint>> {
    let mut waiting = false;
    for p in STREAM_PROBES {
        match p(buf) {
            Verdict::Yes(h) => {
                return if waiting && !last {
                    None
                } else {
                    Some(Some(h))
                }
            }
            Verdict::More => waiting = true,
            Verdict::No => {}
        }
    }
    if waiting && !last {
        None
    } else {
        Some(None)
    }
}

/// The datagram probes, in order of precedence.
const DATAGRAM_PROBES: [Probe; 7] = [
    datagram::dns,
    datagram::quic,
    datagram::gquic,
    datagram::dhcp,
    datagram::ntp,
    datagram::sip,
    datagram::dht,
];

/// Runs the datagram probes on one datagram.
pub fn datagram(d: &[u8]) -> Option<Hint> {
    DATAGRAM_PROBES.iter().find_map(|p| match p(d) {
        Verdict::Yes(h) => Some(h),
        _ => None,
    })
}

/// `Yes` if `buf` starts with `pat`, `More` if it is a proper prefix of
/// it, else `No`.
pub(crate) fn starts(buf: &[u8], pat: &[u8], hint: Hint) -> Verdict {
    if buf.len() >= pat.len() {
        if buf.starts_with(pat) {
            Verdict::Yes(hint)
        } else {
            Verdict::No
        }
    } else if pat.starts_with(buf) {
        Verdict::More
    } else {
        Verdict::No
    }
}

/// Whether `buf` could still become `pat` (a prefix of it, possibly empty).
pub(crate) fn prefix_of(buf: &[u8], pat: &[u8]) -> bool {
    buf.len() < pat.len() && pat.starts_with(buf)
}
