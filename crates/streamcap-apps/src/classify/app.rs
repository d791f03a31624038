//! The application protocols the classifier tells apart, their names,
//! Zeek's `conn.log` service names, and their well-known ports (used only
//! to break ties).

use serde::{Serialize, Serializer};

/// The transport a connection runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// TCP: one byte stream per direction.
    Tcp,
    /// UDP: datagrams.
    Udp,
}

impl Transport {
    /// From an IP protocol number (6, 17); `None` for others.
    pub fn from_ip_proto(p: u8) -> Option<Transport> {
        match p {
            6 => Some(Transport::Tcp),
            17 => Some(Transport::Udp),
            _ => None,
        }
    }
    /// `tcp` or `udp`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        }
    }
}

/// An application protocol label.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum App {
    /// No protocol recognised.
    #[default]
    Unknown,
    /// HTTP/1.x (and HTTP/2 with prior knowledge).
    Http,
    /// TLS (SSL 3.0 to TLS 1.3, and the SSLv2 ClientHello).
    Tls,
    /// SSH.
    Ssh,
    /// DNS (and mDNS, LLMNR, NetBIOS name service), UDP or TCP.
    Dns,
    /// SMTP.
    Smtp,
    /// FTP (control connection).
    Ftp,
    /// IMAP.
    Imap,
    /// POP3.
    Pop3,
    /// QUIC (IETF and Google).
    Quic,
    /// SMB 1, 2 or 3 over the NetBIOS session service or direct TCP.
    Smb,
    /// RDP.
    Rdp,
    /// SIP.
    Sip,
    /// NTP.
    Ntp,
    /// DHCP (BOOTP with the DHCP magic cookie).
    Dhcp,
    /// BitTorrent peer wire and DHT.
    Bittorrent,
    /// MQTT.
    Mqtt,
    /// Redis (RESP).
    Redis,
    /// PostgreSQL frontend/backend protocol.
    Postgresql,
    /// MySQL (and MariaDB) client/server protocol.
    Mysql,
}

impl App {
    /// Every label, `Unknown` first.
    pub const ALL: [App; 20] = [
        App::Unknown,
        App::Http,
        App::Tls,
        App::Ssh,
        App::Dns,
        App::Smtp,
        App::Ftp,
        App::Imap,
        App::Pop3,
        App::Quic,
        App::Smb,
        App::Rdp,
        App::Sip,
        App::Ntp,
        App::Dhcp,
        App::Bittorrent,
        App::Mqtt,
        App::Redis,
        App::Postgresql,
        App::Mysql,
    ];

    /// The lowercase label: `http`, `tls`, `unknown`…
    pub fn name(self) -> &'static str {
        match self {
            App::Unknown => "unknown",
            App::Http => "http",
            App::Tls => "tls",
            App::Ssh => "ssh",
            App::Dns => "dns",
            App::Smtp => "smtp",
            App::Ftp => "ftp",
            App::Imap => "imap",
            App::Pop3 => "pop3",
            App::Quic => "quic",
            App::Smb => "smb",
            App::Rdp => "rdp",
            App::Sip => "sip",
            App::Ntp => "ntp",
            App::Dhcp => "dhcp",
            App::Bittorrent => "bittorrent",
            App::Mqtt => "mqtt",
            App::Redis => "redis",
            App::Postgresql => "postgresql",
            App::Mysql => "mysql",
        }
    }

    /// The label named `s` (as [`name`](Self::name) writes it).
    pub fn from_name(s: &str) -> Option<App> {
        App::ALL.into_iter().find(|a| a.name() == s)
    }

    /// The `service` Zeek's `conn.log` gives such a connection: the name
    /// of Zeek's analyzer, lowercased (`ssl` for TLS); `None` for
    /// `Unknown` (Zeek writes `-`). Zeek has no MQTT analyzer in its base
    /// scripts; `mqtt` is the name its add-on packages use.
    pub fn zeek_service(self) -> Option<&'static str> {
        match self {
            App::Unknown => None,
            App::Tls => Some("ssl"),
            a => Some(a.name()),
        }
    }

    /// Well-known server ports, consulted only when the content leaves a
    /// choice open.
    pub fn well_known_ports(self, t: Transport) -> &'static [u16] {
        use Transport::*;
        match (self, t) {
            (App::Http, Tcp) => &[80, 8080, 8000, 3128],
            (App::Tls, Tcp) => &[443, 8443, 993, 995, 465, 636, 853],
            (App::Ssh, Tcp) => &[22],
            (App::Dns, _) => &[53, 5353, 5355, 137],
            (App::Smtp, Tcp) => &[25, 587, 465, 2525],
            (App::Ftp, Tcp) => &[21],
            (App::Imap, Tcp) => &[143],
            (App::Pop3, Tcp) => &[110],
            (App::Quic, Udp) => &[443, 80],
            (App::Smb, Tcp) => &[445, 139],
            (App::Rdp, Tcp) => &[3389],
            (App::Sip, _) => &[5060, 5061],
            (App::Ntp, Udp) => &[123],
            (App::Dhcp, Udp) => &[67, 68],
            (App::Bittorrent, _) => &[6881, 6882, 6883, 6884, 6885, 6886, 6887, 6888, 6889],
            (App::Mqtt, Tcp) => &[1883],
            (App::Redis, Tcp) => &[6379],
            (App::Postgresql, Tcp) => &[5432],
            (App::Mysql, Tcp) => &[3306],
            _ => &[],
        }
    }

    /// Whether either port is one of the label's well-known ports.
    pub fn port_matches(self, t: Transport, a: u16, b: u16) -> bool {
        let ports = self.well_known_ports(t);
        ports.contains(&a) || ports.contains(&b)
    }
}

impl std::fmt::Display for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for App {
    type Err = String;
    fn from_str(s: &str) -> Result<App, String> {
        App::from_name(s).ok_or_else(|| format!("unknown application label {s:?}"))
    }
}

impl Serialize for App {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in App::ALL {
            assert_eq!(App::from_name(a.name()), Some(a));
            assert_eq!(a.to_string().parse::<App>(), Ok(a));
            assert_eq!(a.name(), a.name().to_lowercase());
        }
        assert_eq!(App::Tls.zeek_service(), Some("ssl"));
        assert_eq!(App::Http.zeek_service(), Some("http"));
        assert_eq!(App::Unknown.zeek_service(), None);
        assert!("nope".parse::<App>().is_err());
        assert!(App::Ftp.port_matches(Transport::Tcp, 40000, 21));
        assert!(!App::Ftp.port_matches(Transport::Udp, 40000, 21));
        assert_eq!(Transport::from_ip_proto(17), Some(Transport::Udp));
        assert_eq!(Transport::from_ip_proto(1), None);
    }
}
