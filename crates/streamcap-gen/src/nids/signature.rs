//! The fixed signature set, the carriers they are meant for, and the
//! Suricata-style rules text that detects them.
//!
//! There are [`PER_CARRIER`] signatures per [`Carrier`], numbered carrier
//! by carrier in [`Carrier::ALL`] order. Signature `i` has sid
//! [`FIRST_SID`]` + i`. Every signature contains the marker `scnids`
//! followed by its three-digit index and a non-digit, exactly once, so no
//! signature occurs inside another one, and a signature can only be found in
//! the traffic where the generator planted it (the generator never writes
//! `scnids` anywhere else). The set does not depend on the seed.

use serde::{Deserialize, Serialize};

use crate::capture::Direction;
use crate::prng::SplitMix64;
use crate::truth::Protocol;

/// Sid of signature 0; signature `i` has sid `FIRST_SID + i`.
pub const FIRST_SID: u32 = 1_000_001;

/// Signatures per carrier.
pub const PER_CARRIER: usize = 4;

/// The marker every signature contains once (followed by its index).
pub const MARKER: &[u8] = b"scnids";

/// Where in the traffic a signature is planted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Carrier {
    /// Path of an HTTP request URI (TCP, to server).
    HttpUri,
    /// Value of an HTTP request header (TCP, to server).
    HttpHeader,
    /// Body of an HTTP POST request (TCP, to server; binary).
    HttpRequestBody,
    /// Body of an HTTP response (TCP, to client).
    HttpResponseBody,
    /// Body of a message sent with SMTP `DATA` (TCP, to server).
    SmtpBody,
    /// Argument of an FTP `RETR` command (TCP, to server).
    FtpArgument,
    /// A label of a DNS query name (UDP; the response repeats the question,
    /// so it occurs in both directions).
    DnsLabel,
    /// The server name (SNI) of a TLS ClientHello (TCP, to server).
    TlsSni,
    /// Opaque payload of another TCP protocol (either direction; binary).
    TcpPayload,
    /// Opaque payload of another UDP protocol (either direction; binary).
    UdpPayload,
}

impl Carrier {
    /// Every carrier, in signature-numbering order.
    pub const ALL: [Carrier; 10] = [
        Carrier::HttpUri,
        Carrier::HttpHeader,
        Carrier::HttpRequestBody,
        Carrier::HttpResponseBody,
        Carrier::SmtpBody,
        Carrier::FtpArgument,
        Carrier::DnsLabel,
        Carrier::TlsSni,
        Carrier::TcpPayload,
        Carrier::UdpPayload,
    ];

    /// The name used in the truth and in rule messages (`http_uri`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Carrier::HttpUri => "http_uri",
            Carrier::HttpHeader => "http_header",
            Carrier::HttpRequestBody => "http_request_body",
            Carrier::HttpResponseBody => "http_response_body",
            Carrier::SmtpBody => "smtp_body",
            Carrier::FtpArgument => "ftp_argument",
            Carrier::DnsLabel => "dns_label",
            Carrier::TlsSni => "tls_sni",
            Carrier::TcpPayload => "tcp_payload",
            Carrier::UdpPayload => "udp_payload",
        }
    }

    /// Transport protocol of the flows that carry it.
    pub fn proto(self) -> Protocol {
        match self {
            Carrier::DnsLabel | Carrier::UdpPayload => Protocol::Udp,
            _ => Protocol::Tcp,
        }
    }

    /// The direction it travels in, when fixed (`None`: either).
    pub fn direction(self) -> Option<Direction> {
        match self {
            Carrier::HttpResponseBody => Some(Direction::ToClient),
            Carrier::DnsLabel | Carrier::TcpPayload | Carrier::UdpPayload => None,
            _ => Some(Direction::ToServer),
        }
    }

    /// Indices of this carrier's signatures.
    pub fn signatures(self) -> std::ops::Range<usize> {
        let base = self as usize * PER_CARRIER;
        base..base + PER_CARRIER
    }
}

/// One signature of the fixed set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Index in the set (0-based).
    pub index: usize,
    /// The rule's sid: [`FIRST_SID`]` + index`.
    pub sid: u32,
    /// Where it is planted.
    pub carrier: Carrier,
    /// The bytes the rule's content matches.
    pub bytes: Vec<u8>,
}

