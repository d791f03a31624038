//! `ssl.log`: one record per TLS connection, with the subset of Zeek's
//! fields the hellos and the record layer tell: `version`, `cipher`,
//! `server_name`, `resumed`, `next_protocol` and `established`. Zeek's
//! other fields (`curve`, `last_alert`, `ssl_history`, certificate
//! fingerprints…) need the rest of the handshake and are not written.
//!
//! The values come from the classifier's [`TlsInfo`]:
//!
//! - `version`: the negotiated version (the ServerHello's, its
//!   `supported_versions` extension first), Zeek's names (`TLSv12`,
//!   `TLSv13`…); unset without a ServerHello;
//! - `cipher`: the ServerHello's suite, IANA name;
//! - `server_name`: the ClientHello's SNI host name;
//! - `resumed`: with both hellos, TLS 1.3: the ServerHello has a
//!   `pre_shared_key`; earlier versions: the server echoed the client's
//!   non-empty session id. `F` when it cannot be told;
//! - `next_protocol`: the ALPN protocol the server chose;
//! - `established`: each direction sent a ChangeCipherSpec or an
//!   application-data record (Zeek's analyzer waits for application data
//!   after both sides' ChangeCipherSpec; the two differ only for a
//!   handshake that failed after the ChangeCipherSpecs).

use crate::classify::TlsInfo;
use crate::logs::zeek::{self, ZeekTime};
use serde::Serialize;
use std::net::IpAddr;
use streamcap::Timestamp;

/// One line of `ssl.log`; serializes to Zeek's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SslRecord {
    /// Time of the connection's first TLS message (the caller's choice:
    /// streamcap's handlers use the time the first hello's direction began).
    pub ts: ZeekTime,
    /// The connection's uid (as in `conn.log`).
    pub uid: String,
    /// Originator address.
    #[serde(rename = "id.orig_h")]
    pub orig_h: IpAddr,
    /// Originator port.
    #[serde(rename = "id.orig_p")]
    pub orig_p: u16,
    /// Responder address.
    #[serde(rename = "id.resp_h")]
    pub resp_h: IpAddr,
    /// Responder port.
    #[serde(rename = "id.resp_p")]
    pub resp_p: u16,
    /// The negotiated version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The negotiated cipher suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher: Option<String>,
    /// The SNI host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// The handshake resumed an earlier TLS connection (an abbreviated
    /// handshake).
    pub resumed: bool,
    /// The ALPN protocol chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_protocol: Option<String>,
    /// Both directions went encrypted.
    pub established: bool,
}

/// The `#fields` of this `ssl.log`.
pub const FIELDS: [&str; 12] = [
    "ts",
    "uid",
    "id.orig_h",
    "id.orig_p",
    "id.resp_h",
    "id.resp_p",
    "version",
    "cipher",
    "server_name",
    "resumed",
    "next_protocol",
    "established",
];

/// The `#types` of this `ssl.log`.
pub const TYPES: [&str; 12] = [
    "time", "string", "addr", "port", "addr", "port", "string", "string", "string", "bool",
    "string", "bool",
];

/// The header of a TSV `ssl.log`.
pub fn tsv_header(open: &str) -> String {
    zeek::tsv_header("ssl", &FIELDS, &TYPES, open)
}

impl SslRecord {
    /// The record of a connection from `orig` to `resp` named `uid`.
    pub fn new(
        ts: Timestamp,
        uid: String,
        orig: (IpAddr, u16),
        resp: (IpAddr, u16),
        tls: &TlsInfo,
    ) -> SslRecord {
        SslRecord {
            ts: ZeekTime(ts),
            uid,
            orig_h: orig.0,
            orig_p: orig.1,
            resp_h: resp.0,
            resp_p: resp.1,
            version: tls.version_name(),
            cipher: tls.cipher_name(),
            server_name: tls.server_name.clone(),
            resumed: tls.resumed.unwrap_or(false),
            next_protocol: tls.alpn.clone(),
            established: tls.established,
        }
    }

    /// The record as one TSV line (with its newline).
    pub fn tsv_line(&self) -> String {
        zeek::tsv_line(&[
            self.ts.text(),
            zeek::escape(&self.uid, false),
            self.orig_h.to_string(),
            self.orig_p.to_string(),
            self.resp_h.to_string(),
            self.resp_p.to_string(),
            zeek::opt_str(self.version.as_deref()),
            zeek::opt_str(self.cipher.as_deref()),
            zeek::opt_str(self.server_name.as_deref()),
            zeek::bool_field(self.resumed).to_string(),
            zeek::opt_str(self.next_protocol.as_deref()),
            zeek::bool_field(self.established).to_string(),
        ])
    }

