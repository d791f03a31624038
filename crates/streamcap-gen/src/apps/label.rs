//! The classifier's labels and the well-known ports a port-based classifier
//! would map to them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::truth::Protocol;

/// The label an L7 classifier should give a flow. Serialized in lower case
/// (`"http"`, `"pop3"`, `"postgresql"`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// HTTP/1.x.
    Http,
    /// TLS (any version), whatever it carries.
    Tls,
    /// SSH.
    Ssh,
    /// DNS over UDP or TCP.
    Dns,
    /// SMTP (including submission).
    Smtp,
    /// FTP control connection.
    Ftp,
    /// IMAP.
    Imap,
    /// POP3.
    Pop3,
    /// QUIC version 1.
    Quic,
    /// SMB (SMB2 over NetBIOS session service, possibly opened by SMB1).
    Smb,
    /// RDP (X.224 connection request with a cookie).
    Rdp,
    /// SIP over UDP or TCP.
    Sip,
    /// NTP.
    Ntp,
    /// DHCP (BOOTP with the magic cookie).
    Dhcp,
    /// BitTorrent peer wire protocol (TCP) and DHT (UDP).
    Bittorrent,
    /// MQTT.
    Mqtt,
    /// Redis (RESP).
    Redis,
    /// PostgreSQL frontend/backend protocol 3.0.
    Postgresql,
    /// MySQL client/server protocol 10.
    Mysql,
    /// None of the above: random bytes or text of no protocol.
    Unknown,
}

impl Label {
    /// Every label, `Unknown` last.
    pub const ALL: [Label; 20] = [
        Label::Http,
        Label::Tls,
        Label::Ssh,
        Label::Dns,
        Label::Smtp,
        Label::Ftp,
        Label::Imap,
        Label::Pop3,
        Label::Quic,
        Label::Smb,
        Label::Rdp,
        Label::Sip,
        Label::Ntp,
        Label::Dhcp,
        Label::Bittorrent,
        Label::Mqtt,
        Label::Redis,
        Label::Postgresql,
        Label::Mysql,
        Label::Unknown,
    ];

    /// The label's name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Label::Http => "http",
            Label::Tls => "tls",
            Label::Ssh => "ssh",
            Label::Dns => "dns",
            Label::Smtp => "smtp",
            Label::Ftp => "ftp",
            Label::Imap => "imap",
            Label::Pop3 => "pop3",
            Label::Quic => "quic",
            Label::Smb => "smb",
            Label::Rdp => "rdp",
            Label::Sip => "sip",
            Label::Ntp => "ntp",
            Label::Dhcp => "dhcp",
            Label::Bittorrent => "bittorrent",
            Label::Mqtt => "mqtt",
            Label::Redis => "redis",
            Label::Postgresql => "postgresql",
            Label::Mysql => "mysql",
            Label::Unknown => "unknown",
        }
    }

    /// The well-known server ports of the label over `proto` (empty when
    /// the label does not run over it, and always for `Unknown`). The first
    /// one is the most common.
    pub fn standard_ports(self, proto: Protocol) -> &'static [u16] {
        const BT: &[u16] = &[6881, 6882, 6883, 6884, 6885, 6886, 6887, 6888, 6889];
        match (self, proto) {
            (Label::Http, Protocol::Tcp) => &[80, 8080, 8000],
            (Label::Tls, Protocol::Tcp) => &[443, 8443, 993, 995, 465],
            (Label::Ssh, Protocol::Tcp) => &[22],
            (Label::Dns, _) => &[53],
            (Label::Smtp, Protocol::Tcp) => &[25, 587],
            (Label::Ftp, Protocol::Tcp) => &[21],
            (Label::Imap, Protocol::Tcp) => &[143],
            (Label::Pop3, Protocol::Tcp) => &[110],
            (Label::Quic, Protocol::Udp) => &[443],
            (Label::Smb, Protocol::Tcp) => &[445, 139],
            (Label::Rdp, Protocol::Tcp) => &[3389],
            (Label::Sip, _) => &[5060],
            (Label::Ntp, Protocol::Udp) => &[123],
            (Label::Dhcp, Protocol::Udp) => &[67],
            (Label::Bittorrent, _) => BT,
            (Label::Mqtt, Protocol::Tcp) => &[1883],
            (Label::Redis, Protocol::Tcp) => &[6379],
            (Label::Postgresql, Protocol::Tcp) => &[5432],
            (Label::Mysql, Protocol::Tcp) => &[3306],
            _ => &[],
        }
    }

    /// The label whose well-known port `port` is over `proto`: what a
    /// port-based classifier would answer. `None` for other ports.
    pub fn by_port(proto: Protocol, port: u16) -> Option<Label> {
        Label::ALL
            .into_iter()
            .find(|l| l.standard_ports(proto).contains(&port))
    }

    /// Every well-known port over `proto`, with its label.
    pub fn well_known(proto: Protocol) -> Vec<(u16, Label)> {
        Label::ALL
            .into_iter()
            .flat_map(|l| l.standard_ports(proto).iter().map(move |&p| (p, l)))
            .collect()
    }

    /// Whether the generator puts this label on non-standard server ports
    /// (all but DHCP, whose ports are fixed by the protocol, and
    /// `Unknown`, which has no standard port).
    pub fn moves_port(self) -> bool {
        !matches!(self, Label::Dhcp | Label::Unknown)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