impl Signature {
    /// The rule detecting it, on one line:
    /// `alert tcp any any -> any any (msg:"streamcap-gen signature N
    /// (carrier)"; content:"..."; sid:S; rev:1;)` (`alert udp` for UDP
    /// carriers), the content written by [`content_string`].
    pub fn rule(&self) -> String {
        let proto = match self.carrier.proto() {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        };
        format!(
            "alert {proto} any any -> any any (msg:\"streamcap-gen signature {} ({})\"; \
             content:\"{}\"; sid:{}; rev:1;)",
            self.index,
            self.carrier.name(),
            content_string(&self.bytes),
            self.sid
        )
    }
}

/// The fixed signature set: [`PER_CARRIER`] per carrier, in
/// [`Carrier::ALL`] order. Always the same bytes.
pub fn signatures() -> Vec<Signature> {
    let mut out = Vec::new();
    for carrier in Carrier::ALL {
        for (variant, index) in carrier.signatures().enumerate() {
            out.push(Signature {
                index,
                sid: FIRST_SID + index as u32,
                carrier,
                bytes: signature_bytes(carrier, variant, index),
            });
        }
    }
    out
}

/// An eight-character lowercase base-36 tag, fixed per signature.
fn tag(index: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = SplitMix64::new(0x5C01_D5A7_0000 + index as u64);
    (0..8).map(|_| char::from(*rng.pick(ALPHABET))).collect()
}

fn signature_bytes(carrier: Carrier, variant: usize, index: usize) -> Vec<u8> {
    let id = format!("scnids{index:03}");
    let t = tag(index);
    let mut b: Vec<u8> = Vec::new();
    let mut push = |parts: &[&[u8]]| {
        for p in parts {
            b.extend_from_slice(p);
        }
    };
    let (id, t) = (id.as_bytes(), t.as_bytes());
    match (carrier, variant) {
        (Carrier::HttpUri, 0) => push(&[id, b"-uri-", t, b"/download.php"]),
        (Carrier::HttpUri, 1) => push(&[id, b"-uri;jsessionid=", t]),
        (Carrier::HttpUri, 2) => push(&[b"cgi-bin/", id, b":", t, b".cgi"]),
        (Carrier::HttpUri, _) => push(&[id, b"-uri-", t, b"?a=1&b=%7C"]),
        (Carrier::HttpHeader, 0) => push(&[id, b"-hdr \"", t, b"\"; path=/"]),
        (Carrier::HttpHeader, 1) => push(&[id, b"|hdr|", t, b"\\x"]),
        (Carrier::HttpHeader, 2) => push(&[b"token ", id, b":", t, b":v2"]),
        (Carrier::HttpHeader, _) => push(&[id, b"-hdr-", t, b"-agent/1.0"]),
        (Carrier::HttpRequestBody, 0) => push(&[id, b"-post\x00\x01\x02", t, b"\xff"]),
        (Carrier::HttpRequestBody, 1) => push(&[b"\x89PNG\r\n\x1a\n", id, b"_", t]),
        (Carrier::HttpRequestBody, 2) => push(&[b"name=", id, b"&v=", t, b";x=\"1\""]),
        (Carrier::HttpRequestBody, _) => push(&[id, b"\t", t, b"\r\n--boundary"]),
        (Carrier::HttpResponseBody, 0) => push(&[b"<script>", id, b"('", t, b"');</script>"]),
        (Carrier::HttpResponseBody, 1) => push(&[b"MZ\x90\x00\x03", id, t, b"\x00\x00"]),
        (Carrier::HttpResponseBody, 2) => push(&[id, b"-resp-", t]),
        (Carrier::HttpResponseBody, _) => push(&[b"\x1f\x8b\x08", id, b"|", t, b"|\xc3\xa9"]),
        (Carrier::SmtpBody, 0) => push(&[id, b" wire transfer ref ", t]),
        (Carrier::SmtpBody, 1) => push(&[b"Invoice: ", id, b"; \"", t, b"\""]),
        (Carrier::SmtpBody, 2) => push(&[id, b"\t", t, b"\\attachment"]),
        (Carrier::SmtpBody, _) => push(&[b"=?utf-8?q?", id, b"=", t, b"?="]),
        (Carrier::FtpArgument, 0) => push(&[id, b"-", t, b".tar.gz"]),
        (Carrier::FtpArgument, 1) => push(&[b"/pub/", id, b";", t, b".zip"]),
        (Carrier::FtpArgument, 2) => push(&[id, b":", t, b".exe"]),
        (Carrier::FtpArgument, _) => push(&[b"../../", id, b"-", t, b"|.bin"]),
        (Carrier::DnsLabel, 0) => push(&[id, b"-", t, b"-dns"]),
        (Carrier::DnsLabel, 1) => push(&[b"xn--", id, b"-", t]),
        (Carrier::DnsLabel, 2) => push(&[id, b"z", t]),
        (Carrier::DnsLabel, _) => push(&[b"c2-", id, b"-", t]),
        (Carrier::TlsSni, 0) => push(&[id, b"-", t, b".example.net"]),
        (Carrier::TlsSni, 1) => push(&[b"login.", id, b"-", t, b".example.com"]),
        (Carrier::TlsSni, 2) => push(&[id, b".", t, b".cdn.example.org"]),
        (Carrier::TlsSni, _) => push(&[t, b"-", id, b".example.edu"]),
        (Carrier::TcpPayload, 0) => push(&[b"\x00\x00\x00\x2a", id, b"\x01", t, b"\xde\xad"]),
        (Carrier::TcpPayload, 1) => push(&[id, b"|", t, b"|\"\\;:"]),
        (Carrier::TcpPayload, 2) => push(&[b"\xff\xfe\xfd", id, b"-", t]),
        (Carrier::TcpPayload, _) => push(&[b"EXEC ", id, b" ", t, b"\r\n"]),
        (Carrier::UdpPayload, 0) => push(&[b"\x17\x00", id, b"\x00", t]),
        (Carrier::UdpPayload, 1) => push(&[id, b":", t, b";\"udp\""]),
        (Carrier::UdpPayload, 2) => push(&[b"\xca\xfe\xba\xbe", id, b".", t, b"\x7f"]),
        (Carrier::UdpPayload, _) => push(&[id, b"-udp-", t]),
    }
    b
}