    /// The record as one line of Zeek JSON (without a newline).
    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::tls::tests::{client_hello_msg, record, server_hello_msg};
    use crate::classify::{classify_flow, App, Transport};

    fn ep(s: &str, p: u16) -> (IpAddr, u16) {
        (s.parse().unwrap(), p)
    }

    fn flow(client: &[u8], server: &[u8]) -> TlsInfo {
        let c = classify_flow(Transport::Tcp, &[client], &[server], 50000, 443);
        assert_eq!(c.app, App::Tls);
        c.tls.unwrap()
    }

    #[test]
    fn a_tls13_handshake_gives_a_full_record() {
        let mut client = record(
            22,
            &client_hello_msg("www.example.org", &["h2", "http/1.1"], &[1; 32]),
        );
        client.extend(record(20, &[1]));
        client.extend(record(23, &[0; 50]));
        let mut server = record(22, &server_hello_msg(true, 0x1302, Some("h2"), &[1; 32]));
        server.extend(record(20, &[1]));
        server.extend(record(23, &[0; 300]));
        let t = flow(&client, &server);
        // TLS 1.3 echoes the client's `legacy_session_id` field without
        // resuming.
        assert_eq!(t.resumed, Some(false));
        let r = SslRecord::new(
            Timestamp::from_secs_nanos(1_600_000_000, 5_000),
            "Cabc".into(),
            ep("192.0.2.1", 50000),
            ep("198.51.100.2", 443),
            &t,
        );
        assert_eq!(r.version.as_deref(), Some("TLSv13"));
        assert_eq!(r.cipher.as_deref(), Some("TLS_AES_256_GCM_SHA384"));
        assert_eq!(r.server_name.as_deref(), Some("www.example.org"));
        assert_eq!(r.next_protocol.as_deref(), Some("h2"));
        assert!(r.established && !r.resumed);
        assert_eq!(
            r.tsv_line(),
            "1600000000.000005\tCabc\t192.0.2.1\t50000\t198.51.100.2\t443\tTLSv13\tTLS_AES_256_GCM_SHA384\twww.example.org\tF\th2\tT\n"
        );
        let j: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(j["id.resp_p"], 443);
        assert_eq!(j["version"], "TLSv13");
        assert_eq!(j["established"], true);
        assert!(tsv_header("t").contains("#path\tssl\n"));
    }

    #[test]
    fn tls12_resumption_and_unfinished_handshakes() {
        let sid = [9u8; 32];
        let client = record(22, &client_hello_msg("r.example", &[], &sid));
        let mut server = record(22, &server_hello_msg(false, 0xc02f, None, &sid));
        server.extend(record(20, &[1]));
        let t = flow(&client, &server);
        assert_eq!(t.resumed, Some(true));
        assert_eq!(t.version_name().as_deref(), Some("TLSv12"));
        // The client never went encrypted.
        assert!(!t.established);
        let r = SslRecord::new(Timestamp(0), "C".into(), ep("::1", 1), ep("::2", 2), &t);
        assert!(r.resumed && !r.established);
        // Only a ClientHello: version and cipher unset.
        let t = flow(&client, b"");
        assert_eq!((t.version, t.cipher, t.resumed), (None, None, None));
        let r = SslRecord::new(Timestamp(0), "C".into(), ep("::1", 1), ep("::2", 2), &t);
        let cols: Vec<String> = r
            .tsv_line()
            .trim_end()
            .split('\t')
            .map(String::from)
            .collect();
        assert_eq!(&cols[6..], ["-", "-", "r.example", "F", "-", "F"]);
        let j = r.json();
        assert!(!j.contains("\"version\"") && !j.contains("\"cipher\""));
    }

    #[test]
    fn malformed_hellos_do_not_panic() {
        let good = record(22, &client_hello_msg("m.example", &["h2"], &[]));
        for cut in 0..good.len() {
            let c = classify_flow(Transport::Tcp, &[&good[..cut]], &[], 1, 443);
            if let Some(t) = c.tls {
                let _ = SslRecord::new(Timestamp(0), "C".into(), ep("::1", 1), ep("::2", 2), &t)
                    .tsv_line();
            }
        }
        let mut bad = good.clone();
        for i in 9..bad.len() {
            bad[i] ^= 0x5a;
            let _ = classify_flow(Transport::Tcp, &[&bad], &[], 1, 443);
        }
    }
}