/// Whether `b` is written as-is in a rule's content (printable ASCII other
/// than `;` `"` `\` `|` `:`).
fn literal(b: u8) -> bool {
    (0x20..=0x7e).contains(&b) && !matches!(b, b';' | b'"' | b'\\' | b'|' | b':')
}

/// `bytes` written as a Suricata content string (without the surrounding
/// quotes): printable ASCII as-is, except `;` `"` `\` `|` `:`, which go in
/// `|hex|` blocks together with non-printable bytes (uppercase hex,
/// space-separated: `|3B 00 FF|`).
pub fn content_string(bytes: &[u8]) -> String {
    let mut s = String::new();
    let mut in_hex = false;
    for &b in bytes {
        if literal(b) {
            if in_hex {
                s.push('|');
                in_hex = false;
            }
            s.push(char::from(b));
        } else {
            if in_hex {
                s.push(' ');
            } else {
                s.push('|');
                in_hex = true;
            }
            s.push_str(&format!("{b:02X}"));
        }
    }
    if in_hex {
        s.push('|');
    }
    s
}

/// Parses a content string as written by [`content_string`] (literal
/// bytes and `|hex|` blocks; hex digits of either case, in groups of whole
/// bytes separated by spaces).
///
/// # Errors
/// An unterminated `|` block, a group with an odd number of hex digits, a
/// non-hex character in a block, or a literal `;` `"` `\` outside one.
pub fn parse_content(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '|' {
            let Some(end) = rest[1..].find('|') else {
                return Err(format!("unterminated hex block in {s:?}"));
            };
            for group in rest[1..1 + end].split_whitespace() {
                if group.len() % 2 != 0 {
                    return Err(format!("odd number of hex digits in {s:?}"));
                }
                out.extend(hex::decode(group).map_err(|e| format!("{e} in {s:?}"))?);
            }
            rest = &rest[end + 2..];
        } else {
            if matches!(c, ';' | '"' | '\\') {
                return Err(format!("unescaped {c:?} in {s:?}"));
            }
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            rest = &rest[c.len_utf8()..];
        }
    }
    Ok(out)
}

/// The rules text: a comment header, then one rule per signature
/// ([`Signature::rule`]), one per line.
pub fn rules_text(signatures: &[Signature]) -> String {
    let mut s = String::from(
        "# streamcap-gen nids: one content rule per planted signature (sid 1000001 up)\n",
    );
    for sig in signatures {
        s.push_str(&sig.rule());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_is_fixed_distinct_and_marked() {
        let set = signatures();
        assert_eq!(set.len(), Carrier::ALL.len() * PER_CARRIER);
        assert_eq!(set, signatures());
        for (i, s) in set.iter().enumerate() {
            assert_eq!(s.index, i);
            assert_eq!(s.sid, FIRST_SID + i as u32);
            assert!(s.bytes.len() >= 16, "{i} too short");
            let at: Vec<usize> = s
                .bytes
                .windows(MARKER.len())
                .enumerate()
                .filter(|(_, w)| *w == MARKER)
                .map(|(k, _)| k)
                .collect();
            assert_eq!(at.len(), 1, "{i}: one marker");
            let num = &s.bytes[at[0] + MARKER.len()..];
            assert_eq!(&num[..3], format!("{i:03}").as_bytes());
            assert!(!num[3].is_ascii_digit());
            for o in &set {
                if o.index != i {
                    assert!(!o.bytes.windows(s.bytes.len()).any(|w| w == s.bytes));
                }
            }
        }
    }

    #[test]
    fn carriers_get_their_alphabets() {
        for s in signatures() {
            let b = &s.bytes;
            let ok = match s.carrier {
                Carrier::HttpUri | Carrier::FtpArgument => b.iter().all(|c| c.is_ascii_graphic()),
                Carrier::HttpHeader | Carrier::SmtpBody => b
                    .iter()
                    .all(|&c| c.is_ascii_graphic() || c == b' ' || c == b'\t'),
                Carrier::DnsLabel => {
                    b.len() <= 63
                        && b.iter()
                            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                }
                Carrier::TlsSni => b
                    .iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"-.".contains(&c)),
                _ => true,
            };
            assert!(ok, "{} {:?}", s.index, String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn content_round_trips() {
        let set = signatures();
        let mut hex_blocks = 0;
        for s in &set {
            let c = content_string(&s.bytes);
            assert_eq!(parse_content(&c).unwrap(), s.bytes, "{c}");
            assert!(!c.contains(';') && !c.contains('"') && !c.contains('\\'));
            assert!(c.chars().all(|ch| (' '..='~').contains(&ch)));
            hex_blocks += usize::from(c.contains('|'));
        }
        assert!(hex_blocks >= set.len() / 2, "{hex_blocks}");
        assert_eq!(content_string(b"a;b\x00\x01c|"), "a|3B|b|00 01|c|7C|");
        assert_eq!(parse_content("a|3b 00|b|7c|").unwrap(), b"a;\x00b|");
        assert!(parse_content("a|3").is_err());
        assert!(parse_content("a|3 b|").is_err());
        assert!(parse_content("a;b").is_err());
        for b in 0..=255u8 {
            assert_eq!(parse_content(&content_string(&[b])).unwrap(), [b]);
        }
    }

    #[test]
    fn rules_have_the_expected_shape() {
        let set = signatures();
        let text = rules_text(&set);
        let rules: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rules.len(), set.len());
        for (r, s) in rules.iter().zip(&set) {
            let proto = if s.carrier.proto() == Protocol::Udp {
                "udp"
            } else {
                "tcp"
            };
            assert!(r.starts_with(&format!("alert {proto} any any -> any any (msg:\"")));
            assert!(r.ends_with(&format!("sid:{}; rev:1;)", s.sid)), "{r}");
            let c = r.split("content:\"").nth(1).unwrap();
            let c = &c[..c.find('"').unwrap()];
            assert_eq!(parse_content(c).unwrap(), s.bytes);
        }
    }
}
